/* SPDX-License-Identifier: MIT */
/* tcp_stream.c — the peer for libtrainrt's TCP all-reduce between test-cluster nodes: one raw TCP
 * stream, the most any TCP collective between the two nodes can get.
 *   tcp_stream recv PORT            accept one connection, read until EOF, print GB/s
 *   tcp_stream send HOST PORT BYTES connect, write BYTES (64 KiB writes), close */
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (64 * 1024)
#define CHECK(cond, what) do { if (!(cond)) { perror("tcp_stream: " what); exit(1); } } while (0)

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int receive(const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai;
	static char buf[CHUNK];
	long long total = 0;
	int one = 1, ls, fd;
	double t0 = 0;
	ssize_t n;

	CHECK(getaddrinfo(NULL, port, &hints, &ai) == 0, "getaddrinfo");
	ls = socket(ai->ai_family, ai->ai_socktype, 0);
	CHECK(ls >= 0, "socket");
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CHECK(bind(ls, ai->ai_addr, ai->ai_addrlen) == 0, "bind");
	CHECK(listen(ls, 1) == 0, "listen");
	fd = accept(ls, NULL, NULL);
	CHECK(fd >= 0, "accept");
	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		if (total == 0)
			t0 = now();
		total += n;
	}
	printf("%.2f\n", (double)total / (now() - t0) / 1e9);
	return 0;
}

static int send_bytes(const char *host, const char *port, long long bytes)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	static char buf[CHUNK];
	int fd, tries;

	CHECK(getaddrinfo(host, port, &hints, &ai) == 0, "getaddrinfo");
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	CHECK(fd >= 0, "socket");
	for (tries = 0; connect(fd, ai->ai_addr, ai->ai_addrlen) != 0; tries++) {
		CHECK(tries < 100, "connect");
		usleep(50000);	/* the receiver may not listen yet */
	}
	memset(buf, 1, sizeof(buf));
	while (bytes > 0) {
		ssize_t n = write(fd, buf, bytes < CHUNK ? (size_t)bytes : sizeof(buf));

		CHECK(n > 0, "write");
		bytes -= n;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "recv") == 0)
		return receive(argv[2]);
	if (argc == 5 && strcmp(argv[1], "send") == 0)
		return send_bytes(argv[2], argv[3], atoll(argv[4]));
	fprintf(stderr, "usage: tcp_stream recv PORT | send HOST PORT BYTES\n");
	return 2;
}

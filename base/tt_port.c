/* SPDX-License-Identifier: MIT */
/* tt_port.c — a free loopback port outside the ephemeral range (see tt_port.h). */
#include "tt_port.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#define PORT_FLOOR 10000
#define TRIES 64

/* Binds a fresh socket to 127.0.0.1:port (0: the kernel picks); the port bound, 0 when that port
 * is taken, -1 with err when no socket can be made. */
static int try_bind(uint16_t port, tt_err *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), got = 0;

	if (fd < 0)
		return tt_err_errno(err, "finding a free port on 127.0.0.1 (socket)");
	/* No SO_REUSEADDR: a port another socket holds in any state, TIME_WAIT too, is refused. */
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		got = ntohs(a.sin_port);
	close(fd);
	return got;
}

/* The first port of the kernel's ephemeral range; 32768 (Linux's default) when unreadable. */
static unsigned ephemeral_low(void)
{
	FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r");
	unsigned lo = 32768, hi;

	if (f) {
		if (fscanf(f, "%u %u", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return lo;
}

int tt_free_loopback_port(uint16_t *port, tt_err *err)
{
	unsigned lo = ephemeral_low();
	uint32_t r;
	int got = 0;

	for (int i = 0; got == 0 && lo > PORT_FLOOR + TRIES && i < TRIES; i++)
		if (getrandom(&r, sizeof(r), 0) == (ssize_t)sizeof(r))
			got = try_bind((uint16_t)(PORT_FLOOR + r % (lo - PORT_FLOOR)), err);
	if (got == 0)
		got = try_bind(0, err); /* no room below the range, or all tries taken */
	if (got < 0)
		return -1;
	if (got == 0)
		return tt_err_set(err, "finding a free port on 127.0.0.1: the kernel gave none");
	*port = (uint16_t)got;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* rt_net.c — sockets with deadlines (see rt_net.h). Sockets stay blocking; every wait goes
 * through poll() with the time left, and the timeout counts from the last byte that moved. */
#include "rt_net.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

double rt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int ms_left(double deadline)
{
	double left = deadline - rt_now();

	if (left <= 0)
		return 0;
	return left > 1e6 ? 1000000000 : (int)(left * 1000.0) + 1;
}

static void tune(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* A listening socket on a:port, or -1 with errno from the step that failed. */
static int listen_at(struct in_addr a, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = a };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 && listen(fd, SOMAXCONN) == 0)
		return fd;
	e = errno;
	close(fd);
	errno = e;
	return -1;
}

static int listen_failed(const char *what, int port, tt_err *err)
{
	if (errno == EADDRINUSE)
		return tt_err_errno(err, "cannot listen on %s:%d (is another job or a stale process using the port? pick another MASTER_PORT)",
				    what, port);
	return tt_err_errno(err, "cannot listen on %s:%d", what, port);
}

/* Hands over a listening socket with its port and address. */
static int listening(int fd, int *fd_out, int *port_out, char *bound, size_t blen, tt_err *err)
{
	struct sockaddr_in sa;
	socklen_t slen = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &slen) != 0) {
		tt_err_errno(err, "cannot read the address of a listening socket");
		close(fd);
		return -1;
	}
	if (bound && blen && !inet_ntop(AF_INET, &sa.sin_addr, bound, (socklen_t)blen))
		bound[0] = '\0';
	*fd_out = fd;
	if (port_out)
		*port_out = ntohs(sa.sin_port);
	return 0;
}

int rt_net_listen(const char *ip, int port, int *fd_out, int *port_out, tt_err *err)
{
	struct in_addr a = { .s_addr = htonl(INADDR_ANY) };
	int fd;

	if (ip && *ip && inet_pton(AF_INET, ip, &a) != 1)
		return tt_err_set(err, "cannot listen on '%s': not an IPv4 address", ip);
	fd = listen_at(a, port);
	if (fd < 0)
		return listen_failed(ip && *ip ? ip : "0.0.0.0", port, err);
	return listening(fd, fd_out, port_out, NULL, 0, err);
}

int rt_net_listen_host(const char *host, int port, int loopback_ok, int *fd_out, int *port_out,
		       char *bound, size_t blen, tt_err *err)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	struct in_addr any = { .s_addr = htonl(INADDR_ANY) }, literal;
	int is_name = !host || inet_pton(AF_INET, host, &literal) != 1;
	int fd = -1;

	/* Unresolvable here means unresolvable for rank 0's own client too, which reports it. */
	if (host && *host && getaddrinfo(host, NULL, &hints, &ai) == 0) {
		for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
			struct in_addr in = ((struct sockaddr_in *)a->ai_addr)->sin_addr;
			char text[INET_ADDRSTRLEN], what[300];

			if (is_name && !loopback_ok && (ntohl(in.s_addr) >> 24) == 127)
				continue;
			fd = listen_at(in, port);
			if (fd >= 0 || errno == EADDRNOTAVAIL) /* not an address of this machine */
				continue;
			inet_ntop(AF_INET, &in, text, sizeof(text));
			snprintf(what, sizeof(what), "%s (%s)", host, text);
			freeaddrinfo(ai);
			return listen_failed(what, port, err);
		}
		freeaddrinfo(ai);
	}
	if (fd < 0 && (fd = listen_at(any, port)) < 0)
		return listen_failed("0.0.0.0", port, err);
	return listening(fd, fd_out, port_out, bound, blen, err);
}

int rt_net_connect(const char *host, int port, double timeout_s, int *fd_out, tt_err *err)
{
	double deadline = rt_now() + timeout_s;
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai = NULL;
	char service[16];
	int backoff_ms = 10;
	int rc;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &ai);
	if (rc != 0)
		return tt_err_set(err, "cannot resolve '%s': %s (check MASTER_ADDR)", host, gai_strerror(rc));
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0) {
			freeaddrinfo(ai);
			return tt_err_errno(err, "cannot create a TCP socket");
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			tune(fd);
			freeaddrinfo(ai);
			*fd_out = fd;
			return 0;
		}
		rc = errno;
		close(fd);
		if (rt_now() + backoff_ms / 1000.0 > deadline) {
			freeaddrinfo(ai);
			errno = rc;
			return tt_err_errno(err, "cannot connect to %s:%d within %.0f s", host, port, timeout_s);
		}
		usleep((useconds_t)backoff_ms * 1000);
		backoff_ms = backoff_ms * 2 > 500 ? 500 : backoff_ms * 2;
	}
}

int rt_net_accept(int lfd, double timeout_s, int *fd_out, tt_err *err)
{
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	double deadline = rt_now() + timeout_s;
	int fd;

	for (;;) {
		int n = poll(&p, 1, ms_left(deadline));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tt_err_errno(err, "waiting for a peer to connect");
		if (n == 0)
			return tt_err_set(err, "no peer connected within %.0f s", timeout_s);
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno != EINTR && errno != ECONNABORTED && errno != EAGAIN)
			return tt_err_errno(err, "accepting a peer connection");
	}
	tune(fd);
	*fd_out = fd;
	return 0;
}

int rt_net_local_ip(int fd, char *ip, size_t len, tt_err *err)
{
	struct sockaddr_in sa;
	socklen_t slen = sizeof(sa);

	if (getsockname(fd, (struct sockaddr *)&sa, &slen) != 0)
		return tt_err_errno(err, "cannot read the local address of a socket");
	if (!inet_ntop(AF_INET, &sa.sin_addr, ip, (socklen_t)len))
		return tt_err_errno(err, "cannot format the local address of a socket");
	return 0;
}

static int name_matches(const char *name, const char *list)
{
	char buf[256], *save = NULL;

	if (!list || !*list)
		return 1;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (tok[0] == '=' ? strcmp(name, tok + 1) == 0 : strncmp(name, tok, strlen(tok)) == 0)
			return 1;
	}
	return 0;
}

int rt_net_iface_ip(const char *ifnames, char *ip, size_t len, tt_err *err)
{
	struct ifaddrs *all = NULL;
	int rc = -1;

	if (getifaddrs(&all) != 0)
		return tt_err_errno(err, "cannot list network interfaces");
	for (struct ifaddrs *i = all; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
		    (i->ifa_flags & IFF_LOOPBACK) || !name_matches(i->ifa_name, ifnames))
			continue;
		if (inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, (socklen_t)len)) {
			rc = 0;
			break;
		}
	}
	freeifaddrs(all);
	if (rc != 0)
		tt_err_set(err, "no up IPv4 interface %s%s (set TRAINRT_SOCKET_IFNAME to the interface peers can reach)",
			   ifnames && *ifnames ? "matching " : "other than loopback", ifnames ? ifnames : "");
	return rc;
}

int rt_net_exchange(int sfd, const void *sbuf, size_t slen, int rfd, void *rbuf, size_t rlen,
		    double timeout_s, tt_err *err)
{
	const char *s = sbuf;
	char *r = rbuf;
	size_t sent = 0, got = 0;
	double deadline = rt_now() + timeout_s;

	while (sent < slen || got < rlen) {
		struct pollfd p[2];
		int np = 0, si = -1, ri = -1, n;

		if (sent < slen) {
			p[np] = (struct pollfd){ .fd = sfd, .events = POLLOUT };
			si = np++;
		}
		if (got < rlen) {
			p[np] = (struct pollfd){ .fd = rfd, .events = POLLIN };
			ri = np++;
		}
		n = poll(p, (nfds_t)np, ms_left(deadline));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tt_err_errno(err, "poll on peer sockets");
		if (n == 0)
			return tt_err_set(err, "%s for %.0f s (link down, host dead, or the peer hangs; TRAINRT_TIMEOUT)",
					  sent < slen && got < rlen ? "the peer sent and took nothing"
					  : sent < slen		    ? "the peer took nothing"
								    : "nothing arrived from the peer",
					  timeout_s);
		if (si >= 0 && p[si].revents) {
			ssize_t k = send(sfd, s + sent, slen - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

			if (k < 0 && errno != EAGAIN && errno != EINTR)
				return tt_err_errno(err, "sending to peer (it probably died)");
			if (k > 0) {
				sent += (size_t)k;
				deadline = rt_now() + timeout_s;
			}
		}
		if (ri >= 0 && p[ri].revents) {
			ssize_t k = recv(rfd, r + got, rlen - got, MSG_DONTWAIT);

			if (k == 0)
				return tt_err_set(err, "peer closed the connection (it died or failed; see its log)");
			if (k < 0 && errno != EAGAIN && errno != EINTR)
				return tt_err_errno(err, "receiving from peer (it probably died)");
			if (k > 0) {
				got += (size_t)k;
				deadline = rt_now() + timeout_s;
			}
		}
	}
	return 0;
}

int rt_net_send_all(int fd, const void *buf, size_t len, double timeout_s, tt_err *err)
{
	return rt_net_exchange(fd, buf, len, -1, NULL, 0, timeout_s, err);
}

int rt_net_recv_all(int fd, void *buf, size_t len, double timeout_s, tt_err *err)
{
	return rt_net_exchange(-1, NULL, 0, fd, buf, len, timeout_s, err);
}

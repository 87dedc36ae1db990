/* SPDX-License-Identifier: MIT */
/* rt_net.h — the TCP edge of libtrainrt: listen, connect with backoff, and deadline-bounded
 * send/receive (including full-duplex exchange), so no socket wait can hang forever. */
#ifndef RT_NET_H
#define RT_NET_H

#include "tt_err.h"

#include <stddef.h>

/* Monotonic seconds. */
double rt_now(void);

/* Listens on ip:port (port 0 = any; ip NULL or "" = all addresses); *port_out gets the port. */
int rt_net_listen(const char *ip, int port, int *fd_out, int *port_out, tt_err *err);

/* Listens on port at host's address when it is one of this machine's, else on all addresses
 * (host not local, unresolvable, NULL). host may be a name: its IPv4 addresses are tried in turn,
 * loopback ones only when loopback_ok, because Debian maps a host's own name to 127.0.1.1, which
 * peers on other hosts cannot reach. bound (NULL or blen bytes) gets the address taken. */
int rt_net_listen_host(const char *host, int port, int loopback_ok, int *fd_out, int *port_out,
		       char *bound, size_t blen, tt_err *err);

/* Connects to host:port, retrying refused/unreachable attempts with backoff (10 ms doubling to
 * 500 ms) until timeout_s has passed. TCP_NODELAY is set on the result. */
int rt_net_connect(const char *host, int port, double timeout_s, int *fd_out, tt_err *err);

/* Accepts one connection within timeout_s. */
int rt_net_accept(int lfd, double timeout_s, int *fd_out, tt_err *err);

/* Local address of a connected socket as text (the address peers can reach us at). */
int rt_net_local_ip(int fd, char *ip, size_t len, tt_err *err);

/* IPv4 address of the first up, non-loopback interface whose name starts with one of the
 * comma-separated prefixes in ifnames ("=name" matches exactly; NULL or "" = any interface). */
int rt_net_iface_ip(const char *ifnames, char *ip, size_t len, tt_err *err);

/* Moves exactly len bytes; fails when the peer closes or nothing moves for timeout_s. */
int rt_net_send_all(int fd, const void *buf, size_t len, double timeout_s, tt_err *err);
int rt_net_recv_all(int fd, void *buf, size_t len, double timeout_s, tt_err *err);

/* Sends slen bytes on sfd while receiving rlen bytes on rfd, both at once (a ring step). */
int rt_net_exchange(int sfd, const void *sbuf, size_t slen, int rfd, void *rbuf, size_t rlen,
		    double timeout_s, tt_err *err);

#endif

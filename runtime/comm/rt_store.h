/* SPDX-License-Identifier: MIT */
/* rt_store.h — the rendezvous key-value store: rank 0 serves it over TCP, every rank (rank 0
 * included) talks to it as a client. A connection is admitted only after the server and then the
 * rank proved they hold the job key (see rt_store_core.h), so a rank never hands anything keyed to
 * a process squatting MASTER_PORT, and the server refuses a wrong key, protocol version or world
 * size with a message, so a mismatched or foreign rank fails at once instead of hanging. */
#ifndef RT_STORE_H
#define RT_STORE_H

#include "rt_store_core.h"
#include "tt_err.h"

#include <stddef.h>
#include <stdint.h>

/* How long a rank waits for the server's answer to its hello before it calls the listener a
 * stranger (the real server answers at once; a pending connection waits at most the cap's turn). */
#define RT_STORE_HELLO_WAIT_S 10.0
/* ... plus this per rank of the world: the store may have a whole world's hellos ahead of this one
 * (16,384 ranks: 18 s in all; BENCHMARKS.md, "Scale"). */
#define RT_STORE_HELLO_WAIT_PER_RANK_S 0.0005

/* A rank in a rendezvous waits this much longer than its timeout for the store's verdict, so that
 * the store, whose clock starts at the first arrival, is the one to give up and name who is
 * missing (rather than each rank timing out on its own, knowing nothing). */
#define RT_STORE_JOIN_GRACE_S 5.0

typedef struct rt_store_server rt_store_server;
typedef struct rt_store rt_store;

/* Starts the server thread listening on host:port: only on host's address when that is an
 * address of this machine, else on all addresses (see rt_net_listen_host for host and
 * loopback_ok; the handshake protects the store either way). key: the job key (rt_token_load). */
rt_store_server *rt_store_server_start(const char *host, int port, int loopback_ok, const char *key,
				       int world_size, tt_err *err);
/* Port the server listens on (useful with port 0). */
int rt_store_server_port(const rt_store_server *srv);
/* Address it listens on, dotted IPv4: "0.0.0.0" when on all addresses. */
const char *rt_store_server_addr(const rt_store_server *srv);
/* How many connections it accepted so far (each rank's, each node leader's, strays'). */
long rt_store_server_accepted(const rt_store_server *srv);
void rt_store_server_stop(rt_store_server *srv);

/* Connects (retrying until timeout_s while nothing listens or the server asks to retry) and runs
 * the handshake. A listener that cannot prove it holds key, does not answer within
 * RT_STORE_HELLO_WAIT_S (+ RT_STORE_HELLO_WAIT_PER_RANK_S per rank) or hangs up fails the call at once with a message naming host:port.
 * timeout_s also bounds every later call. */
rt_store *rt_store_connect(const char *host, int port, const char *key, int world_size,
			   double timeout_s, tt_err *err);
/* The same client, connecting only on first need (rt_store_open, or the first request below), so a
 * rank that meets through its node leader (rt_node.h) pays no handshake of its own unless it uses
 * the store; host is copied, key is the caller's and must outlive the store. */
rt_store *rt_store_lazy(const char *host, int port, const char *key, int world_size, double timeout_s, tt_err *err);
/* Connects a lazy store now (nothing when connected): 0, or -1 as rt_store_connect. */
int rt_store_open(rt_store *st, tt_err *err);
void rt_store_close(rt_store *st);

int rt_store_set(rt_store *st, const char *key, const void *val, size_t len, tt_err *err);
/* Blocks until key exists (or the timeout); copies up to cap bytes, *len = full length. */
int rt_store_get(rt_store *st, const char *key, void *val, size_t cap, size_t *len, tt_err *err);
/* Adds delta to the 64-bit counter at key (created at 0); fails, keeping the connection, when the
 * key holds something else or the sum overflows. */
int rt_store_add(rt_store *st, const char *key, int64_t delta, int64_t *result, tt_err *err);

/* The rendezvous named name (rt_store_core.h, JOIN): returns once every rank of the world joined
 * it; -1 with the store's one line when a rank did not join within the timeout of the first
 * (naming the ranks missing) or left after joining (naming it). */
int rt_store_join(rt_store *st, const char *name, int rank, tt_err *err);

/* A node leader's update of rendezvous name for its node's ranks (JOIN_NODE, rt_store_core.h):
 * sent without waiting, since the store answers only with the verdict. */
int rt_store_join_node(rt_store *st, const char *name, const struct rt_store_join_node *j, const unsigned char *bits,
		       tt_err *err);
/* Reads the store's one verdict on the rendezvous name the leader joined (once rt_store_fd is
 * readable, or waiting up to the timeout + RT_STORE_JOIN_GRACE_S): 0 when every rank came, else
 * -1 with the store's one line, as rt_store_join. */
int rt_store_verdict(rt_store *st, const char *name, tt_err *err);

/* The socket the client talks on (its local address is how peers reach this host); -1 before a
 * lazy store's rt_store_open. */
int rt_store_fd(const rt_store *st);

#endif

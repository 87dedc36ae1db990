/* SPDX-License-Identifier: MIT */
/* rt_node.h — a rendezvous through node leaders (issue #32): each node's local rank 0 (the leader)
 * gathers the node's other ranks over a Unix socket and joins the store's rendezvous for all of
 * them over its one connection (rt_store_join_node), so the store sees one connection and one
 * handshake per node, not per rank; the store's verdict (OK, or its one line naming the ranks that
 * did not come or left) goes back to every rank of the node unchanged, so every rank of the world
 * gets the same line. A rank that leaves its leader is named to all as leaving; a leader that dies
 * is named by the store to every other node, and its own ranks are told that their leader closed.
 *
 * The local channel: a Unix stream socket in the abstract namespace, named
 * "trainrt-node-" + hex(HMAC(job key, world, round name and node number)), so the name is unique per
 * job, step (the key derives from both, rt_token.h), world (the store's address: two worlds of one
 * step on a node do not meet), round and node, and no process without the key
 * can compute it before the leader binds it (abstract names have no permissions; a name in use
 * cannot be taken). Both ends check the other's SO_PEERCRED uid against their own: a process of
 * another user is refused (a follower tells nothing to a squatter), and a process of the same user
 * needs no more checking, since it can already read this rank's environment (the key) and ptrace
 * it. Abstract names are per network namespace: the ranks of a node must share one (the flat
 * rendezvous has no such need).
 *
 * A leader listens before anything of its start can fail (rank 0 serving the store, its own store
 * connection), and a leader that fails before it led hands its line to its node's ranks
 * (rt_node_refuse). A leader that never listened (it crashed, or failed before its socket) cannot
 * tell: a follower that has not reached it after RT_NODE_LEADER_WAIT_S asks, once a second, whether
 * its leader's process still runs on this node (rt_node_leader_gone) and fails at once, naming it,
 * when it does not; while it runs (slow to reach its start) the follower waits up to its timeout.
 *
 * Wire format (native endianness): follower -> leader struct rt_node_hello; leader -> follower
 * struct rt_node_verdict, then len bytes of the store's line (len 0 when the world met). */
#ifndef RT_NODE_H
#define RT_NODE_H

#include "rt_store.h"
#include "tt_err.h"

#include <stdint.h>

#define RT_NODE_MAGIC 0x444e5254u /* "TRND" */
/* A leader joins for its node once all its ranks came, or this long after it started waiting
 * (at most a quarter of the timeout) with those that did, then adds each later one. */
#define RT_NODE_GATHER_S 1.0
/* A follower that has not reached its leader this long starts asking whether the leader runs. */
#define RT_NODE_LEADER_WAIT_S 1.0

struct rt_node_hello {
	uint32_t magic, rank;
};

struct rt_node_verdict {
	uint32_t ok, len;
};

typedef struct rt_node rt_node;

/* The leader (rank first_rank) of node `node`, whose ranks are [first_rank, first_rank +
 * local_size): listens on the node's socket for the round named round (the rendezvous' name) of
 * the world named world (the store's "host:port"). */
rt_node *rt_node_listen(const char *key, const char *world, const char *round, int node, int first_rank, int local_size, tt_err *err);
/* Gathers the node's ranks, joins the rendezvous `round` for them through st (the leader's store
 * connection, timeout_s its TRAINRT_TIMEOUT) and hands the verdict to each: 0 when the whole world
 * met, else -1 with the line every rank gets (or why the leader could not take part). After a
 * failure it waits for its node's ranks that have not come yet, until timeout_s from its start, to
 * hand them the same line. */
int rt_node_lead(rt_node *n, rt_store *st, double timeout_s, tt_err *err);
/* A leader that failed before rt_node_lead: hands `line` (why, the leader's own error) to each of
 * its node's ranks that comes, until all came or timeout_s from now. Nothing after rt_node_lead,
 * which told them itself. */
void rt_node_refuse(rt_node *n, const char *line, double timeout_s);
/* Closes the listener and the followers' connections. */
void rt_node_close(rt_node *n);
/* After rt_node_lead met: the connection to local rank l (1 .. local_size - 1), kept open until
 * rt_node_close for the node's later exchanges (rt_node_send, rt_node_recv). */
int rt_node_peer(const rt_node *n, int local_rank);
/* After rt_node_lead met: the leader and the followers that came to it (a rank that joined the store
 * itself joins there) join the rendezvous `round` at once through the leader's store connection
 * st, a barrier over leaders for the node's later exchanges: as rt_store_join. */
int rt_node_barrier(const rt_node *n, rt_store *st, const char *round, double timeout_s, tt_err *err);

/* Whether a follower's leader is known to have gone: 1 when its process no longer runs, 0 when it
 * runs or nobody can tell. ctx is the caller's. */
typedef int (*rt_node_gone_fn)(void *ctx);

/* A follower (rank, not local rank 0, of node `node` whose leader is leader_rank): connects to the
 * leader's socket, retrying until timeout_s while nothing listens, or until gone(ctx) says the
 * leader is gone (asked after RT_NODE_LEADER_WAIT_S, once a second; gone may be NULL), checks that
 * it runs as this user, and says its rank; *fd then waits for the verdict. */
int rt_node_follow_start(const char *key, const char *world, const char *round, int node, int rank, int leader_rank, double timeout_s,
			 rt_node_gone_fn gone, void *ctx, int *fd, tt_err *err);
/* Waits for the verdict on fd (started by rt_node_follow_start) and closes it, unless the world met
 * and keep is set (fd is then the caller's, for rt_node_send/recv with the leader): 0 when the
 * world met, else -1 with the line every rank gets, or the leader's death. */
int rt_node_follow_verdict(int fd, const char *round, int leader_rank, double timeout_s, int keep, tt_err *err);
/* Both. */
int rt_node_follow(const char *key, const char *world, const char *round, int node, int rank, int leader_rank, double timeout_s,
		   rt_node_gone_fn gone, void *ctx, tt_err *err);

/* Who a launched world's leader is, by the variables its launcher put in every rank's environment
 * at exec ("NAME=value"): RANK (the leader's), MASTER_ADDR, MASTER_PORT, and SLURM_JOB_ID and
 * SLURM_STEP_ID where set. */
#define RT_NODE_WHOM_MAX 5
struct rt_node_whom {
	char want[RT_NODE_WHOM_MAX][320]; /* [0] is "RANK=<leader>" */
	char mine[32];			  /* "RANK=<this rank>" */
	int n;
};
/* Fills w from this process's environment for rank, whose leader is leader_rank. */
void rt_node_whom_init(struct rt_node_whom *w, int rank, int leader_rank);
/* Whether the environment block env (len bytes of NUL-ended "NAME=value" strings, as
 * /proc/PID/environ) holds each of the n strings want (with mine instead of want[0] if mine is
 * not NULL). */
int rt_node_env_has(const char *env, size_t len, const struct rt_node_whom *w, const char *mine);
/* rt_node_gone_fn over /proc (ctx: a struct rt_node_whom): 1 when no process of this user on this
 * node has the leader's variables in its environment at exec. Tells only where that proves
 * something: this process's own environment at exec has its variables (the launcher put them
 * there, as it did for the leader: not set by the program itself) and its parent is visible (no
 * private PID namespace hides the leader); 0 otherwise. */
int rt_node_leader_gone(void *ctx);

/* Waits until every follower connection kept after the rendezvous closed (a follower's goodbye at
 * its finalize), up to timeout_s: 0 when all did, else -1. */
int rt_node_goodbyes(const rt_node *n, double timeout_s);

/* One message of len bytes (at most RT_STORE_MAX_VAL) between a leader and a follower, framed by
 * its length; rt_node_recv takes up to cap bytes (longer fails) and says how many in *len.
 *
 * Besides these data frames the connection carries notes for the agreement after the backend's
 * set-up (comm.c, issue #32): a follower's DONE (its set-up ended: empty when it worked, else its
 * error), the leader's STOP (its own set-up failed: stop waiting for its data) and the leader's
 * DONE (the verdict every rank of the world gets: empty when the world is up). rt_node_recv
 * fails on a note with RT_NODE_ENDED and leaves it in the socket, so an end waiting for data from
 * a peer that gave up stops at once and the agreement still reads the note. */
enum rt_node_frame { RT_NODE_DATA = 0, RT_NODE_STOP = 1, RT_NODE_DONE = 2 };
#define RT_NODE_NOTE_MAX 2048
#define RT_NODE_ENDED "its set-up ended before this exchange (the agreement after the set-up says why)"
int rt_node_send(int fd, const void *buf, size_t len, double timeout_s, tt_err *err);
int rt_node_recv(int fd, void *buf, size_t cap, size_t *len, double timeout_s, tt_err *err);
/* A frame of type (enum rt_node_frame; a note at most RT_NODE_NOTE_MAX bytes, sent in one write). */
int rt_node_send_frame(int fd, int type, const void *buf, size_t len, double timeout_s, tt_err *err);
/* The next frame of any type, its type in *type. */
int rt_node_recv_frame(int fd, int *type, void *buf, size_t cap, size_t *len, double timeout_s, tt_err *err);
/* The next note (data frames before it, left from an exchange one end gave up, are dropped): its
 * type in *type and its text, NUL-ended, in buf (cap bytes); within timeout_s in all. */
int rt_node_recv_note(int fd, int *type, char *buf, size_t cap, double timeout_s, tt_err *err);

/* The agreement after the backend's set-up names at most this many ranks that ended during it. */
#define RT_NODE_UP_GONE_MAX 8
/* The one line of that agreement's verdict when it found problems (cap bytes into out): the ranks
 * that ended during the set-up, the cause of every other rank's failure, named one by one
 * (gone[0 .. shown - 1] of ngone, each "rank R (LOCAL_RANK l) on node N (host H)"); when none
 * did, the first other problem reported (first, "rank R: why") of nerrors. */
void rt_node_up_line(char *out, size_t cap, int64_t ngone, int shown, const char *const *gone, int64_t nerrors,
		     const char *first);

#endif

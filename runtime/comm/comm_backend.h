/* SPDX-License-Identifier: MIT */
/* comm_backend.h — the one interface every transport implements (shm, tcp, hierarchical, nccl),
 * and the facts about the job they are built from. comm.c owns queueing, ordering and errors;
 * a backend only moves and reduces bytes for one collective at a time, in issue order, and moves
 * point-to-point messages, one at a time per peer and direction (see send/recv below). */
#ifndef COMM_BACKEND_H
#define COMM_BACKEND_H

#include "rt_store.h"
#include "trainrt.h"
#include "tt_err.h"

#include <stddef.h>
#include <stdint.h>

typedef enum rt_kind {
	RT_ALLREDUCE = 1,
	RT_ALLGATHER,
	RT_REDUCESCATTER,
	RT_BROADCAST,
	RT_BARRIER,
	RT_SEND, /* point-to-point, only through the collective queue on in-order backends (nccl) */
	RT_RECV,
	RT_SENDRECV,
} rt_kind;

/* What every rank must agree on for one operation; peers compare it before moving data. */
typedef struct rt_op_hdr {
	uint32_t kind;
	uint32_t dtype;
	uint32_t redop;
	int32_t root;
	uint64_t count;
	uint64_t seq;
} rt_op_hdr;

/* What both ends of one point-to-point message must agree on; the receiver compares. seq counts
 * the messages from one rank to another (both ends count), so a lost or extra one shows. */
typedef struct rt_p2p_hdr {
	uint32_t dtype;
	int32_t tag;
	uint64_t count;
	uint64_t seq;
} rt_p2p_hdr;

typedef struct rt_op {
	rt_op_hdr hdr;
	const void *send;
	void *recv; /* broadcast: the buffer; allreduce/reducescatter may have send == recv */
	/* Optional (trainrt_iallreduce_after): called before the data moves, with the backend's CUDA
	 * stream (device backends, after the header check) or NULL (host backends, by rt_backend_run). */
	trainrt_ready_fn ready;
	void *ready_arg;
	/* RT_SEND (send to peer[0]), RT_RECV (recv from peer[0]), RT_SENDRECV (both: send to peer[0],
	 * recv from peer[1]); msg[i] describes the message with peer[i]. */
	int peer[2];
	rt_p2p_hdr msg[2];
} rt_op;

/* The job as a backend sees it. Ranks of a node are contiguous, every node has local_size. */
typedef struct rt_world {
	int rank, size;
	int local_rank, local_size;
	int node, nnodes;
	rt_store *store;
	const char *key;    /* the job key: connections between ranks prove they hold it */
	uint64_t key_label; /* a public label derived from it, for names others can see */
	double timeout;
	size_t arena_bytes; /* per rank, for trainrt_alloc in shared memory */
	int tcp_ring_only;  /* TRAINRT_TCP_ALLREDUCE=ring: no recursive doubling */
	int master_is_name; /* MASTER_ADDR is a host name, not an IP literal */
	/* A group (trainrt_comm_split) is a world of its own: ns prefixes its store keys (and names
	 * its segments) so they never meet the parent's; world_ranks[r] is the world rank of its rank
	 * r, for messages. The world itself has ns "" and world_ranks NULL. */
	const char *ns;
	const int *world_ranks;
	/* Whether the world started through node leaders (rt_node.h; never a group's world): the
	 * backends' node-wide exchanges then go over the leader's connections, not the store
	 * (rt_world_node_share, rt_world_node_publish). node_fd: a follower's connection to its
	 * leader; node_leader: the leader's listener, whose peers are its followers. */
	int via_leaders;
	int node_fd;
	const struct rt_node *node_leader;
} rt_world;

/* The world rank of rank r of w (what messages name). */
int rt_world_name(const rt_world *w, int r);

/* Formats a store key in w's namespace: ns + the formatted rest; -1 when it does not fit. */
int rt_world_key(const rt_world *w, char *key, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Collective over the ranks of w's node, through node leaders only (w->via_leaders): the leader
 * hands len bytes of buf (at most cap) to each of its node's ranks, a follower takes them into buf
 * and says how many in *len. So a follower learns what its node's ranks share (the shm segment's
 * name, the node's address) without a store connection. */
int rt_world_node_share(const rt_world *w, void *buf, size_t cap, size_t *len, tt_err *err);
/* Publishes len bytes of val under the store key (in w's namespace already). Through node leaders
 * collective over the node: a follower hands key and value to its leader, which publishes its
 * node's keys over its own store connection; else each rank sets its key itself. */
int rt_world_node_publish(const rt_world *w, const char *key, const void *val, size_t len, tt_err *err);

typedef struct rt_backend rt_backend;

struct rt_backend_ops {
	const char *name;
	int on_device;
	int (*allreduce)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*allgather)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*reducescatter)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*broadcast)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*barrier)(rt_backend *be, const rt_op *op, tt_err *err);
	/* Point-to-point: one message of h->count elements to or from peer (a rank of this backend's
	 * world). The receiver compares h with the sender's and fails both on a difference. Sends and
	 * receives with one peer in one direction come one at a time, in order; other peers and the
	 * other direction may run at the same time on other threads, and so may a collective (the
	 * host backends), unless p2p_in_order: then comm.c queues them with the collectives (nccl,
	 * whose communicator takes one call at a time) and sendrecv runs an exchange as one. */
	int (*send)(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err);
	int (*recv)(rt_backend *be, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err);
	int p2p_in_order;
	int (*sendrecv)(rt_backend *be, const rt_op *op, tt_err *err);
	/* Optional, under send's rules: sends the message at once when the channel can take all of
	 * it without the receiver (1), else does nothing (0); -1 on an error. trainrt_isend then
	 * completes on the caller's thread instead of handing the message to its peer's thread. */
	int (*try_send)(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err);
	/* Wakes every point-to-point wait with an error once the communicator has failed, so threads
	 * blocked on a peer end at once and the peers see the failure (optional). */
	void (*abort)(rt_backend *be, tt_err *err);
	/* Builds the group's backend *out from the parent's; collective over the parent: every rank of
	 * it calls, one in no group with child NULL (and gets *out NULL). Optional: without it
	 * comm_group.c picks a host backend for the group. */
	int (*split)(rt_backend *parent, const rt_world *child, int color, int key, rt_backend **out, tt_err *err);
	/* An all-gather (op: RT_ALLGATHER of float32) whose buffers are in host memory although the
	 * backend works on device memory: for records of at most RT_HOST_ALLGATHER_MAX bytes per rank
	 * (trainrt_comm_split's colors). NULL for host backends, whose allgather takes host memory. */
	int (*host_allgather)(rt_backend *be, const rt_op *op, tt_err *err);
	/* Backend-owned memory for trainrt_alloc; NULL alloc means plain aligned host memory. */
	void *(*alloc)(rt_backend *be, size_t bytes, tt_err *err);
	void (*free)(rt_backend *be, void *ptr);
	void (*destroy)(rt_backend *be);
};

/* Every backend struct starts with this. */
struct rt_backend {
	const struct rt_backend_ops *ops;
};

#define RT_HOST_ALLGATHER_MAX sizeof(rt_op_hdr)

/* Runs op through be's matching entry point; for host backends it first calls op->ready. */
int rt_backend_run(rt_backend *be, const rt_op *op, tt_err *err);

/* Compares a peer's header with ours; fills err naming the first field that differs. */
int rt_op_hdr_check(const rt_op_hdr *mine, const rt_op_hdr *peer, int peer_rank, tt_err *err);

/* The header check without an all-gather (the nccl backend, where one spans every rank): each
 * rank puts its header's fields and their complements into one all-reduce with MAX; then every
 * rank holds the largest value of each field and the complement of the smallest, and all ranks
 * agree exactly when both are its own (rt_op_hdr_bounds_agree). The cost is that of a small
 * all-reduce, O(log n) on a tree, whatever the world; only a disagreement, after which every rank
 * fails, needs the headers themselves to name the rank that differs. */
#define RT_OP_HDR_BOUNDS 12 /* 6 fields, then their complements */
void rt_op_hdr_bounds(const rt_op_hdr *h, uint64_t out[RT_OP_HDR_BOUNDS]);
int rt_op_hdr_bounds_agree(const rt_op_hdr *mine, const uint64_t reduced[RT_OP_HDR_BOUNDS]);

/* Compares the header of a message that arrived from rank `from` (a world rank) with the one this
 * rank receives with; fills err naming both when they differ. */
int rt_p2p_hdr_check(const rt_p2p_hdr *mine, const rt_p2p_hdr *sent, int from, tt_err *err);

/* Bytes this rank (rank of n) sends for op, as a ring moves them (the measure busbw uses): an
 * all-reduce 2(n-1)/n of the buffer, an all-gather or reduce-scatter (n-1) blocks of count, a
 * broadcast the buffer on every rank but the ring's last, a message its size when sending. */
uint64_t rt_op_wire_bytes(const rt_op *op, int n, int rank);

/* Half-open element range [*lo, *hi) of part i when count elements are split into n parts
 * as evenly as possible (the first count % n parts get one more). */
void rt_split(size_t count, int n, int i, size_t *lo, size_t *hi);

/* Constructors; each is collective over the ranks it connects. */
rt_backend *rt_shm_create(const rt_world *w, tt_err *err);
/* Ring among n members (this process is member idx); tag separates stores keys of several rings.
 * members[i] is the global rank of member i (for messages). */
rt_backend *rt_tcp_create(const rt_world *w, int idx, int n, const int *members, const char *tag,
			  tt_err *err);
rt_backend *rt_hier_create(const rt_world *w, tt_err *err);
/* A ring over every rank of w, with point-to-point connections between any two of them. */
rt_backend *rt_tcp_world_create(const rt_world *w, tt_err *err);
/* Fails every local rank's current and later shm operations with err's message (used when a
 * failure outside the node's segment, e.g. on the TCP ring, must stop the node's ranks). */
void rt_shm_abort(rt_backend *shm, tt_err *err);
/* Closes the ring's connections so the other nodes' leaders fail at once instead of waiting
 * for their timeout (used when this node failed inside shared memory). */
void rt_tcp_abort(rt_backend *tcp);
#ifdef TT_HAVE_NCCL
rt_backend *rt_nccl_create(const rt_world *w, tt_err *err);
#endif

/* Point-to-point over TCP between any two ranks of a world (p2p_net.c), for the tcp and
 * hierarchical backends: every rank listens (address in the store under its world's ns) and a
 * pair connects on first use, the lower rank dialling. */
typedef struct rt_p2p_net rt_p2p_net;
rt_p2p_net *rt_p2p_net_create(const rt_world *w, tt_err *err);
int rt_p2p_net_send(rt_p2p_net *p, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err);
int rt_p2p_net_recv(rt_p2p_net *p, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err);
/* Shuts every connection down so blocked sends and receives (here and at the peers) fail now. */
void rt_p2p_net_abort(rt_p2p_net *p);
void rt_p2p_net_destroy(rt_p2p_net *p);

#endif

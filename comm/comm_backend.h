/* SPDX-License-Identifier: MIT */
/* comm_backend.h — the one interface every transport implements (shm, tcp, hierarchical, nccl),
 * and the facts about the job they are built from. comm.c owns queueing, ordering and errors;
 * a backend only moves and reduces bytes for one operation at a time, in issue order. */
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

typedef struct rt_op {
	rt_op_hdr hdr;
	const void *send;
	void *recv; /* broadcast: the buffer; allreduce/reducescatter may have send == recv */
	/* Optional (trainrt_iallreduce_after): called before the data moves, with the backend's CUDA
	 * stream (device backends, after the header check) or NULL (host backends, by rt_backend_run). */
	trainrt_ready_fn ready;
	void *ready_arg;
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
	int master_is_name; /* MASTER_ADDR is a host name, not an IP literal */
} rt_world;

typedef struct rt_backend rt_backend;

struct rt_backend_ops {
	const char *name;
	int on_device;
	int (*allreduce)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*allgather)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*reducescatter)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*broadcast)(rt_backend *be, const rt_op *op, tt_err *err);
	int (*barrier)(rt_backend *be, const rt_op *op, tt_err *err);
	/* Backend-owned memory for trainrt_alloc; NULL alloc means plain aligned host memory. */
	void *(*alloc)(rt_backend *be, size_t bytes, tt_err *err);
	void (*free)(rt_backend *be, void *ptr);
	void (*destroy)(rt_backend *be);
};

/* Every backend struct starts with this. */
struct rt_backend {
	const struct rt_backend_ops *ops;
};

/* Runs op through be's matching entry point; for host backends it first calls op->ready. */
int rt_backend_run(rt_backend *be, const rt_op *op, tt_err *err);

/* Compares a peer's header with ours; fills err naming the first field that differs. */
int rt_op_hdr_check(const rt_op_hdr *mine, const rt_op_hdr *peer, int peer_rank, tt_err *err);

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
/* Fails every local rank's current and later shm operations with err's message (used when a
 * failure outside the node's segment, e.g. on the TCP ring, must stop the node's ranks). */
void rt_shm_abort(rt_backend *shm, tt_err *err);
/* Closes the ring's connections so the other nodes' leaders fail at once instead of waiting
 * for their timeout (used when this node failed inside shared memory). */
void rt_tcp_abort(rt_backend *tcp);
#ifdef TT_HAVE_NCCL
rt_backend *rt_nccl_create(const rt_world *w, tt_err *err);
#endif

#endif

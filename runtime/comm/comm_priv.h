/* SPDX-License-Identifier: MIT */
/* comm_priv.h — the communicator's state, shared by the files that implement trainrt.h: comm.c
 * (setup, collectives, the progress thread), comm_p2p.c (point-to-point and its per-peer
 * threads) and comm_group.c (trainrt_comm_split). Nothing outside those files includes it. */
#ifndef COMM_PRIV_H
#define COMM_PRIV_H

#include "comm_backend.h"
#include "rt_node.h"
#include "rt_store.h"
#include "rt_token.h"
#include "trainrt.h"

#include <pthread.h>

struct trainrt_req {
	rt_op op;
	int done;
	int rc;
	trainrt_req *next;
};

/* The queue of one peer and direction, run in order by its own thread (host backends). */
typedef struct rt_chan {
	pthread_t thread;
	int started;
	int peer, sending;
	int busy; /* a blocking call runs this queue's next message on its own thread (comm_p2p.c) */
	trainrt_req *head, *tail;
	struct trainrt_comm *comm;
} rt_chan;

struct trainrt_comm {
	rt_world w;
	char key[RT_KEY_TEXT]; /* the job key (rt_token.h) */
	rt_store_server *server;
	/* The start through node leaders (TRAINRT_RENDEZVOUS, comm.c): a leader's node, kept until
	 * finalize, whose followers' connections closing is their goodbye; a follower's connection
	 * to its leader (-1 when none). */
	int node_rdv;
	char store_at[300]; /* the store's "host:port", naming this world's node sockets */
	rt_node *node;
	int node_fd;
	rt_backend *be;
	uint64_t seq;
	uint64_t bytes_sent; /* by completed operations (rt_op_wire_bytes), under lock */

	pthread_t progress;
	int progress_started;
	pthread_mutex_t lock;
	pthread_cond_t cond; /* queue changed or a request finished */
	trainrt_req *head, *tail;
	int stopping;
	int failed;
	int inline_busy; /* a blocking call (or a split) runs on the caller's thread */
	int pmix;
	char errmsg[1100];

	/* Point-to-point (comm_p2p.c): messages counted per peer and direction, and the per-peer
	 * threads (2 * size entries: receiving from peer p at 2p, sending to it at 2p + 1), allocated
	 * by rt_comm_start and joined by trainrt_finalize (comm.c, so comm_p2p.c only calls comm.c). */
	uint64_t *p2p_seq;
	rt_chan *chans;

	/* Groups (comm_group.c): a group shares its parent's store and must be finalized first. */
	int is_group;
	int world_rank, world_node; /* this rank in the world, and its node there */
	uint64_t nsplit;            /* splits of this communicator so far (names the next group) */
	char ns[256];               /* w.ns points here */
	int *world_ranks;           /* w.world_ranks points here (groups) */
};

/* Fails c with a formatted message: bad arguments (ranks would drift apart otherwise). */
void rt_comm_error(trainrt_comm *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends r to c's queue for the progress thread (a collective gets the next sequence number);
 * returns r, or NULL (r freed) when c has failed. */
trainrt_req *rt_comm_enqueue(trainrt_comm *c, trainrt_req *r, int collective);

/* Runs op on c's backend, with c->lock held on entry and exit and released while it runs, unless
 * c has failed (-1); records a failure (rt_comm_fail_locked) or the bytes sent. */
int rt_comm_run_locked(trainrt_comm *c, const rt_op *op);

/* Records msg as the error that failed c (unless it failed before) and wakes every
 * point-to-point wait of its backend. Call with c->lock held. */
void rt_comm_fail_locked(trainrt_comm *c, const char *msg);

/* Waits until nothing is queued or running on c's progress thread, then holds it: the caller
 * runs one operation of c's backend alone (a split). Returns -1 when c has failed. */
int rt_comm_hold(trainrt_comm *c);
void rt_comm_release(trainrt_comm *c);

/* A group's communicator in two steps: rt_comm_new_group allocates it (is_group set, w.ns
 * pointing at its ns) so the caller fills w, ns, world_ranks and builds the backend on &c->w,
 * which backends may keep; rt_comm_start starts its threads. After a failure of either, mark it
 * failed and trainrt_finalize it. */
trainrt_comm *rt_comm_new_group(void);
int rt_comm_start(trainrt_comm *c, tt_err *err);

#endif

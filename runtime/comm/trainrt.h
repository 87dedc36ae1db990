/* SPDX-License-Identifier: MIT */
/* trainrt.h — libtrainrt's communicator: rendezvous of the ranks of one training job, the
 * collectives (all-reduce, all-gather, reduce-scatter, broadcast, barrier) a data-parallel trainer
 * needs, groups of ranks (for tensor, pipeline and data parallelism side by side) and
 * point-to-point messages, over shared memory, TCP or NCCL. One opaque trainrt_comm per process
 * holds the world's state; each group is a trainrt_comm of its own.
 *
 * Contract every rank must keep: all ranks issue the same collectives, with the same count, dtype,
 * op and root, in the same order. Each operation carries a header (op, dtype, count, root,
 * sequence number) that peers compare; a mismatch fails the operation on every rank with an error
 * instead of corrupting data or hanging. A failed communicator stays failed: every later call
 * returns -1 with the first error (trainrt_last_error), so the trainer exits cleanly. */
#ifndef TRAINRT_H
#define TRAINRT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct trainrt_comm trainrt_comm;
typedef struct trainrt_req trainrt_req;

typedef enum trainrt_dtype {
	TRAINRT_FLOAT32 = 0,
	/* bfloat16 stored as uint16_t (the top half of an IEEE float32); reductions accumulate in
	 * float32 and round to nearest even once, so a sum over n ranks is within n/2 bf16 ulp of
	 * the exact sum of the inputs. */
	TRAINRT_BF16 = 1,
} trainrt_dtype;

typedef enum trainrt_redop {
	TRAINRT_SUM = 0,
	TRAINRT_AVG = 1, /* sum divided by the world size (in float32, then rounded) */
	TRAINRT_MAX = 2,
} trainrt_redop;

/* Size in bytes of one element of dtype (4 or 2). */
size_t trainrt_dtype_size(trainrt_dtype dtype);

/* Rendezvous and communicator setup; collective over all ranks (every rank must call it).
 *
 * Launch modes, chosen from the environment:
 *  - PMIx (srun --mpi=pmix: PMIX_RANK/PMIX_NAMESPACE set): rank, size and node-local rank come
 *    from PMIx; rank 0 publishes the store address through PMIx_Put/Commit/Fence, so MASTER_ADDR
 *    and MASTER_PORT are not needed.
 *  - env contract (torchrun / train-run / the SPANK plugin): RANK, WORLD_SIZE, LOCAL_RANK,
 *    LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT. Rank 0 serves a TCP key-value store at
 *    MASTER_ADDR:MASTER_PORT; the others connect with backoff until TRAINRT_TIMEOUT.
 * Ranks of one node must be contiguous (RANK - LOCAL_RANK is the node's first rank), as the
 * block layout of train-run and torchrun gives.
 *
 * Knobs (all optional):
 *  TRAINRT_BACKEND   auto (default) | shm | tcp | nccl. auto: nccl when built with CUDA and a GPU
 *                    is visible; else shm when all ranks share one node; else hierarchical
 *                    (shm inside a node + tcp between nodes).
 *  TRAINRT_TIMEOUT   seconds a rank waits for a peer before failing (default 300; at least 1).
 *  TRAINRT_TOKEN     the user's secret, at least 16 bytes. When unset, TRAINRT_TOKEN_FILE or
 *                    ~/.config/trainrt/token (created 0600 on first use; must be owned by the user
 *                    and not readable by others) is read. Every rank derives the job key from it
 *                    and the Slurm job and step ids (HKDF-SHA256); the store and every link
 *                    between ranks admit only a peer that proves it holds the key (HMAC-SHA256
 *                    challenge-response, both ways, the connecting rank first), so the secret
 *                    never crosses the wire and other jobs and users can neither join nor
 *                    inject. Authentication, not encryption: see man 3 trainrt.
 *  TRAINRT_SOCKET_IFNAME  interface(s) the TCP ring listens on (prefixes, "=name" exact, comma-
 *                    separated); default NCCL_SOCKET_IFNAME, else the address used to reach the store.
 *  TRAINRT_SHM_ARENA_MB  bytes per rank (MiB) that trainrt_alloc may hand out from the node's
 *                    shared segment (default 256; the segment is sparse, pages cost nothing
 *                    until touched, but /dev/shm must be able to hold what is touched).
 *
 * Returns NULL on failure with a one-sentence message ("trainrt: ...") in errbuf. */
trainrt_comm *trainrt_init(char *errbuf, size_t errlen);

/* Where the caller's collective buffers live. trainrt_init is trainrt_init_for(TRAINRT_BUFFERS_ANY):
 * auto picks nccl whenever a GPU is visible. A CPU trainer on a GPU node asks for HOST (auto then
 * never picks nccl, and TRAINRT_BACKEND=nccl is refused with a message); a GPU trainer asks for
 * DEVICE (auto picks nccl or fails with a message saying why it cannot). */
typedef enum trainrt_buffers {
	TRAINRT_BUFFERS_ANY = 0,
	TRAINRT_BUFFERS_HOST = 1,
	TRAINRT_BUFFERS_DEVICE = 2,
} trainrt_buffers;

trainrt_comm *trainrt_init_for(trainrt_buffers where, char *errbuf, size_t errlen);

/* Tears the communicator down (runs queued operations, frees shared memory). NULL is a no-op.
 * Rank 0 keeps serving the store until every rank has finalized (at most TRAINRT_TIMEOUT) unless
 * the communicator failed. A rank that finalizes early makes its peers' next operation fail. */
void trainrt_finalize(trainrt_comm *comm);

int trainrt_rank(const trainrt_comm *comm);
int trainrt_world_size(const trainrt_comm *comm);
int trainrt_local_rank(const trainrt_comm *comm);
int trainrt_local_world_size(const trainrt_comm *comm);

/* "shm", "tcp", "hier" (shm + tcp) or "nccl". */
const char *trainrt_backend_name(const trainrt_comm *comm);

/* 1 when collective buffers must be device (CUDA) memory — the nccl backend — else 0. */
int trainrt_buffers_on_device(const trainrt_comm *comm);

/* The CUDA device the nccl backend uses for a node-local rank: local_rank modulo the devices
 * visible to the process (0 when none is, or CUDA is not installed). A trainer computing on the
 * GPU uses the same, so its buffers are where NCCL runs. Needs no communicator. */
int trainrt_gpu_device(int local_rank);

/* The error that failed this communicator, "trainrt: rank N: ..."; else the last non-fatal one
 * (an exhausted arena, a store timeout); "" when none. */
const char *trainrt_last_error(const trainrt_comm *comm);

/* Bytes this rank has sent in the operations of comm that completed, counted as a ring moves them
 * (the measure of busbw, also for a recursive-doubling all-reduce): an all-reduce of B bytes on n ranks 2(n-1)/n*B, an all-gather or
 * reduce-scatter (n-1) blocks of count, a broadcast B on every rank but the ring's last, a send its
 * size. For accounting what a training step costs; 0 for NULL. */
uint64_t trainrt_bytes_sent(trainrt_comm *comm);

/* Memory the backend works on directly: with shm/hier it lies in the node's shared segment
 * (NUMA-local to the caller by first touch), so peers read it without staging copies; with tcp
 * it is ordinary host memory; with nccl device memory. 64-byte aligned. NULL (and last_error)
 * when out of arena. Any buffer works with every collective; these are only faster. */
void *trainrt_alloc(trainrt_comm *comm, size_t bytes);
void trainrt_free(trainrt_comm *comm, void *ptr);

/* Blocking collectives; 0 on success, -1 on failure (see trainrt_last_error). count is in
 * elements; 0 is allowed. sendbuf == recvbuf means in place where it makes sense.
 *  allreduce:     recv[i] = op over ranks of send[i], i < count.
 *  allgather:     recv[r*count + i] = send of rank r [i]; recv holds world_size*count.
 *  reducescatter: recv[i] = op over ranks of send[rank*count + i]; send holds world_size*count
 *                 (counts not divisible by anything are fine: count is the per-rank part).
 *  broadcast:     buf of every rank = buf of root.
 *  barrier:       returns when every rank has entered it. */
int trainrt_allreduce(trainrt_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
		      trainrt_dtype dtype, trainrt_redop op);
int trainrt_allgather(trainrt_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
		      trainrt_dtype dtype);
int trainrt_reducescatter(trainrt_comm *comm, const void *sendbuf, void *recvbuf, size_t count,
			  trainrt_dtype dtype, trainrt_redop op);
int trainrt_broadcast(trainrt_comm *comm, void *buf, size_t count, trainrt_dtype dtype, int root);
int trainrt_barrier(trainrt_comm *comm);

/* Asynchronous forms: queue the operation for the communicator's progress thread and return at
 * once, so compute overlaps communication. Operations run in issue order. Buffers must stay
 * valid and untouched until trainrt_wait returns. NULL on failure (see last_error). */
trainrt_req *trainrt_iallreduce(trainrt_comm *comm, const void *sendbuf, void *recvbuf,
				size_t count, trainrt_dtype dtype, trainrt_redop op);
trainrt_req *trainrt_iallgather(trainrt_comm *comm, const void *sendbuf, void *recvbuf,
				size_t count, trainrt_dtype dtype);
trainrt_req *trainrt_ireducescatter(trainrt_comm *comm, const void *sendbuf, void *recvbuf,
				    size_t count, trainrt_dtype dtype, trainrt_redop op);
trainrt_req *trainrt_ibroadcast(trainrt_comm *comm, void *buf, size_t count, trainrt_dtype dtype,
				int root);

/* An all-reduce ordered after GPU work that the caller has queued but not waited for, so the host
 * goes on queueing (a DDP trainer queues the rest of backward while a gradient bucket's all-reduce
 * waits for the kernels that produce it). ready(arg, stream) is called on the thread that runs the
 * operation, once every rank has issued it and before any data moves. With the nccl backend, stream
 * is the backend's CUDA stream (a cudaStream_t): make it wait for your work there, e.g.
 * cudaStreamWaitEvent(stream, event_recorded_after_your_kernels, 0), and return 0; the all-reduce
 * then starts on the GPU as soon as your kernels finish. With host backends stream is NULL and the
 * buffer must be ready when ready returns (e.g. cudaEventSynchronize). A non-zero return fails the
 * operation and the communicator. ready NULL is trainrt_iallreduce. The caller's own stream must
 * not touch the buffer again before trainrt_wait returns. */
typedef int (*trainrt_ready_fn)(void *arg, void *stream);
trainrt_req *trainrt_iallreduce_after(trainrt_comm *comm, const void *sendbuf, void *recvbuf,
				      size_t count, trainrt_dtype dtype, trainrt_redop op,
				      trainrt_ready_fn ready, void *arg);

/* 1 when req (collective or point-to-point) has completed (successfully or not), 0 while it
 * runs. Never blocks. */
int trainrt_test(trainrt_comm *comm, trainrt_req *req);
/* Blocks until req completes, frees it; 0 on success, -1 on failure. */
int trainrt_wait(trainrt_comm *comm, trainrt_req *req);

/* ---- groups ------------------------------------------------------------------------------ */

/* The color of a rank that joins no group. */
#define TRAINRT_UNDEFINED (-1)

/* Splits comm into groups, like MPI_Comm_split and ncclCommSplit: the ranks that pass the same
 * color >= 0 form one new communicator, *group, ranked by key (ties: by rank in comm); a rank
 * passing TRAINRT_UNDEFINED gets *group = NULL. Collective over comm: every rank calls it, after
 * the same operations of comm (it runs after the queued ones). Returns 0, or -1 with comm's
 * last_error (comm is then failed: a rank that did not take part within TRAINRT_TIMEOUT is named).
 * A group is a full communicator (collectives, point-to-point, alloc, store, split) with the
 * parent's settings; it takes the best path for where its ranks are: shared memory when all are
 * on one node (even when comm spans nodes), shm + TCP when every node holds the same number of
 * them in consecutive group ranks, else a TCP ring; with nccl, ncclCommSplit. Under
 * TRAINRT_BACKEND=tcp groups use TCP too. Its local rank and size count its ranks on this node.
 * Finalize every group before its parent. */
int trainrt_comm_split(trainrt_comm *comm, int color, int key, trainrt_comm **group);

/* ---- point-to-point ------------------------------------------------------------------------ */

/* Sends count elements to rank peer of comm, or receives them from it (peer != own rank).
 * Ordering rules: the k-th receive a rank posts from peer matches the k-th send peer posted to
 * it (non-overtaking, one ordered stream per pair and direction); count, dtype and tag of the two
 * must be equal — the tag is checked, it does not select — else both communicators fail with a
 * message naming both. Different peers, and the two directions with one peer, are independent
 * of each other and of collectives (host backends: a thread per peer and direction, started on
 * first use), so a rank inside a collective still delivers the messages it posted. A blocking send
 * may wait until the peer receives (messages larger than the channel: 1 MiB in shared memory, the
 * socket buffers over TCP): two ranks that both send first should use the asynchronous forms or
 * trainrt_sendrecv. With the nccl backend messages run in issue order with the collectives on the
 * backend's stream (NCCL's own rule): order the calls so that they match, or use
 * trainrt_sendrecv for an exchange. A peer that dies or stops fails the waiting rank within
 * TRAINRT_TIMEOUT with the peer named, and the communicator stays failed as with collectives.
 * Buffers of the asynchronous forms must stay valid and untouched until trainrt_wait. */
int trainrt_send(trainrt_comm *comm, const void *buf, size_t count, trainrt_dtype dtype, int peer, int tag);
int trainrt_recv(trainrt_comm *comm, void *buf, size_t count, trainrt_dtype dtype, int peer, int tag);
trainrt_req *trainrt_isend(trainrt_comm *comm, const void *buf, size_t count, trainrt_dtype dtype, int peer,
			   int tag);
trainrt_req *trainrt_irecv(trainrt_comm *comm, void *buf, size_t count, trainrt_dtype dtype, int peer, int tag);
/* Sends sendcount elements to dest and receives recvcount from source at the same time (dest and
 * source may be one rank): the exchange of a ring shift or of neighbouring pipeline stages. */
int trainrt_sendrecv(trainrt_comm *comm, const void *sendbuf, size_t sendcount, int dest, void *recvbuf,
		     size_t recvcount, int source, trainrt_dtype dtype, int tag);

/* The job's key-value store (served by rank 0), for small agreements between ranks such as
 * "which step do we checkpoint at". Keys are strings up to 255 bytes; values up to 1 MiB.
 * get blocks until the key exists or TRAINRT_TIMEOUT passes. add atomically adds delta to the
 * 64-bit integer at key (0 when absent) and returns the new value in *result. A group's keys are
 * its own (they never meet its parent's or another group's). */
int trainrt_store_set(trainrt_comm *comm, const char *key, const void *val, size_t len);
int trainrt_store_get(trainrt_comm *comm, const char *key, void *val, size_t cap, size_t *len);
int trainrt_store_add(trainrt_comm *comm, const char *key, int64_t delta, int64_t *result);

/* Progress heartbeats for train-run's hang detection and straggler report (train-run(1), FAULT
 * TOLERANCE): a line "step N" after step N, or "section NAME" on entering a phase that is not a
 * training step (setup, checkpoint, eval: letters, digits, _ . - , at most 31 characters), on the
 * fd named in TRAIN_HEARTBEAT_FD. Step lines are written at most every 10 ms; a section line
 * always. trainrt_heartbeat_step_busy also gives step N's busy time: its seconds (0 to 3600)
 * without the time the rank waited for the others in collectives; the line carries the mean of
 * the steps since the last line ("step N busy US"), and the straggler report judges it, since in
 * a data-parallel job every rank's step takes as long as the slowest rank's. Neither blocks nor needs a communicator. Return 0, or -1 when there is no channel
 * (not under train-run: nothing to do) or it is gone. Not thread-safe: call them from the
 * training loop's thread. */
int trainrt_heartbeat_step(long long step);
int trainrt_heartbeat_step_busy(long long step, double busy_seconds);
int trainrt_heartbeat_section(const char *name);

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: MIT */
/* backend_nccl.c — collectives on GPU buffers through NCCL (built when configure finds CUDA's and
 * NCCL's headers; rt_cuda.h loads the libraries when this backend is first asked for).
 * Rank 0 creates the NCCL unique id and shares it through the store. NCCL itself does not
 * notice when ranks pass different counts, so each operation is checked first: one all-reduce
 * (MAX) of its header's fields and their complements tells every rank whether all ranks agree
 * (rt_op_hdr_bounds), in O(log n) on NCCL's tree, not in an all-gather that spans every rank;
 * only on a disagreement do the ranks all-gather the 32-byte headers, to name the one that
 * differs. The price is one small all-reduce and a stream wait per operation.
 *
 * The communicator is non-blocking (config.blocking = 0) so that every wait has a deadline:
 * blocking, ncclCommInitRank waits in NCCL's bootstrap for every peer, and the first collective
 * of each algorithm connects the peers inside the call (NCCL_RUNTIME_CONNECT), so a dead or
 * never-started peer would hang the rank instead of failing it. Non-blocking, NCCL returns
 * ncclInProgress from init and from every call on a communicator of more than one rank and
 * finishes the call (connect, enqueue the kernels) on a thread of its own; the communicator may
 * not be used again until ncclCommGetAsyncError says it is no longer in progress. So each call
 * here is followed by settle() (poll that state) and then wait_stream() (poll the stream), both
 * against TRAINRT_TIMEOUT; on a timeout or an error the communicator is aborted (ncclCommAbort),
 * which makes the peers' NCCL kernels fail too, and the message carries NCCL's own last warning
 * (which names the peer's address for a closed connection). bf16 reductions are NCCL's.
 *
 * Point-to-point messages run in issue order with the collectives (p2p_in_order: the communicator
 * takes one call at a time): the message's header goes first (ncclSend/ncclRecv of 24 bytes), the
 * receiver compares it on the host, then the data follows; an exchange runs both directions in
 * one NCCL group. Groups come from ncclCommSplit on the parent. */
#include <config.h>

#include "comm_backend.h"
#include "rt_cuda.h"
#include "rt_net.h"
#include "tt_envnames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct nccl_be {
	rt_backend be;
	ncclComm_t comm;
	cudaStream_t stream;
	int rank, n, device;
	double timeout;
	rt_op_hdr *dev_hdrs, *host_hdrs;
	uint64_t *dev_bounds; /* [RT_OP_HDR_BOUNDS]: the header check's all-reduce */
	rt_p2p_hdr *dev_msg; /* [0]: a header going out, [1]: one coming in */
} nccl_be;

/* Ends the communicator after a failure: NCCL's kernels on this rank stop, and the peers'
 * operations with this rank fail instead of waiting for it. Later operations report the failure. */
static int fail_comm(nccl_be *b)
{
	if (b->comm)
		ncclCommAbort(b->comm);
	b->comm = NULL;
	return -1;
}

/* NCCL's last warning, as context for a message ("" when there is none). */
static const char *nccl_detail(nccl_be *b)
{
	const char *s = ncclGetLastError(b->comm);

	return s ? s : "";
}

/* After an NCCL call that returned r: on a non-blocking communicator the call may still be
 * running on NCCL's thread (ncclInProgress); waits until NCCL reports it done, within the
 * deadline. On error or timeout the communicator is aborted. */
static int settle(nccl_be *b, ncclResult_t r, const char *what, tt_err *err)
{
	double deadline = rt_now() + b->timeout;
	ncclResult_t st = r;

	if (r != ncclSuccess && r != ncclInProgress) {
		tt_err_set(err, "%s: NCCL error: %s (%s)", what, ncclGetErrorString(r), nccl_detail(b));
		return fail_comm(b);
	}
	for (;;) {
		ncclResult_t q = ncclCommGetAsyncError(b->comm, &st);

		if (q != ncclSuccess) {
			st = q;
			break;
		}
		if (st != ncclInProgress || rt_now() > deadline)
			break;
		usleep(100);
	}
	if (st == ncclSuccess)
		return 0;
	if (st == ncclInProgress)
		tt_err_set(err, "%s: NCCL did not finish issuing it within %.0f s (a peer died, hangs or never joined; TRAINRT_TIMEOUT)",
			   what, b->timeout);
	else
		tt_err_set(err, "%s: NCCL error: %s (%s; a peer probably failed)", what, ncclGetErrorString(st),
			   nccl_detail(b));
	return fail_comm(b);
}

/* Waits for the stream's queued work with a deadline, watching NCCL's asynchronous errors (a
 * peer's closed connection shows there while the kernel still waits for its data). */
static int wait_stream(nccl_be *b, const char *what, tt_err *err)
{
	double deadline = rt_now() + b->timeout;
	ncclResult_t st = ncclSuccess;

	for (;;) {
		cudaError_t ce = cudaStreamQuery(b->stream);

		if (ce == cudaSuccess)
			return 0;
		if (ce != cudaErrorNotReady) {
			tt_err_set(err, "%s: CUDA error: %s", what, cudaGetErrorString(ce));
			break;
		}
		if (ncclCommGetAsyncError(b->comm, &st) == ncclSuccess && st != ncclSuccess && st != ncclInProgress) {
			tt_err_set(err, "%s: NCCL error: %s (%s; a peer probably failed)", what, ncclGetErrorString(st),
				   nccl_detail(b));
			break;
		}
		if (rt_now() > deadline) {
			tt_err_set(err, "%s: not finished within %.0f s (a peer died or hangs; TRAINRT_TIMEOUT)", what,
				   b->timeout);
			break;
		}
		usleep(50);
	}
	return fail_comm(b);
}

/* One NCCL call's result through settle and the stream. */
static int finished(nccl_be *b, ncclResult_t r, const char *what, tt_err *err)
{
	if (settle(b, r, what, err) != 0)
		return -1;
	return wait_stream(b, what, err);
}

/* After the header check said that ranks differ (it says so on every rank, so all come here):
 * all-gathers the headers and names the first rank whose header differs from this one's. */
static int name_the_difference(nccl_be *b, const rt_op *op, tt_err *err)
{
	if (cudaMemcpyAsync(b->dev_hdrs + b->rank, &op->hdr, sizeof(op->hdr), cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy the operation header to the GPU");
	if (finished(b, ncclAllGather(b->dev_hdrs + b->rank, b->dev_hdrs, sizeof(rt_op_hdr), ncclUint8, b->comm, b->stream),
		     "exchanging operation headers", err) != 0)
		return -1;
	if (cudaMemcpyAsync(b->host_hdrs, b->dev_hdrs, sizeof(rt_op_hdr) * (size_t)b->n, cudaMemcpyDeviceToHost,
			    b->stream) != cudaSuccess ||
	    wait_stream(b, "copying operation headers from the GPU", err) != 0)
		return tt_err_set(err, "cannot copy operation headers from the GPU");
	for (int q = 0; q < b->n; q++)
		if (rt_op_hdr_check(&op->hdr, &b->host_hdrs[q], q, err) != 0)
			return -1;
	return tt_err_set(err, "internal: operation #%llu: the header check failed, but every rank's header equals "
			  "this rank's", (unsigned long long)op->hdr.seq);
}

/* Selects the device, checks that every rank issued this operation (rt_op_hdr_bounds), then lets
 * the caller order the operation after its own GPU work (op->ready). */
static int nccl_enter(nccl_be *b, const rt_op *op, tt_err *err)
{
	uint64_t bounds[RT_OP_HDR_BOUNDS];

	/* Operations run on the communicator's progress thread too, whose current device is 0
	 * unless set: copies and stream calls must happen on the rank's own device. */
	if (cudaSetDevice(b->device) != cudaSuccess)
		return tt_err_set(err, "cannot select CUDA device %d", b->device);
	if (!b->comm)
		return tt_err_set(err, "the NCCL communicator was aborted by an earlier failure");
	rt_op_hdr_bounds(&op->hdr, bounds);
	if (cudaMemcpyAsync(b->dev_bounds, bounds, sizeof(bounds), cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy the operation header to the GPU");
	if (finished(b, ncclAllReduce(b->dev_bounds, b->dev_bounds, RT_OP_HDR_BOUNDS, ncclUint64, ncclMax, b->comm,
				      b->stream), "checking operation headers", err) != 0)
		return -1;
	if (cudaMemcpyAsync(bounds, b->dev_bounds, sizeof(bounds), cudaMemcpyDeviceToHost, b->stream) != cudaSuccess ||
	    wait_stream(b, "copying the header check from the GPU", err) != 0)
		return tt_err_set(err, "cannot copy the header check from the GPU");
	if (!rt_op_hdr_bounds_agree(&op->hdr, bounds))
		return name_the_difference(b, op, err);
	if (op->ready && op->ready(op->ready_arg, b->stream) != 0)
		return tt_err_set(err, "cannot order the collective after the GPU work that produces its buffer");
	return 0;
}

static ncclDataType_t dt_of(const rt_op *op)
{
	return op->hdr.dtype == TRAINRT_BF16 ? ncclBfloat16 : ncclFloat32;
}

static ncclRedOp_t op_of(const rt_op *op)
{
	switch (op->hdr.redop) {
	case TRAINRT_AVG: return ncclAvg;
	case TRAINRT_MAX: return ncclMax;
	default: return ncclSum;
	}
}

static int nccl_allreduce(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return finished(b, ncclAllReduce(op->send, op->recv, op->hdr.count, dt_of(op), op_of(op), b->comm, b->stream),
			"allreduce", err);
}

static int nccl_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return finished(b, ncclAllGather(op->send, op->recv, op->hdr.count, dt_of(op), b->comm, b->stream),
			"allgather", err);
}

/* A small all-gather in host memory (trainrt_comm_split's records): after the header exchange
 * (every rank is at this operation, with this size), the records travel through the headers'
 * device buffer, which holds RT_HOST_ALLGATHER_MAX bytes per rank. */
static int nccl_host_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;
	size_t bytes = op->hdr.count * trainrt_dtype_size((trainrt_dtype)op->hdr.dtype);
	unsigned char *dev = (unsigned char *)b->dev_hdrs, *mine = dev + (size_t)b->rank * bytes;

	if (bytes > RT_HOST_ALLGATHER_MAX)
		return tt_err_set(err, "internal: a host all-gather of %zu bytes per rank (at most %zu)", bytes,
				  RT_HOST_ALLGATHER_MAX);
	if (nccl_enter(b, op, err) != 0)
		return -1;
	if (cudaMemcpyAsync(mine, op->send, bytes, cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy this rank's record to the GPU");
	if (finished(b, ncclAllGather(mine, dev, bytes, ncclUint8, b->comm, b->stream), "allgather of host records",
		     err) != 0)
		return -1;
	if (cudaMemcpyAsync(op->recv, dev, bytes * (size_t)b->n, cudaMemcpyDeviceToHost, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy the records from the GPU");
	return wait_stream(b, "copying the records from the GPU", err);
}

static int nccl_reducescatter(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return finished(b, ncclReduceScatter(op->send, op->recv, op->hdr.count, dt_of(op), op_of(op), b->comm, b->stream),
			"reducescatter", err);
}

static int nccl_broadcast(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return finished(b, ncclBroadcast(op->recv, op->recv, op->hdr.count, dt_of(op), op->hdr.root, b->comm, b->stream),
			"broadcast", err);
}

static int nccl_barrier(rt_backend *be, const rt_op *op, tt_err *err)
{
	/* The header check is an all-reduce, which already needs every rank: it is the barrier. */
	return nccl_enter((nccl_be *)be, op, err);
}

/* ---- point-to-point ---------------------------------------------------------------------------- */

static int p2p_enter(nccl_be *b, tt_err *err)
{
	if (cudaSetDevice(b->device) != cudaSuccess)
		return tt_err_set(err, "cannot select CUDA device %d", b->device);
	if (!b->comm)
		return tt_err_set(err, "the NCCL communicator was aborted by an earlier failure");
	return 0;
}

/* Brings the header that arrived in dev_msg[1] from peer to the host and compares it with h. */
static int check_arrived(nccl_be *b, int peer, const rt_p2p_hdr *h, tt_err *err)
{
	rt_p2p_hdr sent;

	if (cudaMemcpyAsync(&sent, b->dev_msg + 1, sizeof(sent), cudaMemcpyDeviceToHost, b->stream) != cudaSuccess ||
	    wait_stream(b, "copying a message header from the GPU", err) != 0)
		return tt_err_set(err, "cannot copy a message header from the GPU");
	if (rt_p2p_hdr_check(h, &sent, peer, err) != 0)
		return fail_comm(b);
	return 0;
}

static int put_header(nccl_be *b, const rt_p2p_hdr *h, tt_err *err)
{
	if (cudaMemcpyAsync(b->dev_msg, h, sizeof(*h), cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy a message header to the GPU");
	return 0;
}

static int nccl_send(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;
	ncclDataType_t dt = h->dtype == TRAINRT_BF16 ? ncclBfloat16 : ncclFloat32;

	if (p2p_enter(b, err) != 0 || put_header(b, h, err) != 0 ||
	    finished(b, ncclSend(b->dev_msg, sizeof(*h), ncclUint8, peer, b->comm, b->stream), "sending a message header",
		     err) != 0)
		return -1;
	return finished(b, ncclSend(buf, h->count, dt, peer, b->comm, b->stream), "send", err);
}

static int nccl_recv(rt_backend *be, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;
	ncclDataType_t dt = h->dtype == TRAINRT_BF16 ? ncclBfloat16 : ncclFloat32;

	if (p2p_enter(b, err) != 0 ||
	    finished(b, ncclRecv(b->dev_msg + 1, sizeof(*h), ncclUint8, peer, b->comm, b->stream),
		     "receiving a message header", err) != 0 ||
	    check_arrived(b, peer, h, err) != 0)
		return -1;
	return finished(b, ncclRecv(buf, h->count, dt, peer, b->comm, b->stream), "receive", err);
}

/* Headers both ways in one NCCL group, then the data both ways in another. */
static int nccl_sendrecv(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;
	ncclDataType_t dt = op->msg[0].dtype == TRAINRT_BF16 ? ncclBfloat16 : ncclFloat32;
	ncclResult_t r;

	if (p2p_enter(b, err) != 0 || put_header(b, &op->msg[0], err) != 0)
		return -1;
	ncclGroupStart();
	ncclSend(b->dev_msg, sizeof(rt_p2p_hdr), ncclUint8, op->peer[0], b->comm, b->stream);
	ncclRecv(b->dev_msg + 1, sizeof(rt_p2p_hdr), ncclUint8, op->peer[1], b->comm, b->stream);
	r = ncclGroupEnd();
	if (finished(b, r, "exchanging message headers", err) != 0 || check_arrived(b, op->peer[1], &op->msg[1], err) != 0)
		return -1;
	ncclGroupStart();
	ncclSend(op->send, op->msg[0].count, dt, op->peer[0], b->comm, b->stream);
	ncclRecv(op->recv, op->msg[1].count, dt, op->peer[1], b->comm, b->stream);
	r = ncclGroupEnd();
	return finished(b, r, "sendrecv", err);
}

static void *nccl_alloc(rt_backend *be, size_t bytes, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;
	void *p = NULL;

	if (cudaSetDevice(b->device) != cudaSuccess || cudaMalloc(&p, bytes ? bytes : 64) != cudaSuccess) {
		tt_err_set(err, "cudaMalloc of %zu bytes on device %d failed", bytes, b->device);
		return NULL;
	}
	return p;
}

static void nccl_free(rt_backend *be, void *ptr)
{
	(void)be;
	cudaFree(ptr);
}

static void nccl_destroy(rt_backend *be)
{
	nccl_be *b = (nccl_be *)be;

	/* Every operation on it has finished (or failed and aborted it), so destroying waits for nothing;
	 * NCCL runs a destroy in the calling thread even on a non-blocking communicator. */
	if (b->comm)
		ncclCommDestroy(b->comm);
	if (b->stream)
		cudaStreamDestroy(b->stream);
	cudaFree(b->dev_hdrs);
	cudaFree(b->dev_bounds);
	cudaFree(b->dev_msg);
	free(b->host_hdrs);
	free(b);
}

static int nccl_split(rt_backend *parent, const rt_world *child, int color, int key, rt_backend **out, tt_err *err);

static const struct rt_backend_ops nccl_ops = {
	.name = "nccl",
	.on_device = 1,
	.allreduce = nccl_allreduce,
	.allgather = nccl_allgather,
	.reducescatter = nccl_reducescatter,
	.broadcast = nccl_broadcast,
	.barrier = nccl_barrier,
	.send = nccl_send,
	.recv = nccl_recv,
	.p2p_in_order = 1,
	.sendrecv = nccl_sendrecv,
	.split = nccl_split,
	.host_allgather = nccl_host_allgather,
	.alloc = nccl_alloc,
	.free = nccl_free,
	.destroy = nccl_destroy,
};

/* Adds what to do to settle's message when NCCL refused the communicator for a known reason. */
static void init_failed(const rt_world *w, int ndev, tt_err *err)
{
	char detail[1024];

	snprintf(detail, sizeof(detail), "%s", err->msg);
	/* NCCL 2.28's init failure path adds no warning after this one (init.cc initTransportsRank). */
	if (strstr(detail, "Duplicate GPU"))
		tt_err_set(err, "%s: %d rank(s) of this node share %d visible GPU(s), and NCCL allows one rank per GPU "
			   "of a host; give each rank its own GPU (srun --gpus-per-task=1, train-run), or, to test "
			   "several ranks on one GPU, a distinct NCCL_HOSTID per rank with NCCL_IB_DISABLE=1 (see "
			   "trainrt(3))", detail, w->local_size, ndev);
}

/* The stream and header buffers of a communicator of b->n ranks on device dev. */
static int device_state(nccl_be *b, int dev, tt_err *err)
{
	b->device = dev;
	if (cudaSetDevice(dev) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaMalloc((void **)&b->dev_hdrs, sizeof(rt_op_hdr) * (size_t)b->n) != cudaSuccess ||
	    cudaMalloc((void **)&b->dev_bounds, sizeof(uint64_t) * RT_OP_HDR_BOUNDS) != cudaSuccess ||
	    cudaMalloc((void **)&b->dev_msg, 2 * sizeof(rt_p2p_hdr)) != cudaSuccess)
		return tt_err_set(err, "cannot set up CUDA device %d", dev);
	b->host_hdrs = calloc((size_t)b->n, sizeof(rt_op_hdr));
	if (!b->host_hdrs)
		return tt_err_set(err, "out of memory");
	return 0;
}

/* ncclCommSplit, non-blocking like every call here: the parent and the new communicator both
 * settle within the timeout. NCCL ranks the group by key, then parent rank, as comm_group.c does. */
static int nccl_split(rt_backend *parent, const rt_world *child, int color, int key, rt_backend **out, tt_err *err)
{
	nccl_be *p = (nccl_be *)parent, *b = NULL;
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclComm_t comm = NULL;
	ncclResult_t r;
	int rank = -1;

	*out = NULL;
	if (p2p_enter(p, err) != 0)
		return -1;
	if (child) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return tt_err_set(err, "out of memory");
		b->be.ops = &nccl_ops;
		b->rank = child->rank;
		b->n = child->size;
		b->timeout = child->timeout;
		if (device_state(b, p->device, err) != 0)
			goto fail;
	}
	cfg.blocking = 0;
	r = ncclCommSplit(p->comm, child ? color : NCCL_SPLIT_NOCOLOR, key, &comm, &cfg);
	if (settle(p, r, "ncclCommSplit", err) != 0)
		goto fail;
	if (!child)
		return 0;
	b->comm = comm;
	if (!comm) {
		tt_err_set(err, "ncclCommSplit gave this rank no communicator");
		goto fail;
	}
	if (settle(b, ncclInProgress, "ncclCommSplit (the new communicator)", err) != 0)
		goto fail;
	if (ncclCommUserRank(b->comm, &rank) != ncclSuccess || rank != child->rank) {
		tt_err_set(err, "ncclCommSplit ranked this rank %d in its group, trainrt %d (internal error)", rank,
			   child->rank);
		goto fail;
	}
	*out = &b->be;
	return 0;
fail:
	if (b)
		nccl_destroy(&b->be);
	return tt_err_wrap(err, "nccl backend, split of color %d", color);
}

rt_backend *rt_nccl_create(const rt_world *w, tt_err *err)
{
	nccl_be *b = calloc(1, sizeof(*b));
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclResult_t r;
	size_t len = 0;
	int ndev, dev;

	if (rt_cuda_load(err) != 0) {
		free(b);
		return NULL;
	}
	ndev = rt_gpu_count();
	dev = rt_gpu_device_for(w->local_rank);
	if (!b) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	b->be.ops = &nccl_ops;
	b->rank = w->rank;
	b->n = w->size;
	b->timeout = w->timeout;
	if (ndev == 0) {
		tt_err_set(err, "no CUDA device visible (CUDA_VISIBLE_DEVICES='%s'); use TRAINRT_BACKEND=auto or shm/tcp",
			   getenv(TT_ENV_CUDA_VISIBLE_DEVICES) ? getenv(TT_ENV_CUDA_VISIBLE_DEVICES) : "");
		goto fail;
	}
	if (device_state(b, dev, err) != 0)
		goto fail;
	if (w->rank == 0) {
		if ((r = ncclGetUniqueId(&id)) != ncclSuccess) {
			tt_err_set(err, "ncclGetUniqueId failed: %s", ncclGetErrorString(r));
			goto fail;
		}
		if (rt_store_set(w->store, "nccl/id", &id, sizeof(id), err) != 0)
			goto fail;
	} else if ((!w->via_leaders || w->local_rank == 0) && rt_store_get(w->store, "nccl/id", &id, sizeof(id), &len, err) != 0) {
		goto fail;
	}
	/* Through node leaders a follower takes rank 0's id from its leader, not the store. */
	len = sizeof(id);
	if (w->via_leaders && rt_world_node_share(w, &id, sizeof(id), &len, err) != 0)
		goto fail;
	if (len != sizeof(id)) {
		tt_err_set(err, "the NCCL id has %zu bytes, not %zu: all ranks must run the same libtrainrt", len, sizeof(id));
		goto fail;
	}
	cfg.blocking = 0;
	r = ncclCommInitRankConfig(&b->comm, w->size, id, w->rank, &cfg);
	if (r != ncclSuccess && r != ncclInProgress && !b->comm) {
		tt_err_set(err, "ncclCommInitRank failed: %s (%s)", ncclGetErrorString(r), nccl_detail(b));
		goto fail;
	}
	if (settle(b, r, "ncclCommInitRank", err) != 0) {
		init_failed(w, ndev, err);
		goto fail;
	}
	return &b->be;
fail:
	tt_err_wrap(err, "nccl backend");
	nccl_destroy(&b->be);
	return NULL;
}

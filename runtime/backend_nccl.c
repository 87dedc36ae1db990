/* backend_nccl.c — collectives on GPU buffers through NCCL (built when configure finds CUDA).
 * Rank 0 creates the NCCL unique id and shares it through the store. NCCL itself does not
 * notice when ranks pass different counts, so each operation first all-gathers the 32-byte
 * headers and compares them on the host; the price is one small collective and a stream sync
 * per operation. Every wait polls the stream with a deadline and aborts the NCCL communicator on
 * timeout, so a dead peer is an error rather than a hang. bf16 reductions are NCCL's. */
#include <config.h>

#include "comm_backend.h"
#include "gpu_mlp.h"
#include "rt_net.h"

#include <cuda_runtime.h>
#include <nccl.h>
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
} nccl_be;

/* Waits for the NCCL communicator to leave ncclInProgress (non-blocking init or abort). */
static int wait_comm(nccl_be *b, const char *what, tt_err *err)
{
	double deadline = rt_now() + b->timeout;
	ncclResult_t st = ncclInProgress;

	while (rt_now() < deadline) {
		if (ncclCommGetAsyncError(b->comm, &st) != ncclSuccess)
			break;
		if (st != ncclInProgress)
			break;
		usleep(1000);
	}
	if (st == ncclSuccess)
		return 0;
	if (st == ncclInProgress)
		return tt_err_set(err, "%s: NCCL made no progress within %.0f s (a peer died or hangs; TRAINRT_TIMEOUT)",
				  what, b->timeout);
	return tt_err_set(err, "%s: NCCL error: %s", what, ncclGetErrorString(st));
}

/* Synchronises the stream with a deadline; on failure the communicator is aborted so that
 * the peers' NCCL kernels error out as well. */
static int sync_stream(nccl_be *b, const char *what, tt_err *err)
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
			tt_err_set(err, "%s: NCCL error: %s (a peer probably failed)", what, ncclGetErrorString(st));
			break;
		}
		if (rt_now() > deadline) {
			tt_err_set(err, "%s: not finished within %.0f s (a peer died or hangs; TRAINRT_TIMEOUT)", what, b->timeout);
			break;
		}
		usleep(50);
	}
	ncclCommAbort(b->comm);
	b->comm = NULL;
	return -1;
}

static int launched(nccl_be *b, ncclResult_t r, const char *what, tt_err *err)
{
	if (r != ncclSuccess && r != ncclInProgress)
		return tt_err_set(err, "%s: NCCL error: %s", what, ncclGetErrorString(r));
	return sync_stream(b, what, err);
}

static int nccl_enter(nccl_be *b, const rt_op *op, tt_err *err)
{
	/* Operations run on the communicator's progress thread too, whose current device is 0
	 * unless set: copies and stream calls must happen on the rank's own device. */
	if (cudaSetDevice(b->device) != cudaSuccess)
		return tt_err_set(err, "cannot select CUDA device %d", b->device);
	if (!b->comm)
		return tt_err_set(err, "the NCCL communicator was aborted by an earlier failure");
	if (cudaMemcpyAsync(b->dev_hdrs + b->rank, &op->hdr, sizeof(op->hdr), cudaMemcpyHostToDevice, b->stream) != cudaSuccess)
		return tt_err_set(err, "cannot copy the operation header to the GPU");
	if (launched(b, ncclAllGather(b->dev_hdrs + b->rank, b->dev_hdrs, sizeof(rt_op_hdr), ncclUint8,
				      b->comm, b->stream), "exchanging operation headers", err) != 0)
		return -1;
	if (cudaMemcpy(b->host_hdrs, b->dev_hdrs, sizeof(rt_op_hdr) * (size_t)b->n, cudaMemcpyDeviceToHost) != cudaSuccess)
		return tt_err_set(err, "cannot copy operation headers from the GPU");
	for (int q = 0; q < b->n; q++)
		if (rt_op_hdr_check(&op->hdr, &b->host_hdrs[q], q, err) != 0)
			return -1;
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
	return launched(b, ncclAllReduce(op->send, op->recv, op->hdr.count, dt_of(op), op_of(op), b->comm, b->stream),
			"allreduce", err);
}

static int nccl_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return launched(b, ncclAllGather(op->send, op->recv, op->hdr.count, dt_of(op), b->comm, b->stream),
			"allgather", err);
}

static int nccl_reducescatter(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return launched(b, ncclReduceScatter(op->send, op->recv, op->hdr.count, dt_of(op), op_of(op), b->comm, b->stream),
			"reducescatter", err);
}

static int nccl_broadcast(rt_backend *be, const rt_op *op, tt_err *err)
{
	nccl_be *b = (nccl_be *)be;

	if (nccl_enter(b, op, err) != 0)
		return -1;
	return launched(b, ncclBroadcast(op->recv, op->recv, op->hdr.count, dt_of(op), op->hdr.root, b->comm, b->stream),
			"broadcast", err);
}

static int nccl_barrier(rt_backend *be, const rt_op *op, tt_err *err)
{
	/* The header all-gather already needs every rank: it is the barrier. */
	return nccl_enter((nccl_be *)be, op, err);
}

static void *nccl_alloc(rt_backend *be, size_t bytes, tt_err *err)
{
	void *p = NULL;

	(void)be;
	if (cudaMalloc(&p, bytes ? bytes : 64) != cudaSuccess) {
		tt_err_set(err, "cudaMalloc of %zu bytes failed", bytes);
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

	if (b->comm)
		ncclCommDestroy(b->comm);
	if (b->stream)
		cudaStreamDestroy(b->stream);
	cudaFree(b->dev_hdrs);
	free(b->host_hdrs);
	free(b);
}

static const struct rt_backend_ops nccl_ops = {
	.name = "nccl",
	.on_device = 1,
	.allreduce = nccl_allreduce,
	.allgather = nccl_allgather,
	.reducescatter = nccl_reducescatter,
	.broadcast = nccl_broadcast,
	.barrier = nccl_barrier,
	.alloc = nccl_alloc,
	.free = nccl_free,
	.destroy = nccl_destroy,
};

rt_backend *rt_nccl_create(const rt_world *w, tt_err *err)
{
	nccl_be *b = calloc(1, sizeof(*b));
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	ncclUniqueId id;
	ncclResult_t r;
	size_t len = 0;
	int ndev = tt_gpu_count(), dev = tt_gpu_device_for(w->local_rank);

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
			   getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "");
		goto fail;
	}
	b->device = dev;
	if (cudaSetDevice(dev) != cudaSuccess ||
	    cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) != cudaSuccess ||
	    cudaMalloc((void **)&b->dev_hdrs, sizeof(rt_op_hdr) * (size_t)w->size) != cudaSuccess) {
		tt_err_set(err, "cannot set up CUDA device %d", dev);
		goto fail;
	}
	b->host_hdrs = calloc((size_t)w->size, sizeof(rt_op_hdr));
	if (!b->host_hdrs) {
		tt_err_set(err, "out of memory");
		goto fail;
	}
	if (w->rank == 0) {
		if ((r = ncclGetUniqueId(&id)) != ncclSuccess) {
			tt_err_set(err, "ncclGetUniqueId failed: %s", ncclGetErrorString(r));
			goto fail;
		}
		if (rt_store_set(w->store, "nccl/id", &id, sizeof(id), err) != 0)
			goto fail;
	} else if (rt_store_get(w->store, "nccl/id", &id, sizeof(id), &len, err) != 0) {
		goto fail;
	}
	cfg.blocking = 0;
	r = ncclCommInitRankConfig(&b->comm, w->size, id, w->rank, &cfg);
	if (r != ncclSuccess && r != ncclInProgress) {
		tt_err_set(err, "ncclCommInitRank failed: %s", ncclGetErrorString(r));
		goto fail;
	}
	if (wait_comm(b, "ncclCommInitRank", err) != 0) {
		ncclCommAbort(b->comm);
		b->comm = NULL;
		goto fail;
	}
	return &b->be;
fail:
	tt_err_wrap(err, "nccl backend");
	nccl_destroy(&b->be);
	return NULL;
}

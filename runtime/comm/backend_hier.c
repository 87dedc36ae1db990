/* SPDX-License-Identifier: MIT */
/* backend_hier.c — multi-node collectives: the node's ranks combine through shared memory, one
 * rank per node (local rank 0, the "leader") runs the TCP ring with the other leaders, and the
 * node's ranks get the result back through shared memory. So inter-node traffic is one stream
 * per node instead of one per rank. A leader that fails on the ring aborts its node's segment,
 * so the whole job stops within the timeout. Point-to-point messages take shared memory to a
 * peer on the same node and a direct TCP connection (p2p_net.c) to one on another. */
#include "comm_backend.h"
#include "rt_reduce.h"

#include <stdlib.h>
#include <string.h>

typedef struct hier_be {
	rt_backend be;
	rt_backend *shm, *tcp; /* tcp only on leaders */
	rt_p2p_net *p2p;       /* every rank: messages to other nodes */
	int local_rank, local_size, node, nnodes, size;
	uint64_t shm_seq, tcp_seq;
	unsigned char *scratch;
	size_t scratch_cap;
} hier_be;

static int sub(hier_be *h, rt_backend *be, uint64_t *seq, rt_kind kind, const void *send, void *recv,
	       size_t count, const rt_op *op, trainrt_redop redop, int root, tt_err *err)
{
	rt_op s = { .send = send, .recv = recv };

	s.hdr = op->hdr;
	s.hdr.kind = kind;
	s.hdr.count = count;
	s.hdr.redop = redop;
	s.hdr.root = root;
	s.hdr.seq = ++*seq;
	if (rt_backend_run(be, &s, err) == 0)
		return 0;
	/* Spread the failure to the side that did not see it. */
	if (be == h->tcp)
		rt_shm_abort(h->shm, err);
	else if (h->tcp)
		rt_tcp_abort(h->tcp);
	return -1;
}

#define SHM(kind, send, recv, count, redop, root) \
	sub(h, h->shm, &h->shm_seq, kind, send, recv, count, op, redop, root, err)
#define TCP(kind, send, recv, count, redop, root) \
	sub(h, h->tcp, &h->tcp_seq, kind, send, recv, count, op, redop, root, err)

static int hier_allreduce_into(hier_be *h, const rt_op *op, void *recv, tt_err *err)
{
	size_t count = op->hdr.count;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	trainrt_redop partial = rop == TRAINRT_AVG ? TRAINRT_SUM : rop;

	if (SHM(RT_ALLREDUCE, op->send, recv, count, partial, 0) != 0)
		return -1;
	if (h->tcp) {
		if (TCP(RT_ALLREDUCE, recv, recv, count, partial, 0) != 0)
			return -1;
		if (rop == TRAINRT_AVG) {
			const void *in = recv;

			rt_reduce(&recv, 1, &in, 1, count, dt, TRAINRT_AVG, h->size);
		}
	}
	return SHM(RT_BROADCAST, recv, recv, count, TRAINRT_SUM, 0);
}

static int hier_allreduce(rt_backend *be, const rt_op *op, tt_err *err)
{
	return hier_allreduce_into((hier_be *)be, op, op->recv, err);
}

/* Reduce-scatter: the node sums the whole input in shared memory, the leaders reduce-scatter
 * node-sized blocks over TCP (ranks of a node are contiguous, so a node's outputs are one block),
 * and the node's ranks take their part of their leader's block. Inter-node traffic is that of a
 * ring reduce-scatter; the node's shared-memory work is that of an all-reduce. */
static int hier_reducescatter(rt_backend *be, const rt_op *op, tt_err *err)
{
	hier_be *h = (hier_be *)be;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	trainrt_redop partial = rop == TRAINRT_AVG ? TRAINRT_SUM : rop;
	size_t es = trainrt_dtype_size(dt), count = op->hdr.count;
	size_t node_count = count * (size_t)h->local_size, total = count * (size_t)h->size * es;
	unsigned char *mine;

	if (total == 0) /* still a collective: every rank takes part in the header checks */
		return hier_allreduce_into(h, op, NULL, err);
	if (total > h->scratch_cap) {
		unsigned char *p = realloc(h->scratch, total);

		if (!p)
			return tt_err_set(err, "out of memory for a %zu MiB reduce-scatter buffer", total >> 20);
		h->scratch = p;
		h->scratch_cap = total;
	}
	mine = h->scratch + (size_t)h->node * node_count * es;
	if (SHM(RT_ALLREDUCE, op->send, h->scratch, count * (size_t)h->size, partial, 0) != 0)
		return -1;
	if (h->tcp) {
		if (TCP(RT_REDUCESCATTER, h->scratch, mine, node_count, partial, 0) != 0)
			return -1;
		if (rop == TRAINRT_AVG) {
			const void *in = mine;
			void *out = mine;

			rt_reduce(&out, 1, &in, 1, node_count, dt, TRAINRT_AVG, h->size);
		}
	}
	if (SHM(RT_BROADCAST, mine, mine, node_count, TRAINRT_SUM, 0) != 0)
		return -1;
	memcpy(op->recv, mine + (size_t)h->local_rank * count * es, count * es);
	return 0;
}

static int hier_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	hier_be *h = (hier_be *)be;
	size_t count = op->hdr.count, es = trainrt_dtype_size((trainrt_dtype)op->hdr.dtype);
	size_t node_count = count * (size_t)h->local_size;
	unsigned char *mine = (unsigned char *)op->recv + (size_t)h->node * node_count * es;

	if (SHM(RT_ALLGATHER, op->send, mine, count, TRAINRT_SUM, 0) != 0)
		return -1;
	if (h->tcp && TCP(RT_ALLGATHER, mine, op->recv, node_count, TRAINRT_SUM, 0) != 0)
		return -1;
	return SHM(RT_BROADCAST, op->recv, op->recv, node_count * (size_t)h->nnodes, TRAINRT_SUM, 0);
}

static int hier_broadcast(rt_backend *be, const rt_op *op, tt_err *err)
{
	hier_be *h = (hier_be *)be;
	int rnode = op->hdr.root / h->local_size, rlocal = op->hdr.root % h->local_size;
	size_t count = op->hdr.count;

	if (h->node == rnode && SHM(RT_BROADCAST, op->recv, op->recv, count, TRAINRT_SUM, rlocal) != 0)
		return -1;
	if (h->tcp && TCP(RT_BROADCAST, op->recv, op->recv, count, TRAINRT_SUM, rnode) != 0)
		return -1;
	if (h->node != rnode)
		return SHM(RT_BROADCAST, op->recv, op->recv, count, TRAINRT_SUM, 0);
	return 0;
}

static int hier_barrier(rt_backend *be, const rt_op *op, tt_err *err)
{
	hier_be *h = (hier_be *)be;

	if (SHM(RT_BARRIER, NULL, NULL, 0, TRAINRT_SUM, 0) != 0)
		return -1;
	if (h->tcp && TCP(RT_BARRIER, NULL, NULL, 0, TRAINRT_SUM, 0) != 0)
		return -1;
	return SHM(RT_BARRIER, NULL, NULL, 0, TRAINRT_SUM, 0);
}

/* Routes a message with peer to shared memory (same node: its local index) or TCP. */
static int hier_send(rt_backend *be, int peer, const rt_p2p_hdr *m, const void *buf, tt_err *err)
{
	hier_be *h = (hier_be *)be;

	if (peer / h->local_size == h->node)
		return h->shm->ops->send(h->shm, peer % h->local_size, m, buf, err);
	return rt_p2p_net_send(h->p2p, peer, m, buf, err);
}

static int hier_recv(rt_backend *be, int peer, const rt_p2p_hdr *m, void *buf, tt_err *err)
{
	hier_be *h = (hier_be *)be;

	if (peer / h->local_size == h->node)
		return h->shm->ops->recv(h->shm, peer % h->local_size, m, buf, err);
	return rt_p2p_net_recv(h->p2p, peer, m, buf, err);
}

static void hier_abort(rt_backend *be, tt_err *err)
{
	hier_be *h = (hier_be *)be;

	rt_shm_abort(h->shm, err);
	rt_p2p_net_abort(h->p2p);
}

static void *hier_alloc(rt_backend *be, size_t bytes, tt_err *err)
{
	hier_be *h = (hier_be *)be;

	return h->shm->ops->alloc(h->shm, bytes, err);
}

static void hier_free(rt_backend *be, void *ptr)
{
	hier_be *h = (hier_be *)be;

	h->shm->ops->free(h->shm, ptr);
}

static void hier_destroy(rt_backend *be)
{
	hier_be *h = (hier_be *)be;

	if (h->tcp)
		h->tcp->ops->destroy(h->tcp);
	rt_p2p_net_destroy(h->p2p);
	if (h->shm)
		h->shm->ops->destroy(h->shm);
	free(h->scratch);
	free(h);
}

static const struct rt_backend_ops hier_ops = {
	.name = "hier",
	.allreduce = hier_allreduce,
	.allgather = hier_allgather,
	.reducescatter = hier_reducescatter,
	.broadcast = hier_broadcast,
	.barrier = hier_barrier,
	.send = hier_send,
	.recv = hier_recv,
	.abort = hier_abort,
	.alloc = hier_alloc,
	.free = hier_free,
	.destroy = hier_destroy,
};

rt_backend *rt_hier_create(const rt_world *w, tt_err *err)
{
	hier_be *h = calloc(1, sizeof(*h));

	if (!h) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	h->be.ops = &hier_ops;
	h->local_rank = w->local_rank;
	h->local_size = w->local_size;
	h->node = w->node;
	h->nnodes = w->nnodes;
	h->size = w->size;
	h->shm = rt_shm_create(w, err);
	if (!h->shm)
		goto fail;
	if (w->local_rank == 0) {
		int *leaders = malloc(sizeof(int) * (size_t)w->nnodes);

		if (!leaders) {
			tt_err_set(err, "out of memory");
			goto fail;
		}
		for (int i = 0; i < w->nnodes; i++)
			leaders[i] = rt_world_name(w, i * w->local_size);
		h->tcp = rt_tcp_create(w, w->node, w->nnodes, leaders, "leaders", err);
		free(leaders);
		if (!h->tcp) {
			rt_shm_abort(h->shm, err);
			goto fail;
		}
	}
	h->p2p = rt_p2p_net_create(w, err);
	if (!h->p2p) {
		rt_shm_abort(h->shm, err);
		goto fail;
	}
	return &h->be;
fail:
	hier_destroy(&h->be);
	return NULL;
}

/* SPDX-License-Identifier: MIT */
/* comm_backend.c — what all backends share: dispatch, header comparison, even splitting. */
#include "comm_backend.h"

static const char *kind_name(uint32_t k)
{
	switch (k) {
	case RT_ALLREDUCE: return "allreduce";
	case RT_ALLGATHER: return "allgather";
	case RT_REDUCESCATTER: return "reducescatter";
	case RT_BROADCAST: return "broadcast";
	case RT_BARRIER: return "barrier";
	default: return "unknown";
	}
}

int rt_backend_run(rt_backend *be, const rt_op *op, tt_err *err)
{
	/* A device backend orders the operation on its own stream once every rank has joined it. */
	if (op->ready && !be->ops->on_device && op->ready(op->ready_arg, NULL) != 0)
		return tt_err_set(err, "the work that produces this collective's buffer failed");
	switch (op->hdr.kind) {
	case RT_ALLREDUCE: return be->ops->allreduce(be, op, err);
	case RT_ALLGATHER: return be->ops->allgather(be, op, err);
	case RT_REDUCESCATTER: return be->ops->reducescatter(be, op, err);
	case RT_BROADCAST: return be->ops->broadcast(be, op, err);
	case RT_BARRIER: return be->ops->barrier(be, op, err);
	default: return tt_err_set(err, "internal: unknown operation %u", op->hdr.kind);
	}
}

int rt_op_hdr_check(const rt_op_hdr *mine, const rt_op_hdr *peer, int peer_rank, tt_err *err)
{
	if (mine->seq != peer->seq || mine->kind != peer->kind)
		return tt_err_set(err, "operation #%llu: this rank issued %s but rank %d issued %s as its operation #%llu; all ranks must issue the same collectives in the same order",
				  (unsigned long long)mine->seq, kind_name(mine->kind), peer_rank,
				  kind_name(peer->kind), (unsigned long long)peer->seq);
	if (mine->count != peer->count)
		return tt_err_set(err, "%s #%llu: this rank has count %llu but rank %d has count %llu; all ranks must pass the same count",
				  kind_name(mine->kind), (unsigned long long)mine->seq,
				  (unsigned long long)mine->count, peer_rank, (unsigned long long)peer->count);
	if (mine->dtype != peer->dtype || mine->redop != peer->redop || mine->root != peer->root)
		return tt_err_set(err, "%s #%llu: dtype, reduction or root differ between this rank and rank %d",
				  kind_name(mine->kind), (unsigned long long)mine->seq, peer_rank);
	return 0;
}

void rt_split(size_t count, int n, int i, size_t *lo, size_t *hi)
{
	size_t base = count / (size_t)n, extra = count % (size_t)n, ui = (size_t)i;

	*lo = ui * base + (ui < extra ? ui : extra);
	*hi = *lo + base + (ui < extra ? 1 : 0);
}

/* SPDX-License-Identifier: MIT */
/* comm_backend.c — what all backends share: dispatch, header comparison, even splitting, the
 * names and store keys of a (group's) world, its node-wide exchanges through the node leaders. */
#include "comm_backend.h"
#include "rt_node.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* A follower's message to its leader for rt_world_node_publish: the key, a NUL, the value. */
#define NODE_PUBLISH_MAX (RT_STORE_MAX_KEY + 1 + 512)

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
	case RT_SEND: return be->ops->send(be, op->peer[0], &op->msg[0], op->send, err);
	case RT_RECV: return be->ops->recv(be, op->peer[0], &op->msg[0], op->recv, err);
	case RT_SENDRECV: return be->ops->sendrecv(be, op, err);
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

void rt_op_hdr_bounds(const rt_op_hdr *h, uint64_t out[RT_OP_HDR_BOUNDS])
{
	const uint64_t field[RT_OP_HDR_BOUNDS / 2] = { h->kind, h->dtype, h->redop, (uint32_t)h->root, h->count,
						       h->seq };

	for (int i = 0; i < RT_OP_HDR_BOUNDS / 2; i++) {
		out[i] = field[i];
		out[RT_OP_HDR_BOUNDS / 2 + i] = ~field[i];
	}
}

int rt_op_hdr_bounds_agree(const rt_op_hdr *mine, const uint64_t reduced[RT_OP_HDR_BOUNDS])
{
	uint64_t own[RT_OP_HDR_BOUNDS];

	rt_op_hdr_bounds(mine, own);
	for (int i = 0; i < RT_OP_HDR_BOUNDS; i++)
		if (reduced[i] != own[i])
			return 0;
	return 1;
}

static const char *dtype_name(uint32_t d)
{
	return d == TRAINRT_FLOAT32 ? "float32" : d == TRAINRT_BF16 ? "bf16" : "an unknown type";
}

int rt_p2p_hdr_check(const rt_p2p_hdr *mine, const rt_p2p_hdr *sent, int from, tt_err *err)
{
	if (mine->seq != sent->seq)
		return tt_err_set(err, "message #%llu from rank %d arrived as its #%llu (a message was lost; internal error)",
				  (unsigned long long)mine->seq, from, (unsigned long long)sent->seq);
	if (mine->count != sent->count || mine->dtype != sent->dtype || mine->tag != sent->tag)
		return tt_err_set(err, "message #%llu from rank %d: it sent %llu %s elements with tag %d, but this rank receives %llu %s elements with tag %d; the k-th receive from a rank must match its k-th send to this rank",
				  (unsigned long long)mine->seq, from, (unsigned long long)sent->count,
				  dtype_name(sent->dtype), sent->tag, (unsigned long long)mine->count,
				  dtype_name(mine->dtype), mine->tag);
	return 0;
}

uint64_t rt_op_wire_bytes(const rt_op *op, int n, int rank)
{
	uint64_t es = trainrt_dtype_size((trainrt_dtype)op->hdr.dtype), bytes = op->hdr.count * es;

	switch (op->hdr.kind) {
	case RT_ALLREDUCE: return n > 1 ? 2 * (uint64_t)(n - 1) * bytes / (uint64_t)n : 0;
	case RT_ALLGATHER:
	case RT_REDUCESCATTER: return (uint64_t)(n - 1) * bytes;
	case RT_BROADCAST: return n > 1 && rank != (op->hdr.root + n - 1) % n ? bytes : 0;
	case RT_SEND:
	case RT_SENDRECV: return op->msg[0].count * trainrt_dtype_size((trainrt_dtype)op->msg[0].dtype);
	default: return 0;
	}
}

int rt_world_name(const rt_world *w, int r)
{
	return w->world_ranks ? w->world_ranks[r] : r;
}

int rt_world_key(const rt_world *w, char *key, size_t len, const char *fmt, ...)
{
	va_list ap;
	int head = snprintf(key, len, "%s", w->ns ? w->ns : ""), rest;

	if (head < 0 || (size_t)head >= len)
		return -1;
	va_start(ap, fmt);
	rest = vsnprintf(key + head, len - (size_t)head, fmt, ap);
	va_end(ap);
	return rest < 0 || (size_t)rest >= len - (size_t)head ? -1 : 0;
}

/* How long a follower waits for its leader's part of a node exchange: the leader may first set up
 * its ring with the other leaders (up to the timeout); a leader that fails closes at once. */
static double node_wait(const rt_world *w)
{
	return 2 * w->timeout + RT_NODE_GATHER_S;
}

int rt_world_node_share(const rt_world *w, void *buf, size_t cap, size_t *len, tt_err *err)
{
	int leader = rt_world_name(w, w->rank - w->local_rank);

	if (w->local_rank != 0) {
		if (rt_node_recv(w->node_fd, buf, cap, len, node_wait(w), err) != 0)
			return tt_err_wrap(err, "waiting for this node's leader, rank %d (LOCAL_RANK 0), during the backend's set-up",
					   leader);
		return 0;
	}
	for (int l = 1; l < w->local_size; l++)
		if (rt_node_send(rt_node_peer(w->node_leader, l), buf, *len, w->timeout, err) != 0)
			return tt_err_wrap(err, "handing rank %d (LOCAL_RANK %d) its node's set-up", leader + l, l);
	return 0;
}

int rt_world_node_publish(const rt_world *w, const char *key, const void *val, size_t len, tt_err *err)
{
	char msg[NODE_PUBLISH_MAX];
	size_t klen = strlen(key), got;

	if (!w->via_leaders || w->local_rank == 0) {
		if (rt_store_set(w->store, key, val, len, err) != 0)
			return -1;
	} else {
		if (klen + 1 + len > sizeof(msg))
			return tt_err_set(err, "store key '%s' with %zu bytes is too long to hand to the node leader", key, len);
		memcpy(msg, key, klen + 1);
		memcpy(msg + klen + 1, val, len);
		if (rt_node_send(w->node_fd, msg, klen + 1 + len, w->timeout, err) != 0)
			return tt_err_wrap(err, "handing store key '%s' to this node's leader, rank %d (LOCAL_RANK 0)", key,
					   rt_world_name(w, w->rank - w->local_rank));
		return 0;
	}
	if (!w->via_leaders)
		return 0;
	for (int l = 1; l < w->local_size; l++) {
		int name = rt_world_name(w, w->rank + l);
		const char *end;

		if (rt_node_recv(rt_node_peer(w->node_leader, l), msg, sizeof(msg), &got, node_wait(w), err) != 0)
			return tt_err_wrap(err, "waiting for rank %d (LOCAL_RANK %d) to hand its store key", name, l);
		if (!(end = memchr(msg, '\0', got)))
			return tt_err_set(err, "rank %d (LOCAL_RANK %d) handed a store key without its end: all ranks must run the same libtrainrt",
					  name, l);
		if (rt_store_set(w->store, msg, end + 1, got - (size_t)(end + 1 - msg), err) != 0)
			return tt_err_wrap(err, "publishing store key '%s' of rank %d", msg, name);
	}
	return 0;
}

void rt_split(size_t count, int n, int i, size_t *lo, size_t *hi)
{
	size_t base = count / (size_t)n, extra = count % (size_t)n, ui = (size_t)i;

	*lo = ui * base + (ui < extra ? ui : extra);
	*hi = *lo + base + (ui < extra ? 1 : 0);
}

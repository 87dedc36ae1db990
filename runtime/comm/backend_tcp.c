/* SPDX-License-Identifier: MIT */
/* backend_tcp.c — collectives over a ring of TCP connections, for ranks on different nodes
 * (all ranks with TRAINRT_BACKEND=tcp, or one rank per node under the hierarchical backend).
 * All-reduce is reduce-scatter then all-gather around the ring, each step sending to the right
 * while receiving from the left (full duplex), so every link carries 2(n-1)/n of the data.
 * Partial sums travel as float32 (bf16 is widened once and rounded once at the end). In a
 * power-of-two ring a small all-reduce takes recursive doubling instead (log2 n exchanges of the
 * whole buffer with the member at distance 1, 2, 4, ..., over links of its own): the alpha-beta
 * model says it pays up to TCP_DOUBLING_MAX_BYTES (TRAINRT_TCP_ALLREDUCE=ring keeps the ring, for
 * comparisons). On any failure all connections are closed, so the neighbours fail at once and
 * the error runs around the ring instead of every rank waiting for its timeout. Each link is mutually
 * authenticated (rt_link.h), so no other process can join a ring or feed it data. As the whole
 * world's backend (TRAINRT_BACKEND=tcp, or a group spread irregularly over nodes) it also carries
 * point-to-point messages, over p2p_net.c's direct connections. */
#include "comm_backend.h"
#include "rt_link.h"
#include "rt_net.h"
#include "rt_reduce.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCP_BCAST_CHUNK ((size_t)1 << 20)
/* All-reduces of at most this many float32 bytes take recursive doubling (power-of-two rings):
 * log2(n) (alpha + n beta) against the ring's 2(n-1) alpha + 2(n-1)/n n beta. 64 KiB is below
 * every crossover the model computed (BENCHMARKS.md, "All-reduce cost model": 100 KiB on this
 * project's 2-core loopback at 8 ranks, 0.3-58 MiB with InfiniBand's constants at 4-4096 nodes). */
#define TCP_DOUBLING_MAX_BYTES ((size_t)64 << 10)
typedef struct tcp_be {
	rt_backend be;
	int idx, n;
	int *members;
	int right, left; /* fds; -1 once broken */
	char right_at[80], left_at[80]; /* "rank R at IP:PORT", for messages */
	double timeout;
	float *work, *tmp;
	size_t work_cap, tmp_cap;
	rt_p2p_net *p2p; /* the whole world's backend only */
	int ndbl;	 /* log2(n) in a power-of-two ring, else 0 */
	int *dbl;	 /* dbl[k]: the link to member idx ^ (1 << k); -1 once broken */
} tcp_be;

static int grow(float **buf, size_t *cap, size_t n, tt_err *err)
{
	float *p;

	if (n <= *cap)
		return 0;
	p = realloc(*buf, n * sizeof(float));
	if (!p)
		return tt_err_set(err, "out of memory for a %zu MiB ring buffer", (n * sizeof(float)) >> 20);
	*buf = p;
	*cap = n;
	return 0;
}

void rt_tcp_abort(rt_backend *be)
{
	tcp_be *t = (tcp_be *)be;

	if (t->right >= 0)
		close(t->right);
	if (t->left >= 0)
		close(t->left);
	t->right = t->left = -1;
	for (int k = 0; k < t->ndbl; k++) {
		if (t->dbl[k] >= 0)
			close(t->dbl[k]);
		t->dbl[k] = -1;
	}
}

static int broken(tcp_be *t, tt_err *err)
{
	rt_tcp_abort(&t->be);
	return tt_err_wrap(err, "tcp ring (rank %d; from %s, to %s)", t->members[t->idx], t->left_at, t->right_at);
}

static int step(tcp_be *t, const void *s, size_t slen, void *r, size_t rlen, tt_err *err)
{
	if (t->right < 0)
		return tt_err_set(err, "the ring was broken by an earlier failure");
	return rt_net_exchange(t->right, s, slen, t->left, r, rlen, t->timeout, err);
}

/* Headers travel one hop; a mismatch anywhere breaks the ring, which fails everyone. */
static int tcp_enter(tcp_be *t, const rt_op *op, tt_err *err)
{
	rt_op_hdr peer;

	if (t->n == 1)
		return 0;
	if (step(t, &op->hdr, sizeof(op->hdr), &peer, sizeof(peer), err) != 0 ||
	    rt_op_hdr_check(&op->hdr, &peer, t->members[(t->idx + t->n - 1) % t->n], err) != 0)
		return broken(t, err);
	return 0;
}

static size_t mod(long a, int n)
{
	return (size_t)(((a % n) + n) % n);
}

/* work[] of count floats split in n blocks: after this, block idx holds op over all ranks. */
static int ring_reduce_scatter(tcp_be *t, float *work, size_t count, trainrt_redop op,
			       int blocks_are_per_rank, size_t block, tt_err *err)
{
	for (int s = 0; s < t->n - 1; s++) {
		size_t sb = mod(t->idx - s - 1, t->n), rb = mod(t->idx - s - 2, t->n);
		size_t slo, shi, rlo, rhi;

		if (blocks_are_per_rank) {
			slo = sb * block, shi = slo + block, rlo = rb * block, rhi = rlo + block;
		} else {
			rt_split(count, t->n, (int)sb, &slo, &shi);
			rt_split(count, t->n, (int)rb, &rlo, &rhi);
		}
		if (step(t, work + slo, (shi - slo) * sizeof(float), t->tmp, (rhi - rlo) * sizeof(float), err) != 0)
			return -1;
		rt_f32_accumulate(work + rlo, t->tmp, rhi - rlo, op);
	}
	return 0;
}

/* work[] becomes op over all members: at step k, exchange the whole buffer with the member at
 * distance 2^k and combine. Both sides compute the same a + b (or max), so every member ends
 * with the same bits. */
static int doubling_allreduce(tcp_be *t, float *work, size_t count, trainrt_redop op, tt_err *err)
{
	for (int k = 0; k < t->ndbl; k++) {
		int fd = t->dbl[k];

		if (fd < 0)
			return tt_err_set(err, "the ring was broken by an earlier failure");
		if (rt_net_exchange(fd, work, count * sizeof(float), fd, t->tmp, count * sizeof(float), t->timeout,
				    err) != 0)
			return tt_err_wrap(err, "recursive doubling with rank %d", t->members[t->idx ^ (1 << k)]);
		rt_f32_accumulate(work, t->tmp, count, op);
	}
	return 0;
}

static int tcp_allreduce(rt_backend *be, const rt_op *op, tt_err *err)
{
	tcp_be *t = (tcp_be *)be;
	size_t count = op->hdr.count, lo, hi;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	float *work;

	if (tcp_enter(t, op, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (dt == TRAINRT_FLOAT32) {
		if (op->send != op->recv)
			memcpy(op->recv, op->send, count * sizeof(float));
		work = op->recv;
	} else {
		if (grow(&t->work, &t->work_cap, count, err) != 0)
			return -1;
		work = t->work;
		rt_bf16_to_f32_array(work, op->send, count);
	}
	if (t->ndbl && count * sizeof(float) <= TCP_DOUBLING_MAX_BYTES) {
		if (grow(&t->tmp, &t->tmp_cap, count, err) != 0)
			return -1;
		if (doubling_allreduce(t, work, count, rop, err) != 0)
			return broken(t, err);
		if (rop == TRAINRT_AVG)
			rt_f32_scale(work, count, (float)t->n);
		goto done;
	}
	if (grow(&t->tmp, &t->tmp_cap, count / (size_t)t->n + 1, err) != 0)
		return -1;
	if (ring_reduce_scatter(t, work, count, rop, 0, 0, err) != 0)
		return broken(t, err);
	rt_split(count, t->n, t->idx, &lo, &hi);
	if (rop == TRAINRT_AVG)
		rt_f32_scale(work + lo, hi - lo, (float)t->n);
	for (int s = 0; s < t->n - 1; s++) {
		size_t sb = mod(t->idx - s, t->n), rb = mod(t->idx - s - 1, t->n), slo, shi, rlo, rhi;

		rt_split(count, t->n, (int)sb, &slo, &shi);
		rt_split(count, t->n, (int)rb, &rlo, &rhi);
		if (step(t, work + slo, (shi - slo) * sizeof(float), work + rlo, (rhi - rlo) * sizeof(float), err) != 0)
			return broken(t, err);
	}
done:
	if (dt == TRAINRT_BF16)
		rt_f32_to_bf16_array(op->recv, work, count);
	return 0;
}

static int tcp_reducescatter(rt_backend *be, const rt_op *op, tt_err *err)
{
	tcp_be *t = (tcp_be *)be;
	size_t count = op->hdr.count, total = count * (size_t)t->n;
	trainrt_dtype dt = (trainrt_dtype)op->hdr.dtype;
	trainrt_redop rop = (trainrt_redop)op->hdr.redop;
	float *mine;

	if (tcp_enter(t, op, err) != 0)
		return -1;
	if (count == 0)
		return 0;
	if (grow(&t->work, &t->work_cap, total, err) != 0 || grow(&t->tmp, &t->tmp_cap, count, err) != 0)
		return -1;
	if (dt == TRAINRT_FLOAT32)
		memcpy(t->work, op->send, total * sizeof(float));
	else
		rt_bf16_to_f32_array(t->work, op->send, total);
	if (ring_reduce_scatter(t, t->work, total, rop, 1, count, err) != 0)
		return broken(t, err);
	mine = t->work + (size_t)t->idx * count;
	if (rop == TRAINRT_AVG)
		rt_f32_scale(mine, count, (float)t->n);
	if (dt == TRAINRT_FLOAT32)
		memcpy(op->recv, mine, count * sizeof(float));
	else
		rt_f32_to_bf16_array(op->recv, mine, count);
	return 0;
}

static int tcp_allgather(rt_backend *be, const rt_op *op, tt_err *err)
{
	tcp_be *t = (tcp_be *)be;
	size_t bytes = op->hdr.count * trainrt_dtype_size((trainrt_dtype)op->hdr.dtype);
	unsigned char *recv = op->recv;

	if (tcp_enter(t, op, err) != 0)
		return -1;
	if (bytes == 0)
		return 0;
	memmove(recv + (size_t)t->idx * bytes, op->send, bytes);
	for (int s = 0; s < t->n - 1; s++) {
		size_t sb = mod(t->idx - s, t->n), rb = mod(t->idx - s - 1, t->n);

		if (step(t, recv + sb * bytes, bytes, recv + rb * bytes, bytes, err) != 0)
			return broken(t, err);
	}
	return 0;
}

/* Pipelined around the ring from the root, one chunk in flight per hop. */
static int tcp_broadcast(rt_backend *be, const rt_op *op, tt_err *err)
{
	tcp_be *t = (tcp_be *)be;
	size_t bytes = op->hdr.count * trainrt_dtype_size((trainrt_dtype)op->hdr.dtype);
	unsigned char *buf = op->recv;
	int pos = (int)mod(t->idx - op->hdr.root, t->n);

	if (tcp_enter(t, op, err) != 0)
		return -1;
	for (size_t off = 0; off < bytes; off += TCP_BCAST_CHUNK) {
		size_t len = bytes - off < TCP_BCAST_CHUNK ? bytes - off : TCP_BCAST_CHUNK;

		if (pos != 0 && step(t, NULL, 0, buf + off, len, err) != 0)
			return broken(t, err);
		if (pos != t->n - 1 && step(t, buf + off, len, NULL, 0, err) != 0)
			return broken(t, err);
	}
	return 0;
}

/* A tiny all-reduce: every rank's contribution must pass every other rank. */
static int tcp_barrier(rt_backend *be, const rt_op *op, tt_err *err)
{
	tcp_be *t = (tcp_be *)be;
	float token[256] = { 0 };
	rt_op sub = { .hdr = op->hdr, .send = token, .recv = token };

	if (tcp_enter(t, op, err) != 0)
		return -1;
	sub.hdr.kind = RT_ALLREDUCE;
	sub.hdr.count = (uint64_t)(t->n < 256 ? t->n : 256);
	sub.hdr.dtype = TRAINRT_FLOAT32;
	sub.hdr.redop = TRAINRT_SUM;
	return tcp_allreduce(be, &sub, err);
}

static void tcp_destroy(rt_backend *be)
{
	tcp_be *t = (tcp_be *)be;

	rt_tcp_abort(be);
	free(t->dbl);
	rt_p2p_net_destroy(t->p2p);
	free(t->members);
	free(t->work);
	free(t->tmp);
	free(t);
}

static int tcp_send(rt_backend *be, int peer, const rt_p2p_hdr *h, const void *buf, tt_err *err)
{
	return rt_p2p_net_send(((tcp_be *)be)->p2p, peer, h, buf, err);
}

static int tcp_recv(rt_backend *be, int peer, const rt_p2p_hdr *h, void *buf, tt_err *err)
{
	return rt_p2p_net_recv(((tcp_be *)be)->p2p, peer, h, buf, err);
}

static void tcp_abort_op(rt_backend *be, tt_err *err)
{
	(void)err;
	rt_p2p_net_abort(((tcp_be *)be)->p2p);
}

static const struct rt_backend_ops tcp_ops = {
	.name = "tcp",
	.allreduce = tcp_allreduce,
	.allgather = tcp_allgather,
	.reducescatter = tcp_reducescatter,
	.broadcast = tcp_broadcast,
	.barrier = tcp_barrier,
	.send = tcp_send,
	.recv = tcp_recv,
	.abort = tcp_abort_op,
	.destroy = tcp_destroy,
};

/* Only the ring's left neighbour may dial this member. */
struct left_only {
	int li;
	const unsigned char *nonce;
};

static int left_nonce(void *ctx, int from, unsigned char nonce[RT_NONCE_LEN])
{
	const struct left_only *l = ctx;

	if (from != l->li)
		return -1;
	memcpy(nonce, l->nonce, RT_NONCE_LEN);
	return 0;
}

/* Accepts connections until the left neighbour shows up with a valid proof, and answers it;
 * anything else (another job's stray rank, a port scanner, a forger) is closed and ignored. */
static int accept_left(tcp_be *t, int lfd, const char *key, const char *tag, int li, const struct rt_link_peer *left,
		       const struct rt_link_peer *me, tt_err *err)
{
	double deadline = rt_now() + t->timeout;
	struct left_only who = { li, left->nonce };

	while (rt_now() < deadline) {
		int fd, from;

		if (rt_net_accept(lfd, deadline - rt_now(), &fd, err) != 0)
			return tt_err_wrap(err, "waiting for %s to connect", t->left_at);
		if (rt_link_accept(fd, key, tag, t->n, t->idx, me->nonce, left_nonce, &who, t->timeout, &from) == 0) {
			t->left = fd;
			return 0;
		}
		close(fd);
	}
	return tt_err_set(err, "%s did not connect with a proof of this job's key within %.0f s", t->left_at,
			  t->timeout);
}

/* Only a lower member at distance 2^k that has not connected yet may dial a doubling link. */
struct doubling_wait {
	tcp_be *t;
	const struct rt_link_peer *peers;
};

static int doubling_nonce(void *ctx, int from, unsigned char nonce[RT_NONCE_LEN])
{
	const struct doubling_wait *d = ctx;
	unsigned dist = (unsigned)(from ^ d->t->idx);
	int k = 0;

	if (from < 0 || from >= d->t->idx || (dist & (dist - 1)) != 0)
		return -1;
	while ((1u << k) != dist)
		k++;
	if (d->t->dbl[k] >= 0)
		return -1;
	memcpy(nonce, d->peers[k].nonce, RT_NONCE_LEN);
	return 0;
}

/* The doubling links, once the ring is up: one more listener (its own store key and nonce, so
 * ring and doubling handshakes never meet), each member dials the partners above it before it
 * accepts those below (no cycle can wait), then reads the answers. */
static int doubling_connect(tcp_be *t, const rt_world *w, const char *tag, tt_err *err)
{
	struct rt_link_peer me = { .port = 0 }, *peers = calloc((size_t)t->ndbl, sizeof(*peers));
	struct doubling_wait wait = { t, peers };
	char key[400], dtag[300], who[80];
	int lfd = -1, below = 0;
	double deadline;

	if (!peers)
		return tt_err_set(err, "out of memory");
	snprintf(dtag, sizeof(dtag), "%s/doubling", tag);
	if (rt_world_key(w, key, sizeof(key), "tcpdbl/%s/%d", tag, t->idx) != 0) {
		tt_err_set(err, "the group's store keys are too long (groups nested too deeply)");
		goto fail;
	}
	if (rt_link_address(w, me.ip, sizeof(me.ip), err) != 0 || rt_net_listen(me.ip, 0, &lfd, &me.port, err) != 0 ||
	    rt_link_publish(w, key, &me, err) != 0)
		goto fail;
	for (int k = 0; k < t->ndbl; k++) {
		int j = t->idx ^ (1 << k);

		rt_world_key(w, key, sizeof(key), "tcpdbl/%s/%d", tag, j);
		if (rt_link_lookup(w, key, t->members[j], &peers[k], err) != 0)
			goto fail;
		if (j < t->idx) {
			below++;
			continue;
		}
		snprintf(who, sizeof(who), "rank %d at %s:%d", t->members[j], peers[k].ip, peers[k].port);
		if (rt_net_connect(peers[k].ip, peers[k].port, t->timeout, &t->dbl[k], err) != 0 ||
		    rt_link_offer(t->dbl[k], w->key,
				  &(struct rt_link){ .tag = dtag, .n = t->n, .from = t->idx, .to = j,
						     .from_nonce = me.nonce, .to_nonce = peers[k].nonce },
				  t->timeout, err) != 0) {
			tt_err_wrap(err, "connecting to %s for recursive doubling", who);
			goto fail;
		}
	}
	deadline = rt_now() + t->timeout;
	while (below > 0) {
		int fd, from;

		if (rt_now() >= deadline) {
			tt_err_set(err, "%d of the members below this one did not connect with a proof of this job's key within %.0f s",
				   below, t->timeout);
			goto fail;
		}
		if (rt_net_accept(lfd, deadline - rt_now(), &fd, err) != 0) {
			tt_err_wrap(err, "waiting for the recursive-doubling partners below this member");
			goto fail;
		}
		if (rt_link_accept(fd, w->key, dtag, t->n, t->idx, me.nonce, doubling_nonce, &wait, t->timeout,
				   &from) != 0) {
			close(fd);
			continue;
		}
		for (int k = 0; k < t->ndbl; k++)
			if ((t->idx ^ (1 << k)) == from)
				t->dbl[k] = fd;
		below--;
	}
	for (int k = 0; k < t->ndbl; k++) {
		int j = t->idx ^ (1 << k);

		snprintf(who, sizeof(who), "rank %d at %s:%d", t->members[j], peers[k].ip, peers[k].port);
		if (j > t->idx &&
		    rt_link_check_answer(t->dbl[k], w->key,
					 &(struct rt_link){ .tag = dtag, .n = t->n, .from = t->idx, .to = j,
							    .from_nonce = me.nonce, .to_nonce = peers[k].nonce },
					 who, t->timeout, err) != 0)
			goto fail;
	}
	close(lfd);
	free(peers);
	return 0;
fail:
	if (lfd >= 0)
		close(lfd);
	free(peers);
	return -1;
}

rt_backend *rt_tcp_create(const rt_world *w, int idx, int n, const int *members, const char *tag,
			  tt_err *err)
{
	tcp_be *t = calloc(1, sizeof(*t));
	int ri = (idx + 1) % n, li = (idx + n - 1) % n;
	struct rt_link_peer me = { .port = 0 }, right, left;
	struct rt_link out_link;
	char key[400];
	int lfd = -1, use_doubling = !w->tcp_ring_only && n > 1 && (n & (n - 1)) == 0;

	if (!t || !(t->members = malloc(sizeof(int) * (size_t)n))) {
		free(t);
		tt_err_set(err, "out of memory");
		return NULL;
	}
	memcpy(t->members, members, sizeof(int) * (size_t)n);
	t->be.ops = &tcp_ops;
	t->idx = idx;
	t->n = n;
	t->right = t->left = -1;
	t->timeout = w->timeout;
	snprintf(t->right_at, sizeof(t->right_at), "rank %d", members[ri]);
	snprintf(t->left_at, sizeof(t->left_at), "rank %d", members[li]);
	if (n == 1)
		return &t->be;
	if (use_doubling) {
		int lg = 0;

		while ((1 << lg) < n)
			lg++;
		if (!(t->dbl = malloc(sizeof(int) * (size_t)lg))) {
			tt_err_set(err, "out of memory");
			goto fail;
		}
		for (t->ndbl = lg; lg > 0; lg--)
			t->dbl[lg - 1] = -1;
	}
	if (rt_world_key(w, key, sizeof(key), "tcp/%s/%d", tag, idx) != 0) {
		tt_err_set(err, "the group's store keys are too long (groups nested too deeply)");
		goto fail;
	}
	if (rt_link_address(w, me.ip, sizeof(me.ip), err) != 0 || rt_net_listen(me.ip, 0, &lfd, &me.port, err) != 0 ||
	    rt_link_publish(w, key, &me, err) != 0)
		goto fail;
	rt_world_key(w, key, sizeof(key), "tcp/%s/%d", tag, ri);
	if (rt_link_lookup(w, key, members[ri], &right, err) != 0)
		goto fail;
	rt_world_key(w, key, sizeof(key), "tcp/%s/%d", tag, li);
	if (rt_link_lookup(w, key, members[li], &left, err) != 0)
		goto fail;
	snprintf(t->right_at, sizeof(t->right_at), "rank %d at %s:%d", members[ri], right.ip, right.port);
	snprintf(t->left_at, sizeof(t->left_at), "rank %d at %s", members[li], left.ip);
	out_link = (struct rt_link){ .tag = tag, .n = n, .from = idx, .to = ri, .from_nonce = me.nonce,
				     .to_nonce = right.nonce };
	/* Every member dials its right neighbour before it waits for its left one, so the ring
	 * cannot deadlock; the right neighbour's answer is read once the left one is in. */
	if (rt_net_connect(right.ip, right.port, t->timeout, &t->right, err) != 0 ||
	    rt_link_offer(t->right, w->key, &out_link, t->timeout, err) != 0) {
		tt_err_wrap(err, "connecting to %s", t->right_at);
		goto fail;
	}
	if (accept_left(t, lfd, w->key, tag, li, &left, &me, err) != 0 ||
	    rt_link_check_answer(t->right, w->key, &out_link, t->right_at, t->timeout, err) != 0)
		goto fail;
	close(lfd);
	lfd = -1;
	if (t->ndbl && doubling_connect(t, w, tag, err) != 0)
		goto fail;
	return &t->be;
fail:
	if (lfd >= 0)
		close(lfd);
	tt_err_wrap(err, "tcp backend (rank %d of ring '%s')", members[idx], tag);
	tcp_destroy(&t->be);
	return NULL;
}

rt_backend *rt_tcp_world_create(const rt_world *w, tt_err *err)
{
	int *members = malloc(sizeof(int) * (size_t)w->size);
	rt_backend *be;
	tcp_be *t;

	if (!members) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	for (int i = 0; i < w->size; i++)
		members[i] = rt_world_name(w, i);
	be = rt_tcp_create(w, w->rank, w->size, members, "all", err);
	free(members);
	if (!be)
		return NULL;
	t = (tcp_be *)be;
	if (w->size > 1 && !(t->p2p = rt_p2p_net_create(w, err))) {
		tcp_destroy(be);
		return NULL;
	}
	return be;
}

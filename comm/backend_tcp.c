/* SPDX-License-Identifier: MIT */
/* backend_tcp.c — collectives over a ring of TCP connections, for ranks on different nodes
 * (all ranks with TRAINRT_BACKEND=tcp, or one rank per node under the hierarchical backend).
 * All-reduce is reduce-scatter then all-gather around the ring, each step sending to the right
 * while receiving from the left (full duplex), so every link carries 2(n-1)/n of the data.
 * Partial sums travel as float32 (bf16 is widened once and rounded once at the end). On any
 * failure both connections are closed, so the neighbours fail at once and the error runs
 * around the ring instead of every rank waiting for its timeout. Each link is mutually
 * authenticated: both ends publish a fresh nonce through the (authenticated) store and prove they
 * hold the job key with an HMAC over both nonces, the ring and the link's direction, so no other
 * process can join a ring or feed it data. */
#include "comm_backend.h"
#include "rt_net.h"
#include "rt_reduce.h"
#include "rt_token.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TCP_MAGIC 0x54524e48u
#define TCP_BCAST_CHUNK ((size_t)1 << 20)
#define RING_CONNECT_ROLE "trainrt ring: connector proof v1"
#define RING_ACCEPT_ROLE "trainrt ring: acceptor proof v1"

/* What the connector of a link sends first, and the acceptor answers (from = the connector). */
struct ring_proof {
	uint32_t magic;
	int32_t from;
	unsigned char mac[RT_MAC_LEN];
};

/* What both proofs of the link from member `from` to member `to` cover. */
struct ring_transcript {
	char tag[32];
	int32_t n, from, to;
	unsigned char from_nonce[RT_NONCE_LEN], to_nonce[RT_NONCE_LEN];
};

/* A ring member as published in the store: where it listens and its nonce. */
struct ring_peer {
	char ip[64];
	int port;
	unsigned char nonce[RT_NONCE_LEN];
};

typedef struct tcp_be {
	rt_backend be;
	int idx, n;
	int *members;
	int right, left; /* fds; -1 once broken */
	char right_at[80], left_at[80]; /* "rank R at IP:PORT", for messages */
	double timeout;
	float *work, *tmp;
	size_t work_cap, tmp_cap;
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

	if (t->right >= 0)
		close(t->right);
	if (t->left >= 0)
		close(t->left);
	free(t->members);
	free(t->work);
	free(t->tmp);
	free(t);
}

static const struct rt_backend_ops tcp_ops = {
	.name = "tcp",
	.allreduce = tcp_allreduce,
	.allgather = tcp_allgather,
	.reducescatter = tcp_reducescatter,
	.broadcast = tcp_broadcast,
	.barrier = tcp_barrier,
	.destroy = tcp_destroy,
};

/* The proof for the link of transcript tr in the given role. */
static int ring_mac(const char *key, const char *role, const struct ring_transcript *tr, unsigned char mac[RT_MAC_LEN],
		    tt_err *err)
{
	return rt_token_mac(key, role, tr, sizeof(*tr), mac, err);
}

/* Accepts connections until the left neighbour shows up with a valid proof, and answers with
 * ours; anything else (another job's stray rank, a port scanner, a forger) is closed and ignored. */
static int accept_left(tcp_be *t, int lfd, const char *key, const struct ring_transcript *tr, tt_err *err)
{
	double deadline = rt_now() + t->timeout;
	struct ring_proof mine = { .magic = TCP_MAGIC, .from = tr->from };
	unsigned char want[RT_MAC_LEN];

	if (ring_mac(key, RING_CONNECT_ROLE, tr, want, err) != 0 || ring_mac(key, RING_ACCEPT_ROLE, tr, mine.mac, err) != 0)
		return -1;
	while (rt_now() < deadline) {
		struct ring_proof p;
		int fd;

		if (rt_net_accept(lfd, deadline - rt_now(), &fd, err) != 0)
			return tt_err_wrap(err, "waiting for %s to connect", t->left_at);
		if (rt_net_recv_all(fd, &p, sizeof(p), 5.0 < t->timeout ? 5.0 : t->timeout, err) == 0 &&
		    p.magic == TCP_MAGIC && p.from == tr->from && rt_token_mac_equal(p.mac, want) &&
		    rt_net_send_all(fd, &mine, sizeof(mine), t->timeout, err) == 0) {
			t->left = fd;
			return 0;
		}
		close(fd);
	}
	return tt_err_set(err, "%s did not connect with a proof of this job's key within %.0f s", t->left_at,
			  t->timeout);
}

/* Connects to the right neighbour with our proof; its answer is checked by check_right once our
 * own left neighbour is in (every member connects before it waits, so the ring cannot deadlock). */
static int connect_right(tcp_be *t, const struct ring_peer *right, const char *key, const struct ring_transcript *tr,
			 tt_err *err)
{
	struct ring_proof p = { .magic = TCP_MAGIC, .from = tr->from };

	if (ring_mac(key, RING_CONNECT_ROLE, tr, p.mac, err) != 0 ||
	    rt_net_connect(right->ip, right->port, t->timeout, &t->right, err) != 0 ||
	    rt_net_send_all(t->right, &p, sizeof(p), t->timeout, err) != 0)
		return tt_err_wrap(err, "connecting to %s", t->right_at);
	return 0;
}

static int check_right(tcp_be *t, const char *key, const struct ring_transcript *tr, tt_err *err)
{
	struct ring_proof p;
	unsigned char want[RT_MAC_LEN];

	if (ring_mac(key, RING_ACCEPT_ROLE, tr, want, err) != 0)
		return -1;
	if (rt_net_recv_all(t->right, &p, sizeof(p), t->timeout, err) != 0)
		return tt_err_wrap(err, "waiting for %s to answer", t->right_at);
	if (p.magic != TCP_MAGIC || p.from != tr->from || !rt_token_mac_equal(p.mac, want))
		return tt_err_set(err, "the process at %s failed to prove it holds this job's key: another process took "
				  "its place (it died and another user's process bound the port?)", t->right_at);
	return 0;
}

/* Publishes this member (address and nonce) as tcp/TAG/IDX. */
static int publish(const rt_world *w, const char *tag, int idx, const struct ring_peer *me, tt_err *err)
{
	char key[96], text[160];
	int n;

	snprintf(key, sizeof(key), "tcp/%s/%d", tag, idx);
	n = snprintf(text, sizeof(text), "%s %d ", me->ip, me->port);
	for (int i = 0; i < RT_NONCE_LEN; i++)
		n += snprintf(text + n, sizeof(text) - (size_t)n, "%02x", me->nonce[i]);
	return rt_store_set(w->store, key, text, (size_t)n + 1, err);
}

/* Reads member idx as published (waits until it is). */
static int lookup(const rt_world *w, const char *tag, int idx, int rank, struct ring_peer *p, tt_err *err)
{
	char key[96], text[160], hex[2 * RT_NONCE_LEN + 1];
	size_t len;

	snprintf(key, sizeof(key), "tcp/%s/%d", tag, idx);
	if (rt_store_get(w->store, key, text, sizeof(text) - 1, &len, err) != 0)
		return -1;
	text[len < sizeof(text) ? len : sizeof(text) - 1] = '\0';
	if (sscanf(text, "%63s %d %64s", p->ip, &p->port, hex) != 3 || strlen(hex) != 2 * RT_NONCE_LEN)
		return tt_err_set(err, "malformed ring address '%s' for rank %d", text, rank);
	for (int i = 0; i < RT_NONCE_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return tt_err_set(err, "malformed ring nonce for rank %d", rank);
		p->nonce[i] = (unsigned char)v;
	}
	return 0;
}

static void transcript(struct ring_transcript *tr, const char *tag, int n, int from, const struct ring_peer *pf, int to,
		       const struct ring_peer *pt)
{
	memset(tr, 0, sizeof(*tr));
	snprintf(tr->tag, sizeof(tr->tag), "%s", tag);
	tr->n = n;
	tr->from = from;
	tr->to = to;
	memcpy(tr->from_nonce, pf->nonce, RT_NONCE_LEN);
	memcpy(tr->to_nonce, pt->nonce, RT_NONCE_LEN);
}

/* The address peers reach us at: the interface named by TRAINRT_SOCKET_IFNAME (or a plain
 * NCCL_SOCKET_IFNAME), else the one our store connection leaves from — unless that is loopback
 * only because MASTER_ADDR is a name this host maps to 127.0.1.1 (Debian's /etc/hosts), where
 * the first real interface is taken. */
static int ring_address(const rt_world *w, char *ip, size_t len, tt_err *err)
{
	const char *ifn = getenv("TRAINRT_SOCKET_IFNAME");

	if (!ifn || !*ifn) {
		ifn = getenv("NCCL_SOCKET_IFNAME");
		if (ifn && ifn[0] == '^') /* exclusion lists are NCCL's business */
			ifn = NULL;
	}
	if (ifn && *ifn)
		return rt_net_iface_ip(ifn, ip, len, err);
	if (rt_net_local_ip(rt_store_fd(w->store), ip, len, err) != 0)
		return -1;
	if (strncmp(ip, "127.", 4) == 0 && w->master_is_name)
		return rt_net_iface_ip(NULL, ip, len, err);
	return 0;
}

rt_backend *rt_tcp_create(const rt_world *w, int idx, int n, const int *members, const char *tag,
			  tt_err *err)
{
	tcp_be *t = calloc(1, sizeof(*t));
	int ri = (idx + 1) % n, li = (idx + n - 1) % n;
	struct ring_peer me = { .port = 0 }, right, left;
	struct ring_transcript out_link, in_link;
	int lfd = -1;

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
	if (rt_token_nonce(me.nonce, err) != 0 || ring_address(w, me.ip, sizeof(me.ip), err) != 0 ||
	    rt_net_listen(me.ip, 0, &lfd, &me.port, err) != 0 || publish(w, tag, idx, &me, err) != 0 ||
	    lookup(w, tag, ri, members[ri], &right, err) != 0 || lookup(w, tag, li, members[li], &left, err) != 0)
		goto fail;
	snprintf(t->right_at, sizeof(t->right_at), "rank %d at %s:%d", members[ri], right.ip, right.port);
	snprintf(t->left_at, sizeof(t->left_at), "rank %d at %s", members[li], left.ip);
	transcript(&out_link, tag, n, idx, &me, ri, &right);
	transcript(&in_link, tag, n, li, &left, idx, &me);
	if (connect_right(t, &right, w->key, &out_link, err) != 0 || accept_left(t, lfd, w->key, &in_link, err) != 0 ||
	    check_right(t, w->key, &out_link, err) != 0)
		goto fail;
	close(lfd);
	return &t->be;
fail:
	if (lfd >= 0)
		close(lfd);
	tt_err_wrap(err, "tcp backend (rank %d of ring '%s')", members[idx], tag);
	tcp_destroy(&t->be);
	return NULL;
}

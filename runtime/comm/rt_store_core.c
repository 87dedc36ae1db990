/* SPDX-License-Identifier: MIT */
/* rt_store_core.c — the store server's protocol over byte buffers (see rt_store_core.h): the
 * admission handshake, the limits on connections that are not admitted, and SET/GET/ADD on a
 * hash table, every length and sum checked before it is used. */
#include "rt_store_core.h"

#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KV_BUCKETS 4096
/* An admitted rank may pipeline a little: its input buffer grows to two largest requests. */
#define ADMITTED_IN_MIN 4096
#define ADMITTED_IN_MAX (2 * (sizeof(struct rt_store_req) + RT_STORE_MAX_KEY + (size_t)RT_STORE_MAX_VAL))

struct kv {
	char *key;
	void *val;
	size_t len;
	size_t waiters; /* GETs parked on this key: a SET of a key nobody waits for scans nothing */
	struct kv *next;
};

/* One rendezvous: who arrived, until when the others may, and how it ended. */
struct barrier {
	char *name;
	unsigned char *arrived; /* a bit per rank */
	uint32_t count;		/* ranks arrived */
	size_t waiting;		/* connections parked in it */
	double deadline, timeout; /* the first arrival + its timeout */
	char *reason;		/* why it failed; NULL while it may still complete */
	struct barrier *next;
};

/* A list of connections (pointers stay valid until the sweep that frees them). */
struct conn_list {
	rt_store_conn **at;
	size_t n, cap;
};

struct rt_store_core {
	char key[RT_TOKEN_MAX];
	int world_size;
	int admitted; /* ranks ever admitted: never more than world_size */
	struct kv *table[KV_BUCKETS];
	struct conn_list conns;	   /* every connection, in the order they were opened */
	struct conn_list fifo;	   /* not admitted when opened, oldest first (may hold admitted ones
				    * until they reach the front or the sweep) */
	size_t fifo_head;
	struct conn_list draining; /* refused and flushed: closed at drain_end */
	struct conn_list notice;   /* what the edge must look at: new output, evicted, closed */
	size_t pending;		   /* connections neither admitted, evicted nor dropped */
	size_t dead;		   /* dropped, not yet swept */
	double now;		   /* the edge's clock at its last call that gave one */
	struct barrier *barriers;
	unsigned char sink[4096];  /* where a refused connection's input goes */
};

static int list_push(struct conn_list *l, rt_store_conn *k)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		rt_store_conn **at = realloc(l->at, cap * sizeof(*at));

		if (!at)
			return -1;
		l->at = at;
		l->cap = cap;
	}
	l->at[l->n++] = k;
	return 0;
}

/* Tells the edge to look at k (once until it does). */
static void notice(rt_store_core *s, rt_store_conn *k)
{
	if (!k->noticed && list_push(&s->notice, k) == 0)
		k->noticed = 1;
}

/* Whether s->pending counts k: not admitted, not evicted, not dropped. */
static int counted(const rt_store_conn *k)
{
	return !k->dropped && !k->evicted && k->stage != RT_CONN_ADMITTED;
}

/* Whether k counts against the cap of connections not admitted. */
static int is_pending(const rt_store_conn *k)
{
	return !k->dead && counted(k);
}

int rt_store_proofs(const char *key, const struct rt_store_transcript *t, unsigned char server_mac[RT_MAC_LEN],
		    unsigned char client_mac[RT_MAC_LEN], tt_err *err)
{
	if (server_mac && rt_token_mac(key, RT_STORE_SERVER_ROLE, t, sizeof(*t), server_mac, err) != 0)
		return -1;
	if (client_mac && rt_token_mac(key, RT_STORE_CLIENT_ROLE, t, sizeof(*t), client_mac, err) != 0)
		return -1;
	return 0;
}

/* FNV-1a: spreads keys over the buckets (not a security function). */
static uint64_t bucket_of(const char *key)
{
	uint64_t h = 1469598103934665603ull;

	for (; *key; key++) {
		h ^= (unsigned char)*key;
		h *= 1099511628211ull;
	}
	return h % KV_BUCKETS;
}

static struct kv *kv_find(rt_store_core *s, const char *key, int create)
{
	uint64_t h = bucket_of(key);
	struct kv *e;

	for (e = s->table[h]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	if (!create)
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->key = strdup(key);
	if (!e->key) {
		free(e);
		return NULL;
	}
	e->next = s->table[h];
	s->table[h] = e;
	return e;
}

static int out_append(rt_store_conn *k, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (k->out_len == k->out_off && k->core)
		notice(k->core, k);
	if (k->out_len + n > k->out_cap) {
		size_t cap = (k->out_len + n) * 2;
		unsigned char *o = realloc(k->out, cap);

		if (!o)
			return -1;
		k->out = o;
		k->out_cap = cap;
	}
	memcpy(k->out + k->out_len, p, n);
	k->out_len += n;
	return 0;
}

static int reply(rt_store_conn *k, uint32_t status, const void *val, size_t len)
{
	struct rt_store_rsp h = { .status = status, .vallen = (uint32_t)len };

	if (out_append(k, &h, sizeof(h)) != 0 || out_append(k, val, len) != 0)
		return -1;
	return 0;
}

static int refuse(rt_store_conn *k, const char *msg)
{
	k->closing = 1;
	return reply(k, RT_ST_REFUSED, msg, strlen(msg));
}

/* A failed request on an admitted connection: the reason goes back, the stream stays aligned. */
static int request_error(rt_store_conn *k, const char *msg)
{
	return reply(k, RT_ST_ERROR, msg, strlen(msg));
}

static int world_complete(rt_store_core *s, rt_store_conn *k)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "all %d ranks of this world are already connected: this is a late or duplicate "
		 "rank (was a RANK launched twice?)", s->world_size);
	return refuse(k, msg);
}

static int refuse_version(rt_store_conn *k, uint32_t version)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "protocol version %u differs from the server's %u: all ranks must run the same libtrainrt",
		 version, RT_STORE_VERSION);
	return refuse(k, msg);
}

static int handle_hello(rt_store_core *s, rt_store_conn *k, const unsigned char *val, size_t len)
{
	struct rt_store_hello h;
	struct rt_store_transcript t;
	struct rt_store_challenge ch;
	char msg[256];
	tt_err err;
	uint32_t version;

	if (len < sizeof(version))
		return refuse(k, "malformed hello (not a trainrt peer?)");
	memcpy(&version, val, sizeof(version));
	if (version != RT_STORE_VERSION)
		return refuse_version(k, version);
	if (len != sizeof(h))
		return refuse(k, "malformed hello (not a trainrt peer?)");
	memcpy(&h, val, sizeof(h));
	if ((int)h.world_size != s->world_size) {
		snprintf(msg, sizeof(msg), "WORLD_SIZE %u differs from rank 0's %d: all ranks must be launched with the same WORLD_SIZE",
			 h.world_size, s->world_size);
		return refuse(k, msg);
	}
	if (s->admitted >= s->world_size)
		return world_complete(s, k);
	t.version = h.version;
	t.world_size = h.world_size;
	memcpy(t.client_nonce, h.nonce, RT_NONCE_LEN);
	if (rt_token_nonce(t.server_nonce, &err) != 0 || rt_store_proofs(s->key, &t, k->answer, k->expect, &err) != 0)
		return refuse(k, err.msg);
	memcpy(ch.nonce, t.server_nonce, RT_NONCE_LEN);
	k->stage = RT_CONN_PROOF;
	return reply(k, RT_ST_OK, &ch, sizeof(ch));
}

static int handle_proof(rt_store_core *s, rt_store_conn *k, const unsigned char *val, size_t len)
{
	if (len != RT_MAC_LEN)
		return refuse(k, "malformed proof (not a trainrt peer?)");
	if (!rt_token_mac_equal(val, k->expect))
		return refuse(k, "wrong job key: this rank belongs to another job, step or user (check TRAINRT_TOKEN, "
			      "SLURM_JOB_ID and SLURM_STEP_ID)");
	if (s->admitted >= s->world_size)
		return world_complete(s, k);
	s->admitted++;
	k->stage = RT_CONN_ADMITTED;
	s->pending--;
	/* Only a rank that proved it holds the key gets a keyed answer. */
	return reply(k, RT_ST_OK, k->answer, RT_MAC_LEN);
}

static int wake_waiters(rt_store_core *s, struct kv *e)
{
	for (size_t i = 0; i < s->conns.n && e->waiters > 0; i++) {
		rt_store_conn *k = s->conns.at[i];

		if (!k->dead && k->wait_key && strcmp(k->wait_key, e->key) == 0) {
			free(k->wait_key);
			k->wait_key = NULL;
			e->waiters--;
			if (reply(k, RT_ST_OK, e->val, e->len) != 0)
				return -1;
		}
	}
	return 0;
}

/* ---- the rendezvous (JOIN) ------------------------------------------------------------------ */

static struct barrier *barrier_find(rt_store_core *s, const char *name, int create)
{
	struct barrier *b;

	for (b = s->barriers; b; b = b->next)
		if (strcmp(b->name, name) == 0)
			return b;
	if (!create)
		return NULL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	b->name = strdup(name);
	b->arrived = calloc(((size_t)s->world_size + 7) / 8, 1);
	if (!b->name || !b->arrived) {
		free(b->name);
		free(b->arrived);
		free(b);
		return NULL;
	}
	b->next = s->barriers;
	s->barriers = b;
	return b;
}

static int has_arrived(const struct barrier *b, uint32_t rank)
{
	return b->arrived[rank / 8] >> (rank % 8) & 1;
}

/* Ends the rendezvous for every rank waiting in it: OK, or the reason it failed. */
static int barrier_release(rt_store_core *s, struct barrier *b)
{
	for (size_t i = 0; i < s->conns.n && b->waiting > 0; i++) {
		rt_store_conn *k = s->conns.at[i];

		if (k->join != b)
			continue;
		k->join = NULL;
		b->waiting--;
		if (!k->dead && (b->reason ? request_error(k, b->reason) : reply(k, RT_ST_OK, NULL, 0)) != 0)
			return -1;
	}
	return 0;
}

static int barrier_fail(rt_store_core *s, struct barrier *b, const char *reason)
{
	b->reason = strdup(reason);
	if (!b->reason)
		return -1;
	return barrier_release(s, b);
}

/* "3,17-19,40" for the ranks not in b, cut at len with "..." (0: none missing). */
static size_t missing_ranks(const rt_store_core *s, const struct barrier *b, char *buf, size_t len)
{
	size_t used = 0, missing = 0;
	int cut = 0;

	buf[0] = '\0';
	for (uint32_t r = 0; r < (uint32_t)s->world_size; r++) {
		uint32_t end = r;

		if (has_arrived(b, r))
			continue;
		while (end + 1 < (uint32_t)s->world_size && !has_arrived(b, end + 1))
			end++;
		missing += end - r + 1;
		/* Room for "nnnnnnnnnn-nnnnnnnnnn," and a final ",..." at every step. */
		if (!cut && used + 28 < len)
			used += (size_t)snprintf(buf + used, len - used, end > r ? "%s%u-%u" : "%s%u",
						 used ? "," : "", r, end);
		else if (!cut && (cut = 1))
			snprintf(buf + used, len - used, ",...");
		r = end;
	}
	return missing;
}

/* rank arrives in b (not there yet); the first arrival starts b's clock. */
static void arrive(rt_store_core *s, struct barrier *b, uint32_t rank, double timeout_s)
{
	if (b->count == 0) {
		b->deadline = s->now + timeout_s;
		b->timeout = timeout_s;
	}
	b->arrived[rank / 8] |= (unsigned char)(1u << (rank % 8));
	b->count++;
}

static int cmd_join(rt_store_core *s, rt_store_conn *k, const char *name, const unsigned char *val, size_t len)
{
	struct rt_store_join j;
	struct barrier *b;
	char msg[RT_STORE_MAX_REASON];

	if (len != sizeof(j))
		return refuse(k, "malformed join");
	memcpy(&j, val, sizeof(j));
	if (j.rank >= (uint32_t)s->world_size || !(j.timeout_s > 0)) {
		snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u is outside this world of %d ranks (check RANK and "
			 "WORLD_SIZE)", name, j.rank, s->world_size);
		return request_error(k, msg);
	}
	b = barrier_find(s, name, 1);
	if (!b)
		return -1;
	if (b->reason)
		return request_error(k, b->reason);
	if (b->count == (uint32_t)s->world_size)
		return reply(k, RT_ST_OK, NULL, 0);
	if (has_arrived(b, j.rank)) {
		snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u arrived twice (was RANK %u launched twice?)", name,
			 j.rank, j.rank);
		return barrier_fail(s, b, msg) != 0 || request_error(k, msg) != 0 ? -1 : 0;
	}
	arrive(s, b, j.rank, j.timeout_s);
	k->join = b;
	k->join_rank = j.rank;
	b->waiting++;
	if (b->count == (uint32_t)s->world_size)
		return barrier_release(s, b);
	return 0;
}

/* A node leader's update (rt_store_core.h, JOIN_NODE); k is parked in b after its first. */
static int cmd_join_node(rt_store_core *s, rt_store_conn *k, const char *name, const unsigned char *val, size_t len)
{
	struct rt_store_join_node j;
	const unsigned char *bits = val + sizeof(j);
	struct barrier *b;
	char msg[RT_STORE_MAX_REASON];

	if (len < sizeof(j))
		return refuse(k, "malformed node join");
	memcpy(&j, val, sizeof(j));
	if (j.count == 0 || j.first_rank >= (uint32_t)s->world_size || j.count > (uint32_t)s->world_size - j.first_rank ||
	    len != sizeof(j) + (j.count + 7) / 8 || !(j.timeout_s > 0) || j.event > RT_NODE_TWICE)
		return refuse(k, "malformed node join (ranks outside the world, or not a trainrt peer?)");
	b = barrier_find(s, name, 1);
	if (!b)
		return -1;
	if (k->node_join != b) { /* the node's first request */
		if (k->join)
			return refuse(k, "node join while in another rendezvous");
		k->node_join = b;
		k->join_rank = j.first_rank;
		k->node_count = j.count;
		if (b->reason)
			return request_error(k, b->reason);
		if (b->count == (uint32_t)s->world_size)
			return reply(k, RT_ST_OK, NULL, 0);
		k->join = b;
		b->waiting++;
	} else if (k->join != b) {
		return 0; /* the verdict went out already */
	}
	if (j.first_rank != k->join_rank || j.count != k->node_count)
		return refuse(k, "node join for other ranks than this connection's first");
	if (j.event == RT_NODE_LEFT || j.event == RT_NODE_TWICE) {
		if (j.event == RT_NODE_LEFT)
			snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u left (its connection to its node leader, rank "
				 "%u, closed: crashed or killed?) while %u of %d ranks had arrived", name, j.who,
				 j.first_rank, b->count, s->world_size);
		else
			snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u arrived twice (was RANK %u launched twice?)",
				 name, j.who, j.who);
		return barrier_fail(s, b, msg);
	}
	for (uint32_t i = 0; i < j.count; i++) {
		uint32_t r = j.first_rank + i;

		if (!(bits[i / 8] >> (i % 8) & 1))
			continue;
		if (has_arrived(b, r)) {
			snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u arrived twice (was RANK %u launched twice?)",
				 name, r, r);
			return barrier_fail(s, b, msg);
		}
		arrive(s, b, r, j.timeout_s);
	}
	if (b->count == (uint32_t)s->world_size)
		return barrier_release(s, b);
	return 0;
}

/* A rank waiting in a rendezvous closed its connection: the rendezvous cannot complete. */
static void barrier_lost(rt_store_core *s, rt_store_conn *k)
{
	struct barrier *b = k->join;
	char msg[RT_STORE_MAX_REASON];

	k->join = NULL;
	b->waiting--;
	if (b->reason)
		return;
	if (k->node_join == b)
		snprintf(msg, sizeof(msg), "rendezvous '%s': the node leader, rank %u, left with its node's ranks %u-%u "
			 "(its connection to the store closed: crashed or killed?) while %u of %d ranks had arrived",
			 b->name, k->join_rank, k->join_rank, k->join_rank + k->node_count - 1, b->count, s->world_size);
	else
		snprintf(msg, sizeof(msg), "rendezvous '%s': rank %u left (its connection to the store closed: crashed or "
			 "killed?) while %u of %d ranks had arrived", b->name, k->join_rank, b->count, s->world_size);
	if (barrier_fail(s, b, msg) != 0)
		return; /* out of memory: the others still fail at the deadline, without the name */
}

/* Rendezvous past their deadline fail, naming who did not come; returns the next deadline. */
static double barriers_expire(rt_store_core *s, double now, double next)
{
	for (struct barrier *b = s->barriers; b; b = b->next) {
		char ranks[512], msg[RT_STORE_MAX_REASON];
		size_t missing;

		if (b->reason || b->count == 0 || b->count == (uint32_t)s->world_size)
			continue;
		if (now < b->deadline) {
			next = b->deadline < next ? b->deadline : next;
			continue;
		}
		missing = missing_ranks(s, b, ranks, sizeof(ranks));
		snprintf(msg, sizeof(msg), "rendezvous '%s': %s %s (%zu of %d) did not arrive within %.0f s of the first "
			 "(not started, hung, or died before reaching the store; TRAINRT_TIMEOUT)", b->name,
			 missing > 1 ? "ranks" : "rank", ranks, missing, s->world_size, b->timeout);
		barrier_fail(s, b, msg);
	}
	return next;
}

static int cmd_add(rt_store_core *s, rt_store_conn *k, const char *key, const unsigned char *val, size_t len)
{
	int64_t delta, cur = 0;
	char msg[RT_STORE_MAX_KEY + 128];
	struct kv *e;

	if (len != sizeof(delta))
		return refuse(k, "malformed add");
	memcpy(&delta, val, sizeof(delta));
	e = kv_find(s, key, 1);
	if (!e)
		return -1;
	if (e->val && e->len != sizeof(cur)) {
		snprintf(msg, sizeof(msg), "add on key '%s', whose value is %zu bytes, not an 8-byte counter", key, e->len);
		return request_error(k, msg);
	}
	if (e->val)
		memcpy(&cur, e->val, sizeof(cur));
	if (__builtin_add_overflow(cur, delta, &cur)) {
		snprintf(msg, sizeof(msg), "add of %lld to key '%s' overflows its 64-bit counter", (long long)delta, key);
		return request_error(k, msg);
	}
	if (!e->val && !(e->val = malloc(sizeof(cur))))
		return -1;
	memcpy(e->val, &cur, sizeof(cur));
	e->len = sizeof(cur);
	if (reply(k, RT_ST_OK, &cur, sizeof(cur)) != 0)
		return -1;
	return wake_waiters(s, e);
}

/* One complete request; -1 drops the connection. */
static int handle(rt_store_core *s, rt_store_conn *k, uint32_t cmd, const char *key, const unsigned char *val,
		  size_t len)
{
	struct kv *e;

	if (k->stage == RT_CONN_HELLO)
		return cmd == RT_CMD_HELLO ? handle_hello(s, k, val, len) : refuse(k, "request before hello");
	if (k->stage == RT_CONN_PROOF)
		return cmd == RT_CMD_PROOF ? handle_proof(s, k, val, len) : refuse(k, "request before the key proof");
	switch (cmd) {
	case RT_CMD_SET: {
		void *copy = malloc(len ? len : 1);

		e = kv_find(s, key, 1);
		if (!e || !copy) {
			free(copy);
			return -1;
		}
		memcpy(copy, val, len);
		free(e->val);
		e->val = copy;
		e->len = len;
		if (reply(k, RT_ST_OK, NULL, 0) != 0)
			return -1;
		return wake_waiters(s, e);
	}
	case RT_CMD_GET:
		e = kv_find(s, key, 1);
		if (!e)
			return -1;
		if (e->val)
			return reply(k, RT_ST_OK, e->val, e->len);
		k->wait_key = strdup(key);
		if (!k->wait_key)
			return -1;
		e->waiters++;
		return 0;
	case RT_CMD_ADD:
		return cmd_add(s, k, key, val, len);
	case RT_CMD_JOIN:
		return cmd_join(s, k, key, val, len);
	case RT_CMD_JOIN_NODE:
		return cmd_join_node(s, k, key, val, len);
	default:
		return refuse(k, "unknown request");
	}
}

static int header_ok(const struct rt_store_req *h)
{
	return h->magic == RT_STORE_MAGIC && h->keylen <= RT_STORE_MAX_KEY && h->vallen <= RT_STORE_MAX_VAL;
}

/* Bytes of value a handshake message may have read: the expected size, or less when the header
 * announces less (the message is malformed and refused once read). */
static size_t handshake_value(const rt_store_conn *k, const struct rt_store_req *h)
{
	size_t want = k->stage == RT_CONN_HELLO ? sizeof(struct rt_store_hello) : RT_MAC_LEN;

	return h->vallen < want ? h->vallen : want;
}

/* Before admission: input is one message in k->pre, read exactly (never more than it needs). */
static int received_handshake(rt_store_core *s, rt_store_conn *k)
{
	struct rt_store_req h;
	size_t have;

	if (k->pre_len < sizeof(h))
		return 0;
	memcpy(&h, k->pre, sizeof(h));
	if (!header_ok(&h) || h.keylen != 0)
		return refuse(k, "malformed request (not a trainrt peer?)");
	have = k->pre_len - sizeof(h);
	if (have < handshake_value(k, &h))
		return 0;
	k->pre_len = 0;
	if (h.vallen > have) { /* longer than any handshake message: refused on what was read */
		uint32_t version;

		memcpy(&version, k->pre + sizeof(h), sizeof(version));
		if (h.cmd == RT_CMD_HELLO && k->stage == RT_CONN_HELLO && version != RT_STORE_VERSION)
			return refuse_version(k, version);
		return refuse(k, "malformed request (not a trainrt peer?)");
	}
	return handle(s, k, h.cmd, NULL, k->pre + sizeof(h), h.vallen);
}

/* After admission: every whole request the input holds, unless a GET is parked. */
static int consume(rt_store_core *s, rt_store_conn *k)
{
	size_t off = 0;
	int rc = 0;

	while (!k->closing && !k->wait_key && k->in_len - off >= sizeof(struct rt_store_req)) {
		struct rt_store_req h;
		char key[RT_STORE_MAX_KEY + 1];

		memcpy(&h, k->in + off, sizeof(h));
		if (!header_ok(&h)) {
			rc = refuse(k, "malformed request (not a trainrt peer, or key/value too large)");
			break;
		}
		/* Parked in a rendezvous: only a node leader's updates to it go on. */
		if (k->join && !(h.cmd == RT_CMD_JOIN_NODE && k->node_join == k->join))
			break;
		if (k->in_len - off < sizeof(h) + h.keylen + h.vallen)
			break;
		memcpy(key, k->in + off + sizeof(h), h.keylen);
		key[h.keylen] = '\0';
		rc = handle(s, k, h.cmd, key, k->in + off + sizeof(h) + h.keylen, h.vallen);
		off += sizeof(h) + h.keylen + h.vallen;
		if (rc != 0)
			break;
	}
	memmove(k->in, k->in + off, k->in_len - off);
	k->in_len -= off;
	return rc;
}

int rt_store_core_room(rt_store_conn *k, unsigned char **buf, size_t *room)
{
	*room = 0;
	if (k->closing) {
		*buf = NULL; /* the edge discards */
		*room = SIZE_MAX;
		return 0;
	}
	if (k->out_len > k->out_off)
		return 0;
	if (k->stage != RT_CONN_ADMITTED) {
		size_t need = sizeof(struct rt_store_req);

		if (k->pre_len >= need) {
			struct rt_store_req h;

			memcpy(&h, k->pre, sizeof(h));
			need += handshake_value(k, &h);
		}
		*buf = k->pre + k->pre_len;
		*room = need - k->pre_len;
		return 0;
	}
	/* Small to start (16k ranks hold 16k buffers; requests are a few hundred bytes), doubling
	 * while a large value comes in. */
	if (k->in_cap - k->in_len < ADMITTED_IN_MIN && k->in_cap < ADMITTED_IN_MAX) {
		size_t cap = k->in_cap ? k->in_cap * 2 : ADMITTED_IN_MIN;
		unsigned char *in;

		if (cap > ADMITTED_IN_MAX)
			cap = ADMITTED_IN_MAX;
		in = realloc(k->in, cap);
		if (!in)
			return -1;
		k->in = in;
		k->in_cap = cap;
	}
	if (k->in_len == k->in_cap) /* a rank never pipelines this much */
		return -1;
	*buf = k->in + k->in_len;
	*room = k->in_cap - k->in_len;
	return 0;
}

int rt_store_core_received(rt_store_core *s, rt_store_conn *k, size_t n)
{
	if (k->closing)
		return 0;
	if (k->stage != RT_CONN_ADMITTED) {
		k->pre_len += n;
		return received_handshake(s, k);
	}
	k->in_len += n;
	return consume(s, k);
}

int rt_store_core_sent(rt_store_core *s, rt_store_conn *k, size_t n, double now)
{
	s->now = now;
	k->out_off += n;
	if (k->out_off < k->out_len)
		return 0;
	k->out_off = k->out_len = 0;
	if (k->closing) {
		if (k->drain_end == 0) {
			k->drain_end = now + RT_STORE_DRAIN_S;
			if (list_push(&s->draining, k) != 0)
				return -1;
		}
		return 1;
	}
	/* Input parked behind a reply or a wait resumes once the reply is out. */
	if (k->stage == RT_CONN_ADMITTED && !k->wait_key && k->in_len)
		return consume(s, k) != 0 ? -1 : 0;
	return 0;
}

rt_store_core *rt_store_core_new(const char *key, int world_size, tt_err *err)
{
	rt_store_core *s;

	if (strlen(key) >= sizeof(s->key)) {
		tt_err_set(err, "the store key is longer than %zu bytes", sizeof(s->key) - 1);
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		tt_err_set(err, "out of memory starting the store");
		return NULL;
	}
	snprintf(s->key, sizeof(s->key), "%s", key);
	s->world_size = world_size;
	return s;
}

static void conn_free(rt_store_conn *k)
{
	free(k->in);
	free(k->out);
	free(k->wait_key);
	free(k);
}

void rt_store_core_free(rt_store_core *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->conns.n; i++)
		conn_free(s->conns.at[i]);
	free(s->conns.at);
	free(s->fifo.at);
	free(s->draining.at);
	free(s->notice.at);
	for (size_t b = 0; b < KV_BUCKETS; b++) {
		struct kv *e = s->table[b];

		while (e) {
			struct kv *next = e->next;

			free(e->key);
			free(e->val);
			free(e);
			e = next;
		}
	}
	while (s->barriers) {
		struct barrier *next = s->barriers->next;

		free(s->barriers->name);
		free(s->barriers->arrived);
		free(s->barriers->reason);
		free(s->barriers);
		s->barriers = next;
	}
	OPENSSL_cleanse(s->key, sizeof(s->key));
	free(s);
}

rt_store_conn *rt_store_core_open(rt_store_core *s, int fd, double now)
{
	rt_store_conn *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	/* Room in both lists first, so a failure leaves neither holding k. */
	if (list_push(&s->conns, k) != 0) {
		free(k);
		return NULL;
	}
	if (list_push(&s->fifo, k) != 0) {
		s->conns.n--;
		free(k);
		return NULL;
	}
	k->fd = fd;
	k->opened = now;
	k->core = s;
	s->now = now;
	s->pending++;
	return k;
}

size_t rt_store_core_count(const rt_store_core *s)
{
	return s->conns.n;
}

rt_store_conn *rt_store_core_at(rt_store_core *s, size_t i)
{
	return s->conns.at[i];
}

size_t rt_store_core_pending(const rt_store_core *s)
{
	return s->pending;
}

/* The oldest pending connection that may be evicted at now, or NULL. The fifo's front holds the
 * oldest; what is no longer pending there is skipped for good. */
static rt_store_conn *evictable(rt_store_core *s, double now)
{
	while (s->fifo_head < s->fifo.n && !is_pending(s->fifo.at[s->fifo_head]))
		s->fifo_head++;
	for (size_t i = s->fifo_head; i < s->fifo.n; i++) {
		rt_store_conn *k = s->fifo.at[i];

		if (!is_pending(k) || k->closing)
			continue;
		return now - k->opened >= RT_STORE_EVICT_AGE_S ? k : NULL;
	}
	return NULL;
}

int rt_store_core_can_admit(rt_store_core *s, double now)
{
	return s->pending < RT_STORE_MAX_PENDING || evictable(s, now) != NULL;
}

/* Tells the client to connect again and has the edge close it. */
static void evict(rt_store_core *s, rt_store_conn *k)
{
	struct rt_store_rsp h = { .status = RT_ST_RETRY, .vallen = 0 };

	k->out_off = k->out_len = 0;
	if (out_append(k, &h, sizeof(h)) != 0)
		k->out_len = 0;
	if (counted(k))
		s->pending--;
	k->evicted = 1;
	notice(s, k);
}

void rt_store_core_make_room(rt_store_core *s, double now)
{
	if (s->pending > RT_STORE_MAX_PENDING) {
		rt_store_conn *k = evictable(s, now);

		if (k)
			evict(s, k);
	}
}

void rt_store_core_drop(rt_store_core *s, rt_store_conn *k)
{
	if (k->dropped)
		return;
	if (counted(k))
		s->pending--;
	k->dead = k->dropped = 1;
	s->dead++;
	if (k->wait_key) {
		struct kv *e = kv_find(s, k->wait_key, 0);

		if (e)
			e->waiters--;
	}
	if (k->join)
		barrier_lost(s, k);
}

/* Only connections not admitted and refused ones have deadlines: the fifo and the draining list,
 * never a scan of every rank. */
double rt_store_core_expire(rt_store_core *s, double now)
{
	double next = now + 3600;
	size_t live = 0;

	s->now = now;
	for (size_t i = 0; i < s->draining.n; i++) {
		rt_store_conn *k = s->draining.at[i];

		if (k->dead)
			continue;
		if (now >= k->drain_end) {
			rt_store_core_drop(s, k);
			notice(s, k);
		} else if (k->drain_end < next) {
			next = k->drain_end;
		}
	}
	while (s->fifo_head < s->fifo.n && !is_pending(s->fifo.at[s->fifo_head]))
		s->fifo_head++;
	for (size_t i = s->fifo_head; i < s->fifo.n; i++) {
		rt_store_conn *k = s->fifo.at[i];

		if (!is_pending(k) || k->drain_end > 0)
			continue;
		if (now >= k->opened + RT_STORE_HANDSHAKE_S) {
			/* A refusal that could not even be flushed in time is dropped with the connection. */
			if (k->closing) {
				rt_store_core_drop(s, k);
				notice(s, k);
			} else {
				evict(s, k);
			}
			continue;
		}
		live += !k->closing;
		if (k->opened + RT_STORE_HANDSHAKE_S < next)
			next = k->opened + RT_STORE_HANDSHAKE_S;
	}
	/* At the cap, the oldest pending connection becomes evictable after the eviction age. */
	if (live >= RT_STORE_MAX_PENDING) {
		for (size_t i = s->fifo_head; i < s->fifo.n; i++) {
			rt_store_conn *k = s->fifo.at[i];

			if (is_pending(k) && !k->closing) {
				if (k->opened + RT_STORE_EVICT_AGE_S < next)
					next = k->opened + RT_STORE_EVICT_AGE_S;
				break;
			}
		}
	}
	return barriers_expire(s, now, next);
}

rt_store_conn *rt_store_core_next_notice(rt_store_core *s)
{
	rt_store_conn *k;

	if (s->notice.n == 0)
		return NULL;
	k = s->notice.at[--s->notice.n];
	k->noticed = 0;
	return k;
}

size_t rt_store_core_dead(const rt_store_core *s)
{
	return s->dead;
}

/* Keeps the entries of l for which keep() holds, in order. */
static void list_filter(struct conn_list *l, size_t from, int (*keep)(const rt_store_conn *k))
{
	size_t j = 0;

	for (size_t i = from; i < l->n; i++)
		if (keep(l->at[i]))
			l->at[j++] = l->at[i];
	l->n = j;
}

static int alive(const rt_store_conn *k)
{
	return !k->dead;
}

static int still_draining(const rt_store_conn *k)
{
	return !k->dead && k->drain_end > 0;
}

void rt_store_core_sweep(rt_store_core *s)
{
	size_t j = 0;

	/* A connection the caller marked dead itself is dropped here first. */
	for (size_t i = 0; i < s->conns.n; i++)
		if (s->conns.at[i]->dead)
			rt_store_core_drop(s, s->conns.at[i]);
	list_filter(&s->fifo, s->fifo_head, is_pending);
	s->fifo_head = 0;
	list_filter(&s->draining, 0, still_draining);
	list_filter(&s->notice, 0, alive);
	for (size_t i = 0; i < s->conns.n; i++) {
		if (s->conns.at[i]->dead)
			conn_free(s->conns.at[i]);
		else
			s->conns.at[j++] = s->conns.at[i];
	}
	s->conns.n = j;
	s->dead = 0;
}

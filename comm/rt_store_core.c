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
#define ADMITTED_IN_MAX (2 * (sizeof(struct rt_store_req) + RT_STORE_MAX_KEY + (size_t)RT_STORE_MAX_VAL))

struct kv {
	char *key;
	void *val;
	size_t len;
	struct kv *next;
};

struct rt_store_core {
	char key[RT_TOKEN_MAX];
	int world_size;
	int admitted; /* ranks ever admitted: never more than world_size */
	struct kv *table[KV_BUCKETS];
	rt_store_conn *conns;
	size_t nconns, cap_conns;
	unsigned char sink[4096]; /* where a refused connection's input goes */
};

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
	if (rt_token_nonce(t.server_nonce, &err) != 0 || rt_store_proofs(s->key, &t, ch.mac, k->expect, &err) != 0)
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
	return reply(k, RT_ST_OK, NULL, 0);
}

static int wake_waiters(rt_store_core *s, struct kv *e)
{
	for (size_t i = 0; i < s->nconns; i++) {
		rt_store_conn *k = &s->conns[i];

		if (!k->dead && k->wait_key && strcmp(k->wait_key, e->key) == 0) {
			free(k->wait_key);
			k->wait_key = NULL;
			if (reply(k, RT_ST_OK, e->val, e->len) != 0)
				return -1;
		}
	}
	return 0;
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
		e = kv_find(s, key, 0);
		if (e && e->val)
			return reply(k, RT_ST_OK, e->val, e->len);
		k->wait_key = strdup(key);
		return k->wait_key ? 0 : -1;
	case RT_CMD_ADD:
		return cmd_add(s, k, key, val, len);
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
	if (k->in_cap - k->in_len < 65536 && k->in_cap < ADMITTED_IN_MAX) {
		size_t cap = k->in_cap ? k->in_cap * 2 : 65536;
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
	k->out_off += n;
	if (k->out_off < k->out_len)
		return 0;
	k->out_off = k->out_len = 0;
	if (k->closing) {
		if (k->drain_end == 0)
			k->drain_end = now + RT_STORE_DRAIN_S;
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
	k->in = k->out = NULL;
	k->wait_key = NULL;
}

void rt_store_core_free(rt_store_core *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nconns; i++)
		conn_free(&s->conns[i]);
	free(s->conns);
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
	OPENSSL_cleanse(s->key, sizeof(s->key));
	free(s);
}

rt_store_conn *rt_store_core_open(rt_store_core *s, int fd, double now)
{
	rt_store_conn *k;

	if (s->nconns == s->cap_conns) {
		size_t cap = s->cap_conns ? s->cap_conns * 2 : 64;
		rt_store_conn *grown = realloc(s->conns, cap * sizeof(*grown));

		if (!grown)
			return NULL;
		s->conns = grown;
		s->cap_conns = cap;
	}
	k = &s->conns[s->nconns++];
	memset(k, 0, sizeof(*k));
	k->fd = fd;
	k->opened = now;
	return k;
}

size_t rt_store_core_count(const rt_store_core *s)
{
	return s->nconns;
}

rt_store_conn *rt_store_core_at(rt_store_core *s, size_t i)
{
	return &s->conns[i];
}

size_t rt_store_core_pending(const rt_store_core *s)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nconns; i++)
		n += !s->conns[i].dead && !s->conns[i].evicted && s->conns[i].stage != RT_CONN_ADMITTED;
	return n;
}

/* The oldest pending connection that may be evicted at now, or NULL. */
static rt_store_conn *evictable(const rt_store_core *s, double now)
{
	rt_store_conn *old = NULL;

	for (size_t i = 0; i < s->nconns; i++) {
		rt_store_conn *k = &s->conns[i];

		if (k->dead || k->evicted || k->closing || k->stage == RT_CONN_ADMITTED)
			continue;
		if (!old || k->opened < old->opened)
			old = k;
	}
	return old && now - old->opened >= RT_STORE_EVICT_AGE_S ? old : NULL;
}

int rt_store_core_can_admit(const rt_store_core *s, double now)
{
	return rt_store_core_pending(s) < RT_STORE_MAX_PENDING || evictable(s, now) != NULL;
}

/* Tells the client to connect again and has the edge close it. */
static void evict(rt_store_conn *k)
{
	struct rt_store_rsp h = { .status = RT_ST_RETRY, .vallen = 0 };

	k->out_off = k->out_len = 0;
	if (out_append(k, &h, sizeof(h)) != 0)
		k->out_len = 0;
	k->evicted = 1;
}

void rt_store_core_make_room(rt_store_core *s, double now)
{
	if (rt_store_core_pending(s) > RT_STORE_MAX_PENDING) {
		rt_store_conn *k = evictable(s, now);

		if (k)
			evict(k);
	}
}

double rt_store_core_expire(rt_store_core *s, double now)
{
	double next = now + 3600;
	size_t live = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		rt_store_conn *k = &s->conns[i];

		if (k->dead || k->evicted)
			continue;
		if (k->drain_end > 0) {
			if (now >= k->drain_end)
				k->dead = 1;
			else if (k->drain_end < next)
				next = k->drain_end;
			continue;
		}
		if (k->stage == RT_CONN_ADMITTED)
			continue;
		if (now >= k->opened + RT_STORE_HANDSHAKE_S) {
			/* A refusal that could not even be flushed in time is dropped with the connection. */
			if (k->closing)
				k->dead = 1;
			else
				evict(k);
			continue;
		}
		live += !k->closing;
		if (k->opened + RT_STORE_HANDSHAKE_S < next)
			next = k->opened + RT_STORE_HANDSHAKE_S;
	}
	/* At the cap, the oldest pending connection becomes evictable after the eviction age. */
	if (live >= RT_STORE_MAX_PENDING) {
		rt_store_conn *old = NULL;

		for (size_t i = 0; i < s->nconns; i++) {
			rt_store_conn *k = &s->conns[i];

			if (!k->dead && !k->evicted && !k->closing && k->stage != RT_CONN_ADMITTED &&
			    (!old || k->opened < old->opened))
				old = k;
		}
		if (old && old->opened + RT_STORE_EVICT_AGE_S < next)
			next = old->opened + RT_STORE_EVICT_AGE_S;
	}
	return next;
}

void rt_store_core_sweep(rt_store_core *s)
{
	size_t j = 0;

	for (size_t i = 0; i < s->nconns; i++) {
		if (s->conns[i].dead) {
			conn_free(&s->conns[i]);
			continue;
		}
		if (j != i)
			s->conns[j] = s->conns[i];
		j++;
	}
	s->nconns = j;
}

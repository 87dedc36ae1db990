/* SPDX-License-Identifier: MIT */
/* fuzz_store.c — the rendezvous store under libFuzzer. The first byte picks the side:
 *  even: the server's protocol core (rt_store_core.c) gets the input as a stream of requests,
 *        split between an admitted rank (after a real handshake) and a stranger, with a fake
 *        clock; checked: nothing crashes, a stranger is never admitted and never buffers more
 *        than one handshake message.
 *  odd:  a real client (rt_store_connect, set/get/add) talks to a fake server that answers the
 *        handshake correctly (second byte odd: its nonce, then, after the client's proof, its
 *        own) or with the input (even), then answers every request with the input: the client's
 *        reply parsing; checked: without the server's proof no client is ever admitted.
 * Records on the server side: 1 byte (bit 0: which connection, bits 1-7: clock step in 10 ms),
 * 1 byte length, then that many bytes. */
#include "fuzz_util.h"
#include "rt_net.h"
#include "rt_store.h"
#include "rt_store_core.h"
#include "rt_token.h"

#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY "fuzz:key"

/* ---- server side ----------------------------------------------------------------------------- */

static void drain(rt_store_core *c, rt_store_conn *k, double now)
{
	if (!k->dead && k->out_len > k->out_off && rt_store_core_sent(c, k, k->out_len - k->out_off, now) < 0)
		k->dead = 1;
}

/* Feeds bytes as the edge would; stops when the connection takes nothing more. */
static void feed(rt_store_core *c, rt_store_conn *k, const uint8_t *p, size_t n, double now)
{
	while (n > 0 && !k->dead) {
		unsigned char *buf;
		size_t room, take;

		drain(c, k, now);
		if (k->dead || rt_store_core_room(k, &buf, &room) != 0) {
			k->dead = 1;
			return;
		}
		if (!buf || room == 0) /* closing: the edge discards */
			return;
		if (k->stage != RT_CONN_ADMITTED)
			FUZZ_CHECK(k->pre_len + room <= sizeof(struct rt_store_req) + sizeof(struct rt_store_hello));
		take = room < n ? room : n;
		memcpy(buf, p, take);
		if (rt_store_core_received(c, k, take) != 0)
			k->dead = 1;
		p += take;
		n -= take;
	}
	drain(c, k, now);
}

/* One whole message into a connection that takes it at once (a handshake message). */
static void put(rt_store_core *c, rt_store_conn *k, const void *msg, size_t len)
{
	unsigned char *buf;
	size_t room;

	FUZZ_CHECK(rt_store_core_room(k, &buf, &room) == 0 && buf);
	FUZZ_CHECK(room >= sizeof(struct rt_store_req));
	memcpy(buf, msg, sizeof(struct rt_store_req));
	FUZZ_CHECK(rt_store_core_received(c, k, sizeof(struct rt_store_req)) == 0);
	FUZZ_CHECK(rt_store_core_room(k, &buf, &room) == 0 && buf && room == len - sizeof(struct rt_store_req));
	memcpy(buf, (const unsigned char *)msg + sizeof(struct rt_store_req), room);
	FUZZ_CHECK(rt_store_core_received(c, k, room) == 0);
}

/* A real handshake: the harness holds the key, as an honest rank does. */
static void admit(rt_store_core *c, rt_store_conn *k)
{
	struct {
		struct rt_store_req h;
		struct rt_store_hello hello;
	} m = { { RT_STORE_MAGIC, RT_CMD_HELLO, 0, sizeof(struct rt_store_hello) }, { RT_STORE_VERSION, 2, { 5 } } };
	struct {
		struct rt_store_req h;
		unsigned char mac[RT_MAC_LEN];
	} proof = { { RT_STORE_MAGIC, RT_CMD_PROOF, 0, RT_MAC_LEN }, { 0 } };
	struct rt_store_transcript t = { .version = RT_STORE_VERSION, .world_size = 2 };
	struct rt_store_challenge ch;
	tt_err err;

	put(c, k, &m, sizeof(m));
	FUZZ_CHECK(k->out_len == sizeof(struct rt_store_rsp) + sizeof(ch));
	memcpy(&ch, k->out + sizeof(struct rt_store_rsp), sizeof(ch));
	FUZZ_CHECK(rt_store_core_sent(c, k, k->out_len, 0) == 0);
	memcpy(t.client_nonce, m.hello.nonce, RT_NONCE_LEN);
	memcpy(t.server_nonce, ch.nonce, RT_NONCE_LEN);
	FUZZ_CHECK(rt_store_proofs(KEY, &t, NULL, proof.mac, &err) == 0);
	put(c, k, &proof, sizeof(proof));
	FUZZ_CHECK(k->stage == RT_CONN_ADMITTED);
	FUZZ_CHECK(k->out_len == sizeof(struct rt_store_rsp) + RT_MAC_LEN); /* its proof, only now */
	FUZZ_CHECK(rt_store_core_sent(c, k, k->out_len, 0) == 0);
}

static void fuzz_server(const uint8_t *data, size_t size)
{
	tt_err err;
	rt_store_core *c = rt_store_core_new(KEY, 2, &err);
	double now = 0;

	FUZZ_CHECK(c != NULL);
	rt_store_core_open(c, 1, now);
	rt_store_core_open(c, 2, now);
	admit(c, rt_store_core_at(c, 0));
	while (size >= 2) {
		size_t which = data[0] & 1, len = data[1];
		rt_store_conn *k;

		now += (data[0] >> 1) * 0.01;
		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		rt_store_core_expire(c, now);
		if (which >= rt_store_core_count(c))
			which = 0;
		k = rt_store_core_at(c, which);
		if (!k->dead && !k->evicted)
			feed(c, k, data, len, now);
		if (which == 1)
			FUZZ_CHECK(k->stage != RT_CONN_ADMITTED); /* nobody forges the proof */
		data += len;
		size -= len;
	}
	rt_store_core_free(c);
}

/* ---- client side ----------------------------------------------------------------------------- */

struct fake_server {
	int lfd;
	int honest; /* answer the handshake correctly, then replay the input */
	const uint8_t *data;
	size_t size;
};

static void *serve_once(void *arg)
{
	struct fake_server *f = arg;
	struct pollfd p = { .fd = f->lfd, .events = POLLIN };
	int fd;

	if (poll(&p, 1, 2000) != 1 || (fd = accept(f->lfd, NULL, NULL)) < 0)
		return NULL;
	close(f->lfd); /* a retry finds nobody: the client gives up at once */
	f->lfd = -1;
	if (f->honest) {
		struct {
			struct rt_store_req h;
			struct rt_store_hello hello;
		} m;
		struct {
			struct rt_store_rsp r;
			struct rt_store_challenge ch;
		} answer = { { RT_ST_OK, sizeof(struct rt_store_challenge) }, { { 0 } } };
		struct {
			struct rt_store_rsp r;
			unsigned char mac[RT_MAC_LEN];
		} admitted = { { RT_ST_OK, RT_MAC_LEN }, { 0 } };
		struct rt_store_transcript t = { .version = RT_STORE_VERSION };
		unsigned char proof[sizeof(struct rt_store_req) + RT_MAC_LEN];
		tt_err err;

		if (rt_net_recv_all(fd, &m, sizeof(m), 1, &err) != 0)
			goto out;
		t.world_size = m.hello.world_size;
		memcpy(t.client_nonce, m.hello.nonce, RT_NONCE_LEN);
		memset(t.server_nonce, 3, RT_NONCE_LEN);
		memcpy(answer.ch.nonce, t.server_nonce, RT_NONCE_LEN);
		FUZZ_CHECK(rt_store_proofs(KEY, &t, admitted.mac, NULL, &err) == 0);
		if (rt_net_send_all(fd, &answer, sizeof(answer), 1, &err) != 0 ||
		    rt_net_recv_all(fd, proof, sizeof(proof), 1, &err) != 0 ||
		    rt_net_send_all(fd, &admitted, sizeof(admitted), 1, &err) != 0)
			goto out;
	}
	/* Everything else the client hears is the input; then the server hangs up. */
	if (f->size && send(fd, f->data, f->size, MSG_NOSIGNAL) < 0) {
		/* the client left early */
	}
	shutdown(fd, SHUT_WR);
	{
		char sink[4096];

		while (poll(&(struct pollfd){ .fd = fd, .events = POLLIN }, 1, 1000) == 1 &&
		       recv(fd, sink, sizeof(sink), 0) > 0)
			;
	}
out:
	close(fd);
	return NULL;
}

static void fuzz_client(const uint8_t *data, size_t size)
{
	struct fake_server f = { .honest = size > 0 && (data[0] & 1), .data = size ? data + 1 : data,
				 .size = size ? size - 1 : 0 };
	char buf[64];
	size_t len;
	int64_t v;
	pthread_t t;
	tt_err err;
	rt_store *st;
	int port;

	FUZZ_CHECK(rt_net_listen("127.0.0.1", 0, &f.lfd, &port, &err) == 0);
	FUZZ_CHECK(pthread_create(&t, NULL, serve_once, &f) == 0);
	st = rt_store_connect("127.0.0.1", port, KEY, 2, 0.2, &err);
	if (st) {
		FUZZ_CHECK(f.honest); /* without the key's proof no client is ever admitted */
		rt_store_set(st, "k", "v", 1, &err);
		if (rt_store_get(st, "k", buf, sizeof(buf), &len, &err) == 0)
			FUZZ_CHECK(len <= RT_STORE_MAX_VAL);
		rt_store_add(st, "n", 1, &v, &err);
		rt_store_get(st, "k", buf, sizeof(buf), &len, &err);
		rt_store_close(st);
	} else {
		FUZZ_CHECK(strlen(err.msg) < sizeof(err.msg));
	}
	pthread_join(t, NULL);
	if (f.lfd >= 0)
		close(f.lfd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_client(data + 1, size - 1);
	else
		fuzz_server(data + 1, size - 1);
	return 0;
}

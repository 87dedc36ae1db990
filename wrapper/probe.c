/* SPDX-License-Identifier: MIT */
/* probe.c — the preflight's network probe to node 0 (see probe.h). */
#include "probe.h"
#include "preflight.h"
#include "tt_io.h"
#include "tt_parse.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQUEST "probe "
#define GO "probe go"
#define CHUNK (256u << 10)

/* Sends or receives exactly len bytes on the non-blocking fd before end (tt_now_ms()); -1 on a
 * hang-up, an error, the end, or one of stop's signals pending. */
static int io_all(int fd, int out, char *buf, size_t len, long end, const sigset_t *stop)
{
	while (len > 0) {
		ssize_t n = out ? send(fd, buf, len, MSG_NOSIGNAL) : recv(fd, buf, len, 0);
		struct pollfd p = { .fd = fd, .events = out ? POLLOUT : POLLIN };
		long left;

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
			return -1;
		left = end - tt_now_ms();
		if (left <= 0 || tt_nc_stopped(stop))
			return -1;
		if (poll(&p, 1, left > 200 ? 200 : (int)left) < 0 && errno != EINTR)
			return -1;
	}
	return 0;
}

/* total bytes through buf[CHUNK], each way as io_all. */
static int stream(int fd, int out, size_t total, char *buf, long end, const sigset_t *stop)
{
	while (total > 0) {
		size_t n = total < CHUNK ? total : CHUNK;

		if (io_all(fd, out, buf, n, end, stop) != 0)
			return -1;
		total -= n;
	}
	return 0;
}

/* ---- the other nodes' side ------------------------------------------------------------------- */

/* The test hook's delay per bandwidth round (TT_ENV_PREFLIGHT_TEST_NET_DELAY), ms; 0 without
 * it or its file. */
static long test_delay_ms(void)
{
	const char *path = getenv(TT_ENV_PREFLIGHT_TEST_NET_DELAY);
	char text[32] = "";
	long long ms = 0;
	FILE *f;

	if (!path || !*path || !(f = fopen(path, "re")))
		return 0;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	if (tt_parse_int_span(text, strlen(text), 0, 60000, &ms) != 0) {
		fprintf(stderr, "train-run: %s (named by %s, a test hook) holds '%s', not whole "
			"milliseconds 0..60000: ignored\n", path, TT_ENV_PREFLIGHT_TEST_NET_DELAY, text);
		return 0;
	}
	return (long)ms;
}

/* Sleeps ms, not past end (tt_now_ms()). */
static void delay(long ms, long end)
{
	long until = tt_now_ms() + ms;

	if (until > end)
		until = end;
	for (long left; (left = until - tt_now_ms()) > 0;)
		(void)poll(NULL, 0, (int)left);
}

int tt_probe_run(const char *server, uint16_t port, const char *key, const char *id,
		 uint32_t node, const sigset_t *stop, long deadline, struct tt_probe_result *r,
		 tt_err *err)
{
	struct tt_nc_client cl = { .fd = -1, .stop = stop };
	char *answer = malloc(TT_NC_BODY_MAX + 1), *data = calloc(1, CHUNK), body[96], byte = 'p';
	uint32_t rtt[TT_PROBE_PINGS];
	int64_t t0, t, best = INT64_MAX;
	long end, slow = test_delay_ms();
	int rc = -1;

	if (!answer || !data) {
		tt_err_set(err, "network probe: out of memory");
		goto out;
	}
	snprintf(body, sizeof(body), REQUEST "%" PRIu32 " %d %u %d", node, TT_PROBE_PINGS,
		 TT_PROBE_BYTES, TT_PROBE_ROUNDS);
	if (tt_nc_client_say(&cl, server, port, key, id, body, deadline, 0, NULL, NULL, err) != 0 ||
	    tt_nc_client_hear(&cl, key, id, answer, deadline, err) != 0)
		goto out;
	if (strcmp(answer, GO) != 0) {
		tt_err_set(err, "node 0 answered the probe with '%.200s'", answer);
		goto out;
	}
	end = tt_now_ms() + TT_PROBE_MS;
	for (int i = 0; i < TT_PROBE_PINGS; i++) {
		t0 = tt_now_us();
		if (io_all(cl.fd, 1, &byte, 1, end, stop) != 0 || io_all(cl.fd, 0, &byte, 1, end, stop) != 0)
			goto lost;
		t = tt_now_us() - t0;
		rtt[i] = t < 1 ? 1 : t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
	}
	for (int i = 0; i < TT_PROBE_ROUNDS; i++) {
		t0 = tt_now_us();
		if (stream(cl.fd, 1, TT_PROBE_BYTES, data, end, stop) != 0)
			goto lost;
		if (slow)
			delay(slow, end);
		if (io_all(cl.fd, 0, &byte, 1, end, stop) != 0)
			goto lost;
		t = tt_now_us() - t0;
		if (t < best)
			best = t;
	}
	r->rtt_us = (uint32_t)tt_preflight_median(rtt, TT_PROBE_PINGS);
	r->net_mbps = (uint32_t)((double)TT_PROBE_BYTES / (double)(best < 1 ? 1 : best));
	if (r->net_mbps == 0)
		r->net_mbps = 1;
	rc = 0;
	goto out;
lost:
	tt_err_set(err, "network probe: node 0 (%s port %u) hung up or was slower than %d ms",
		   server, port, TT_PROBE_MS);
out:
	tt_nc_client_close(&cl);
	free(answer);
	free(data);
	return rc;
}

/* ---- node 0's side --------------------------------------------------------------------------- */

struct tt_probe_server {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct tt_nc_conn *queue;	/* [head, n) waiting, in their order of arrival */
	size_t head, n, cap;
	int stopping;
	const char *key, *id;
	char *data;			/* CHUNK bytes: where a probe's bytes go */
};

int tt_probe_is_request(const char *body)
{
	return strncmp(body, REQUEST, sizeof(REQUEST) - 1) == 0;
}

/* Serves one probe on the proven connection k, then closes it. */
static void serve_one(struct tt_probe_server *ps, struct tt_nc_conn *k)
{
	unsigned node, pings, bytes, rounds;
	int used = 0;
	char byte;
	tt_err ignored;
	long end;

	if (sscanf(k->body, REQUEST "%u %u %u %u%n", &node, &pings, &bytes, &rounds, &used) != 4 ||
	    k->body[used] || pings < 1 || pings > 1000 || bytes < 1 || rounds < 1 ||
	    rounds > 1000 || (uint64_t)bytes * rounds > TT_PROBE_MAX_BYTES) {
		(void)tt_nc_conn_send(k, ps->key, ps->id, "error a probe request that is not 'probe "
				      "NODE PINGS BYTES ROUNDS' with 1..1000 pings and rounds and at "
				      "most 64 MiB in all", &ignored);
		goto out;
	}
	if (tt_nc_conn_send(k, ps->key, ps->id, GO, &ignored) != 0)
		goto out;
	end = tt_now_ms() + TT_PROBE_MS;
	for (unsigned i = 0; i < pings; i++)
		if (io_all(k->fd, 0, &byte, 1, end, NULL) != 0 || io_all(k->fd, 1, &byte, 1, end, NULL) != 0)
			goto out;
	for (unsigned i = 0; i < rounds; i++)
		if (stream(k->fd, 0, bytes, ps->data, end, NULL) != 0 ||
		    io_all(k->fd, 1, &byte, 1, end, NULL) != 0)
			goto out;
	/* The client closes first (no TIME_WAIT on node 0's port): its end of file, bounded. */
	(void)io_all(k->fd, 0, &byte, 1, end, NULL);
out:
	tt_nc_conn_close(k);
	free(k->buf);
}

static void *serve(void *arg)
{
	struct tt_probe_server *ps = arg;

	pthread_mutex_lock(&ps->mu);
	for (;;) {
		struct tt_nc_conn k;

		while (ps->head == ps->n && !ps->stopping)
			pthread_cond_wait(&ps->cv, &ps->mu);
		if (ps->head == ps->n)
			break;
		k = ps->queue[ps->head++];
		if (ps->stopping) {	/* the launch is over: unserved */
			tt_nc_conn_close(&k);
			free(k.buf);
			continue;
		}
		pthread_mutex_unlock(&ps->mu);
		serve_one(ps, &k);
		pthread_mutex_lock(&ps->mu);
	}
	pthread_mutex_unlock(&ps->mu);
	return NULL;
}

struct tt_probe_server *tt_probe_server_start(const char *key, const char *id, tt_err *err)
{
	struct tt_probe_server *ps = calloc(1, sizeof(*ps));

	if (!ps || !(ps->data = malloc(CHUNK))) {
		free(ps);
		tt_err_set(err, "network probe: out of memory for node 0's server");
		return NULL;
	}
	ps->key = key;
	ps->id = id;
	pthread_mutex_init(&ps->mu, NULL);
	pthread_cond_init(&ps->cv, NULL);
	errno = pthread_create(&ps->thread, NULL, serve, ps);
	if (errno != 0) {
		tt_err_errno(err, "network probe: starting node 0's server thread");
		pthread_mutex_destroy(&ps->mu);
		pthread_cond_destroy(&ps->cv);
		free(ps->data);
		free(ps);
		return NULL;
	}
	return ps;
}

void tt_probe_server_take(struct tt_probe_server *ps, struct tt_nc_conn *k)
{
	struct tt_nc_conn *q;

	pthread_mutex_lock(&ps->mu);
	if (ps->n == ps->cap) {
		size_t cap = ps->cap ? 2 * ps->cap : 16;

		q = realloc(ps->queue, cap * sizeof(*q));
		if (!q) {	/* no room: this node is not measured */
			pthread_mutex_unlock(&ps->mu);
			tt_nc_conn_close(k);
			return;
		}
		ps->queue = q;
		ps->cap = cap;
	}
	ps->queue[ps->n++] = *k;
	pthread_cond_signal(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	k->fd = -1;
	k->buf = NULL;
	k->len = 0;
	k->body = NULL;
}

void tt_probe_server_stop(struct tt_probe_server *ps)
{
	if (!ps)
		return;
	pthread_mutex_lock(&ps->mu);
	ps->stopping = 1;
	pthread_cond_signal(&ps->cv);
	pthread_mutex_unlock(&ps->mu);
	pthread_join(ps->thread, NULL);
	pthread_mutex_destroy(&ps->mu);
	pthread_cond_destroy(&ps->cv);
	free(ps->queue);
	free(ps->data);
	free(ps);
}

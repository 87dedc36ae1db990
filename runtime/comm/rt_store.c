/* SPDX-License-Identifier: MIT */
/* rt_store.c — the rendezvous store's sockets (see rt_store.h): one epoll thread moves bytes
 * between every connection and the protocol core (rt_store_core.c), so a thousand ranks cost one
 * thread; and the client, one per rank, with a mutex so the progress thread and the trainer may
 * share it. */
#include "rt_store.h"
#include "rt_net.h"
#include "rt_token.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- server ------------------------------------------------------------------------------ */

struct rt_store_server {
	int lfd;
	int spare; /* an fd kept in reserve to answer clients when descriptors run out */
	int port;
	char addr[16]; /* the address listened on, dotted IPv4; "0.0.0.0" for all */
	int wake[2];
	int ep;	       /* epoll: each round costs the connections that did something, not all */
	int listening; /* whether the listener is in ep (not at the cap of pending connections) */
	rt_store_core *core;
	pthread_t thread;
	atomic_long accepted; /* connections accepted so far */
};

/* Reads and throws away what a connection sent (a refused or evicted one). 0 at end of stream. */
static ssize_t discard(int fd)
{
	char sink[4096];
	ssize_t n, total = 0;

	while ((n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT)) > 0 && total < (1 << 20))
		total += n;
	return n == 0 ? 0 : 1;
}

/* Closes k's socket (epoll forgets it with the close) and tells the core. */
static void drop(rt_store_server *s, rt_store_conn *k)
{
	if (k->fd >= 0) {
		close(k->fd);
		k->fd = -1;
	}
	rt_store_core_drop(s->core, k);
}

/* What k waits for: its output to leave, else input (epoll is told only of a change). */
static void watch(rt_store_server *s, rt_store_conn *k, int op)
{
	struct epoll_event ev = { .events = k->out_len > k->out_off ? EPOLLOUT : EPOLLIN, .data.ptr = k };

	if (op == EPOLL_CTL_MOD && ev.events == k->watched)
		return;
	if (epoll_ctl(s->ep, op, k->fd, &ev) != 0)
		drop(s, k);
	k->watched = ev.events;
}

/* Sends what k's socket takes of its output now. Most answers fit at once, so a connection is
 * watched for writing only when its socket is full, not for every answer. */
static void flush(rt_store_server *s, rt_store_conn *k, double now)
{
	ssize_t n = send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
	int rc;

	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		drop(s, k);
		return;
	}
	rc = rt_store_core_sent(s->core, k, n > 0 ? (size_t)n : 0, now);
	if (rc < 0)
		drop(s, k);
	else if (rc == 1)
		shutdown(k->fd, SHUT_WR); /* refused: the reason is out; wait for the client to hang up */
}

/* The connections the core changed: an evicted one gets its RETRY with what the socket takes at
 * once (its unread input taken first, so the close is a FIN, not a reset that could overtake the
 * answer); a dead one is closed; one with new output is watched for writing. */
static void reap(rt_store_server *s)
{
	rt_store_conn *k;

	while ((k = rt_store_core_next_notice(s->core))) {
		if (k->evicted && !k->dead) {
			discard(k->fd);
			if (send(k->fd, k->out + k->out_off, k->out_len - k->out_off, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
				/* The client learns by the close instead. */
			}
			drop(s, k);
		} else if (k->dead) {
			drop(s, k);
		} else if (k->fd >= 0) {
			if (k->out_len > k->out_off)
				flush(s, k, rt_now());
			if (!k->dead)
				watch(s, k, EPOLL_CTL_MOD);
		}
	}
}

/* One connection's poll events. */
static void io(rt_store_server *s, rt_store_conn *k, uint32_t ev, double now)
{
	if (k->out_len > k->out_off && (ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		flush(s, k, now);
	} else if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		unsigned char *buf;
		size_t room;
		ssize_t n;

		if (rt_store_core_room(k, &buf, &room) != 0) {
			drop(s, k);
			return;
		}
		if (!buf) { /* closing: input is discarded until the client hangs up */
			if (discard(k->fd) == 0)
				drop(s, k);
			return;
		}
		if (room == 0)
			return;
		n = recv(k->fd, buf, room, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			drop(s, k);
			return;
		}
		if (n > 0 && rt_store_core_received(s->core, k, (size_t)n) != 0) {
			drop(s, k);
			return;
		}
		if (k->out_len > k->out_off)
			flush(s, k, now);
	}
	if (!k->dead)
		watch(s, k, EPOLL_CTL_MOD);
}

/* Out of descriptors: free the spare, accept the waiting client, tell it why, and close it, so
 * it fails at once with the reason instead of timing out. 1 when a client was turned away. */
static int refuse_no_fds(rt_store_server *s)
{
	static const char msg[] = "rank 0 ran out of file descriptors (one per rank): raise 'ulimit -n' for the job";
	struct rt_store_rsp h = { .status = RT_ST_REFUSED, .vallen = sizeof(msg) - 1 };
	int fd;

	close(s->spare);
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0) {
		/* The reply fits the socket buffer of a fresh connection; a short write only loses the reason. */
		if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) == (ssize_t)sizeof(h))
			send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
		/* Closing with the client's hello unread would reset the connection, and the reset can
		 * overtake the reason: take in what already arrived, and close after a FIN. */
		shutdown(fd, SHUT_WR);
		discard(fd);
		close(fd);
	}
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

/* Accepts while the core has room for connections that are not admitted yet; the rest wait in
 * the kernel's backlog. */
static void accept_clients(rt_store_server *s)
{
	for (;;) {
		double now = rt_now();
		rt_store_conn *k;
		int fd;

		if (!rt_store_core_can_admit(s->core, now))
			return;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		/* EMFILE comes whether or not anyone is waiting: stop once nobody is. */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && s->spare >= 0) {
			if (refuse_no_fds(s))
				continue;
			return;
		}
		if (fd < 0)
			return;
		atomic_fetch_add(&s->accepted, 1);
		k = rt_store_core_open(s->core, fd, now);
		if (!k) {
			close(fd);
			return;
		}
		watch(s, k, EPOLL_CTL_ADD);
		rt_store_core_make_room(s->core, now);
		reap(s);
	}
}

/* The listener is watched only while one more connection may be accepted; at the cap the loop
 * wakes when the oldest pending one may be evicted (the core's deadline). */
static void watch_listener(rt_store_server *s, double now)
{
	int want = rt_store_core_can_admit(s->core, now);
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->lfd };

	if (want != s->listening && epoll_ctl(s->ep, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, s->lfd, &ev) == 0)
		s->listening = want;
}

#define EVENTS_MAX 256

static void *serve(void *arg)
{
	rt_store_server *s = arg;
	struct epoll_event ev[EVENTS_MAX];

	for (;;) {
		double now = rt_now(), due = rt_store_core_expire(s->core, now);
		int n, ms;

		reap(s);
		/* Between rounds (no event points at a connection): the dead are freed once they are
		 * a good share of all, so sweeping costs O(1) per connection. */
		if (rt_store_core_dead(s->core) > 64 + rt_store_core_count(s->core) / 4)
			rt_store_core_sweep(s->core);
		watch_listener(s, now);
		ms = (int)ceil((due - now) * 1000.0);
		n = epoll_wait(s->ep, ev, EVENTS_MAX, ms < 0 ? 0 : ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		now = rt_now();
		for (int i = 0; i < n; i++) {
			if (ev[i].data.ptr == &s->wake[0])
				goto out;
			if (ev[i].data.ptr == &s->lfd)
				accept_clients(s);
			else if (!((rt_store_conn *)ev[i].data.ptr)->dead)
				io(s, ev[i].data.ptr, ev[i].events, now);
			/* A connection the core kills in this round is not swept before the round ends:
			 * reap() frees only after the notices, and the events of this round were taken. */
		}
	}
out:
	return NULL;
}

rt_store_server *rt_store_server_start(const char *host, int port, int loopback_ok, const char *key,
				       int world_size, tt_err *err)
{
	rt_store_server *s = calloc(1, sizeof(*s));
	struct rlimit rl;

	if (!s) {
		tt_err_set(err, "out of memory starting the store");
		return NULL;
	}
	s->lfd = -1;
	s->ep = -1;
	s->wake[0] = s->wake[1] = -1;
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->core = rt_store_core_new(key, world_size, err);
	if (!s->core)
		goto fail;
	/* One descriptor per rank stays open for the job, plus the pending ones: a world of 1024
	 * needs more than the usual soft limit of 1024, so rank 0 raises it to the hard limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max &&
	    rl.rlim_cur < (rlim_t)world_size + RT_STORE_MAX_PENDING + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rt_net_listen_host(host, port, loopback_ok, &s->lfd, &s->port, s->addr, sizeof(s->addr), err) != 0)
		goto fail;
	/* accept_clients drains the backlog until EAGAIN. */
	if (fcntl(s->lfd, F_SETFL, O_NONBLOCK) != 0 || pipe2(s->wake, O_CLOEXEC) != 0) {
		tt_err_errno(err, "cannot create the store's wake pipe");
		goto fail;
	}
	s->ep = epoll_create1(EPOLL_CLOEXEC);
	if (s->ep < 0 ||
	    epoll_ctl(s->ep, EPOLL_CTL_ADD, s->wake[0], &(struct epoll_event){ .events = EPOLLIN, .data.ptr = &s->wake[0] })) {
		tt_err_errno(err, "cannot create the store's epoll set");
		goto fail;
	}
	if (pthread_create(&s->thread, NULL, serve, s) != 0) {
		tt_err_set(err, "cannot start the store thread");
		goto fail;
	}
	return s;
fail:
	if (s->spare >= 0)
		close(s->spare);
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->ep >= 0)
		close(s->ep);
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	rt_store_core_free(s->core);
	free(s);
	return NULL;
}

int rt_store_server_port(const rt_store_server *srv)
{
	return srv->port;
}

long rt_store_server_accepted(const rt_store_server *srv)
{
	return atomic_load(&srv->accepted);
}

const char *rt_store_server_addr(const rt_store_server *srv)
{
	return srv->addr;
}

void rt_store_server_stop(rt_store_server *s)
{
	if (!s)
		return;
	if (write(s->wake[1], "x", 1) != 1) {
		/* The pipe cannot be full with one byte; nothing else to do. */
	}
	pthread_join(s->thread, NULL);
	for (size_t i = 0; i < rt_store_core_count(s->core); i++)
		if (rt_store_core_at(s->core, i)->fd >= 0)
			close(rt_store_core_at(s->core, i)->fd);
	rt_store_core_free(s->core);
	close(s->lfd);
	close(s->ep);
	close(s->wake[0]);
	close(s->wake[1]);
	if (s->spare >= 0)
		close(s->spare);
	free(s);
}

/* ---- client ------------------------------------------------------------------------------ */

struct rt_store {
	int fd;
	double timeout;
	pthread_mutex_t lock;
	char where[300];
	char host[256];	    /* where rt_store_open connects: */
	int port, world_size;
	const char *key;    /* the caller's, outliving the store */
	int dialed;	    /* a connection was made (and may since have been lost) */
	double connected; /* when the handshake's connection was made */
	int retries;	  /* RETRY answers so far */
};

/* A reason from the other side goes into our messages: printable ASCII only. */
static void printable(char *s)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e)
			*s = '?';
}

/* Reads a response's value (at most cap bytes are wanted; longer is malformed) into buf, which
 * gets a NUL after it. */
static int recv_value(rt_store *st, const struct rt_store_rsp *r, char *buf, size_t cap, double wait, tt_err *err)
{
	if (r->vallen > cap)
		return tt_err_set(err, "malformed reply from the store at %s (%u bytes)", st->where, r->vallen);
	if (rt_net_recv_all(st->fd, buf, r->vallen, wait, err) != 0)
		return -1;
	buf[r->vallen] = '\0';
	return 0;
}

/* The message for a listener that is not this job's rank 0. */
static int stranger(rt_store *st, tt_err *err, const char *what)
{
	return tt_err_set(err, "the process listening at %s (MASTER_ADDR:MASTER_PORT) %s: it is not this job's rank 0, "
			  "most likely another user's process squatting the port (or rank 0 runs with another job, "
			  "step or TRAINRT_TOKEN); neither the secret nor the key was sent", st->where, what);
}

/* The status of the server's answer to msg (the hello, the key proof) during the handshake; a
 * hang-up or silence means the listener is a stranger. */
static int handshake_status(rt_store *st, struct rt_store_rsp *r, double wait, const char *msg, tt_err *err)
{
	struct pollfd p = { .fd = st->fd, .events = POLLIN };
	int n;

	do
		n = poll(&p, 1, (int)(wait * 1000.0) + 1);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		char what[96];

		snprintf(what, sizeof(what), "did not answer %s within %.0f s", msg, wait);
		return stranger(st, err, what);
	}
	if (n < 0 || rt_net_recv_all(st->fd, r, sizeof(*r), wait, err) != 0) {
		char what[96];

		snprintf(what, sizeof(what), "closed the connection without answering %s", msg);
		return stranger(st, err, what);
	}
	return 0;
}

/* Either side's refusal or a protocol mismatch during the handshake: 1 = the server asked to
 * retry, -1 = failed (err says why), 0 = OK with vallen as expected. The listener has not proved
 * it holds the key yet, so what it says is quoted as its claim, not as the store's word. */
static int handshake_answer(rt_store *st, const struct rt_store_rsp *r, uint32_t expect, double wait, tt_err *err)
{
	char reason[RT_STORE_MAX_REASON + 1];

	if (r->status == RT_ST_RETRY && r->vallen == 0) {
		double after = rt_now() - st->connected;
		char what[160];

		/* The store tells a connection to retry only once it has waited RT_STORE_EVICT_AGE_S
		 * (rt_store_core.h); a quicker RETRY is a stranger keeping the rank busy. */
		if (after < 0.8 * RT_STORE_EVICT_AGE_S) {
			snprintf(what, sizeof(what), "answered RETRY %.3f s after the connection, sooner than trainrt's "
				 "store ever does (%.2f s)", after, RT_STORE_EVICT_AGE_S);
			return stranger(st, err, what);
		}
		st->retries++;
		return 1;
	}
	if (r->status == RT_ST_REFUSED) {
		if (recv_value(st, r, reason, RT_STORE_MAX_REASON, wait, err) != 0)
			return -1;
		printable(reason);
		return tt_err_set(err, "the process at %s (MASTER_ADDR:MASTER_PORT) refused this rank, saying '%s' (it has "
				  "not proved it holds this job's key: rank 0's store, or another user's process squatting "
				  "the port)", st->where, reason);
	}
	if (r->status != RT_ST_OK || r->vallen != expect)
		return stranger(st, err, "does not speak the trainrt store protocol");
	return 0;
}

/* The handshake on a fresh connection (rt_store_core.h): 0 admitted, 1 the server asked to retry,
 * -1 failed. The rank proves itself first, so a client without the key gets nothing keyed from
 * the store; the store's proof comes only after, and the rank trusts nothing before it checks. */
static int handshake(rt_store *st, const char *key, int world_size, double wait, tt_err *err)
{
	struct {
		struct rt_store_req h;
		struct rt_store_hello hello;
	} m1 = { { RT_STORE_MAGIC, RT_CMD_HELLO, 0, sizeof(struct rt_store_hello) },
		 { RT_STORE_VERSION, (uint32_t)world_size, { 0 } } };
	struct {
		struct rt_store_req h;
		unsigned char mac[RT_MAC_LEN];
	} m2 = { { RT_STORE_MAGIC, RT_CMD_PROOF, 0, RT_MAC_LEN }, { 0 } };
	struct rt_store_transcript t = { .version = RT_STORE_VERSION, .world_size = (uint32_t)world_size };
	struct rt_store_challenge ch;
	unsigned char server_mac[RT_MAC_LEN], got_mac[RT_MAC_LEN];
	struct rt_store_rsp r;
	int rc;

	if (rt_token_nonce(m1.hello.nonce, err) != 0)
		return -1;
	memcpy(t.client_nonce, m1.hello.nonce, RT_NONCE_LEN);
	if (rt_net_send_all(st->fd, &m1, sizeof(m1), wait, err) != 0)
		return stranger(st, err, "closed the connection without answering the hello");
	if (handshake_status(st, &r, wait, "the hello", err) != 0)
		return -1;
	if ((rc = handshake_answer(st, &r, sizeof(ch), wait, err)) != 0)
		return rc;
	if (rt_net_recv_all(st->fd, &ch, sizeof(ch), wait, err) != 0)
		return stranger(st, err, "closed the connection in the middle of its answer");
	memcpy(t.server_nonce, ch.nonce, RT_NONCE_LEN);
	if (rt_store_proofs(key, &t, server_mac, m2.mac, err) != 0)
		return -1;
	if (rt_net_send_all(st->fd, &m2, sizeof(m2), wait, err) != 0)
		return tt_err_wrap(err, "store at %s, sending the key proof", st->where);
	if (handshake_status(st, &r, wait, "the key proof", err) != 0)
		return -1;
	if ((rc = handshake_answer(st, &r, RT_MAC_LEN, wait, err)) != 0)
		return rc;
	if (rt_net_recv_all(st->fd, got_mac, sizeof(got_mac), wait, err) != 0)
		return stranger(st, err, "closed the connection in the middle of its proof");
	if (!rt_token_mac_equal(server_mac, got_mac))
		return stranger(st, err, "failed to prove it holds this job's key");
	return 0;
}

static int opened(rt_store *st, tt_err *err);

enum { SEND = 1, RECEIVE = 2 };

/* A request (SEND), its response (RECEIVE) or both; the response value goes to out (up to cap).
 * A response alone is waited for up to the timeout plus RT_STORE_JOIN_GRACE_S, as JOIN's is. */
static int transact(rt_store *st, int what, uint32_t cmd, const char *key, const void *val, size_t len,
		    void *out, size_t cap, size_t *outlen, tt_err *err)
{
	size_t klen = key ? strlen(key) : 0;
	struct rt_store_req h = { RT_STORE_MAGIC, cmd, (uint32_t)klen, (uint32_t)len };
	struct rt_store_rsp r;
	unsigned char *scratch = NULL;
	int rc = -1;

	if (klen > RT_STORE_MAX_KEY || len > RT_STORE_MAX_VAL)
		return tt_err_set(err, "store key '%.40s' or its value is too large (key <= %d, value <= %u bytes)",
				  key ? key : "", RT_STORE_MAX_KEY, RT_STORE_MAX_VAL);
	pthread_mutex_lock(&st->lock);
	if (opened(st, err) != 0)
		goto out;
	if ((what & SEND) && (rt_net_send_all(st->fd, &h, sizeof(h), st->timeout, err) != 0 ||
			      rt_net_send_all(st->fd, key, klen, st->timeout, err) != 0 ||
			      rt_net_send_all(st->fd, val, len, st->timeout, err) != 0)) {
		/* A server that refuses at once may close before our request is out: its reason can
		 * still be waiting in the receive buffer. */
		tt_err sent = *err;

		if (rt_net_recv_all(st->fd, &r, sizeof(r), 1.0, err) != 0 || r.status == RT_ST_OK) {
			*err = sent;
			goto lost;
		}
	} else if (!(what & RECEIVE)) {
		rc = 0;
		goto out;
	} else if (rt_net_recv_all(st->fd, &r, sizeof(r),
				   st->timeout + (cmd == RT_CMD_JOIN || !(what & SEND) ? RT_STORE_JOIN_GRACE_S : 0), err) != 0) {
		goto lost;
	}
	if (r.vallen > RT_STORE_MAX_VAL || (r.status != RT_ST_OK && r.status != RT_ST_REFUSED && r.status != RT_ST_ERROR)) {
		tt_err_set(err, "malformed reply (status %u, %u bytes)", r.status, r.vallen);
		goto lost;
	}
	scratch = malloc(r.vallen + 1);
	if (!scratch) {
		tt_err_set(err, "out of memory");
		goto lost;
	}
	if (rt_net_recv_all(st->fd, scratch, r.vallen, st->timeout, err) != 0)
		goto lost;
	if (r.status != RT_ST_OK) {
		scratch[r.vallen] = '\0';
		printable((char *)scratch);
		if (r.status == RT_ST_ERROR) { /* the request failed; the stream is still aligned */
			tt_err_set(err, "store %s, key '%s': %s", st->where, key ? key : "", (char *)scratch);
			goto out;
		}
		tt_err_set(err, "store at %s refused this rank: %s", st->where, (char *)scratch);
		goto lost;
	}
	if (out)
		memcpy(out, scratch, r.vallen < cap ? r.vallen : cap);
	if (outlen)
		*outlen = r.vallen;
	rc = 0;
	goto out;
lost:
	/* A half-finished exchange leaves the stream unaligned: never reuse it. */
	close(st->fd);
	st->fd = -1;
	tt_err_wrap(err, "store %s, key '%s'", st->where, key ? key : "");
out:
	pthread_mutex_unlock(&st->lock);
	free(scratch);
	return rc;
}

static int roundtrip(rt_store *st, uint32_t cmd, const char *key, const void *val, size_t len,
		     void *out, size_t cap, size_t *outlen, tt_err *err)
{
	return transact(st, SEND | RECEIVE, cmd, key, val, len, out, cap, outlen, err);
}

/* The timeout ran out over RETRY answers: neither a flooded store nor a squatter that retries
 * just slowly enough proved anything, so both are named. */
static void retried_out(rt_store *st, double timeout_s, tt_err *err)
{
	tt_err_set(err, "the process at %s (MASTER_ADDR:MASTER_PORT) answered RETRY %d time%s over %.0f s "
		   "(TRAINRT_TIMEOUT) and never proved it holds this job's key: rank 0's store flooded with "
		   "connections, or another user's process squatting the port", st->where, st->retries,
		   st->retries == 1 ? "" : "s", timeout_s);
}

rt_store *rt_store_lazy(const char *host, int port, const char *key, int world_size, double timeout_s, tt_err *err)
{
	rt_store *st = calloc(1, sizeof(*st));

	if (!st) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	st->fd = -1;
	st->timeout = timeout_s;
	snprintf(st->where, sizeof(st->where), "%s:%d", host, port);
	snprintf(st->host, sizeof(st->host), "%s", host);
	st->port = port;
	st->key = key;
	st->world_size = world_size;
	pthread_mutex_init(&st->lock, NULL);
	return st;
}

/* Connects and runs the handshake (st->lock held), retrying while the server asks to. */
static int dial(rt_store *st, tt_err *err)
{
	double deadline = rt_now() + st->timeout;
	/* A store that 16k ranks reach at once answers the last of them only after the others. */
	double hello_wait = RT_STORE_HELLO_WAIT_S + RT_STORE_HELLO_WAIT_PER_RANK_S * st->world_size;
	int backoff_ms = 10;

	st->dialed = 1;
	for (;;) {
		double left = deadline - rt_now();
		int rc;

		if (left <= 0) {
			retried_out(st, st->timeout, err);
			return -1;
		}
		if (rt_net_connect(st->host, st->port, left, &st->fd, err) != 0)
			return tt_err_wrap(err, "rendezvous store (MASTER_ADDR:MASTER_PORT; is rank 0 running?)");
		st->connected = rt_now();
		rc = handshake(st, st->key, st->world_size, left < hello_wait ? left : hello_wait, err);
		if (rc == 0)
			return 0;
		close(st->fd);
		st->fd = -1;
		if (rc < 0 && st->retries > 0 && left < hello_wait)
			retried_out(st, st->timeout, err); /* the last try was cut short by the deadline */
		if (rc < 0)
			return -1;
		usleep((useconds_t)backoff_ms * 1000); /* the server is busy: come back shortly */
		backoff_ms = backoff_ms * 2 > 200 ? 200 : backoff_ms * 2;
	}
}

/* The connection, made on first need (st->lock held); once lost it stays lost. */
static int opened(rt_store *st, tt_err *err)
{
	if (st->fd >= 0)
		return 0;
	if (st->dialed)
		return tt_err_set(err, "the store connection to %s was lost earlier", st->where);
	return dial(st, err);
}

int rt_store_open(rt_store *st, tt_err *err)
{
	int rc;

	pthread_mutex_lock(&st->lock);
	rc = opened(st, err);
	pthread_mutex_unlock(&st->lock);
	return rc;
}

rt_store *rt_store_connect(const char *host, int port, const char *key, int world_size,
			   double timeout_s, tt_err *err)
{
	rt_store *st = rt_store_lazy(host, port, key, world_size, timeout_s, err);

	if (st && rt_store_open(st, err) != 0) {
		rt_store_close(st);
		return NULL;
	}
	return st;
}

void rt_store_close(rt_store *st)
{
	if (!st)
		return;
	if (st->fd >= 0)
		close(st->fd);
	pthread_mutex_destroy(&st->lock);
	free(st);
}

int rt_store_set(rt_store *st, const char *key, const void *val, size_t len, tt_err *err)
{
	return roundtrip(st, RT_CMD_SET, key, val, len, NULL, 0, NULL, err);
}

int rt_store_get(rt_store *st, const char *key, void *val, size_t cap, size_t *len, tt_err *err)
{
	return roundtrip(st, RT_CMD_GET, key, NULL, 0, val, cap, len, err);
}

int rt_store_add(rt_store *st, const char *key, int64_t delta, int64_t *result, tt_err *err)
{
	int64_t v = 0;
	size_t len = 0;

	if (roundtrip(st, RT_CMD_ADD, key, &delta, sizeof(delta), &v, sizeof(v), &len, err) != 0)
		return -1;
	if (len != sizeof(v))
		return tt_err_set(err, "store %s, key '%s': malformed add reply (%zu bytes)", st->where, key, len);
	if (result)
		*result = v;
	return 0;
}

int rt_store_join(rt_store *st, const char *name, int rank, tt_err *err)
{
	struct rt_store_join j = { .rank = (uint32_t)rank, .timeout_s = st->timeout };

	return roundtrip(st, RT_CMD_JOIN, name, &j, sizeof(j), NULL, 0, NULL, err);
}

int rt_store_join_node(rt_store *st, const char *name, const struct rt_store_join_node *j, const unsigned char *bits,
		       tt_err *err)
{
	size_t nbits = (j->count + 7) / 8, len = sizeof(*j) + nbits;
	unsigned char *val = malloc(len);
	int rc;

	if (!val)
		return tt_err_set(err, "out of memory");
	memcpy(val, j, sizeof(*j));
	memcpy(val + sizeof(*j), bits, nbits);
	rc = transact(st, SEND, RT_CMD_JOIN_NODE, name, val, len, NULL, 0, NULL, err);
	free(val);
	return rc;
}

int rt_store_verdict(rt_store *st, const char *name, tt_err *err)
{
	return transact(st, RECEIVE, RT_CMD_JOIN_NODE, name, NULL, 0, NULL, 0, NULL, err);
}

int rt_store_fd(const rt_store *st)
{
	return st->fd;
}

/* rt_store.c — the rendezvous store (see rt_store.h): a single poll() thread serving all
 * clients with per-client buffers, so a thousand ranks connecting at once cost one thread, and a
 * client per rank with a mutex so the progress thread and the trainer may share it. */
#include "rt_store.h"
#include "rt_net.h"
#include "rt_token.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define RT_STORE_MAGIC 0x54525354u /* "TRST" */

enum { CMD_HELLO = 1, CMD_SET = 2, CMD_GET = 3, CMD_ADD = 4 };
enum { ST_OK = 0, ST_REFUSED = 1 };

struct req_hdr {
	uint32_t magic;
	uint32_t cmd;
	uint32_t keylen;
	uint32_t vallen;
};

struct rsp_hdr {
	uint32_t status;
	uint32_t vallen;
};

struct hello {
	uint32_t version;
	uint32_t world_size;
	char token[RT_TOKEN_MAX];
};

/* ---- server ------------------------------------------------------------------------------ */

struct kv {
	char *key;
	void *val;
	size_t len;
	struct kv *next;
};

#define KV_BUCKETS 4096

struct client {
	int fd;
	int authed;
	int closing;	  /* close once out is flushed (after a refusal) */
	unsigned char *in;
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_off, out_cap;
	char *wait_key;	  /* a GET parked until the key is set */
};

struct rt_store_server {
	int lfd;
	int spare; /* an fd kept in reserve to answer clients when descriptors run out */
	int port;
	char addr[16]; /* the address listened on, dotted IPv4; "0.0.0.0" for all */
	int wake[2];
	int world_size;
	char token[RT_TOKEN_MAX];
	pthread_t thread;
	struct kv *table[KV_BUCKETS];
	struct client *clients;
	size_t nclients, cap_clients;
};

static struct kv *kv_find(rt_store_server *s, const char *key, int create)
{
	uint64_t h = rt_token_hash(key) % KV_BUCKETS;
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

static int out_append(struct client *c, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if (c->out_len + n > c->out_cap) {
		size_t cap = (c->out_len + n) * 2;
		unsigned char *o = realloc(c->out, cap);

		if (!o)
			return -1;
		c->out = o;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, p, n);
	c->out_len += n;
	return 0;
}

static int reply(struct client *c, uint32_t status, const void *val, size_t len)
{
	struct rsp_hdr h = { .status = status, .vallen = (uint32_t)len };

	if (out_append(c, &h, sizeof(h)) != 0 || out_append(c, val, len) != 0)
		return -1;
	return 0;
}

static int refuse(struct client *c, const char *msg)
{
	c->closing = 1;
	return reply(c, ST_REFUSED, msg, strlen(msg));
}

static int handle_hello(rt_store_server *s, struct client *c, const unsigned char *val, size_t len)
{
	struct hello h;
	char msg[256];

	if (len != sizeof(h))
		return refuse(c, "malformed hello (not a trainrt peer?)");
	memcpy(&h, val, sizeof(h));
	h.token[RT_TOKEN_MAX - 1] = '\0';
	if (h.version != RT_STORE_VERSION) {
		snprintf(msg, sizeof(msg), "protocol version %u differs from the server's %u: all ranks must run the same libtrainrt",
			 h.version, RT_STORE_VERSION);
		return refuse(c, msg);
	}
	if (!rt_token_equal(h.token, s->token))
		return refuse(c, "wrong job token: this rank belongs to another job or user (check TRAINRT_TOKEN and SLURM_JOB_ID)");
	if ((int)h.world_size != s->world_size) {
		snprintf(msg, sizeof(msg), "WORLD_SIZE %u differs from rank 0's %d: all ranks must be launched with the same WORLD_SIZE",
			 h.world_size, s->world_size);
		return refuse(c, msg);
	}
	c->authed = 1;
	return reply(c, ST_OK, NULL, 0);
}

static void wake_waiters(rt_store_server *s, struct kv *e)
{
	for (size_t i = 0; i < s->nclients; i++) {
		struct client *c = &s->clients[i];

		if (c->wait_key && strcmp(c->wait_key, e->key) == 0) {
			free(c->wait_key);
			c->wait_key = NULL;
			if (reply(c, ST_OK, e->val, e->len) != 0)
				c->closing = 1;
		}
	}
}

/* One complete request; -1 drops the client. */
static int handle(rt_store_server *s, struct client *c, uint32_t cmd, const char *key,
		  const unsigned char *val, size_t len)
{
	struct kv *e;

	if (cmd == CMD_HELLO)
		return handle_hello(s, c, val, len);
	if (!c->authed)
		return refuse(c, "request before hello");
	switch (cmd) {
	case CMD_SET: {
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
		if (reply(c, ST_OK, NULL, 0) != 0)
			return -1;
		wake_waiters(s, e);
		return 0;
	}
	case CMD_GET:
		e = kv_find(s, key, 0);
		if (e && e->val)
			return reply(c, ST_OK, e->val, e->len);
		c->wait_key = strdup(key);
		return c->wait_key ? 0 : -1;
	case CMD_ADD: {
		int64_t delta, cur = 0;

		if (len != sizeof(delta))
			return refuse(c, "malformed add");
		memcpy(&delta, val, sizeof(delta));
		e = kv_find(s, key, 1);
		if (!e)
			return -1;
		if (e->val && e->len == sizeof(cur))
			memcpy(&cur, e->val, sizeof(cur));
		cur += delta;
		if (!e->val) {
			e->val = malloc(sizeof(cur));
			if (!e->val)
				return -1;
		}
		memcpy(e->val, &cur, sizeof(cur));
		e->len = sizeof(cur);
		if (reply(c, ST_OK, &cur, sizeof(cur)) != 0)
			return -1;
		wake_waiters(s, e);
		return 0;
	}
	default:
		return refuse(c, "unknown request");
	}
}

/* Parses as many whole requests as the input holds. */
static int consume(rt_store_server *s, struct client *c)
{
	size_t off = 0;
	int rc = 0;

	while (!c->closing && !c->wait_key && c->in_len - off >= sizeof(struct req_hdr)) {
		struct req_hdr h;
		char key[RT_STORE_MAX_KEY + 1];

		memcpy(&h, c->in + off, sizeof(h));
		if (h.magic != RT_STORE_MAGIC || h.keylen > RT_STORE_MAX_KEY || h.vallen > RT_STORE_MAX_VAL) {
			rc = refuse(c, "malformed request (not a trainrt peer, or key/value too large)");
			break;
		}
		if (c->in_len - off < sizeof(h) + h.keylen + h.vallen)
			break;
		memcpy(key, c->in + off + sizeof(h), h.keylen);
		key[h.keylen] = '\0';
		rc = handle(s, c, h.cmd, key, c->in + off + sizeof(h) + h.keylen, h.vallen);
		off += sizeof(h) + h.keylen + h.vallen;
		if (rc != 0)
			break;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	return rc;
}

static void drop(struct client *c)
{
	close(c->fd);
	free(c->in);
	free(c->out);
	free(c->wait_key);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

static int read_client(rt_store_server *s, struct client *c)
{
	if (c->in_cap - c->in_len < 65536) {
		size_t cap = c->in_cap ? c->in_cap * 2 : 65536;
		unsigned char *in;

		if (cap > 2 * (size_t)RT_STORE_MAX_VAL + 65536 * 2)
			cap = 2 * (size_t)RT_STORE_MAX_VAL + 65536 * 2;
		if (cap <= c->in_cap)
			return -1;
		in = realloc(c->in, cap);
		if (!in)
			return -1;
		c->in = in;
		c->in_cap = cap;
	}
	ssize_t n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
	if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
		return -1;
	if (n > 0)
		c->in_len += (size_t)n;
	return consume(s, c);
}

static int write_client(struct client *c)
{
	ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);

	if (n < 0 && errno != EAGAIN && errno != EINTR)
		return -1;
	if (n > 0)
		c->out_off += (size_t)n;
	if (c->out_off == c->out_len) {
		c->out_off = c->out_len = 0;
		if (c->closing)
			return -1;
	}
	return 0;
}

/* Out of descriptors: free the spare, accept the waiting client, tell it why, and close it, so
 * it fails at once with the reason instead of timing out. 1 when a client was turned away. */
static int refuse_no_fds(rt_store_server *s)
{
	static const char msg[] = "rank 0 ran out of file descriptors (one per rank): raise 'ulimit -n' for the job";
	struct rsp_hdr h = { .status = ST_REFUSED, .vallen = sizeof(msg) - 1 };
	int fd;

	close(s->spare);
	fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd >= 0) {
		/* The reply fits the socket buffer of a fresh connection; a short write only loses the reason. */
		char sink[512];

		if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) == (ssize_t)sizeof(h))
			send(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL);
		/* Closing with the client's hello unread would reset the connection, and the reset can
		 * overtake the reason: take in what already arrived, and close after a FIN. */
		shutdown(fd, SHUT_WR);
		while (recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0)
			;
		close(fd);
	}
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	return fd >= 0;
}

static void accept_clients(rt_store_server *s)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		/* EMFILE comes whether or not anyone is waiting: stop once nobody is. */
		if (fd < 0 && (errno == EMFILE || errno == ENFILE) && s->spare >= 0) {
			if (refuse_no_fds(s))
				continue;
			return;
		}
		if (fd < 0)
			return;
		if (s->nclients == s->cap_clients) {
			size_t cap = s->cap_clients ? s->cap_clients * 2 : 64;
			struct client *cl = realloc(s->clients, cap * sizeof(*cl));

			if (!cl) {
				close(fd);
				return;
			}
			s->clients = cl;
			s->cap_clients = cap;
		}
		memset(&s->clients[s->nclients], 0, sizeof(struct client));
		s->clients[s->nclients++].fd = fd;
	}
}

static void *serve(void *arg)
{
	rt_store_server *s = arg;
	struct pollfd *p = NULL;
	size_t pcap = 0;

	for (;;) {
		size_t np = s->nclients + 2;

		if (np > pcap) {
			struct pollfd *q = realloc(p, np * 2 * sizeof(*p));

			if (!q)
				break;
			p = q;
			pcap = np * 2;
		}
		p[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s->lfd, .events = POLLIN };
		for (size_t i = 0; i < s->nclients; i++) {
			struct client *c = &s->clients[i];

			p[i + 2] = (struct pollfd){ .fd = c->fd, .events = (short)(c->out_len ? POLLOUT : POLLIN) };
		}
		if (poll(p, np, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[0].revents)
			break;
		for (size_t i = 0; i < s->nclients; i++) {
			struct client *c = &s->clients[i];
			short ev = p[i + 2].revents;
			int bad = 0;

			if (!ev)
				continue;
			if (c->out_len && (ev & (POLLOUT | POLLERR | POLLHUP)))
				bad = write_client(c) != 0;
			else if (ev & (POLLIN | POLLERR | POLLHUP))
				bad = read_client(s, c) != 0;
			/* Input parked behind a reply or a wait resumes once the reply is out. */
			if (!bad && !c->out_len && !c->wait_key && c->in_len)
				bad = consume(s, c) != 0;
			if (bad)
				drop(c);
		}
		/* Compact the client table (dropped entries have fd -1). */
		size_t j = 0;
		for (size_t i = 0; i < s->nclients; i++)
			if (s->clients[i].fd >= 0)
				s->clients[j++] = s->clients[i];
		s->nclients = j;
		if (p[1].revents)
			accept_clients(s);
	}
	free(p);
	return NULL;
}

rt_store_server *rt_store_server_start(const char *host, int port, int loopback_ok, const char *token,
				       int world_size, tt_err *err)
{
	rt_store_server *s = calloc(1, sizeof(*s));

	if (!s) {
		tt_err_set(err, "out of memory starting the store");
		return NULL;
	}
	s->lfd = -1;
	s->wake[0] = s->wake[1] = -1;
	s->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	s->world_size = world_size;
	/* One descriptor per rank stays open for the job: a world of 1024 needs more than the
	 * usual soft limit of 1024, so rank 0 raises it to the hard limit. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max &&
	    rl.rlim_cur < (rlim_t)world_size + 64) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	snprintf(s->token, sizeof(s->token), "%s", token);
	if (rt_net_listen_host(host, port, loopback_ok, &s->lfd, &s->port, s->addr, sizeof(s->addr), err) != 0)
		goto fail;
	/* accept_clients drains the backlog until EAGAIN. */
	if (fcntl(s->lfd, F_SETFL, O_NONBLOCK) != 0 || pipe2(s->wake, O_CLOEXEC) != 0) {
		tt_err_errno(err, "cannot create the store's wake pipe");
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
	if (s->wake[0] >= 0) {
		close(s->wake[0]);
		close(s->wake[1]);
	}
	free(s);
	return NULL;
}

int rt_store_server_port(const rt_store_server *srv)
{
	return srv->port;
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
	for (size_t i = 0; i < s->nclients; i++)
		drop(&s->clients[i]);
	free(s->clients);
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
	close(s->lfd);
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
};

/* One request/response round trip; the response value goes to val (up to cap). */
static int roundtrip(rt_store *st, uint32_t cmd, const char *key, const void *val, size_t len,
		     void *out, size_t cap, size_t *outlen, tt_err *err)
{
	size_t klen = key ? strlen(key) : 0;
	struct req_hdr h = { RT_STORE_MAGIC, cmd, (uint32_t)klen, (uint32_t)len };
	struct rsp_hdr r;
	unsigned char *scratch = NULL;
	int rc = -1;

	if (klen > RT_STORE_MAX_KEY || len > RT_STORE_MAX_VAL)
		return tt_err_set(err, "store key '%.40s' or its value is too large (key <= %d, value <= %u bytes)",
				  key ? key : "", RT_STORE_MAX_KEY, RT_STORE_MAX_VAL);
	pthread_mutex_lock(&st->lock);
	if (st->fd < 0) {
		tt_err_set(err, "the store connection to %s was lost earlier", st->where);
		goto out;
	}
	if (rt_net_send_all(st->fd, &h, sizeof(h), st->timeout, err) != 0 ||
	    rt_net_send_all(st->fd, key, klen, st->timeout, err) != 0 ||
	    rt_net_send_all(st->fd, val, len, st->timeout, err) != 0) {
		/* A server that refuses at once may close before our request is out: its reason can
		 * still be waiting in the receive buffer. */
		tt_err sent = *err;

		if (rt_net_recv_all(st->fd, &r, sizeof(r), 1.0, err) != 0 || r.status == ST_OK) {
			*err = sent;
			goto lost;
		}
	} else if (rt_net_recv_all(st->fd, &r, sizeof(r), st->timeout, err) != 0) {
		goto lost;
	}
	if (r.vallen > RT_STORE_MAX_VAL) {
		tt_err_set(err, "malformed reply");
		goto lost;
	}
	scratch = malloc(r.vallen + 1);
	if (!scratch) {
		tt_err_set(err, "out of memory");
		goto lost;
	}
	if (rt_net_recv_all(st->fd, scratch, r.vallen, st->timeout, err) != 0)
		goto lost;
	if (r.status != ST_OK) {
		scratch[r.vallen] = '\0';
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
	if (cmd != CMD_HELLO)
		tt_err_wrap(err, "store %s, key '%s'", st->where, key ? key : "");
out:
	pthread_mutex_unlock(&st->lock);
	free(scratch);
	return rc;
}

rt_store *rt_store_connect(const char *host, int port, const char *token, int world_size,
			   double timeout_s, tt_err *err)
{
	rt_store *st = calloc(1, sizeof(*st));
	struct hello h = { .version = RT_STORE_VERSION, .world_size = (uint32_t)world_size };

	if (!st) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	st->timeout = timeout_s;
	snprintf(st->where, sizeof(st->where), "%s:%d", host, port);
	pthread_mutex_init(&st->lock, NULL);
	snprintf(h.token, sizeof(h.token), "%s", token);
	if (rt_net_connect(host, port, timeout_s, &st->fd, err) != 0) {
		tt_err_wrap(err, "rendezvous store (MASTER_ADDR:MASTER_PORT; is rank 0 running?)");
		goto fail;
	}
	if (roundtrip(st, CMD_HELLO, NULL, &h, sizeof(h), NULL, 0, NULL, err) != 0)
		goto fail;
	return st;
fail:
	rt_store_close(st);
	return NULL;
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
	return roundtrip(st, CMD_SET, key, val, len, NULL, 0, NULL, err);
}

int rt_store_get(rt_store *st, const char *key, void *val, size_t cap, size_t *len, tt_err *err)
{
	return roundtrip(st, CMD_GET, key, NULL, 0, val, cap, len, err);
}

int rt_store_add(rt_store *st, const char *key, int64_t delta, int64_t *result, tt_err *err)
{
	int64_t v = 0;
	size_t len = 0;

	if (roundtrip(st, CMD_ADD, key, &delta, sizeof(delta), &v, sizeof(v), &len, err) != 0)
		return -1;
	if (result)
		*result = v;
	return 0;
}

int rt_store_fd(const rt_store *st)
{
	return st->fd;
}

/* SPDX-License-Identifier: MIT */
/* ctl.c — the control plane between the train-runs of a launch (see ctl.h). The handshake and
 * the proofs are nodechan.c's; this file adds the sequence numbers, the messages, the
 * coordinator's decisions and the keepalive. */
#include "ctl.h"
#include "tt_io.h"
#include "tt_parse.h"
#include "tt_signal.h"

#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

static const char *const kinds[] = {
	[TT_CTL_JOIN] = "join", [TT_CTL_PING] = "ping", [TT_CTL_FAULT] = "fault",
	[TT_CTL_RESTART] = "restart", [TT_CTL_STOP] = "stop", [TT_CTL_LOST] = "lost",
	[TT_CTL_BYE] = "bye", [TT_CTL_STEPS] = "steps", [TT_CTL_REPLACE] = "replace",
	[TT_CTL_SPARE_LOST] = "spare-lost", [TT_CTL_HEALTH] = "health", [TT_CTL_GO] = "go",
	[TT_CTL_SHRINK] = "shrink",
};

/* ---- the messages --------------------------------------------------------------------------- */

/* s as one token (tokens: no space) or one printable line: anything else becomes '?'. */
static void clean(char *s, int spaces)
{
	for (; *s; s++)
		if (*s < 0x20 || *s > 0x7e || (*s == ' ' && !spaces))
			*s = '?';
}

int tt_ctl_format(const struct tt_ctl_msg *m, uint64_t seq, char *buf, size_t len)
{
	char host[TT_CTL_HOST], spare_host[TT_CTL_HOST], what[TT_CTL_WHAT];
	int n;

	snprintf(host, sizeof(host), "%s", m->host[0] ? m->host : "?");
	snprintf(spare_host, sizeof(spare_host), "%s", m->spare_host[0] ? m->spare_host : "?");
	clean(spare_host, 0);
	snprintf(what, sizeof(what), "%s", m->what[0] ? m->what : "?");
	clean(host, 0);
	clean(what, 1);
	switch (m->kind) {
	case TT_CTL_JOIN:
		n = snprintf(buf, len, "%" PRIu64 " join %" PRIu32 " %s", seq, m->node, host);
		break;
	case TT_CTL_FAULT:
	case TT_CTL_RESTART:
	case TT_CTL_STOP:
		n = snprintf(buf, len, "%" PRIu64 " %s %" PRIu32 " %" PRId32 " %s %s", seq,
			     kinds[m->kind], m->round, m->rank, host, what);
		break;
	case TT_CTL_LOST:
	case TT_CTL_SPARE_LOST:
		n = snprintf(buf, len, "%" PRIu64 " %s %" PRIu32 " %s %s", seq, kinds[m->kind], m->node,
			     host, what);
		break;
	case TT_CTL_REPLACE:
		n = snprintf(buf, len, "%" PRIu64 " replace %" PRIu32 " %" PRIu32 " %s %" PRIu32 " %s %" PRId32
			     " %s", seq, m->round, m->node, host, m->spare, spare_host, m->rank, what);
		break;
	case TT_CTL_SHRINK:
		n = snprintf(buf, len, "%" PRIu64 " shrink %" PRIu32 " %" PRIu32 " %s %" PRId32 " %" PRIu32
			     " %s", seq, m->round, m->node, host, m->rank, m->nnodes, what);
		break;
	case TT_CTL_HEALTH:
		n = snprintf(buf, len, "%" PRIu64 " health %" PRIu32, seq, m->round);
		if (n >= 0 && (size_t)n < len && tt_preflight_format(&m->pf, buf + n, len - (size_t)n) != 0)
			return -1;
		break;
	case TT_CTL_GO:
		n = snprintf(buf, len, "%" PRIu64 " go %" PRIu32, seq, m->round);
		break;
	case TT_CTL_STEPS:
		n = snprintf(buf, len, "%" PRIu64 " steps %" PRId32 " %" PRId64 " %" PRId64 " %" PRIu64, seq,
			     m->rank, m->p50_us, m->p99_us, m->samples);
		if (n >= 0 && (size_t)n < len && m->busy_samples)
			n += snprintf(buf + n, len - (size_t)n, " busy %" PRId64 " %" PRId64 " %" PRIu64,
				      m->busy_p50_us, m->busy_p99_us, m->busy_samples);
		break;
	default:
		n = snprintf(buf, len, "%" PRIu64 " %s", seq, kinds[m->kind]);
		break;
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* The next space-separated token of [*p, end) (not empty): its start and length, *p past it and
 * one space. */
static int token(const char **p, const char *end, const char **tok, size_t *n)
{
	const char *sp = memchr(*p, ' ', (size_t)(end - *p));

	*tok = *p;
	*n = (size_t)((sp ? sp : end) - *p);
	*p = sp ? sp + 1 : end;
	return *n > 0 ? 0 : -1;
}

static int number(const char **p, const char *end, long long min, long long max, long long *v)
{
	const char *tok;
	size_t n;

	return token(p, end, &tok, &n) != 0 || tt_parse_int_span(tok, n, min, max, v) != 0 ? -1 : 0;
}

static int word(const char **p, const char *end, char *out, size_t size)
{
	const char *tok;
	size_t n;

	if (token(p, end, &tok, &n) != 0 || n >= size)
		return -1;
	memcpy(out, tok, n);
	out[n] = '\0';
	return 0;
}

/* "P50 P99 SAMPLES" of a steps message (SAMPLES at least min_samples). */
static int times(const char **p, const char *end, int64_t *p50, int64_t *p99, uint64_t *samples,
		 long long min_samples)
{
	long long v;

	if (number(p, end, 0, INT64_MAX, &v) != 0)
		return -1;
	*p50 = v;
	if (number(p, end, 0, INT64_MAX, &v) != 0)
		return -1;
	*p99 = v;
	if (number(p, end, min_samples, INT64_MAX, &v) != 0)
		return -1;
	*samples = (uint64_t)v;
	return 0;
}

int tt_ctl_parse(const char *body, size_t len, uint64_t *seq, struct tt_ctl_msg *m, tt_err *err)
{
	const char *p = body, *end = body + len, *tok;
	long long v = 0;
	size_t n;
	int k = -1;

	memset(m, 0, sizeof(*m));
	for (const char *c = body; c < end; c++)
		if (*c < 0x20 || *c > 0x7e)
			goto bad;
	if (number(&p, end, 1, INT64_MAX, &v) != 0 || token(&p, end, &tok, &n) != 0)
		goto bad;
	*seq = (uint64_t)v;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strlen(kinds[i]) == n && memcmp(kinds[i], tok, n) == 0)
			k = (int)i;
	if (k < 0)
		goto bad;
	m->kind = (enum tt_ctl_kind)k;
	switch (m->kind) {
	case TT_CTL_JOIN:
	case TT_CTL_LOST:
	case TT_CTL_SPARE_LOST:
		if (number(&p, end, 0, UINT32_MAX, &v) != 0 || word(&p, end, m->host, sizeof(m->host)) != 0)
			goto bad;
		m->node = (uint32_t)v;
		if (m->kind == TT_CTL_JOIN)
			break;
		goto what;
	case TT_CTL_REPLACE:
	case TT_CTL_SHRINK:
		if (number(&p, end, 0, UINT32_MAX, &v) != 0)
			goto bad;
		m->round = (uint32_t)v;
		if (number(&p, end, 0, UINT32_MAX, &v) != 0 || word(&p, end, m->host, sizeof(m->host)) != 0)
			goto bad;
		m->node = (uint32_t)v;
		if (m->kind == TT_CTL_SHRINK) {
			if (number(&p, end, 1, INT32_MAX, &v) != 0)
				goto bad;
			m->rank = (int32_t)v;
			if (number(&p, end, 1, UINT32_MAX, &v) != 0)
				goto bad;
			m->nnodes = (uint32_t)v;
			goto what;
		}
		if (number(&p, end, 0, UINT32_MAX, &v) != 0 ||
		    word(&p, end, m->spare_host, sizeof(m->spare_host)) != 0)
			goto bad;
		m->spare = (uint32_t)v;
		if (number(&p, end, 0, INT32_MAX, &v) != 0)
			goto bad;
		m->rank = (int32_t)v;
		goto what;
	case TT_CTL_FAULT:
	case TT_CTL_RESTART:
	case TT_CTL_STOP:
		if (number(&p, end, 0, UINT32_MAX, &v) != 0)
			goto bad;
		m->round = (uint32_t)v;
		if (number(&p, end, -1, INT32_MAX, &v) != 0 || word(&p, end, m->host, sizeof(m->host)) != 0)
			goto bad;
		m->rank = (int32_t)v;
	what:
		n = (size_t)(end - p);
		if (n == 0 || n >= sizeof(m->what))
			goto bad;
		memcpy(m->what, p, n);
		p = end;
		break;
	case TT_CTL_HEALTH:
	case TT_CTL_GO: {
		char words[TT_CTL_LINE];
		tt_err why;

		if (number(&p, end, 1, UINT32_MAX, &v) != 0)
			goto bad;
		m->round = (uint32_t)v;
		if (m->kind == TT_CTL_GO)
			break;
		/* The words after the round, each after a space (the number took the first). */
		n = (size_t)(end - p);
		if (n + 2 > sizeof(words))
			goto bad;
		words[0] = ' ';
		memcpy(words + 1, p, n);
		words[n + 1] = '\0';
		if (n && tt_preflight_parse(words, &m->pf, &why) != 0)
			goto bad;
		p = end;
		break;
	}
	case TT_CTL_STEPS:
		if (number(&p, end, 0, INT32_MAX, &v) != 0)
			goto bad;
		m->rank = (int32_t)v;
		if (times(&p, end, &m->p50_us, &m->p99_us, &m->samples, 0) != 0)
			goto bad;
		if (p == end)
			break;
		if (token(&p, end, &tok, &n) != 0 || n != 4 || memcmp(tok, "busy", 4) ||
		    times(&p, end, &m->busy_p50_us, &m->busy_p99_us, &m->busy_samples, 1) != 0)
			goto bad;
		break;
	default:
		break;
	}
	if (p != end || (end > body && end[-1] == ' '))
		goto bad;
	return 0;
bad:
	return tt_err_set(err, "a control message that is not one of train-run's (%.*s)",
			  (int)(len < 60 ? len : 60), body);
}

int tt_ctl_open(const char *key, const char *id, const unsigned char nc[RT_NONCE_LEN],
		const unsigned char ns[RT_NONCE_LEN], int from_server, uint64_t want,
		const char *line, size_t len, struct tt_ctl_msg *m, tt_err *err)
{
	unsigned char mac[RT_MAC_LEN];
	struct tt_nc_line l;
	uint64_t seq;

	if (tt_nc_parse(line, len, &l, err) != 0)
		return -1;
	if (l.kind != TT_NC_MSG)
		return tt_err_set(err, "a handshake line after the handshake");
	if (tt_nc_mac(key, from_server, id, nc, ns, l.body, l.body_len, mac, err) != 0)
		return -1;
	if (!rt_token_mac_equal(mac, l.mac))
		return tt_err_set(err, "a message without the proof of this job's key and connection");
	if (tt_ctl_parse(l.body, l.body_len, &seq, m, err) != 0)
		return -1;
	if (seq != want)
		return tt_err_set(err, "message number %" PRIu64 " where %" PRIu64 " was due: replayed "
				  "or reordered", seq, want);
	return 0;
}

int tt_ctl_decide(struct tt_ctl_rounds *r, const struct tt_ctl_msg *fault, struct tt_ctl_msg *out)
{
	if (r->over || fault->kind != TT_CTL_FAULT || fault->round != r->round)
		return 0;
	*out = *fault;
	if (r->round < r->max_restarts) {
		out->kind = TT_CTL_RESTART;
		out->round = ++r->round;
	} else {
		out->kind = TT_CTL_STOP;
		r->over = 1;
	}
	return 1;
}

int32_t tt_ctl_first_rank(const uint32_t *role, const uint32_t *count, uint32_t nnodes,
			  uint32_t node_rank)
{
	uint32_t first = 0;

	for (uint32_t k = 0; k < nnodes; k++)
		if (role[k] < node_rank)
			first += count[k];
	return (int32_t)first;
}

uint32_t tt_ctl_renumber(uint32_t node_rank, uint32_t lost)
{
	return node_rank > lost ? node_rank - 1 : node_rank;
}

int tt_ctl_replace(struct tt_ctl_rounds *r, uint32_t *role, const uint32_t *count, uint32_t nnodes,
		   uint32_t lost, int may_replace, uint32_t min_nodes, uint32_t *spare, uint32_t *rank)
{
	uint32_t was, left = 0;

	if (lost >= nnodes)
		return 0;
	was = role[lost];
	role[lost] = TT_CTL_GONE;
	if (was == TT_CTL_SPARE || was == TT_CTL_ASIDE)
		return 2;
	if (was == TT_CTL_GONE || was == 0 || r->over || !may_replace)
		return 0;
	*rank = was;
	for (uint32_t k = 0; k < nnodes; k++)
		if (role[k] == TT_CTL_SPARE && count[k] == count[lost]) {
			role[k] = was;
			*spare = k;
			r->round++;
			return 1;
		}
	for (uint32_t k = 0; k < nnodes; k++)
		left += role[k] < TT_CTL_ASIDE;
	if (min_nodes == 0 || left < min_nodes)
		return 0;
	for (uint32_t k = 0; k < nnodes; k++)
		if (role[k] < TT_CTL_ASIDE)
			role[k] = tt_ctl_renumber(role[k], was);
	r->round++;
	return 3;
}

void tt_ctl_start_roles(uint32_t *role, uint32_t nnodes, uint32_t nspares,
			const struct tt_census_swap *swaps)
{
	for (uint32_t k = 0; k < nnodes; k++)
		role[k] = k + nspares < nnodes ? k : TT_CTL_SPARE;
	for (const struct tt_census_swap *w = swaps; w && w->node; w++) {
		if (w->spare)
			role[w->spare] = w->node;
		role[w->node] = TT_CTL_ASIDE;	/* a failing spare too: never chosen */
	}
}

void tt_ctl_lost_line(const struct tt_ctl_msg *lost, char *buf, size_t len)
{
	snprintf(buf, len, "node %s lost (%s); resubmit with: sbatch --exclude=%s ...", lost->host,
		 lost->what, lost->host);
}

/* ---- the connections ------------------------------------------------------------------------ */

static int is_server(const struct tt_ctl *c)
{
	return c->node == 0;
}

static void peer_close(struct tt_ctl_peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->len = 0;
}

/* A body (its buffer in peer_send) and the nodechan framing fit in one line. */
_Static_assert(TT_CTL_WHAT + 2 * TT_CTL_HOST + 64 + 2 * RT_MAC_LEN + 8 <= TT_CTL_LINE,
	       "a control line must hold the longest message");

static int peer_send(struct tt_ctl *c, struct tt_ctl_peer *p, const struct tt_ctl_msg *m)
{
	char body[TT_CTL_WHAT + 2 * TT_CTL_HOST + 64], line[TT_CTL_LINE];
	tt_err err;

	if (p->fd < 0)
		return -1;
	if (tt_ctl_format(m, p->sent + 1, body, sizeof(body)) != 0 ||
	    tt_nc_format_msg(line, c->key, is_server(c), c->id, p->nc, p->ns, body, &err) != 0)
		return -1;
	if (tt_write_all(p->fd, line, strlen(line), true) != 0)
		return -1;
	p->sent++;
	p->last_sent_ms = tt_now_ms();
	return 0;
}

/* The next message from p: 1 with m, 0 when none is complete yet, -1 with err (a hang-up, an
 * error, a line that does not check out). */
static int peer_next(struct tt_ctl *c, struct tt_ctl_peer *p, struct tt_ctl_msg *m, tt_err *err)
{
	for (;;) {
		char *nl = memchr(p->buf, '\n', p->len);
		ssize_t n;

		if (nl) {
			size_t len = (size_t)(nl - p->buf);
			int rc = tt_ctl_open(c->key, c->id, p->nc, p->ns, !is_server(c), p->heard + 1,
					     p->buf, len, m, err);

			memmove(p->buf, nl + 1, p->len - len - 1);
			p->len -= len + 1;
			if (rc != 0)
				return -1;
			p->heard++;
			p->last_heard_ms = tt_now_ms();
			return 1;
		}
		if (p->len >= TT_CTL_LINE)
			return tt_err_set(err, "an over-long line");
		n = recv(p->fd, p->buf + p->len, TT_CTL_LINE - p->len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (n <= 0)
			return n == 0 ? tt_err_set(err, "its train-run ended without a word: killed, or "
						   "its node went down") :
				tt_err_errno(err, "its connection failed");
		p->len += (size_t)n;
	}
}

static int arm_timer(struct tt_ctl *c, tt_err *err)
{
	struct itimerspec t = { .it_interval = { 0, 250 * 1000000L }, .it_value = { 0, 250 * 1000000L } };

	c->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (c->timerfd < 0 || timerfd_settime(c->timerfd, 0, &t, NULL) != 0)
		return tt_err_errno(err, "control plane: creating the keepalive timer");
	return 0;
}

static int alloc_peers(struct tt_ctl *c, tt_err *err)
{
	c->npeers = is_server(c) ? c->nnodes : 1;
	c->peers = calloc(c->npeers, sizeof(*c->peers));
	if (!c->peers)
		return tt_err_errno(err, "control plane: allocating %" PRIu32 " peers", c->npeers);
	for (uint32_t i = 0; i < c->npeers; i++) {
		c->peers[i].fd = -1;
		c->peers[i].buf = malloc(TT_CTL_LINE);
		if (!c->peers[i].buf)
			return tt_err_errno(err, "control plane: allocating a peer's buffer");
	}
	return 0;
}

int tt_ctl_listen(struct tt_ctl *c, tt_err *err)
{
	c->lfd = tt_nc_listen(0, (int)(c->nnodes < 4096 ? c->nnodes + 32 : 4096), "control plane", err);
	if (c->lfd < 0)
		return -1;
	c->port = tt_nc_port(c->lfd);
	if (c->port == 0)
		return tt_err_errno(err, "control plane: cannot tell the port it listens on");
	return 0;
}

static int left_ms(long deadline)
{
	long left = deadline - tt_now_ms();

	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* A proven join on connection k: node's place taken (greeted once every node is here), or -1
 * with why. */
static int joined(struct tt_ctl *c, struct tt_nc_conn *k, tt_err *why)
{
	struct tt_ctl_msg m;
	struct tt_ctl_peer *p;
	uint64_t seq;

	if (tt_ctl_parse(k->body, strlen(k->body), &seq, &m, why) != 0)
		return -1;
	if (m.kind != TT_CTL_JOIN || seq != 1)
		return tt_err_set(why, "a first message that is not a join");
	if (m.node == 0 || m.node >= c->nnodes)
		return tt_err_set(why, "%s says it is node %" PRIu32 ", outside 1..%" PRIu32, m.host,
				  m.node, c->nnodes - 1);
	p = &c->peers[m.node];
	if (p->fd >= 0)
		return tt_err_set(why, "two train-runs say they are node %" PRIu32 " (%s and %s)", m.node,
				  p->host, m.host);
	p->fd = k->fd;
	k->fd = -1;	/* the peer's now */
	p->node = m.node;
	snprintf(p->host, sizeof(p->host), "%s", m.host);
	memcpy(p->nc, k->nc, RT_NONCE_LEN);
	memcpy(p->ns, k->ns, RT_NONCE_LEN);
	p->heard = 1;
	return 0;
}

/* Node 0's join, to every node at once: their silences count from here, so none is judged while
 * node 0 still waits for a slower one. The clients said nothing since their joins. */
static int greet_all(struct tt_ctl *c, tt_err *err)
{
	struct tt_ctl_msg me = { .kind = TT_CTL_JOIN };

	snprintf(me.host, sizeof(me.host), "%s", c->host ? c->host : "?");
	for (uint32_t i = 1; i < c->npeers; i++) {
		c->peers[i].last_heard_ms = tt_now_ms();
		if (peer_send(c, &c->peers[i], &me) != 0)
			return tt_err_set(err, "control plane: node %" PRIu32 " (%s) hung up after its join",
					  i, c->peers[i].host);
	}
	return 0;
}

/* Node 0: every other node's join, before deadline. */
static int accept_all(struct tt_ctl *c, long deadline, tt_err *err)
{
	size_t nconns = (size_t)c->nnodes + 32, i;
	struct tt_nc_conn *conns = calloc(nconns, sizeof(*conns));
	struct pollfd *pfd = calloc(nconns + 1, sizeof(*pfd));
	uint32_t have = 0;
	int rc = -1;

	if (!conns || !pfd) {
		tt_err_errno(err, "control plane: allocating the connection table");
		goto out;
	}
	for (i = 0; i < nconns; i++)
		conns[i].fd = -1;
	while (have < c->nnodes - 1) {
		size_t n = 0;

		if (left_ms(deadline) == 0 || tt_nc_stopped(c->stop)) {
			uint32_t miss = 1;

			while (miss < c->nnodes && c->peers[miss].fd >= 0)
				miss++;
			tt_err_set(err, "control plane: node %" PRIu32 " (of %" PRIu32 ") did not join within "
				   "%d s after the census%s", miss, c->nnodes, TT_CTL_JOIN_S,
				   tt_nc_stopped(c->stop) ? " (stopped by a signal)" : "");
			goto out;
		}
		pfd[n++] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
		for (i = 0; i < nconns; i++)
			if (conns[i].fd >= 0)
				pfd[n++] = (struct pollfd){ .fd = conns[i].fd, .events = POLLIN };
		if (poll(pfd, n, left_ms(deadline) < 200 ? left_ms(deadline) : 200) < 0 && errno != EINTR) {
			tt_err_errno(err, "control plane: poll");
			goto out;
		}
		if (pfd[0].revents) {
			int fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			struct tt_nc_conn *k = fd >= 0 ? tt_nc_free_slot(conns, nconns) : NULL;
			tt_err why;

			if (fd >= 0 && (!k || tt_nc_conn_open(k, fd, &why) != 0))
				close(fd);
		}
		for (i = 0; i < nconns; i++) {
			struct tt_nc_conn *k = &conns[i];
			tt_err why;
			int got;

			if (k->fd < 0)
				continue;
			if (tt_now_ms() >= k->deadline) {
				tt_nc_conn_close(k);	/* idle or slow: a stranger */
				continue;
			}
			got = tt_nc_conn_read(k, c->key, c->id, &why);
			if (got == 1 && joined(c, k, &why) != 0) {
				tt_err_set(err, "control plane: %s", why.msg);
				goto out;
			}
			if (got == 1)
				have++;
			else if (got < 0)
				tt_nc_conn_close(k);	/* a stranger: no place, no effect */
		}
	}
	rc = greet_all(c, err);
out:
	for (i = 0; conns && i < nconns; i++) {
		tt_nc_conn_close(&conns[i]);
		free(conns[i].buf);
	}
	free(conns);
	free(pfd);
	return rc;
}

/* Another node: joins node 0 at port, then waits for node 0's join (its host name). */
static int join(struct tt_ctl *c, uint16_t port, long deadline, tt_err *err)
{
	struct tt_ctl_peer *p = &c->peers[0];
	struct tt_nc_client cl = { .fd = -1, .stop = c->stop };
	struct tt_ctl_msg m = { .kind = TT_CTL_JOIN, .node = c->node };
	char body[TT_CTL_HOST + 64];
	tt_err why;
	int got = 0;

	snprintf(m.host, sizeof(m.host), "%s", c->host ? c->host : "?");
	if (tt_ctl_format(&m, 1, body, sizeof(body)) != 0)
		return tt_err_set(err, "control plane: this node's join does not fit");
	if (tt_nc_client_say(&cl, c->server, port, c->key, c->id, body, deadline, 0, NULL, NULL,
			     &why) != 0)
		return tt_err_set(err, "control plane: cannot join node 0: %s", why.msg);
	p->fd = cl.fd;
	p->node = 0;
	snprintf(p->host, sizeof(p->host), "%s", c->server);
	memcpy(p->nc, cl.nc, RT_NONCE_LEN);
	memcpy(p->ns, cl.ns, RT_NONCE_LEN);
	p->sent = 1;
	p->last_sent_ms = p->last_heard_ms = tt_now_ms();
	while (got == 0) {
		struct pollfd pf = { .fd = p->fd, .events = POLLIN };

		if (left_ms(deadline) == 0 || tt_nc_stopped(c->stop))
			return tt_err_set(err, "control plane: node 0 (%s) did not greet this node in time",
					  c->server);
		poll(&pf, 1, left_ms(deadline) < 200 ? left_ms(deadline) : 200);
		got = peer_next(c, p, &m, &why);
	}
	if (got < 0)
		return tt_err_set(err, "control plane: node 0 (%s): %s", c->server, why.msg);
	if (m.kind != TT_CTL_JOIN || m.node != 0)
		return tt_err_set(err, "control plane: node 0 (%s) did not greet this node with its join",
				  c->server);
	snprintf(p->host, sizeof(p->host), "%s", m.host);
	return 0;
}

/* ---- node 0's probe door: the network probes before a restart (ctl.h) ----------------------- */

static uint32_t probe_slots(const struct tt_ctl *c)
{
	return c->nnodes + 8;
}

/* Node 0 with --preflight, every node joined: the listener stays open for the probes, served by
 * a thread of their own. -1 (no probes: the nodes' probes fail, not measured) with a notice. */
static int probes_open(struct tt_ctl *c)
{
	tt_err why;

	c->probe_conns = calloc(probe_slots(c), sizeof(*c->probe_conns));
	if (c->probe_conns)
		c->probe = tt_probe_server_start(c->key, c->id, &why);
	else
		tt_err_set(&why, "network probe: out of memory for node 0's connection table");
	if (!c->probe) {
		fprintf(stderr, "train-run: %s; the network is not judged before a restart\n", why.msg);
		free(c->probe_conns);
		c->probe_conns = NULL;
		return -1;
	}
	for (uint32_t i = 0; i < probe_slots(c); i++)
		c->probe_conns[i].fd = -1;
	return 0;
}

/* What arrived on the probe door, never waiting: new connections accepted, their handshakes
 * advanced; a proven probe request goes to the probe thread, anything else (a stranger, a late
 * join, a slow handshake) is closed. */
static void probes_serve(struct tt_ctl *c)
{
	int fd;

	if (!c->probe)
		return;
	for (uint32_t n = 0; n < probe_slots(c) &&
	     (fd = accept4(c->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0; n++) {
		struct tt_nc_conn *k = tt_nc_free_slot(c->probe_conns, probe_slots(c));
		tt_err why;

		if (!k || tt_nc_conn_open(k, fd, &why) != 0)
			close(fd);
	}
	for (uint32_t i = 0; i < probe_slots(c); i++) {
		struct tt_nc_conn *k = &c->probe_conns[i];
		tt_err why;
		int got;

		if (k->fd < 0)
			continue;
		got = tt_now_ms() >= k->deadline ? -1 : tt_nc_conn_read(k, c->key, c->id, &why);
		if (got == 1 && tt_probe_is_request(k->body))
			tt_probe_server_take(c->probe, k);
		else if (got != 0)
			tt_nc_conn_close(k);
	}
}

static void probes_close(struct tt_ctl *c)
{
	tt_probe_server_stop(c->probe);
	c->probe = NULL;
	for (uint32_t i = 0; c->probe_conns && i < probe_slots(c); i++) {
		tt_nc_conn_close(&c->probe_conns[i]);
		free(c->probe_conns[i].buf);
	}
	free(c->probe_conns);
	c->probe_conns = NULL;
}

int tt_ctl_connect(struct tt_ctl *c, uint16_t port, uint32_t max_restarts, tt_err *err)
{
	long deadline = tt_now_ms() + TT_CTL_JOIN_S * 1000L;
	int rc;

	c->rounds = (struct tt_ctl_rounds){ .max_restarts = max_restarts };
	if (is_server(c) && (c->nspares > 0 || c->min_nodes > 0)) {
		c->role = calloc(c->nnodes, sizeof(*c->role));
		if (!c->role)
			return tt_err_errno(err, "control plane: allocating the roles of %" PRIu32 " nodes",
					    c->nnodes);
		tt_ctl_start_roles(c->role, c->nnodes, c->nspares, c->swaps);
	}
	if (is_server(c) && c->health) {
		c->reports = calloc(c->nnodes, sizeof(*c->reports));
		c->reported = calloc(c->nnodes, 1);
		c->judged = calloc(c->nnodes, sizeof(*c->judged));
		c->judged_node = calloc(c->nnodes, sizeof(*c->judged_node));
		if (!c->reports || !c->reported || !c->judged || !c->judged_node)
			return tt_err_errno(err, "control plane: allocating the preflight reports of %"
					    PRIu32 " nodes", c->nnodes);
	}
	if (!is_server(c)) {
		if (port == 0)
			return tt_err_set(err, "control plane: node 0 announced no control port: is it a "
					  "train-run of another version?");
	}
	if (alloc_peers(c, err) != 0 || arm_timer(c, err) != 0)
		return -1;
	if (is_server(c))	/* its own place, for a verdict that names node 0 */
		snprintf(c->peers[0].host, sizeof(c->peers[0].host), "%s", c->host ? c->host : "?");
	rc = is_server(c) ? accept_all(c, deadline, err) : join(c, port, deadline, err);
	if (!is_server(c))
		c->port = port;
	if (rc != 0 || !is_server(c) || !c->health || probes_open(c) != 0) {
		if (c->lfd >= 0)
			close(c->lfd);
		c->lfd = -1;
	}
	return rc;
}

int tt_ctl_nfds(const struct tt_ctl *c)
{
	return 1 + (int)c->npeers + (c->probe ? 1 + (int)probe_slots(c) : 0);
}

int tt_ctl_pollfds(const struct tt_ctl *c, struct pollfd *p)
{
	int n = 0;

	p[n++] = (struct pollfd){ .fd = c->timerfd, .events = POLLIN };
	for (uint32_t i = 0; i < c->npeers; i++)
		if (c->peers[i].fd >= 0)
			p[n++] = (struct pollfd){ .fd = c->peers[i].fd, .events = POLLIN };
	if (c->probe)
		p[n++] = (struct pollfd){ .fd = c->lfd, .events = POLLIN };
	for (uint32_t i = 0; c->probe && i < probe_slots(c); i++)
		if (c->probe_conns[i].fd >= 0)
			p[n++] = (struct pollfd){ .fd = c->probe_conns[i].fd, .events = POLLIN };
	return n;
}

/* Node 0: a decision or a loss for every other node still connected. A node the send fails to
 * stays open: its hang-up is read next (tt_ctl_service) and judged a loss, which a spare may
 * replace; closed here, it would be gone unjudged, and a round decided just as it died would
 * wait for it forever. */
static void broadcast(struct tt_ctl *c, const struct tt_ctl_msg *m)
{
	for (uint32_t i = 1; i < c->npeers; i++)
		if (c->peers[i].fd >= 0)
			(void)peer_send(c, &c->peers[i], m);
}

/* Node 0 decided round (a restart, a replace): with --preflight, the round starts once every
 * active node's report is in and passes. */
static void await_health(struct tt_ctl *c, uint32_t round)
{
	if (!is_server(c) || !c->health)
		return;
	c->health_round = round;
	c->health_deadline = tt_now_ms() + c->health_wait_ms;
	memset(c->reported, 0, c->nnodes);
}

/* Whether node k runs workers in the round node 0 awaits: connected, neither gone nor a spare
 * standing by. */
static int active(const struct tt_ctl *c, uint32_t k)
{
	if (c->role && (c->role[k] == TT_CTL_SPARE || c->role[k] == TT_CTL_GONE ||
			c->role[k] == TT_CTL_ASIDE))
		return 0;
	return k == 0 || c->peers[k].fd >= 0;
}

static int lose(struct tt_ctl *c, struct tt_ctl_peer *p, enum tt_fault_kind kind, const char *why,
		struct tt_ctl_msg *v);

/* Node 0, awaiting the reports of a round: 1 with the verdict in v (go, or the loss of the first
 * node that failed its checks or sent none in time), 0 while reports are still due. */
static int judge_health(struct tt_ctl *c, struct tt_ctl_msg *v)
{
	uint32_t n = 0, bad;
	char why[TT_PF_FAIL + 128], what[sizeof(why) + 64];
	int late = tt_now_ms() >= c->health_deadline;

	for (uint32_t k = 0; k < c->nnodes; k++) {
		if (!active(c, k))
			continue;
		if (!c->reported[k] && late) {
			snprintf(what, sizeof(what), "no preflight report within %.1f s before round %" PRIu32,
				 (double)c->health_wait_ms / 1000, c->health_round);
			return lose(c, &c->peers[k], TT_FAULT_PREFLIGHT, what, v);
		}
		if (!c->reported[k])
			return 0;
		c->judged[n] = c->reports[k];
		c->judged_node[n++] = k;
	}
	if (tt_preflight_judge(c->judged, n, c->min_fraction, &bad, why, sizeof(why))) {
		snprintf(what, sizeof(what), "failed preflight before round %" PRIu32 ": %s",
			 c->health_round, why);
		return lose(c, &c->peers[c->judged_node[bad]], TT_FAULT_PREFLIGHT, what, v);
	}
	*v = (struct tt_ctl_msg){ .kind = TT_CTL_GO, .round = c->health_round };
	c->health_round = 0;
	broadcast(c, v);
	return 1;
}

void tt_ctl_health(struct tt_ctl *c, uint32_t round, const struct tt_preflight *pf)
{
	struct tt_ctl_msg m = { .kind = TT_CTL_HEALTH, .round = round, .pf = *pf };

	if (!is_server(c)) {
		if (c->peers[0].fd >= 0 && peer_send(c, &c->peers[0], &m) != 0)
			peer_close(&c->peers[0]);	/* node 0 is gone: its loss is judged elsewhere */
		return;
	}
	if (round == c->health_round) {
		c->reports[0] = *pf;
		c->reported[0] = 1;
	}
}

/* Whether interface address a is the socket address me. */
static int same_addr(const struct sockaddr *a, const struct sockaddr_storage *me)
{
	if (!a || a->sa_family != me->ss_family)
		return 0;
	if (a->sa_family == AF_INET)
		return !memcmp(&((const struct sockaddr_in *)a)->sin_addr,
			       &((const struct sockaddr_in *)me)->sin_addr, sizeof(struct in_addr));
	return a->sa_family == AF_INET6 &&
	       !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		       &((const struct sockaddr_in6 *)me)->sin6_addr, sizeof(struct in6_addr));
}

/* Whether the interface holding the local address of connection fd is down or has no carrier
 * (its name into ifname): a node that lost node 0 so is itself the node cut off. */
static int own_link_down(int fd, char *ifname, size_t len)
{
	struct sockaddr_storage me;
	socklen_t n = sizeof(me);
	struct ifaddrs *ifs;
	int down = 0;

	if (getsockname(fd, (struct sockaddr *)&me, &n) != 0 || getifaddrs(&ifs) != 0)
		return 0;
	for (const struct ifaddrs *i = ifs; i; i = i->ifa_next)
		if (same_addr(i->ifa_addr, &me)) {
			down = !(i->ifa_flags & IFF_UP) || !(i->ifa_flags & IFF_RUNNING);
			snprintf(ifname, len, "%s", i->ifa_name);
			break;
		}
	freeifaddrs(ifs);
	return down;
}

/* The nodes with a NODE_RANK in node 0's map (after a shrink: the new round's). */
static uint32_t ranked(const struct tt_ctl *c)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < c->nnodes; k++)
		n += c->role[k] < TT_CTL_ASIDE;
	return n;
}

_Static_assert(TT_FAULT_WHAT >= TT_CTL_WHAT && TT_STEPS_HOST >= TT_CTL_HOST,
	       "a fault's record must hold a verdict's host and WHAT");

/* Node 0 decided verdict v in round (the round current then) on a fault of kind, detected
 * detect_ms before (-1: unknown): one record in c->faults, for --report. */
static void record(struct tt_ctl *c, enum tt_fault_kind kind, uint32_t round, const struct tt_ctl_msg *v,
		   int64_t detect_ms)
{
	struct tt_fault f = { .round = round, .kind = kind, .rank = -1, .node = v->node,
			      .spare = v->spare, .node_rank = (uint32_t)v->rank, .nnodes = v->nnodes,
			      .detect_ms = detect_ms };

	if (!is_server(c) || !c->faults)
		return;
	switch (v->kind) {
	case TT_CTL_RESTART:
	case TT_CTL_STOP:
		f.action = v->kind == TT_CTL_RESTART ? TT_FAULT_RESTART : TT_FAULT_STOP;
		f.rank = kind == TT_FAULT_CRASH || kind == TT_FAULT_HANG ? v->rank : -1;
		break;
	case TT_CTL_REPLACE:
		f.action = TT_FAULT_REPLACE;
		break;
	case TT_CTL_SHRINK:
		f.action = TT_FAULT_SHRINK;
		break;
	case TT_CTL_SPARE_LOST:
		f.action = TT_FAULT_CONTINUE;
		break;
	default:
		f.action = TT_FAULT_STOP;
		break;
	}
	snprintf(f.host, sizeof(f.host), "%s", v->host);
	snprintf(f.spare_host, sizeof(f.spare_host), "%s", v->spare_host);
	snprintf(f.what, sizeof(f.what), "%s", v->what);
	if (tt_faults_add(c->faults, &f) != 0)
		fprintf(stderr, "train-run: out of memory for the record of a fault of round %" PRIu32 "\n",
			round);
}

/* Node 0: node lost left the world (v: a replace, or a shrink of NODE_RANK v->rank): its step
 * times go, and after a shrink the ranks above its own move down, as the next round has them. */
static void forget_steps(struct tt_ctl *c, const struct tt_ctl_msg *v)
{
	int32_t first;

	if (!c->steps || !c->role)
		return;
	first = tt_ctl_first_rank(c->role, c->counts, c->nnodes, (uint32_t)v->rank);
	tt_steps_forget(c->steps, v->node, first, v->kind == TT_CTL_SHRINK ? (int32_t)c->counts[v->node] : 0);
}

/* Peer p is lost (why, a fault of kind): the verdict, for every node: a spare takes its place, the others go on
 * without it (node 0 with spares or --nnodes MIN:MAX: tt_ctl_replace), a spare standing by is
 * gone, or the loss stops every node. A node whose own link to node 0 is down names itself, not
 * node 0 (node 0 names it too). */
static int lose(struct tt_ctl *c, struct tt_ctl_peer *p, enum tt_fault_kind kind, const char *why,
		struct tt_ctl_msg *v)
{
	static const enum tt_ctl_kind verdict[] = { TT_CTL_LOST, TT_CTL_REPLACE, TT_CTL_SPARE_LOST,
						    TT_CTL_SHRINK };
	char ifname[IF_NAMESIZE] = "";
	uint32_t spare = 0, rank = 0, round = c->rounds.round;
	/* A loss: since the node was last heard; a failed preflight: since the round was decided. */
	long detect = tt_now_ms() - (kind == TT_FAULT_PREFLIGHT ? c->health_deadline - c->health_wait_ms :
				     p->last_heard_ms);
	int k = c->role ? tt_ctl_replace(&c->rounds, c->role, c->counts, c->nnodes, p->node,
					 !c->draining, c->min_nodes, &spare, &rank) : 0;

	memset(v, 0, sizeof(*v));
	v->kind = verdict[k];
	v->node = p->node;
	snprintf(v->host, sizeof(v->host), "%s", p->host);
	snprintf(v->what, sizeof(v->what), "%s%s", p->node == 0 ? "the coordinator, node 0: " : "", why);
	if (!is_server(c) && p->fd >= 0 && own_link_down(p->fd, ifname, sizeof(ifname))) {
		v->node = c->node;
		snprintf(v->host, sizeof(v->host), "%s", c->host ? c->host : "?");
		snprintf(v->what, sizeof(v->what), "its own link %s is down; node 0 (%s) %s", ifname, p->host, why);
	}
	if (k == 1 || k == 3) {
		v->round = c->rounds.round;
		v->rank = (int32_t)rank;
	}
	if (k == 1) {
		v->spare = spare;
		snprintf(v->spare_host, sizeof(v->spare_host), "%s", c->peers[spare].host);
	}
	if (k == 3)
		v->nnodes = ranked(c);
	if (k == 0)
		c->rounds.over = 1;
	if (is_server(c)) {
		broadcast(c, v);	/* p too: a node that failed its checks hears why it stops */
		record(c, kind, round, v, detect);
		if (k == 1 || k == 3)
			forget_steps(c, v);
	}
	peer_close(p);
	if (k == 1 || k == 3)
		await_health(c, v->round);
	return 1;
}

/* Node 0: a rank's step times from node p (or, p NULL, from node 0). */
static void put_steps(struct tt_ctl *c, const struct tt_ctl_peer *p, const struct tt_ctl_msg *m)
{
	struct tt_step_row r = { .node = p ? p->node : 0, .rank = m->rank, .p50_us = m->p50_us,
				 .p99_us = m->p99_us, .samples = m->samples, .busy_p50_us = m->busy_p50_us,
				 .busy_p99_us = m->busy_p99_us, .busy_samples = m->busy_samples };

	snprintf(r.host, sizeof(r.host), "%s", p ? p->host : c->host ? c->host : "?");
	/* With replacements or shrinks: only a rank of the node's place in the current world (a
	 * line sent before the node heard of a shrink names a rank it no longer has). */
	if (c->role) {
		uint32_t role = c->role[r.node];
		int32_t first = role < TT_CTL_ASIDE ? tt_ctl_first_rank(c->role, c->counts, c->nnodes, role) : 0;

		if (role >= TT_CTL_ASIDE || r.rank < first || r.rank >= first + (int32_t)c->counts[r.node])
			return;
	}
	if (c->steps && tt_steps_put(c->steps, &r) != 0)
		fprintf(stderr, "train-run: out of memory for the step times of rank %" PRId32 "\n", r.rank);
}

/* What peer p said: 1 with a verdict in v. */
static int said(struct tt_ctl *c, struct tt_ctl_peer *p, const struct tt_ctl_msg *m,
		struct tt_ctl_msg *v)
{
	switch (m->kind) {
	case TT_CTL_BYE:
		peer_close(p);	/* ended in order: no loss, and nothing more to hear */
		return 0;
	case TT_CTL_FAULT: {
		struct tt_ctl_msg f = *m;

		f.node = p->node;	/* where it came from, for the record */
		return is_server(c) ? tt_ctl_fault(c, &f, v) : 0;
	}
	case TT_CTL_STEPS:
		if (is_server(c))
			put_steps(c, p, m);
		return 0;
	case TT_CTL_HEALTH:
		if (is_server(c) && c->health_round && m->round == c->health_round) {
			c->reports[p->node] = m->pf;
			c->reported[p->node] = 1;
		}
		return 0;
	case TT_CTL_GO:
	case TT_CTL_RESTART:
	case TT_CTL_STOP:
	case TT_CTL_LOST:
	case TT_CTL_REPLACE:
	case TT_CTL_SHRINK:
	case TT_CTL_SPARE_LOST:
		if (is_server(c))
			return 0;	/* only the coordinator decides */
		*v = *m;
		return 1;
	default:
		return 0;
	}
}

int tt_ctl_service(struct tt_ctl *c, struct tt_ctl_msg *v)
{
	const struct tt_ctl_msg ping = { .kind = TT_CTL_PING };
	uint64_t ticks;
	long now;

	if (read(c->timerfd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
		return 0;
	probes_serve(c);
	for (uint32_t i = 0; i < c->npeers; i++) {
		struct tt_ctl_peer *p = &c->peers[i];
		struct tt_ctl_msg m;
		tt_err why;
		int got;

		while (p->fd >= 0 && (got = peer_next(c, p, &m, &why)) != 0) {
			if (got < 0)
				return lose(c, p, TT_FAULT_LOST, why.msg, v);
			if (said(c, p, &m, v))
				return 1;
		}
	}
	if (is_server(c) && c->health_round && !c->rounds.over && judge_health(c, v))
		return 1;
	now = tt_now_ms();
	for (uint32_t i = 0; i < c->npeers; i++) {
		struct tt_ctl_peer *p = &c->peers[i];

		if (p->fd < 0)
			continue;
		if (now - p->last_heard_ms > TT_CTL_LOST_MS) {
			char why[64];

			snprintf(why, sizeof(why), "silent for %.1f s", (double)(now - p->last_heard_ms) / 1000);
			return lose(c, p, TT_FAULT_LOST, why, v);
		}
		if (now - p->last_sent_ms >= TT_CTL_PING_MS && peer_send(c, p, &ping) != 0)
			return lose(c, p, TT_FAULT_LOST, "its connection failed", v);
	}
	return 0;
}

int tt_ctl_fault(struct tt_ctl *c, const struct tt_ctl_msg *m, struct tt_ctl_msg *v)
{
	if (!is_server(c) && c->rounds.over)
		return 0;	/* node 0 was lost: this node stops already */
	if (!is_server(c) && c->peers[0].fd < 0) {
		/* Node 0 ended in order (its workers are done): nobody to restart with. */
		*v = *m;
		v->kind = TT_CTL_STOP;
		snprintf(v->what + strlen(v->what), sizeof(v->what) - strlen(v->what),
			 " after node 0 ended");
		return 1;
	}
	if (!is_server(c))
		return peer_send(c, &c->peers[0], m) == 0 ? 0 :
			lose(c, &c->peers[0], TT_FAULT_LOST, "its connection failed", v);
	if (!tt_ctl_decide(&c->rounds, m, v))
		return 0;
	broadcast(c, v);
	record(c, tt_fault_kind_of(m->what), m->round, v, -1);
	if (v->kind == TT_CTL_RESTART)
		await_health(c, v->round);
	return 1;
}

void tt_ctl_steps(struct tt_ctl *c, const struct tt_step_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		struct tt_ctl_msg m = { .kind = TT_CTL_STEPS, .rank = rows[i].rank,
					.p50_us = rows[i].p50_us, .p99_us = rows[i].p99_us,
					.samples = rows[i].samples, .busy_p50_us = rows[i].busy_p50_us,
					.busy_p99_us = rows[i].busy_p99_us, .busy_samples = rows[i].busy_samples };

		if (is_server(c))
			put_steps(c, NULL, &m);
		else if (c->peers[0].fd >= 0 && peer_send(c, &c->peers[0], &m) != 0)
			peer_close(&c->peers[0]);	/* node 0 is gone: its loss is judged elsewhere */
	}
}

/* The peers node 0 waits for at the end: a spare standing by, or a node standing aside, has no
 * workers to end, and hears node 0's bye (tt_ctl_close). */
static int peers_left(const struct tt_ctl *c)
{
	for (uint32_t i = 1; i < c->npeers; i++)
		if (c->peers[i].fd >= 0 && !(c->role && (c->role[i] == TT_CTL_SPARE ||
							 c->role[i] == TT_CTL_ASIDE)))
			return 1;
	return 0;
}

/* Whether a termination signal arrived on sigfd (a late SIGCHLD is none). */
static int stopping(int sigfd)
{
	struct signalfd_siginfo si;

	while (read(sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
		if (tt_signal_is_termination((int)si.ssi_signo))
			return 1;
	return 0;
}

int tt_ctl_drain(struct tt_ctl *c, int sigfd, struct tt_ctl_msg *late)
{
	int nfds = tt_ctl_nfds(c) + 1, failed = 0;
	struct pollfd *p = calloc((size_t)nfds, sizeof(*p));

	if (!is_server(c) || !p)
		goto out;
	c->rounds.max_restarts = c->rounds.round;	/* a fault now: no restart without node 0 */
	c->draining = 1;				/* nor a spare taking a lost node's place */
	while (peers_left(c)) {
		struct tt_ctl_msg v;
		int n;

		p[0] = (struct pollfd){ .fd = sigfd, .events = POLLIN };
		n = 1 + tt_ctl_pollfds(c, p + 1);
		if (poll(p, (nfds_t)n, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents && stopping(sigfd))
			break;
		/* A stop or a loss: for the others (this node is done), and the job's outcome. */
		if (tt_ctl_service(c, &v) == 1 && !failed && (v.kind == TT_CTL_STOP || v.kind == TT_CTL_LOST)) {
			*late = v;
			failed = 1;
		}
	}
out:
	free(p);
	return failed;
}

int tt_ctl_coordinator_done(const struct tt_ctl *c)
{
	return !is_server(c) && !c->rounds.over && c->peers && c->peers[0].fd < 0;
}

void tt_ctl_resumed(struct tt_ctl *c)
{
	long now = tt_now_ms();

	for (uint32_t i = 0; i < c->npeers; i++)
		c->peers[i].last_heard_ms = now;
}

/* After the byes: reads and drops what the peers still send (their pings) until each one closes,
 * TT_CTL_BYE_MS at most. Closing a socket with unread bytes sends a reset, and a reset can reach
 * the peer before it read the bye, which then reads as a lost node (seen in ft.sh's suspend case:
 * node 0 stopped its last worker, "node ft-b lost (its connection failed: Connection reset by
 * peer)"). A peer closes as soon as it reads a bye, so the wait is one round trip. */
static void await_closes(struct tt_ctl *c)
{
	long deadline = tt_now_ms() + TT_CTL_BYE_MS;
	struct pollfd *p = calloc(c->npeers, sizeof(*p));
	char sink[512];

	for (;;) {
		nfds_t n = 0;
		long left = deadline - tt_now_ms();

		for (uint32_t i = 0; p && i < c->npeers; i++)
			if (c->peers[i].fd >= 0)
				p[n++] = (struct pollfd){ .fd = c->peers[i].fd, .events = POLLIN };
		if (!n || left <= 0 || poll(p, n, (int)left) <= 0)
			break;
		for (uint32_t i = 0; i < c->npeers; i++) {
			ssize_t got;

			if (c->peers[i].fd < 0)
				continue;
			while ((got = recv(c->peers[i].fd, sink, sizeof(sink), 0)) > 0)
				;
			if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
				peer_close(&c->peers[i]);	/* closed (or failed): nothing left to wait for */
		}
	}
	free(p);
}

void tt_ctl_close(struct tt_ctl *c)
{
	const struct tt_ctl_msg bye = { .kind = TT_CTL_BYE };

	for (uint32_t i = 0; c->peers && i < c->npeers; i++)
		if (c->peers[i].fd >= 0 && (peer_send(c, &c->peers[i], &bye) != 0 ||
					    shutdown(c->peers[i].fd, SHUT_WR) != 0))
			peer_close(&c->peers[i]);
	if (c->peers)
		await_closes(c);
	probes_close(c);
	for (uint32_t i = 0; c->peers && i < c->npeers; i++) {
		peer_close(&c->peers[i]);
		free(c->peers[i].buf);
	}
	free(c->peers);
	c->peers = NULL;
	free(c->role);
	c->role = NULL;
	free(c->reports);
	c->reports = NULL;
	free(c->reported);
	c->reported = NULL;
	free(c->judged);
	c->judged = NULL;
	free(c->judged_node);
	c->judged_node = NULL;
	c->npeers = 0;
	if (c->timerfd >= 0)
		close(c->timerfd);
	c->timerfd = -1;
	if (c->lfd >= 0)
		close(c->lfd);
	c->lfd = -1;
}

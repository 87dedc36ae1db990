/* SPDX-License-Identifier: MIT */
/* census.c — the one exchange of worker counts between the nodes of a launch (see census.h). */
#include "census.h"
#include "probe.h"
#include "tt_io.h"
#include "tt_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>



/* ---- the bodies ----------------------------------------------------------------------------- */

/* A name or reason as one printable token or line: anything else becomes '?'. */
static void clean(char *s, int spaces)
{
	for (; *s; s++)
		if (*s < 0x21 || *s > 0x7e)
			*s = spaces && *s == ' ' ? ' ' : '?';
}

int tt_census_body(const struct tt_census *c, char *buf, size_t len)
{
	char host[TT_CENSUS_HOST], reason[TT_CENSUS_REASON];
	int n;

	snprintf(host, sizeof(host), "%s", c->host && *c->host ? c->host : "?");
	clean(host, 0);
	if (c->refusal) {
		snprintf(reason, sizeof(reason), "%s", *c->refusal ? c->refusal : "?");
		clean(reason, 1);
		n = snprintf(buf, len, "refuse %" PRIu32 " %" PRIu32 " %s %s", c->nnodes, c->node,
			     host, reason);
	} else {
		n = snprintf(buf, len, "census %" PRIu32 " %" PRIu32 " %" PRIu32 " %s", c->nnodes,
			     c->node, c->count, host);
		if (n >= 0 && (size_t)n < len && c->preflight &&
		    tt_preflight_format(c->preflight, buf + n, len - (size_t)n) != 0)
			return -1;
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* A decimal uint32 ending at a space or the end; p advanced past it and its space. */
static int number(const char **p, uint32_t *v)
{
	size_t len = strcspn(*p, " ");
	long long x;

	if (tt_parse_int_span(*p, len, 0, UINT32_MAX, &x) != 0)
		return -1;
	*v = (uint32_t)x;
	*p += len + ((*p)[len] == ' ');
	return 0;
}

int tt_census_parse(const char *body, struct tt_census_said *s, tt_err *err)
{
	const char *p = body + 7;
	int refuse = strncmp(body, "refuse ", 7) == 0;
	size_t len;

	memset(s, 0, sizeof(*s));
	if (!refuse && strncmp(body, "census ", 7) != 0)
		goto bad;
	if (number(&p, &s->nnodes) != 0 || number(&p, &s->node) != 0 ||
	    (!refuse && number(&p, &s->count) != 0))
		goto bad;
	len = strcspn(p, " ");
	if (len == 0 || len >= sizeof(s->host) || (refuse && (p[len] != ' ' || !p[len + 1])))
		goto bad;
	memcpy(s->host, p, len);
	if (!refuse)	/* the rest: its health check's words (preflight.h) */
		return tt_preflight_parse(p + len, &s->pf, err) != 0 ?
		       tt_err_wrap(err, "node %" PRIu32 " (%s)", s->node, s->host) : 0;
	p += len + 1;
	if (strlen(p) >= sizeof(s->reason))
		goto bad;
	memcpy(s->reason, p, strlen(p) + 1);
	return 0;
bad:
	return tt_err_set(err, "a node's message that is not a worker count or a refusal");
}

int tt_census_accept(const struct tt_census *c, const struct tt_census_said *s, uint32_t *per_node,
		     unsigned char *seen, char (*hosts)[TT_CENSUS_HOST], tt_err *err)
{
	if (s->node == 0 || s->node >= c->nnodes)
		return tt_err_set(err, "%s says it is node %" PRIu32 ", outside 1..%" PRIu32, s->host,
				  s->node, c->nnodes - 1);
	if (seen[s->node])
		return tt_err_set(err, "two train-runs say they are node %" PRIu32 " (%s and %s): more "
				  "than one task of the step on a node?", s->node, hosts[s->node], s->host);
	if (s->reason[0])
		return tt_err_set(err, "node %" PRIu32 " (%s) refused: %s", s->node, s->host, s->reason);
	if (s->nnodes != c->nnodes)
		return tt_err_set(err, "node %" PRIu32 " (%s) counts %" PRIu32 " nodes, node 0 counts %"
				  PRIu32, s->node, s->host, s->nnodes, c->nnodes);
	if (s->count == 0)
		return tt_err_set(err, "node %" PRIu32 " (%s) runs no worker", s->node, s->host);
	seen[s->node] = 1;
	per_node[s->node] = s->count;
	snprintf(hosts[s->node], TT_CENSUS_HOST, "%s", s->host);
	return 0;
}

/* What the judgement found of one node. */
struct judged {
	char why[TT_PF_FAIL + 64];	/* why it failed, "" while it passes */
	unsigned char taken;		/* a passing spare already given a NODE_RANK */
};

/* Sets aside the failing nodes one by one, judging the others again without each, until the
 * rest pass: their indexes in order[] (*nfailed), why in j[]. 0, or -1 when node 0 fails (it is
 * the last in order) or no memory is had (the first found is the last). */
static int set_aside(const struct tt_preflight *pf, uint32_t nnodes, double fraction,
		     struct judged *j, uint32_t *order, uint32_t *nfailed)
{
	struct tt_preflight *rest = malloc(nnodes * sizeof(*rest));
	uint32_t *idx = malloc(nnodes * sizeof(*idx)), n = nnodes, bad;
	char why[sizeof(j->why)];
	int rc = 0;

	*nfailed = 0;
	if (!rest || !idx) {
		rc = -1;
		if (tt_preflight_judge(pf, nnodes, fraction, &bad, why, sizeof(why))) {
			order[(*nfailed)++] = bad;
			snprintf(j[bad].why, sizeof(j[bad].why), "%s", why);
		}
		goto out;
	}
	memcpy(rest, pf, nnodes * sizeof(*rest));
	for (uint32_t k = 0; k < nnodes; k++)
		idx[k] = k;
	while (n > 0 && tt_preflight_judge(rest, n, fraction, &bad, why, sizeof(why))) {
		uint32_t node = idx[bad];

		order[(*nfailed)++] = node;
		snprintf(j[node].why, sizeof(j[node].why), "%s", why);
		if (node == 0) {
			rc = -1;
			break;
		}
		memmove(rest + bad, rest + bad + 1, (n - bad - 1) * sizeof(*rest));
		memmove(idx + bad, idx + bad + 1, (n - bad - 1) * sizeof(*idx));
		n--;
	}
out:
	free(rest);
	free(idx);
	return rc;
}

/* The first passing spare standing by with node's worker count and no NODE_RANK yet, or 0. */
static uint32_t passing_spare(const struct judged *j, const uint32_t *per_node, uint32_t nnodes,
			      uint32_t nspares, uint32_t node)
{
	for (uint32_t k = nnodes - nspares; k < nnodes; k++)
		if (!j[k].why[0] && !j[k].taken && per_node[k] == per_node[node])
			return k;
	return 0;
}

/* The launch's verdict on a failing node: -1. */
static int verdict(tt_err *err, char (*hosts)[TT_CENSUS_HOST], uint32_t node, const char *why)
{
	return tt_err_set(err, "node %" PRIu32 " (%s) failed preflight: %s; resubmit with sbatch "
			  "--exclude=%s", node, hosts[node], why, hosts[node]);
}

int tt_census_preflight(const struct tt_preflight *pf, char (*hosts)[TT_CENSUS_HOST],
			const uint32_t *per_node, uint32_t nnodes, uint32_t nspares, double fraction,
			struct tt_census_swap *swap, tt_err *err)
{
	struct judged *j = calloc(nnodes, sizeof(*j));
	uint32_t *order = calloc(nnodes, sizeof(*order)), nfailed = 0, nswap = 0, bad, named;
	char why[TT_PF_FAIL + 64];
	int rc = 0, stopped;

	if (swap)
		swap[0].node = 0;
	if (!j || !order) {
		/* No memory for the list: the verdict on the first failing node, as without spares. */
		free(j);
		free(order);
		return tt_preflight_judge(pf, nnodes, fraction, &bad, why, sizeof(why)) ?
		       verdict(err, hosts, bad, why) : 0;
	}
	/* Stopped (node 0 failed, the last found; or no memory, one found), or no swap wanted:
	 * the verdict on the last found, or the first. */
	stopped = set_aside(pf, nnodes, fraction, j, order, &nfailed) != 0;
	if (nfailed == 0)
		goto out;
	named = order[stopped ? nfailed - 1 : 0];
	for (uint32_t i = 0; !stopped && swap && i < nfailed; i++) {
		struct tt_census_swap *w = &swap[nswap];
		uint32_t node = order[i], spare = 0;
		int is_spare = node + nspares >= nnodes;

		if (!is_spare && (spare = passing_spare(j, per_node, nnodes, nspares, node)) == 0) {
			named = node;	/* more failing nodes than passing spares that fit */
			goto verdict;
		}
		w->node = node;
		w->spare = spare;
		j[spare].taken = spare != 0;
		snprintf(w->host, sizeof(w->host), "%s", hosts[node]);
		if (is_spare)
			snprintf(w->line, sizeof(w->line), "spare node %" PRIu32 " (%s) failed preflight: "
				 "%.*s; the job goes on with 1 spare fewer", node, hosts[node],
				 TT_CENSUS_REASON - TT_CENSUS_HOST - 96, j[node].why);
		else
			snprintf(w->line, sizeof(w->line), "node %" PRIu32 " (%s) failed preflight: %.*s; "
				 "spare node %" PRIu32 " (%s) takes its node rank %" PRIu32, node,
				 hosts[node], TT_CENSUS_REASON - 2 * TT_CENSUS_HOST - 96, j[node].why,
				 spare, hosts[spare], node);
		swap[++nswap].node = 0;
	}
	if (!stopped && swap)
		goto out;
verdict:
	if (swap)
		swap[0].node = 0;
	rc = verdict(err, hosts, named, j[named].why);
out:
	free(j);
	free(order);
	return rc;
}

int tt_census_answer(const uint32_t *per_node, uint32_t nnodes, uint16_t ctl_port,
		     const struct tt_census_swap *swap, char *buf, size_t len)
{
	char host[TT_CENSUS_HOST], line[TT_CENSUS_REASON];
	size_t used = 0;
	int n = snprintf(buf, len, "ok ");

	if (n < 0 || (size_t)n >= len)
		return -1;
	used = (size_t)n;
	for (uint32_t k = 0; k < nnodes; k++) {
		n = snprintf(buf + used, len - used, "%s%" PRIu32, k ? "," : "", per_node[k]);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	n = ctl_port ? snprintf(buf + used, len - used, " ctl %u", ctl_port) : 0;
	if (n < 0 || (size_t)n >= len - used)
		return -1;
	used += (size_t)n;
	for (; swap && swap->node; swap++) {
		snprintf(host, sizeof(host), "%s", *swap->host ? swap->host : "?");
		snprintf(line, sizeof(line), "%s", *swap->line ? swap->line : "?");
		clean(host, 0);
		clean(line, 1);
		n = snprintf(buf + used, len - used, " swap %" PRIu32 " %" PRIu32 " %s %zu %s",
			     swap->node, swap->spare, host, strlen(line), line);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	return 0;
}

/* Whether node k is named by one of the n swaps already read. */
static int named_before(const struct tt_census_swap *swap, uint32_t n, uint32_t k)
{
	for (uint32_t i = 0; i < n; i++)
		if (swap[i].node == k || swap[i].spare == k)
			return 1;
	return 0;
}

/* " swap NODE SPARE HOST LEN LINE" of an answer (*p at its space) into swap[n], *p past it: 0,
 * or -1. */
static int read_swap(const char **p, uint32_t nnodes, struct tt_census_swap *swap, uint32_t n)
{
	struct tt_census_swap *w = &swap[n];
	const char *q = *p;
	uint32_t len;
	size_t hlen;

	if (n + 1 >= nnodes || strncmp(q, " swap ", 6) != 0)
		return -1;
	q += 6;
	if (number(&q, &w->node) != 0 || number(&q, &w->spare) != 0 || w->node == 0 ||
	    w->node >= nnodes || w->spare >= nnodes || w->node == w->spare ||
	    named_before(swap, n, w->node) || (w->spare && named_before(swap, n, w->spare)))
		return -1;
	hlen = strcspn(q, " ");
	if (hlen == 0 || hlen >= sizeof(w->host) || q[hlen] != ' ')
		return -1;
	memcpy(w->host, q, hlen);
	w->host[hlen] = '\0';
	q += hlen + 1;
	if (number(&q, &len) != 0 || len == 0 || len >= sizeof(w->line) || strnlen(q, len) < len ||
	    (q[len] && q[len] != ' '))
		return -1;
	memcpy(w->line, q, len);
	w->line[len] = '\0';
	*p = q + len;
	return 0;
}

int tt_census_read_answer(const char *line, uint32_t nnodes, uint32_t *per_node,
			  uint16_t *ctl_port, struct tt_census_swap *swap, tt_err *err)
{
	const char *p = line + 3;
	long long port = 0;
	uint32_t nswap = 0;

	swap[0].node = 0;
	if (strncmp(line, "error ", 6) == 0)
		return tt_err_set(err, "%s", line + 6);
	if (strncmp(line, "ok ", 3) != 0)
		goto bad;
	for (uint32_t k = 0; k < nnodes; k++) {
		size_t len = strcspn(p, k + 1 < nnodes ? "," : " ");
		long long v;

		if (tt_parse_int_span(p, len, 1, UINT32_MAX, &v) != 0 ||
		    p[len] != (k + 1 < nnodes ? ',' : p[len] ? ' ' : '\0'))
			goto bad;
		per_node[k] = (uint32_t)v;
		p += len + (k + 1 < nnodes);
	}
	if (strncmp(p, " ctl ", 5) == 0) {
		size_t len = strcspn(p + 5, " ");

		if (tt_parse_int_span(p + 5, len, 1, UINT16_MAX, &port) != 0)
			goto bad;
		p += 5 + len;
	}
	while (*p) {
		if (read_swap(&p, nnodes, swap, nswap) != 0)
			goto bad;
		swap[++nswap].node = 0;
	}
	*ctl_port = (uint16_t)port;
	return 0;
bad:
	swap[0].node = 0;
	return tt_err_set(err, "node 0 answered something that is not a list of %" PRIu32
			  " worker counts", nnodes);
}

/* ---- the exchange --------------------------------------------------------------------------- */

static int left_ms(long deadline)
{
	long left = deadline - tt_now_ms();

	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* Node 0's state: a table of connections (the proven ones hold a node's place, at most one
 * each; the rest are unproven, each with its own deadline) and what every node said. */
struct server {
	const struct tt_census *c;
	struct tt_nc_conn *conns;
	size_t nconns;
	long *node_conn;		/* [nnodes]: index into conns, -1 */
	unsigned char *seen, *told;	/* [nnodes] */
	char (*hosts)[TT_CENSUS_HOST];
	struct tt_preflight *pf;	/* [nnodes]: what each node's health check found */
	struct tt_probe_server *probe;	/* serves the nodes' network probes; NULL: none */
	uint32_t *per_node;
	uint32_t heard;			/* other nodes proven */
	int failed;
	tt_err *err;
};

/* Tells a proven node the launch's failure (err), once. */
static void tell_failure(struct server *sv, uint32_t node)
{
	char msg[sizeof(sv->err->msg) + 8];
	tt_err ignored;
	long k = sv->node_conn[node];

	if (!sv->failed || k < 0 || sv->told[node])
		return;
	sv->told[node] = 1;
	snprintf(msg, sizeof(msg), "error %s", sv->err->msg);
	(void)tt_nc_conn_send(&sv->conns[k], sv->c->key, sv->c->id, msg, &ignored);
}

/* The launch fails with why: every node heard from so far is told, every later one on arrival. */
static void fail_launch(struct server *sv, const char *why)
{
	if (sv->failed)
		return;
	sv->failed = 1;
	tt_err_set(sv->err, "%s", why);
	for (uint32_t n = 1; n < sv->c->nnodes; n++)
		tell_failure(sv, n);
}

/* A proven connection k said body. */
static void heard(struct server *sv, size_t k, const char *body)
{
	struct tt_census_said s;
	char msg[sizeof(sv->err->msg) + 8];
	tt_err why, ignored;
	int parsed;

	if (tt_probe_is_request(body)) {
		/* Not a node's message: measured by the probe thread, or told there is none. */
		if (sv->probe && !sv->failed) {
			tt_probe_server_take(sv->probe, &sv->conns[k]);
			return;
		}
		(void)tt_nc_conn_send(&sv->conns[k], sv->c->key, sv->c->id, "error node 0 serves no "
				      "network probe (--preflight=off there, or the launch failed)",
				      &ignored);
		tt_nc_conn_close(&sv->conns[k]);
		return;
	}
	parsed = tt_census_parse(body, &s, &why) == 0;
	if (parsed && tt_census_accept(sv->c, &s, sv->per_node, sv->seen, sv->hosts, &why) == 0) {
		sv->node_conn[s.node] = (long)k;
		sv->pf[s.node] = s.pf;
		sv->heard++;
		tell_failure(sv, s.node);	/* nothing unless the launch failed already */
		return;
	}
	if (parsed && s.node > 0 && s.node < sv->c->nnodes && !sv->seen[s.node]) {
		/* A refusal or a disagreement: the node keeps its place, so that it is told
		 * with the others why the launch fails. */
		sv->seen[s.node] = 1;
		snprintf(sv->hosts[s.node], TT_CENSUS_HOST, "%s", s.host);
		sv->node_conn[s.node] = (long)k;
		sv->heard++;
		fail_launch(sv, why.msg);
		tell_failure(sv, s.node);
		return;
	}
	/* Holds the key but has no place of its own (not a census message, no such node, or a
	 * second train-run for a node already here): answered, closed, and the launch fails,
	 * since only a misconfigured launch has such a node. */
	snprintf(msg, sizeof(msg), "error %s", why.msg);
	(void)tt_nc_conn_send(&sv->conns[k], sv->c->key, sv->c->id, msg, &ignored);
	tt_nc_conn_close(&sv->conns[k]);
	fail_launch(sv, why.msg);
}

/* The waiting line: who is missing, where, how long until the timeout. */
static void waiting_line(struct server *sv, long deadline)
{
	char line[512];
	size_t used;
	uint32_t listed = 0;

	used = (size_t)snprintf(line, sizeof(line), "node 0 (%s) waiting on port %u for %" PRIu32
				" of %" PRIu32 " nodes:", sv->c->host ? sv->c->host : "?", sv->c->port,
				sv->c->nnodes - 1 - sv->heard, sv->c->nnodes);
	for (uint32_t n = 1; n < sv->c->nnodes && used < sizeof(line) - 64; n++)
		if (!sv->seen[n])
			used += (size_t)snprintf(line + used, sizeof(line) - used, "%s %" PRIu32,
						 listed++ ? "," : " node", n);
	if (used >= sizeof(line) - 64)
		used += (size_t)snprintf(line + used, sizeof(line) - used, ", ...");
	snprintf(line + used, sizeof(line) - used, "; giving up in %d s", left_ms(deadline) / 1000);
	sv->c->notice(sv->c->arg, line);
}

/* Node 0: hears every other node, answers them all, waits for them to close. */
static int serve(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	uint32_t npeers = c->nnodes - 1;
	struct server sv = { .c = c, .per_node = per_node, .err = err };
	struct pollfd *pfd = NULL;
	long deadline = tt_now_ms() + c->timeout_s * 1000L;
	long notice = c->notice_s > 0 && c->notice ? tt_now_ms() + c->notice_s * 1000L : 0;
	char *answer = malloc(TT_NC_BODY_MAX + 1);
	int lfd = -1, rc = -1;
	size_t i;

	err->msg[0] = '\0';
	sv.nconns = (size_t)npeers + 32;
	sv.conns = calloc(sv.nconns, sizeof(*sv.conns));
	sv.node_conn = calloc(c->nnodes, sizeof(*sv.node_conn));
	sv.seen = calloc(c->nnodes, 1);
	sv.told = calloc(c->nnodes, 1);
	sv.hosts = calloc(c->nnodes, sizeof(*sv.hosts));
	sv.pf = calloc(c->nnodes, sizeof(*sv.pf));
	pfd = calloc(sv.nconns + 1, sizeof(*pfd));
	if (!sv.conns || !sv.node_conn || !sv.seen || !sv.told || !sv.hosts || !sv.pf || !pfd ||
	    !answer) {
		tt_err_set(err, "node count exchange: out of memory for %" PRIu32 " nodes", c->nnodes);
		goto out;
	}
	for (i = 0; i < sv.nconns; i++)
		sv.conns[i].fd = -1;
	for (i = 0; i < c->nnodes; i++)
		sv.node_conn[i] = -1;
	lfd = tt_nc_listen(c->port, (int)(npeers < 4096 ? npeers + 32 : 4096),
			   "node count exchange (MASTER_PORT)", err);
	if (lfd < 0)
		goto out;
	per_node[0] = c->count;
	sv.seen[0] = 1;
	snprintf(sv.hosts[0], TT_CENSUS_HOST, "%s", c->host && *c->host ? c->host : "?");
	if (c->preflight) {
		/* Without its thread (no memory) the probes are answered that there is none. */
		tt_err why;

		sv.probe = tt_probe_server_start(c->key, c->id, &why);
		sv.pf[0] = *c->preflight;
	}
	if (c->refusal) {
		char why[TT_CENSUS_REASON + TT_CENSUS_HOST + 32];

		snprintf(why, sizeof(why), "node 0 (%s) refused: %s", c->host ? c->host : "?",
			 c->refusal);
		fail_launch(&sv, why);
	}
	/* Until every node has been heard from (and, after a failure, told), or the deadline. */
	while (sv.heard < npeers) {
		long now = tt_now_ms(), wake = deadline;
		size_t n = 0;
		int ready;

		if (now >= deadline) {
			char why[sizeof(err->msg)];

			snprintf(why, sizeof(why), "node count exchange: heard from %" PRIu32 " of the %"
				 PRIu32 " other nodes within %d s: did train-run start on every node "
				 "of the step?", sv.heard, npeers, c->timeout_s);
			fail_launch(&sv, why);
			break;
		}
		if (notice && now >= notice) {
			waiting_line(&sv, deadline);
			notice = now + c->notice_s * 1000L;
		}
		if (notice && notice < wake)
			wake = notice;
		if (c->stop && wake > now + 200)
			wake = now + 200;	/* to look at the pending signals */
		pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < sv.nconns; i++) {
			if (sv.conns[i].fd < 0)
				continue;
			if (sv.conns[i].state != TT_NC_PROVEN && sv.conns[i].deadline < wake)
				wake = sv.conns[i].deadline;
			pfd[n++] = (struct pollfd){ .fd = sv.conns[i].fd, .events = POLLIN };
		}
		ready = poll(pfd, n, left_ms(wake));
		if (ready < 0 && errno != EINTR) {
			tt_err_errno(err, "node count exchange: poll");
			goto out;
		}
		if (tt_nc_stopped(c->stop)) {
			fail_launch(&sv, "node count exchange: stopped by a signal while waiting for the "
				    "other nodes");
			break;
		}
		if (ready > 0 && pfd[0].revents) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
			struct tt_nc_conn *k = fd >= 0 ? tt_nc_free_slot(sv.conns, sv.nconns) : NULL;
			tt_err why;

			if (fd >= 0 && (!k || tt_nc_conn_open(k, fd, &why) != 0))
				close(fd);
		}
		for (i = 0; i < sv.nconns; i++) {
			struct tt_nc_conn *k = &sv.conns[i];
			tt_err why;
			int got;

			if (k->fd < 0)
				continue;
			if (k->state != TT_NC_PROVEN && tt_now_ms() >= k->deadline) {
				tt_nc_conn_close(k);	/* idle or slow: a stranger */
				continue;
			}
			got = tt_nc_conn_read(k, c->key, c->id, &why);
			if (got == 1) {
				heard(&sv, i, k->body);
			} else if (got < 0 && k->state == TT_NC_PROVEN) {
				/* A node that leaves before the answer: it will not start, and
				 * neither must the others. */
				uint32_t node = 0;
				char msg[sizeof(err->msg)];

				for (uint32_t m = 1; m < c->nnodes; m++)
					if (sv.node_conn[m] == (long)i)
						node = m;
				sv.told[node] = 1;
				snprintf(msg, sizeof(msg), "node %" PRIu32 " (%s) left the node count "
					 "exchange before it completed (%.400s): its train-run died or was "
					 "killed", node, sv.hosts[node], why.msg);
				tt_nc_conn_close(k);
				sv.node_conn[node] = -1;
				fail_launch(&sv, msg);
			} else if (got < 0) {
				tt_nc_conn_close(k);	/* a stranger: no place, no effect */
			}
		}
	}
	/* Every node has been heard: stop listening before anyone is answered. An answered node
	 * starts its workers at once, and a worker's store client dialling MASTER_PORT while this
	 * socket still listened would land in its queue and be reset when it closes: a fatal
	 * "closed the connection without answering the hello". Refused, it retries until rank 0's
	 * store listens. */
	close(lfd);
	lfd = -1;
	for (i = 0; i < sv.nconns; i++)
		if (sv.conns[i].fd >= 0 && sv.conns[i].state != TT_NC_PROVEN)
			tt_nc_conn_close(&sv.conns[i]);
	/* Every node has been heard: its health too is judged before any starts. */
	if (!sv.failed && c->preflight) {
		tt_err why;

		if (tt_census_preflight(sv.pf, sv.hosts, per_node, c->nnodes, c->nspares,
					c->min_fraction, c->swap, &why) != 0)
			fail_launch(&sv, why.msg);
	}
	if (!sv.failed && tt_census_answer(per_node, c->nnodes, c->ctl_port ? *c->ctl_port : 0,
					   c->swap, answer, TT_NC_BODY_MAX + 1) != 0)
		fail_launch(&sv, "node count exchange: the nodes' counts do not fit in one line");
	for (uint32_t m = 1; !sv.failed && m < c->nnodes; m++) {
		tt_err why;

		if (tt_nc_conn_send(&sv.conns[sv.node_conn[m]], c->key, c->id, answer, &why) != 0) {
			char msg[sizeof(err->msg)];

			snprintf(msg, sizeof(msg), "node %" PRIu32 " (%s) left the node count exchange "
				 "before the answer (%.400s)", m, sv.hosts[m], why.msg);
			fail_launch(&sv, msg);
		}
	}
	/* The clients close first: wait for their end of file (bounded), then close ours. */
	deadline = tt_now_ms() + 10000;
	for (i = 0; i < sv.nconns; i++) {
		struct pollfd p = { .fd = sv.conns[i].fd, .events = POLLIN };
		char sink[64];

		while (sv.conns[i].fd >= 0 && poll(&p, 1, left_ms(deadline)) > 0 &&
		       recv(sv.conns[i].fd, sink, sizeof(sink), 0) > 0)
			;
	}
	rc = sv.failed ? -1 : 0;
out:
	tt_probe_server_stop(sv.probe);
	if (lfd >= 0)
		close(lfd);
	for (i = 0; sv.conns && i < sv.nconns; i++) {
		tt_nc_conn_close(&sv.conns[i]);
		free(sv.conns[i].buf);
	}
	free(sv.conns);
	free(sv.node_conn);
	free(sv.seen);
	free(sv.told);
	free(sv.hosts);
	free(sv.pf);
	free(pfd);
	free(answer);
	return rc;
}

static void client_waiting(void *arg, long seconds_left)
{
	const struct tt_census *c = arg;
	char line[512];

	snprintf(line, sizeof(line), "node %" PRIu32 " (%s) waiting for node 0 at %s port %u; "
		 "giving up in %ld s", c->node, c->host ? c->host : "?", c->server, c->port,
		 seconds_left);
	c->notice(c->arg, line);
}

/* Other nodes: say this node's count or refusal to node 0 (retrying while it is not listening
 * yet), read the answer. */
static int ask(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	long deadline = tt_now_ms() + c->timeout_s * 1000L;
	struct tt_nc_client cl = { .fd = -1, .stop = c->stop };
	struct tt_census_swap *swap = c->swap ? c->swap : calloc(c->nnodes, sizeof(*swap));
	char *body = malloc(TT_NC_BODY_MAX + 1);
	uint16_t port = 0;
	tt_err why;
	int rc = -1;

	if (!body || !swap) {
		free(body);
		if (swap != c->swap)
			free(swap);
		return tt_err_set(err, "node count exchange: out of memory");
	}
	if (c->preflight && !c->refusal) {
		struct tt_probe_result r;

		if (tt_probe_run(c->server, c->port, c->key, c->id, c->node, c->stop, deadline, &r,
				 &why) == 0) {
			c->preflight->net_mbps = r.net_mbps;
			c->preflight->rtt_us = r.rtt_us;
		} else if (c->notice) {
			char line[sizeof(why.msg) + 64];

			snprintf(line, sizeof(line), "%s; the network of this node is not judged",
				 why.msg);
			c->notice(c->arg, line);
		}
	}
	if (tt_census_body(c, body, TT_NC_BODY_MAX + 1) != 0) {
		tt_err_set(err, "node count exchange: this node's message does not fit");
		goto out;
	}
	if (tt_nc_client_say(&cl, c->server, c->port, c->key, c->id, body, deadline,
			     c->notice ? c->notice_s * 1000L : 0, client_waiting, (void *)c, &why) != 0) {
		tt_err_set(err, "node count exchange: %s; did train-run start there, with this job's "
			   "key?", why.msg);
		goto out;
	}
	if (tt_nc_client_hear(&cl, c->key, c->id, body, deadline, &why) != 0) {
		tt_err_set(err, "node count exchange: node 0 (%s port %u) gave no answer (%s): did it "
			   "fail, or does it hold another job key (TRAINRT_TOKEN)?", c->server,
			   c->port, why.msg);
		goto out;
	}
	rc = tt_census_read_answer(body, c->nnodes, per_node, &port, swap, err);
	if (rc == 0 && c->ctl_port)
		*c->ctl_port = port;
	if (rc == 0 && c->refusal)
		rc = tt_err_set(err, "node 0 answered a refusing node with every node's count");
out:
	tt_nc_client_close(&cl);
	free(body);
	if (swap != c->swap)
		free(swap);
	return rc;
}

int tt_census_run(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	if (c->swap)
		c->swap[0].node = 0;
	if (c->nnodes <= 1) {
		per_node[0] = c->count;
		return c->refusal ? tt_err_set(err, "%s", c->refusal) : 0;
	}
	return c->node == 0 ? serve(c, per_node, err) : ask(c, per_node, err);
}

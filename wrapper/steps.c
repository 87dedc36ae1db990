/* SPDX-License-Identifier: MIT */
/* steps.c — the job-wide straggler report and its JSON (see steps.h). */
#include "steps.h"
#include "heartbeat.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* items (room for *cap of size bytes, n used) with room for one more: items itself, or moved
 * (*cap then doubled, or first when there was none). NULL when out of memory (items stays). */
static void *grow(void *items, int *cap, int n, size_t size, int first)
{
	int more = *cap ? 2 * *cap : first;
	void *p;

	if (n < *cap)
		return items;
	p = realloc(items, (size_t)more * size);
	if (p)
		*cap = more;
	return p;
}

int tt_steps_put(struct tt_steps *t, const struct tt_step_row *row)
{
	struct tt_step_row *r;
	int i = 0;

	while (i < t->n && (t->rows[i].node < row->node ||
			    (t->rows[i].node == row->node && t->rows[i].rank < row->rank)))
		i++;
	if (i < t->n && t->rows[i].node == row->node && t->rows[i].rank == row->rank) {
		t->rows[i] = *row;
		return 0;
	}
	r = grow(t->rows, &t->cap, t->n, sizeof(*t->rows), 16);
	if (!r)
		return -1;
	t->rows = r;
	memmove(&t->rows[i + 1], &t->rows[i], (size_t)(t->n - i) * sizeof(*t->rows));
	t->rows[i] = *row;
	t->n++;
	return 0;
}

void tt_steps_free(struct tt_steps *t)
{
	free(t->rows);
	*t = (struct tt_steps){ 0 };
}

void tt_steps_forget(struct tt_steps *t, uint32_t node, int32_t first, int32_t gone)
{
	int i, k = 0;

	for (i = 0; i < t->n; i++) {
		struct tt_step_row r = t->rows[i];

		if (r.node == node)
			continue;
		if (gone > 0 && r.rank >= first + gone)
			r.rank -= gone;	/* a node's ranks move together: the order stays */
		t->rows[k++] = r;
	}
	t->n = k;
}

int tt_faults_add(struct tt_faults *l, const struct tt_fault *f)
{
	struct tt_fault *g = grow(l->f, &l->cap, l->n, sizeof(*l->f), 8);

	if (!g)
		return -1;
	l->f = g;
	l->f[l->n++] = *f;
	return 0;
}

void tt_faults_free(struct tt_faults *l)
{
	free(l->f);
	*l = (struct tt_faults){ 0 };
}

enum tt_fault_kind tt_fault_kind_of(const char *what)
{
	return strncmp(what, TT_FAULT_HANG_WHAT, strlen(TT_FAULT_HANG_WHAT)) == 0 ? TT_FAULT_HANG :
										  TT_FAULT_CRASH;
}

/* The medians of t: of every rank's p50 (-1: no rank has samples; 0 stragglers judged with
 * fewer than two), each node's in node_med[] (nodes[] its node numbers, *nnodes of them) and
 * of those (-1 with fewer than two nodes); of the busy times' p50s when busy (every rank with
 * samples has them). */
struct medians {
	int64_t ranks, nodes;
	int nranks, nnodes, busy;
	uint32_t *node;
	int64_t *node_med;
	const char **node_host;
};

/* The p50 row r is judged by. */
static int64_t judged(const struct tt_step_row *r, int busy)
{
	return busy ? r->busy_p50_us : r->p50_us;
}

static int medians(const struct tt_steps *t, struct medians *m)
{
	size_t n = (size_t)t->n + 1;
	int64_t *v = calloc(n, sizeof(*v)), *tmp = calloc(n, sizeof(*tmp));
	int i, rc = -1;

	*m = (struct medians){ .ranks = -1, .nodes = -1, .busy = 1 };	/* busy until a rank has none */
	m->node = calloc(n, sizeof(*m->node));
	m->node_med = calloc(n, sizeof(*m->node_med));
	m->node_host = calloc(n, sizeof(*m->node_host));
	if (!v || !tmp || !m->node || !m->node_med || !m->node_host)
		goto out;
	for (i = 0; i < t->n; i++)
		if (t->rows[i].samples) {
			m->busy &= t->rows[i].busy_samples > 0;
			m->nranks++;
		}
	m->busy &= m->nranks > 0;
	for (i = m->nranks = 0; i < t->n; i++)
		if (t->rows[i].samples)
			v[m->nranks++] = judged(&t->rows[i], m->busy);
	if (m->nranks)
		m->ranks = tt_hb_percentile(v, m->nranks, 50.0, tmp);
	/* The rows are sorted by node: each node's run of rows. */
	for (i = 0; i < t->n;) {
		int k = 0, j = i;

		for (; j < t->n && t->rows[j].node == t->rows[i].node; j++)
			if (t->rows[j].samples)
				v[k++] = judged(&t->rows[j], m->busy);
		if (k) {
			m->node[m->nnodes] = t->rows[i].node;
			m->node_host[m->nnodes] = t->rows[i].host;
			m->node_med[m->nnodes++] = tt_hb_percentile(v, k, 50.0, tmp);
		}
		i = j;
	}
	if (m->nnodes >= 2)
		m->nodes = tt_hb_percentile(m->node_med, m->nnodes, 50.0, tmp);
	rc = 0;
out:
	free(v);
	free(tmp);
	return rc;
}

static void medians_free(struct medians *m)
{
	free(m->node);
	free(m->node_med);
	free(m->node_host);
}

static int slow(int64_t v, int64_t median, int among, double factor)
{
	return among >= 2 && median >= 0 && (double)v > factor * (double)median;
}

static double ratio(int64_t v, int64_t median)
{
	return median > 0 ? (double)v / (double)median : 0.0;
}

int tt_steps_report(const struct tt_steps *t, double factor, int summary, char *out, size_t len)
{
	struct medians m;
	size_t used = 0;
	int i, found = 0;
	char x[32], y[32], z[32];
	const char *what;

	if (len)
		out[0] = '\0';
	if (medians(t, &m) != 0 || m.nranks == 0)
		goto out;
	what = m.busy ? "busy p50" : "p50";
	if (summary)
		tt_hb_put(out, len, &used, "train-run: job: %s times of %d ranks on %d nodes: median %s %s\n",
			  m.busy ? "busy" : "step", m.nranks, m.nnodes, what, tt_hb_ms(m.ranks, x, sizeof(x)));
	for (i = 0; i < t->n; i++) {
		const struct tt_step_row *r = &t->rows[i];

		if (!r->samples || !slow(judged(r, m.busy), m.ranks, m.nranks, factor))
			continue;
		tt_hb_put(out, len, &used, "train-run: job: straggler: rank %" PRId32 " on host %s (node %" PRIu32
			  ") %s %s p99 %s is %.1fx the job's median %s\n", r->rank, r->host, r->node, what,
			  tt_hb_ms(judged(r, m.busy), x, sizeof(x)),
			  tt_hb_ms(m.busy ? r->busy_p99_us : r->p99_us, y, sizeof(y)),
			  ratio(judged(r, m.busy), m.ranks), tt_hb_ms(m.ranks, z, sizeof(z)));
		found++;
	}
	for (i = 0; i < m.nnodes; i++) {
		if (!slow(m.node_med[i], m.nodes, m.nnodes, factor))
			continue;
		tt_hb_put(out, len, &used, "train-run: job: straggler node %" PRIu32 " (host %s): median %s %s is "
			  "%.1fx the median of nodes %s\n", m.node[i], m.node_host[i], what,
			  tt_hb_ms(m.node_med[i], x, sizeof(x)), ratio(m.node_med[i], m.nodes),
			  tt_hb_ms(m.nodes, y, sizeof(y)));
		found++;
	}
out:
	medians_free(&m);
	return found;
}

/* s as a JSON string (quotes, backslashes, control bytes and bytes outside ASCII escaped: the
 * file is valid UTF-8 whatever a host or WHAT holds). */
static void json_string(char *out, size_t len, size_t *used, const char *s)
{
	tt_hb_put(out, len, used, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			tt_hb_put(out, len, used, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			tt_hb_put(out, len, used, "\\u%04x", c);
		else
			tt_hb_put(out, len, used, "%c", c);
	}
	tt_hb_put(out, len, used, "\"");
}

static const char *const fault_kinds[] = {
	[TT_FAULT_CRASH] = "crash", [TT_FAULT_HANG] = "hang", [TT_FAULT_LOST] = "lost",
	[TT_FAULT_PREFLIGHT] = "preflight",
};
static const char *const fault_actions[] = {
	[TT_FAULT_RESTART] = "restart", [TT_FAULT_REPLACE] = "replace", [TT_FAULT_SHRINK] = "shrink",
	[TT_FAULT_STOP] = "stop", [TT_FAULT_CONTINUE] = "continue",
};

/* One fault's JSON object. */
static void fault_json(char *out, size_t len, size_t *used, const struct tt_fault *f)
{
	tt_hb_put(out, len, used, "{\"round\":%" PRIu32 ",\"kind\":\"%s\",\"rank\":", f->round,
		  fault_kinds[f->kind]);
	if (f->rank >= 0)
		tt_hb_put(out, len, used, "%" PRId32, f->rank);
	else
		tt_hb_put(out, len, used, "null");
	tt_hb_put(out, len, used, ",\"node\":%" PRIu32 ",\"host\":", f->node);
	json_string(out, len, used, f->host);
	tt_hb_put(out, len, used, ",\"action\":\"%s\"", fault_actions[f->action]);
	if (f->action == TT_FAULT_REPLACE || f->action == TT_FAULT_SHRINK)
		tt_hb_put(out, len, used, ",\"node_rank\":%" PRIu32, f->node_rank);
	if (f->action == TT_FAULT_REPLACE) {
		tt_hb_put(out, len, used, ",\"spare_node\":%" PRIu32 ",\"spare_host\":", f->spare);
		json_string(out, len, used, f->spare_host);
	}
	if (f->action == TT_FAULT_SHRINK)
		tt_hb_put(out, len, used, ",\"nnodes\":%" PRIu32, f->nnodes);
	if (f->detect_ms >= 0)
		tt_hb_put(out, len, used, ",\"detect_s\":%.3f", (double)f->detect_ms / 1e3);
	tt_hb_put(out, len, used, ",\"what\":");
	json_string(out, len, used, f->what);
	tt_hb_put(out, len, used, "}");
}

int tt_steps_json(const struct tt_steps *t, const struct tt_faults *faults, double factor,
		  int restarts, char *out, size_t len)
{
	struct medians m;
	size_t used = 0;
	int i, first = 1, rc = -1;

	if (len)
		out[0] = '\0';
	if (medians(t, &m) != 0)
		goto out;
	tt_hb_put(out, len, &used, "{\"factor\":%g,\"restarts\":%d,\"judged\":\"%s\",\"median_p50_ms\":", factor,
		  restarts, m.busy ? "busy" : "step");
	if (m.nranks)
		tt_hb_put(out, len, &used, "%.3f", (double)m.ranks / 1e3);
	else
		tt_hb_put(out, len, &used, "null");
	tt_hb_put(out, len, &used, ",\"ranks\":[");
	for (i = 0; i < t->n; i++) {
		const struct tt_step_row *r = &t->rows[i];

		if (!r->samples)
			continue;
		tt_hb_put(out, len, &used, "%s{\"host\":", first ? "" : ",");
		json_string(out, len, &used, r->host);
		tt_hb_put(out, len, &used, ",\"node\":%" PRIu32 ",\"rank\":%" PRId32 ",\"p50_ms\":%.3f,"
			  "\"p99_ms\":%.3f,\"samples\":%" PRIu64, r->node, r->rank,
			  (double)r->p50_us / 1e3, (double)r->p99_us / 1e3, r->samples);
		if (r->busy_samples)
			tt_hb_put(out, len, &used, ",\"busy_p50_ms\":%.3f,\"busy_p99_ms\":%.3f,\"busy_samples\":%" PRIu64,
				  (double)r->busy_p50_us / 1e3, (double)r->busy_p99_us / 1e3, r->busy_samples);
		tt_hb_put(out, len, &used, "}");
		first = 0;
	}
	tt_hb_put(out, len, &used, "],\"stragglers\":{\"ranks\":[");
	first = 1;
	for (i = 0; i < t->n; i++)
		if (t->rows[i].samples && slow(judged(&t->rows[i], m.busy), m.ranks, m.nranks, factor)) {
			tt_hb_put(out, len, &used, "%s%" PRId32, first ? "" : ",", t->rows[i].rank);
			first = 0;
		}
	tt_hb_put(out, len, &used, "],\"nodes\":[");
	first = 1;
	for (i = 0; i < m.nnodes; i++)
		if (slow(m.node_med[i], m.nodes, m.nnodes, factor)) {
			tt_hb_put(out, len, &used, "%s%" PRIu32, first ? "" : ",", m.node[i]);
			first = 0;
		}
	tt_hb_put(out, len, &used, "]},\"faults\":[");
	for (i = 0; faults && i < faults->n; i++) {
		tt_hb_put(out, len, &used, "%s", i ? "," : "");
		fault_json(out, len, &used, &faults->f[i]);
	}
	tt_hb_put(out, len, &used, "]}\n");
	rc = used < len ? 0 : -1;
out:
	medians_free(&m);
	return rc;
}

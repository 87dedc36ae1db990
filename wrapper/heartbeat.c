/* SPDX-License-Identifier: MIT */
/* heartbeat.c — progress heartbeats, hang and straggler rules (see heartbeat.h). */
#include "heartbeat.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tt_parse.h"

/* The longest timeout --hang-timeout takes: a week, far beyond any step. */
#define MAX_TIMEOUT_S 604800.0
/* The timeout is recalculated every this many new samples (a sort of the window each time). */
#define RECALC_EVERY 16
/* The largest busy time per step a step line may carry: an hour. */
#define MAX_BUSY_US 3600000000LL

static int valid_name(const char *s, size_t len)
{
	size_t k;

	if (len == 0 || len >= TT_HB_NAME_MAX)
		return 0;
	for (k = 0; k < len; k++)
		if (!((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= 'A' && s[k] <= 'Z') ||
		      (s[k] >= '0' && s[k] <= '9') || s[k] == '_' || s[k] == '.' || s[k] == '-'))
			return 0;
	return 1;
}

static int parse_seconds(const char *s, int64_t *us)
{
	char *end;
	double v;

	if (!*s || *s == ' ')
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > MAX_TIMEOUT_S)
		return -1;
	*us = (int64_t)(v * 1e6 + 0.5);
	return *us > 0 ? 0 : -1;
}

int tt_hb_config_add(struct tt_hb_config *cfg, const char *arg, tt_err *err)
{
	const char *eq = strchr(arg, '=');
	int64_t us;
	int k;

	if (!strcmp(arg, "off")) {
		cfg->off = 1;
		return 0;
	}
	if (!eq) {
		if (parse_seconds(arg, &us) != 0)
			goto bad;
		cfg->fixed_us = us;
		return 0;
	}
	if (!valid_name(arg, (size_t)(eq - arg)) || parse_seconds(eq + 1, &us) != 0)
		goto bad;
	for (k = 0; k < cfg->nsections; k++)
		if (strlen(cfg->sections[k].name) == (size_t)(eq - arg) &&
		    !strncmp(cfg->sections[k].name, arg, (size_t)(eq - arg))) {
			cfg->sections[k].timeout_us = us;
			return 0;
		}
	if (cfg->nsections == TT_HB_SECTIONS_MAX)
		return tt_err_set(err, "--hang-timeout %s: at most %d sections get their own timeout",
				  arg, TT_HB_SECTIONS_MAX);
	snprintf(cfg->sections[cfg->nsections].name, TT_HB_NAME_MAX, "%.*s", (int)(eq - arg), arg);
	cfg->sections[cfg->nsections++].timeout_us = us;
	return 0;
bad:
	return tt_err_set(err, "--hang-timeout '%s': expected off, SECONDS or SECTION=SECONDS (a number "
			  "above 0 up to %.0f; SECTION of letters, digits, _ . -, at most %d characters)",
			  arg, MAX_TIMEOUT_S, TT_HB_NAME_MAX - 1);
}

int tt_hb_init(struct tt_hb *hb, int nworkers, const struct tt_hb_config *cfg, tt_err *err)
{
	int i;

	memset(hb, 0, sizeof(*hb));
	if (cfg)
		hb->cfg = *cfg;
	hb->w = calloc((size_t)nworkers, sizeof(*hb->w));
	if (!hb->w)
		return tt_err_errno(err, "allocating the heartbeat state of %d workers", nworkers);
	hb->n = nworkers;
	for (i = 0; i < nworkers; i++) {
		hb->w[i].gap_us = calloc(3 * TT_HB_WINDOW, sizeof(int64_t));
		if (!hb->w[i].gap_us) {
			tt_hb_free(hb);
			return tt_err_errno(err, "allocating the step times of %d workers", nworkers);
		}
		hb->w[i].step_us = hb->w[i].gap_us + TT_HB_WINDOW;
		hb->w[i].busy_us = hb->w[i].gap_us + 2 * TT_HB_WINDOW;
	}
	return 0;
}

void tt_hb_free(struct tt_hb *hb)
{
	int i;

	for (i = 0; hb->w && i < hb->n; i++)
		free(hb->w[i].gap_us);
	free(hb->w);
	hb->w = NULL;
	hb->n = 0;
}

void tt_hb_round_begin(struct tt_hb *hb)
{
	int i;

	for (i = 0; i < hb->n; i++) {
		struct tt_hb_worker *w = &hb->w[i];

		w->active = w->prev_step = w->steps_round = 0;
		w->section[0] = '\0';
		w->len = 0;
		w->overlong = 0;
	}
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

int64_t tt_hb_percentile(const int64_t *v, int n, double p, int64_t *tmp)
{
	double x = p / 100.0 * n;
	int k = (int)x;

	memcpy(tmp, v, (size_t)n * sizeof(*v));
	qsort(tmp, (size_t)n, sizeof(*tmp), cmp_i64);
	k = (k < x ? k + 1 : k) - 1;	/* ceil(x) - 1 */
	if (k < 0)
		k = 0;
	if (k >= n)
		k = n - 1;
	return tmp[k];
}

static void recalc_timeout(struct tt_hb_worker *w)
{
	int64_t tmp[TT_HB_WINDOW];
	int64_t t = (int64_t)(TT_HB_FACTOR * (double)tt_hb_percentile(w->gap_us, w->nsamples, 99.0, tmp) + 0.5);

	w->calc_timeout_us = t > TT_HB_FLOOR_US ? t : TT_HB_FLOOR_US;
}

static void add_sample(struct tt_hb_worker *w, int64_t gap, long long steps)
{
	w->gap_us[w->head] = gap;
	w->step_us[w->head] = gap / (steps > 0 ? steps : 1);
	w->head = (w->head + 1) % TT_HB_WINDOW;
	if (w->nsamples < TT_HB_WINDOW)
		w->nsamples++;
	w->total_samples++;
	if (w->nsamples >= TT_HB_MIN_SAMPLES &&
	    (w->calc_timeout_us == 0 || w->total_samples % RECALC_EVERY == 0))
		recalc_timeout(w);
}

/* The worker leaves its current section at now_us: a section other than step that it entered
 * with no stop since is observed as finished, its longest time kept. */
static void leave_section(struct tt_hb_worker *w, int64_t now_us)
{
	int64_t took = now_us - w->section_us;
	int k;

	if (!w->active || !w->section_observed || !w->section[0] || !strcmp(w->section, "step"))
		return;
	for (k = 0; k < w->nfinished && strcmp(w->finished[k].name, w->section); k++)
		;
	if (k == w->nfinished) {
		if (k == TT_HB_SECTIONS_MAX)
			return;
		snprintf(w->finished[k].name, TT_HB_NAME_MAX, "%s", w->section);
		w->finished[k].timeout_us = 0;
		w->nfinished++;
	}
	if (took > w->finished[k].timeout_us)
		w->finished[k].timeout_us = took;
}

/* "N" or "N busy US" of a step line (len bytes): the step and the busy time (-1: none). */
static int parse_step(const char *s, size_t len, long long *step, long long *busy)
{
	const char *sp = memchr(s, ' ', len);
	size_t n = sp ? (size_t)(sp - s) : len;

	*busy = -1;
	if (tt_parse_int_span(s, n, -(1LL << 62), 1LL << 62, step) != 0)
		return -1;
	if (!sp)
		return 0;
	if (len - n <= 6 || memcmp(sp, " busy ", 6) ||
	    tt_parse_int_span(sp + 6, len - n - 6, 0, MAX_BUSY_US, busy) != 0)
		return -1;
	return 0;
}

int tt_hb_line(struct tt_hb *hb, int i, const char *line, size_t len, int64_t now_us)
{
	struct tt_hb_worker *w = &hb->w[i];
	long long step, busy;

	if (len > 5 && !memcmp(line, "step ", 5)) {
		if (parse_step(line + 5, len - 5, &step, &busy) != 0)
			return -1;
		/* A step line right after a step line closes an interval; the warm-up's are not
		 * observed, and neither is one that spans a section (a checkpoint, an eval). */
		if (w->active && w->prev_step && w->steps_round >= TT_HB_WARMUP)
			add_sample(w, now_us - w->last_us, step - w->last_step);
		/* A busy time is the worker's own measure: only the warm-up's are left out. */
		if (busy >= 0 && w->steps_round >= TT_HB_WARMUP) {
			w->busy_us[w->busy_head] = busy;
			w->busy_head = (w->busy_head + 1) % TT_HB_WINDOW;
			if (w->nbusy < TT_HB_WINDOW)
				w->nbusy++;
		}
		leave_section(w, now_us);
		w->steps_round++;
		w->prev_step = 1;
		w->last_step = step;
		snprintf(w->section, sizeof(w->section), "step");
	} else if (len > 8 && !memcmp(line, "section ", 8) && valid_name(line + 8, len - 8)) {
		leave_section(w, now_us);
		w->prev_step = 0;
		snprintf(w->section, sizeof(w->section), "%.*s", (int)(len - 8), line + 8);
		w->section_us = now_us;
		w->section_observed = 1;
	} else {
		return -1;
	}
	w->active = 1;
	w->last_us = now_us;
	return 0;
}

void tt_hb_feed(struct tt_hb *hb, int i, const char *buf, size_t len, int64_t now_us)
{
	struct tt_hb_worker *w = &hb->w[i];
	size_t k;

	for (k = 0; k < len; k++) {
		char c = buf[k];

		if (c == '\n') {
			if (!w->overlong)
				tt_hb_line(hb, i, w->buf, w->len, now_us);
			w->len = 0;
			w->overlong = 0;
		} else if (w->len < sizeof(w->buf)) {
			w->buf[w->len++] = c;
		} else {
			w->overlong = 1;
		}
	}
}

void tt_hb_resumed(struct tt_hb *hb, int64_t now_us)
{
	for (int i = 0; i < hb->n; i++) {
		if (!hb->w[i].active)
			continue;
		hb->w[i].last_us = now_us;
		hb->w[i].prev_step = 0;
		hb->w[i].section_observed = 0;
	}
}

void tt_hb_closed(struct tt_hb *hb, int i)
{
	hb->w[i].active = 0;
}

int64_t tt_hb_timeout(const struct tt_hb *hb, int i)
{
	const struct tt_hb_worker *w = &hb->w[i];
	int k;

	if (hb->cfg.off || !w->active)
		return 0;
	for (k = 0; k < hb->cfg.nsections; k++)
		if (!strcmp(hb->cfg.sections[k].name, w->section))
			return hb->cfg.sections[k].timeout_us;
	if (hb->cfg.fixed_us)
		return hb->cfg.fixed_us;
	if (strcmp(w->section, "step")) {
		for (k = 0; k < w->nfinished; k++)
			if (!strcmp(w->finished[k].name, w->section)) {
				int64_t t = (int64_t)(TT_HB_SECTION_FACTOR * (double)w->finished[k].timeout_us + 0.5);

				return t > TT_HB_SECTION_FLOOR_US ? t : TT_HB_SECTION_FLOOR_US;
			}
		return 0;
	}
	if (w->steps_round <= TT_HB_WARMUP)
		return 0;
	return w->calc_timeout_us;
}

int64_t tt_hb_deadline(const struct tt_hb *hb, int i)
{
	int64_t t = tt_hb_timeout(hb, i);

	return t ? hb->w[i].last_us + t : INT64_MAX;
}

int tt_hb_hung(const struct tt_hb *hb, int i, int64_t now_us)
{
	return now_us >= tt_hb_deadline(hb, i);
}

int tt_hb_culprit(const struct tt_hb *hb, int64_t now_us, const char *states)
{
	int i, any = 0, best = -1, best_rank = 0;
	double best_ratio = -1.0;

	for (i = 0; i < hb->n; i++)
		any |= tt_hb_hung(hb, i, now_us);
	if (!any)
		return -1;
	for (i = 0; i < hb->n; i++) {
		const struct tt_hb_worker *w = &hb->w[i];
		int64_t t = tt_hb_timeout(hb, i);
		char st = states ? states[i] : '?';
		int rank = st == 'T' || st == 't' ? 2 : st == 'D' ? 1 : 0;
		double ratio = t ? (double)(now_us - w->last_us) / (double)t : 0.0;

		if (!w->active)
			continue;
		if (best < 0 || rank > best_rank || (rank == best_rank && ratio > best_ratio)) {
			best = i;
			best_rank = rank;
			best_ratio = ratio;
		}
	}
	return best;
}

/* Percentile p of a window's n samples; -1 when there are none. */
static int64_t window_percentile(const int64_t *v, int n, double p)
{
	int64_t tmp[TT_HB_WINDOW];

	return n ? tt_hb_percentile(v, n, p, tmp) : -1;
}

int64_t tt_hb_step_percentile(const struct tt_hb *hb, int i, double p)
{
	return window_percentile(hb->w[i].step_us, hb->w[i].nsamples, p);
}

int64_t tt_hb_busy_percentile(const struct tt_hb *hb, int i, double p)
{
	return window_percentile(hb->w[i].busy_us, hb->w[i].nbusy, p);
}

void tt_hb_put(char *out, size_t len, size_t *used, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (*used >= len)
		return;
	va_start(ap, fmt);
	n = vsnprintf(out + *used, len - *used, fmt, ap);
	va_end(ap);
	if (n > 0)
		*used = *used + (size_t)n < len ? *used + (size_t)n : len;
}

const char *tt_hb_ms(int64_t us, char *buf, size_t len)
{
	snprintf(buf, len, us < 10000 ? "%.2f ms" : "%.1f ms", (double)us / 1e3);
	return buf;
}

/* Worker i's p50 the report judges: its busy time's (busy) or its step time's. */
static int64_t judged_p50(const struct tt_hb *hb, int i, int busy)
{
	return busy ? tt_hb_busy_percentile(hb, i, 50.0) : tt_hb_step_percentile(hb, i, 50.0);
}

int tt_hb_report(const struct tt_hb *hb, const int *ranks, const char *host, char *out, size_t len)
{
	int64_t *p50 = calloc((size_t)hb->n + 1, sizeof(*p50)), *tmp = calloc((size_t)hb->n + 1, sizeof(*tmp));
	int i, n = 0, stragglers = 0, busy = 1;
	int64_t median;
	size_t used = 0;
	char x[32], y[32];
	const char *what;

	if (len)
		out[0] = '\0';
	if (!p50 || !tmp)
		goto out;
	for (i = 0; i < hb->n; i++) {
		int64_t a = tt_hb_step_percentile(hb, i, 50.0), b = tt_hb_step_percentile(hb, i, 99.0);
		int64_t c = tt_hb_busy_percentile(hb, i, 50.0);

		if (a < 0)
			continue;
		if (!n)
			tt_hb_put(out, len, &used, "train-run: host %s: step times (last %d per rank):", host, TT_HB_WINDOW);
		tt_hb_put(out, len, &used, "%s rank %d p50 %s p99 %s", n ? "," : "", ranks[i], tt_hb_ms(a, x, sizeof(x)),
		    tt_hb_ms(b, y, sizeof(y)));
		if (c >= 0)
			tt_hb_put(out, len, &used, " busy p50 %s", tt_hb_ms(c, x, sizeof(x)));
		busy &= c >= 0;
		n++;
	}
	if (!n)
		goto out;
	tt_hb_put(out, len, &used, "\n");
	if (n < 2)
		goto out;
	/* The busy times when every observed rank has them: in step, the fast wait for the slow. */
	what = busy ? "busy p50" : "p50";
	for (i = n = 0; i < hb->n; i++)
		if (tt_hb_step_percentile(hb, i, 50.0) >= 0)
			p50[n++] = judged_p50(hb, i, busy);
	median = tt_hb_percentile(p50, n, 50.0, tmp);
	for (i = 0; i < hb->n; i++) {
		int64_t a = judged_p50(hb, i, busy);

		if (tt_hb_step_percentile(hb, i, 50.0) < 0 || (double)a <= TT_HB_STRAGGLER * (double)median)
			continue;
		tt_hb_put(out, len, &used, "train-run: host %s: straggler: rank %d %s %s is %.1fx the node's median %s\n",
		    host, ranks[i], what, tt_hb_ms(a, x, sizeof(x)), median ? (double)a / (double)median : 0.0,
		    tt_hb_ms(median, y, sizeof(y)));
		stragglers++;
	}
out:
	free(p50);
	free(tmp);
	return stragglers;
}

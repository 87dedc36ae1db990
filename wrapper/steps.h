/* SPDX-License-Identifier: MIT */
/* steps.h — the job-wide straggler report: node 0's table of every rank's step times (each
 * node's train-run sends its ranks' over the control plane, ctl.h), the report lines naming
 * the ranks and nodes slower than the median by TT_HB_STRAGGLER, and the same as JSON for tools
 * (train-run --report FILE). Pure: tests/unit/test_steps.c. */
#ifndef TT_STEPS_H
#define TT_STEPS_H

#include <stddef.h>
#include <stdint.h>

#define TT_STEPS_HOST 64
/* Room for one row's line of the report or its JSON object (a host escaped at worst). */
#define TT_STEPS_ROW_MAX 640

/* One rank's step times (heartbeat.h: the last TT_HB_WINDOW per-step times), and its busy times
 * per step where its heartbeats carry them (busy_samples 0: none). */
struct tt_step_row {
	uint32_t node;
	int32_t rank;
	char host[TT_STEPS_HOST];	/* its node's host */
	int64_t p50_us, p99_us;
	uint64_t samples;
	int64_t busy_p50_us, busy_p99_us;
	uint64_t busy_samples;
};

struct tt_steps {
	struct tt_step_row *rows;	/* by node, then rank */
	int n, cap;
};

/* Puts row into t, replacing the row of the same node and rank (a newer summary). -1 when out
 * of memory. */
int tt_steps_put(struct tt_steps *t, const struct tt_step_row *row);
void tt_steps_free(struct tt_steps *t);

/* The report into out (len bytes, lines ending in \n, each starting "train-run: job: "): with
 * summary, first one line with the median of the ranks' p50s; then one line per rank whose p50
 * is above factor x the median of every rank's p50 (with at least two ranks), and one per node
 * whose median p50 is above factor x the median of the nodes' medians (with at least two
 * nodes). When every rank with step times has busy times, their p50s are judged instead (in a
 * data-parallel job the step times are all the slowest rank's). Writes "" when no rank has samples. TT_STEPS_ROW_MAX x (rows + 2) bytes hold it. Returns the number of straggler lines. */
int tt_steps_report(const struct tt_steps *t, double factor, int summary, char *out, size_t len);

/* The same as one JSON object into out (len bytes), with restarts (the rounds restarted):
 *   {"factor":F,"restarts":N,"judged":"step"|"busy","median_p50_ms":M,"ranks":[{"host":H,
 *    "node":N,"rank":R,"p50_ms":X,"p99_ms":Y,"samples":S[,"busy_p50_ms":B,"busy_p99_ms":C,
 *    "busy_samples":D]},...],"stragglers":{"ranks":[R,...],"nodes":[N,...]}}
 * median_p50_ms (of what judged names) is null when no rank has samples. 0, or -1 when it does not fit (it does in
 * TT_STEPS_ROW_MAX x (rows + 2) bytes). */
int tt_steps_json(const struct tt_steps *t, double factor, int restarts, char *out, size_t len);

#endif

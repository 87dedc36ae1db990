/* SPDX-License-Identifier: MIT */
/* steps.h — the job-wide straggler report: node 0's table of every rank's step times (each
 * node's train-run sends its ranks' over the control plane, ctl.h), the report lines naming
 * the ranks and nodes slower than the median by TT_HB_STRAGGLER, and the same as JSON for tools
 * (train-run --report FILE), with the faults node 0 decided on (ctl.h records them). Pure:
 * tests/unit/test_steps.c. */
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

/* Node node left the world (ctl.h: a spare took its ranks, or a shrink removed them): its rows
 * are dropped, and with gone > 0 (a shrink: its gone ranks, first to first + gone - 1, leave)
 * every rank above them is gone lower, as the next round numbers it; with gone 0 (a spare's
 * replacement) the other ranks stay. So no line names a rank that no longer exists, nor one
 * twice. */
void tt_steps_forget(struct tt_steps *t, uint32_t node, int32_t first, int32_t gone);

/* ---- the faults node 0 decided on, for --report (ctl.c records them) ------------------------ */

#define TT_FAULT_WHAT 256
/* How a hang's WHAT starts (supervise.c writes it): node 0 tells a hang from a crash by it. */
#define TT_FAULT_HANG_WHAT "hung in section "
/* Room for one fault's JSON object (its host, spare host and WHAT escaped at worst). */
#define TT_STEPS_FAULT_MAX (6 * (TT_FAULT_WHAT + 2 * TT_STEPS_HOST) + 320)

/* What node 0 decided on: a rank's failure its node reported (crash: it exited non-zero or was
 * killed; hang: train-run killed it for making no progress), a node lost (its train-run ended
 * without a bye, or fell silent), or a node failing the preflight before a restart (or sending
 * no report in time). */
enum tt_fault_kind { TT_FAULT_CRASH, TT_FAULT_HANG, TT_FAULT_LOST, TT_FAULT_PREFLIGHT };
/* And what it decided (ctl.h's verdicts): every node restarts, a spare replaces the node, the
 * others go on without it, every node stops; or nothing changes (a spare, or a node standing
 * aside, lost: the job goes on). */
enum tt_fault_action { TT_FAULT_RESTART, TT_FAULT_REPLACE, TT_FAULT_SHRINK, TT_FAULT_STOP,
		       TT_FAULT_CONTINUE };

struct tt_fault {
	uint32_t round;			/* the round current at the decision (the one it ended) */
	enum tt_fault_kind kind;
	enum tt_fault_action action;
	int32_t rank;			/* crash, hang: the culprit's global rank; -1: none (a node) */
	uint32_t node;			/* the node index (NODE index) of the culprit or the lost node */
	char host[TT_STEPS_HOST];
	uint32_t spare;			/* replace: the spare's node index and host */
	char spare_host[TT_STEPS_HOST];
	uint32_t node_rank;		/* replace, shrink: the NODE_RANK the lost node had */
	uint32_t nnodes;		/* shrink: the nodes of the new round */
	int64_t detect_ms;		/* from the fault's detection to the decision; -1: unknown */
	char what[TT_FAULT_WHAT];
};

struct tt_faults {
	struct tt_fault *f;		/* in the order decided */
	int n, cap;
};

/* Appends f. -1 when out of memory. */
int tt_faults_add(struct tt_faults *l, const struct tt_fault *f);
void tt_faults_free(struct tt_faults *l);

/* A worker's failure by its WHAT: TT_FAULT_HANG when it starts with TT_FAULT_HANG_WHAT, else
 * TT_FAULT_CRASH. */
enum tt_fault_kind tt_fault_kind_of(const char *what);

/* The report into out (len bytes, lines ending in \n, each starting "train-run: job: "): with
 * summary, first one line with the median of the ranks' p50s; then one line per rank whose p50
 * is above factor x the median of every rank's p50 (with at least two ranks), and one per node
 * whose median p50 is above factor x the median of the nodes' medians (with at least two
 * nodes). When every rank with step times has busy times, their p50s are judged instead (in a
 * data-parallel job the step times are all the slowest rank's). Writes "" when no rank has samples. TT_STEPS_ROW_MAX x (rows + 2) bytes hold it. Returns the number of straggler lines. */
int tt_steps_report(const struct tt_steps *t, double factor, int summary, char *out, size_t len);

/* The same as one JSON object into out (len bytes), with restarts (the rounds restarted) and
 * faults (NULL: none):
 *   {"factor":F,"restarts":N,"judged":"step"|"busy","median_p50_ms":M,"ranks":[{"host":H,
 *    "node":N,"rank":R,"p50_ms":X,"p99_ms":Y,"samples":S[,"busy_p50_ms":B,"busy_p99_ms":C,
 *    "busy_samples":D]},...],"stragglers":{"ranks":[R,...],"nodes":[N,...]},
 *    "faults":[{"round":N,"kind":"crash"|"hang"|"lost"|"preflight","rank":R|null,"node":N,
 *    "host":H,"action":"restart"|"replace"|"shrink"|"stop"|"continue"[,"node_rank":K]
 *    [,"spare_node":S,"spare_host":SH][,"nnodes":M][,"detect_s":T],"what":W},...]}
 * (node_rank with replace and shrink, the spare with replace, nnodes with shrink, detect_s when
 * known). median_p50_ms (of what judged names) is null when no rank has samples. 0, or -1 when
 * it does not fit (it does in TT_STEPS_ROW_MAX x (rows + 2) + TT_STEPS_FAULT_MAX x faults
 * bytes). */
int tt_steps_json(const struct tt_steps *t, const struct tt_faults *faults, double factor,
		  int restarts, char *out, size_t len);

#endif

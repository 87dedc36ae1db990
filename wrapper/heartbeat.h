/* SPDX-License-Identifier: MIT */
/* heartbeat.h — the progress heartbeats of train-run's workers and the hang and straggler rules
 * built on them, as pure state: the event loop feeds the bytes a worker wrote to its heartbeat
 * channel with the time they arrived (microseconds of CLOCK_MONOTONIC) and asks when the next
 * worker runs out of time, whether one has, and what the step times were. No system calls here,
 * so every boundary is unit-tested.
 *
 * The protocol (one ASCII line per event, at most TT_HB_LINE_MAX bytes, anything else ignored):
 *   step N          the worker finished step N (any integer; steps may be skipped): progress,
 *                   and the worker is in the section "step"
 *   step N busy US  the same, with the worker's own busy time per step in microseconds (0 up to
 *                   an hour): its step time minus the time it waited for other ranks in
 *                   collectives, the mean over the steps since its previous step line. In a
 *                   data-parallel job every rank's step time is the slowest rank's; the busy
 *                   time is what names the slow one. Optional: without it the step times are
 *                   judged.
 *   section NAME    the worker enters section NAME ([A-Za-z0-9_.-], at most 31 characters),
 *                   e.g. setup, checkpoint, eval: progress too
 * A worker that never writes a line is never declared hung. */
#ifndef TT_HEARTBEAT_H
#define TT_HEARTBEAT_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

#define TT_HB_LINE_MAX 128
#define TT_HB_NAME_MAX 32		/* a section name with its NUL */
#define TT_HB_SECTIONS_MAX 8		/* --hang-timeout NAME=S given at most this often */
#define TT_HB_WINDOW 1024		/* step samples kept per worker: the last this many */

/* The defaults (train-run(1), FAULT TOLERANCE). The step timeout is FACTOR x the p99 of the
 * observed intervals between step lines, at least FLOOR: the goal is detection within
 * max(2 x p99, 5 s). The first WARMUP step lines of every round are not observed (compilation,
 * the first collectives, a resume), and the timeout is calculated once MIN_SAMPLES are. */
#define TT_HB_FACTOR 2.0
#define TT_HB_FLOOR_US 5000000LL
#define TT_HB_WARMUP 5
#define TT_HB_MIN_SAMPLES 10
/* A section other than step (setup, checkpoint, eval) gets a timeout once the worker has been
 * seen to finish it: SECTION_FACTOR x the longest time it took, at least SECTION_FLOOR. Such
 * sections come seldom and vary more than steps (a checkpoint's file system, a setup's
 * rendezvous with slower nodes), hence the wider margin; a section never finished has none. */
#define TT_HB_SECTION_FACTOR 5.0
#define TT_HB_SECTION_FLOOR_US 30000000LL
/* A rank whose median step time (busy time when every rank wrote one) is this much above the
 * median is named a straggler. */
#define TT_HB_STRAGGLER 1.5

struct tt_hb_section {
	char name[TT_HB_NAME_MAX];
	int64_t timeout_us;		/* > 0; in tt_hb_worker.finished, the longest time it took */
};

/* What --hang-timeout set. */
struct tt_hb_config {
	int off;			/* --hang-timeout off: no hang detection at all */
	int64_t fixed_us;		/* --hang-timeout S: every section without its own; 0: the
					 * calculated one in "step", none in the other sections */
	struct tt_hb_section sections[TT_HB_SECTIONS_MAX];
	int nsections;
};

/* Parses one --hang-timeout value (off, SECONDS or NAME=SECONDS; seconds may have decimals)
 * into cfg. Returns 0, or -1 with err naming the value. */
int tt_hb_config_add(struct tt_hb_config *cfg, const char *arg, tt_err *err);

struct tt_hb_worker {
	int active;			/* wrote a valid line this round and its channel is open */
	int64_t last_us;		/* when its last line arrived */
	char section[TT_HB_NAME_MAX];	/* the section it is in ("step" after a step line) */
	int prev_step;			/* the last line was a step line (an interval may follow) */
	long long last_step;
	int steps_round;		/* step lines this round (the warm-up counts them) */
	/* The last TT_HB_WINDOW observed intervals between step lines, and each divided by the
	 * steps it covered (the program may write fewer lines than steps). */
	int64_t *gap_us, *step_us;
	int nsamples, head;
	/* The last TT_HB_WINDOW busy times per step its step lines carried after the warm-up. */
	int64_t *busy_us;
	int nbusy, busy_head;
	long long total_samples;
	int64_t calc_timeout_us;	/* the calculated step timeout, 0 until there are enough */
	int64_t section_us;		/* when it entered its current section other than step */
	int section_observed;		/* and that section's time is observable (no stop since) */
	/* The sections other than step it was seen to finish (the first TT_HB_SECTIONS_MAX names),
	 * each with the longest time it took: kept across rounds, like the step samples. */
	struct tt_hb_section finished[TT_HB_SECTIONS_MAX];
	int nfinished;
	char buf[TT_HB_LINE_MAX];	/* a line not yet complete */
	size_t len;
	int overlong;			/* the line being read is too long: dropped up to its \n */
};

struct tt_hb {
	struct tt_hb_config cfg;
	int n;
	struct tt_hb_worker *w;		/* [n] */
};

int tt_hb_init(struct tt_hb *hb, int nworkers, const struct tt_hb_config *cfg, tt_err *err);
void tt_hb_free(struct tt_hb *hb);

/* A new round: no worker has written anything yet, the warm-up starts again. The observed step
 * times are kept (they belong to the rank and its hardware), so are their timeouts. */
void tt_hb_round_begin(struct tt_hb *hb);

/* Bytes worker i wrote, arrived at now_us; split into lines, each applied as tt_hb_line. */
void tt_hb_feed(struct tt_hb *hb, int i, const char *buf, size_t len, int64_t now_us);

/* One line without its \n. Returns 0 when it was a valid heartbeat, -1 when it was ignored. */
int tt_hb_line(struct tt_hb *hb, int i, const char *line, size_t len, int64_t now_us);

/* train-run was stopped and continued (a Slurm suspend stops every process of the step, train-run
 * too, then sends SIGCONT): every watched worker's silence counts from now_us again, and the
 * interval that spans the stop is not observed as a step time. Without this, the first timer after
 * the resume would find every worker silent for the whole suspension and name one hung. */
void tt_hb_resumed(struct tt_hb *hb, int64_t now_us);

/* Worker i closed its channel (or exited): it is not watched any more this round. */
void tt_hb_closed(struct tt_hb *hb, int i);

/* Worker i's timeout in its current section in microseconds, 0 when it has none (inactive,
 * detection off, still warming up in step, another section it was never seen to finish). */
int64_t tt_hb_timeout(const struct tt_hb *hb, int i);

/* When worker i is hung if it writes nothing more: last line + timeout; INT64_MAX when never. */
int64_t tt_hb_deadline(const struct tt_hb *hb, int i);

/* Whether worker i is hung at now_us: silent for its timeout or longer. */
int tt_hb_hung(const struct tt_hb *hb, int i, int64_t now_us);

/* The worker to name when some worker is hung at now_us, or -1 when none is. Ranks blocked in
 * a collective behind the culprit look hung too, so among the watched workers the pick is one
 * the kernel shows stopped (states[i] 'T' or 't'), else one in uninterruptible sleep ('D'),
 * else the one silent longest for its timeout. states may be NULL (no process states). */
int tt_hb_culprit(const struct tt_hb *hb, int64_t now_us, const char *states);

/* Nearest-rank percentile p (0-100) of the n > 0 values v (sorted into tmp, room for n). */
int64_t tt_hb_percentile(const int64_t *v, int n, double p, int64_t *tmp);

/* us as milliseconds ("12.5 ms"): two decimals below 10 ms (fast steps), one above. */
const char *tt_hb_ms(int64_t us, char *buf, size_t len);

/* Appends printf's output to out (len bytes) at *used, truncating at len. */
void tt_hb_put(char *out, size_t len, size_t *used, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Percentile p (0-100, nearest rank) of worker i's per-step times in microseconds; -1 when it
 * has no samples. */
int64_t tt_hb_step_percentile(const struct tt_hb *hb, int i, double p);

/* Percentile p (0-100, nearest rank) of worker i's busy times per step; -1 when it has none. */
int64_t tt_hb_busy_percentile(const struct tt_hb *hb, int i, double p);

/* The straggler report of this node: one line of every observed rank's p50/p99 step time (and
 * busy p50 where it has one), then one line per rank whose p50 is above TT_HB_STRAGGLER x the
 * node's median p50 (with at least two ranks observed); the busy p50s are judged instead when
 * every observed rank has one. Lines end in \n, each starts "train-run: host HOST: ". ranks[i] is worker i's
 * global rank. Writes "" when no worker had step samples. Returns the number of stragglers. */
int tt_hb_report(const struct tt_hb *hb, const int *ranks, const char *host, char *out, size_t len);

#endif

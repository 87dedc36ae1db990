/* SPDX-License-Identifier: MIT */
/* sweep_report.h — what became of every point of a sweep directory, ranked, as a terminal table,
 * CSV and a gnuplot plot of loss and accuracy against step.
 * A sweep directory (written by sbatch-templates/sweep.sh) holds grid.sweep and, per point N,
 * point-N.params, point-N.log, point-N.exit (the training step's exit code, or the checkpoint
 * status after a checkpoint stop), point-N.result (the program's result, sweep_summary.h) and,
 * for train-mlp, point-N.json (its summary, itself a result: test_accuracy, goal max). */
#ifndef SWEEP_REPORT_H
#define SWEEP_REPORT_H

#include "sweep_grid.h"
#include "sweep_summary.h"
#include "tt_err.h"
#include "tt_strbuf.h"

enum sweep_status { SWEEP_OK, SWEEP_FAILED, SWEEP_MISSING };

struct sweep_point {
	long index;
	enum sweep_status status;
	char reason[512]; /* why a point is not OK, one sentence */
	struct sweep_result res;  /* filled when OK: what the point is ranked by */
	int has_summary;          /* sum is filled: a train-mlp point */
	struct sweep_summary sum;
};

/* What a point's task left (NULL for a file that is not there): the params file's presence, the
 * exit file's text, train-mlp's summary, the program's result, the log's reason line. */
struct sweep_point_files {
	int have_params;
	const char *exit_text, *summary_text, *result_text, *log_line;
};

/* Decides a point's status from its files; ckpt_code is the checkpoint stop's status
 * (TRAIN_TOPO_CKPT_EXIT, tt_ckpt_exit.h). */
void sweep_point_classify(struct sweep_point *pt, long index, const struct sweep_point_files *f, int ckpt_code);

/* The line of a log's tail that best says why training ended: the last train-mlp line (its own
 * error, not the launcher's "exited with code" after it), else the last non-empty line. */
void sweep_log_reason(const char *tail, char *out, size_t size);

/* Reads every point's files from dir (edge: file reads only). *points has grid->npoints entries. */
int sweep_report_collect(const char *dir, const struct sweep_grid *grid, int ckpt_code, struct sweep_point **points,
			 tt_err *err);
void sweep_report_free(struct sweep_point *points, long n);

/* OK points first, best result first (its goal: max or min; train-mlp: test accuracy, then lower
 * loss), then lower index; the rest by index. */
void sweep_report_rank(struct sweep_point *points, long n);

void sweep_report_table(struct tt_strbuf *sb, const struct sweep_grid *grid, const struct sweep_point *points, long n);
void sweep_report_csv(struct tt_strbuf *sb, const struct sweep_grid *grid, const struct sweep_point *points, long n);
/* The plot's data (one gnuplot index block per OK point with a history, in rank order) and the
 * script drawing it from "report.dat" into "report.png.tmp" (pngcairo) or "report.svg.tmp" when
 * that gnuplot has no pngcairo. Returns the number of plotted points. */
long sweep_report_plot(struct tt_strbuf *data, struct tt_strbuf *script, const struct sweep_grid *grid,
		       const struct sweep_point *points, long n);

#endif

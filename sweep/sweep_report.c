/* SPDX-License-Identifier: MIT */
/* sweep_report.c — classifying, ranking and rendering the points of a sweep (see sweep_report.h).
 * Everything renders into memory; train_sweep.c writes the files and runs gnuplot. */
#include "sweep_report.h"

#include "sweep_io.h"
#include "tt_parse.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sweep_point_classify(struct sweep_point *pt, long index, const struct sweep_point_files *f, int ckpt_code)
{
	char log_note[300] = "";
	tt_err err;
	long code = -1;

	memset(pt, 0, sizeof(*pt));
	pt->index = index;
	pt->status = SWEEP_FAILED;
	if (f->log_line && *f->log_line)
		snprintf(log_note, sizeof(log_note), "; log: %.250s", f->log_line);
	if (f->exit_text) {
		long long v;

		/* The exit file is the job script's `echo $?`: the code, then a newline. */
		code = tt_parse_int_span(f->exit_text, strcspn(f->exit_text, "\n"), 0, LONG_MAX, &v) == 0 ?
		       (long)v : -2;
	}
	if (!f->have_params && !f->exit_text && !f->summary_text && !f->result_text) {
		pt->status = SWEEP_MISSING;
		snprintf(pt->reason, sizeof(pt->reason),
			 "never started (no point-%ld.params): was array task %ld submitted?", index, index);
	} else if (!f->exit_text && !f->summary_text && !f->result_text) {
		snprintf(pt->reason, sizeof(pt->reason),
			 "no exit code (point-%ld.exit): still running, or the job was killed (time limit, "
			 "node failure, scancel)%s", index, log_note);
	} else if (code == -2) {
		snprintf(pt->reason, sizeof(pt->reason), "point-%ld.exit does not hold an exit code", index);
	} else if (code == ckpt_code) {
		snprintf(pt->reason, sizeof(pt->reason),
			 "exit %ld: checkpointed on the signal before the end; resubmit task %ld to resume", code, index);
	} else if (code > 0) {
		snprintf(pt->reason, sizeof(pt->reason), "exit %ld: training failed%s", code, log_note);
	} else if (f->result_text && sweep_result_parse(f->result_text, &pt->res, &err) != 0) {
		snprintf(pt->reason, sizeof(pt->reason), "result point-%ld.result unreadable: %.400s", index, err.msg);
	} else if (f->result_text) {
		/* A complete result counts even without an exit file (only the script was cut off). */
		pt->status = SWEEP_OK;
		pt->has_summary = f->summary_text && sweep_summary_parse(f->summary_text, &pt->sum, &err) == 0;
	} else if (!f->summary_text) {
		snprintf(pt->reason, sizeof(pt->reason),
			 "exit 0 but no result: no TRAIN_RESULT line, no $TRAIN_TOPO_RESULT_FILE (point-%ld.result) and "
			 "no train-mlp summary point-%ld.json%s", index, index, log_note);
	} else if (sweep_summary_parse(f->summary_text, &pt->sum, &err) != 0) {
		snprintf(pt->reason, sizeof(pt->reason), "summary point-%ld.json unreadable: %.400s", index, err.msg);
	} else {
		/* train-mlp's summary is its result: test accuracy, higher is better. */
		pt->status = SWEEP_OK;
		pt->has_summary = 1;
		snprintf(pt->res.metric, sizeof(pt->res.metric), "test_accuracy");
		pt->res.value = pt->sum.test_accuracy;
		pt->res.maximize = 1;
	}
}

void sweep_log_reason(const char *tail, char *out, size_t size)
{
	const char *best = NULL, *last = NULL, *p = tail;
	size_t best_len = 0, last_len = 0, len;

	while (*p) {
		const char *end = strchr(p, '\n');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		while (n && strchr("\r \t", p[n - 1]))
			n--;
		if (n) {
			last = p, last_len = n;
			if (memmem(p, n, "train-mlp: ", 11))
				best = p, best_len = n;
		}
		p = end ? end + 1 : p + strlen(p);
	}
	if (!best)
		best = last, best_len = last_len;
	len = best && size ? (best_len < size ? best_len : size - 1) : 0;
	if (size) {
		if (len)
			memcpy(out, best, len);
		out[len] = '\0';
	}
}

/* The reason line from the last 4 KiB of a log; "" when there is none. */
static void log_reason(const char *path, char *out, size_t size)
{
	char buf[4096];
	FILE *f = fopen(path, "r");
	size_t len;

	out[0] = '\0';
	if (!f)
		return;
	if (fseek(f, -(long)(sizeof(buf) - 1), SEEK_END) != 0)
		rewind(f);
	len = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[len] = '\0';
	sweep_log_reason(buf, out, size);
}

static char *point_file(const char *dir, long index, const char *ext, char *path, size_t size)
{
	snprintf(path, size, "%s/point-%ld.%s", dir, index, ext);
	return path;
}

/* The file's text, or NULL when it does not exist; -1 (with err) for any other read failure. */
static int read_optional(const char *path, size_t max, char **text, tt_err *err)
{
	*text = sweep_read_file(path, max, err);
	if (!*text && errno != ENOENT)
		return -1;
	return 0;
}

int sweep_report_collect(const char *dir, const struct sweep_grid *grid, int ckpt_code, struct sweep_point **points,
			 tt_err *err)
{
	struct sweep_point *pts = calloc((size_t)grid->npoints, sizeof(*pts));
	char path[PATH_MAX], last[512];
	long i;

	if (!pts)
		return tt_err_set(err, "out of memory for %ld points", grid->npoints);
	for (i = 0; i < grid->npoints; i++) {
		char *exit_text = NULL, *summary = NULL, *params = NULL, *result = NULL;
		int rc;

		rc = read_optional(point_file(dir, i, "params", path, sizeof(path)), 1 << 16, &params, err);
		if (rc == 0)
			rc = read_optional(point_file(dir, i, "exit", path, sizeof(path)), 64, &exit_text, err);
		if (rc == 0)
			rc = read_optional(point_file(dir, i, "json", path, sizeof(path)), 16 << 20, &summary, err);
		if (rc == 0)
			rc = read_optional(point_file(dir, i, "result", path, sizeof(path)), 1 << 16, &result, err);
		if (rc == 0) {
			struct sweep_point_files f = { params != NULL, exit_text, summary, result, last };

			log_reason(point_file(dir, i, "log", path, sizeof(path)), last, sizeof(last));
			sweep_point_classify(&pts[i], i, &f, ckpt_code);
		}
		free(result);
		free(params);
		free(exit_text);
		free(summary);
		if (rc != 0) {
			sweep_report_free(pts, i);
			return -1;
		}
	}
	*points = pts;
	return 0;
}

void sweep_report_free(struct sweep_point *points, long n)
{
	for (long i = 0; i < n; i++)
		sweep_summary_free(&points[i].sum);
	free(points);
}

static int compare_points(const void *a, const void *b)
{
	const struct sweep_point *x = a, *y = b;

	if ((x->status == SWEEP_OK) != (y->status == SWEEP_OK))
		return x->status == SWEEP_OK ? -1 : 1;
	if (x->status == SWEEP_OK) {
		if (x->res.value != y->res.value)
			return (x->res.value > y->res.value) == (x->res.maximize != 0) ? -1 : 1;
		if (x->has_summary && y->has_summary && x->sum.test_loss != y->sum.test_loss)
			return x->sum.test_loss < y->sum.test_loss ? -1 : 1;
	}
	return (x->index > y->index) - (x->index < y->index);
}

void sweep_report_rank(struct sweep_point *points, long n)
{
	qsort(points, (size_t)n, sizeof(*points), compare_points);
}

static void point_label(struct tt_strbuf *sb, const struct sweep_grid *grid, long index)
{
	tt_sb_printf(sb, "p%ld", index);
	for (size_t a = 0; a < grid->naxes; a++)
		tt_sb_printf(sb, " %s=%s", grid->axes[a].key, sweep_grid_value(grid, index, a));
}

/* The table column of an axis: as wide as its key or its widest value. */
static int axis_width(const struct sweep_axis *axis)
{
	size_t w = strlen(axis->key);

	for (size_t v = 0; v < axis->nvalues; v++)
		if (strlen(axis->values[v]) > w)
			w = strlen(axis->values[v]);
	return (int)w;
}

void sweep_report_table(struct tt_strbuf *sb, const struct sweep_grid *grid, const struct sweep_point *points, long n)
{
	long ok = 0, rank = 0, summaries = 0;
	int mlp;

	for (long i = 0; i < n; i++) {
		ok += points[i].status == SWEEP_OK;
		summaries += points[i].status == SWEEP_OK && points[i].has_summary;
	}
	/* train-mlp's columns when every finished point is train-mlp's, else each point's result. */
	mlp = summaries == ok;
	tt_sb_printf(sb, "%ld of %ld points finished\n", ok, n);
	if (ok) {
		tt_sb_printf(sb, "%-4s %-5s", "rank", "point");
		for (size_t a = 0; a < grid->naxes; a++)
			tt_sb_printf(sb, " %-*s", axis_width(&grid->axes[a]), grid->axes[a].key);
		if (mlp)
			tt_sb_printf(sb, " %9s %9s %7s %8s\n", "test_acc", "test_loss", "steps", "wall_s");
		else
			tt_sb_printf(sb, " %-16s %12s %4s\n", "metric", "value", "goal");
	}
	for (long i = 0; i < n; i++) {
		const struct sweep_point *pt = &points[i];

		if (pt->status != SWEEP_OK)
			continue;
		tt_sb_printf(sb, "%-4ld %-5ld", ++rank, pt->index);
		for (size_t a = 0; a < grid->naxes; a++)
			tt_sb_printf(sb, " %-*s", axis_width(&grid->axes[a]), sweep_grid_value(grid, pt->index, a));
		if (mlp)
			tt_sb_printf(sb, " %9.4f %9.4f %7ld %8.2f\n", pt->sum.test_accuracy, pt->sum.test_loss,
				     pt->sum.steps, pt->sum.wall_seconds);
		else
			tt_sb_printf(sb, " %-16s %12.6g %4s\n", pt->res.metric, pt->res.value,
				     pt->res.maximize ? "max" : "min");
	}
	if (ok < n)
		tt_sb_printf(sb, "failed or missing:\n");
	for (long i = 0; i < n; i++) {
		if (points[i].status == SWEEP_OK)
			continue;
		tt_sb_printf(sb, "  ");
		point_label(sb, grid, points[i].index);
		tt_sb_printf(sb, ": %s: %s\n", points[i].status == SWEEP_MISSING ? "missing" : "failed",
			     points[i].reason);
	}
}

/* A CSV field: quoted, with quotes doubled, when it holds a comma, quote or newline. */
static void csv_field(struct tt_strbuf *sb, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		tt_sb_printf(sb, "%s", s);
		return;
	}
	tt_sb_printf(sb, "\"");
	for (; *s; s++)
		tt_sb_printf(sb, *s == '"' ? "\"\"" : "%c", *s);
	tt_sb_printf(sb, "\"");
}

void sweep_report_csv(struct tt_strbuf *sb, const struct sweep_grid *grid, const struct sweep_point *points, long n)
{
	long rank = 0;

	tt_sb_printf(sb, "rank,point");
	for (size_t a = 0; a < grid->naxes; a++)
		tt_sb_printf(sb, ",%s", grid->axes[a].key);
	tt_sb_printf(sb, ",status,test_accuracy,test_loss,steps,world_size,samples_per_sec,wall_seconds,"
			 "weights_crc32,metric,value,reason\n");
	for (long i = 0; i < n; i++) {
		const struct sweep_point *pt = &points[i];

		if (pt->status == SWEEP_OK)
			tt_sb_printf(sb, "%ld", ++rank);
		tt_sb_printf(sb, ",%ld", pt->index);
		for (size_t a = 0; a < grid->naxes; a++) {
			tt_sb_printf(sb, ",");
			csv_field(sb, sweep_grid_value(grid, pt->index, a));
		}
		if (pt->status == SWEEP_OK && pt->has_summary)
			tt_sb_printf(sb, ",ok,%.6f,%.6f,%ld,%ld,%.1f,%.3f,%s,%s,%.9g,\n", pt->sum.test_accuracy,
				     pt->sum.test_loss, pt->sum.steps, pt->sum.world_size, pt->sum.samples_per_sec,
				     pt->sum.wall_seconds, pt->sum.weights_crc32, pt->res.metric, pt->res.value);
		else if (pt->status == SWEEP_OK)
			tt_sb_printf(sb, ",ok,,,,,,,,%s,%.9g,\n", pt->res.metric, pt->res.value);
		else {
			tt_sb_printf(sb, ",%s,,,,,,,,,,", pt->status == SWEEP_MISSING ? "missing" : "failed");
			csv_field(sb, pt->reason);
			tt_sb_printf(sb, "\n");
		}
	}
}

static void plot_series(struct tt_strbuf *sb, const struct sweep_grid *grid, const struct sweep_point *points,
			long n, int column)
{
	long block = 0;

	tt_sb_printf(sb, "plot");
	for (long i = 0; i < n; i++) {
		if (points[i].status != SWEEP_OK || points[i].sum.nhistory == 0)
			continue;
		tt_sb_printf(sb, "%s\"report.dat\" index %ld using 1:%d with linespoints title \"", block ? ", \\\n    " : " ",
			     block, column);
		point_label(sb, grid, points[i].index);
		tt_sb_printf(sb, "\"");
		block++;
	}
	tt_sb_printf(sb, "\n");
}

long sweep_report_plot(struct tt_strbuf *data, struct tt_strbuf *script, const struct sweep_grid *grid,
		       const struct sweep_point *points, long n)
{
	long plotted = 0;

	for (long i = 0; i < n; i++) {
		const struct sweep_point *pt = &points[i];

		if (pt->status != SWEEP_OK || pt->sum.nhistory == 0)
			continue;
		tt_sb_printf(data, "# ");
		point_label(data, grid, pt->index);
		tt_sb_printf(data, "\n# step loss test_acc\n");
		for (size_t h = 0; h < pt->sum.nhistory; h++) {
			tt_sb_printf(data, "%ld %.6g ", pt->sum.history[h].step, pt->sum.history[h].loss);
			if (isnan(pt->sum.history[h].test_acc))
				tt_sb_printf(data, "?\n");
			else
				tt_sb_printf(data, "%.6g\n", pt->sum.history[h].test_acc);
		}
		tt_sb_printf(data, "\n\n");
		plotted++;
	}
	if (!plotted)
		return 0;
	tt_sb_printf(script,
		     "# Written by train-sweep report: loss and test accuracy against step for every finished point.\n"
		     "if (strstrt(GPVAL_TERMINALS, \"pngcairo\") > 0) {\n"
		     "    set terminal pngcairo size 1200,900 noenhanced\n"
		     "    set output \"report.png.tmp\"\n"
		     "} else {\n"
		     "    set terminal svg size 1200,900 noenhanced\n"
		     "    set output \"report.svg.tmp\"\n"
		     "}\n"
		     "set datafile missing \"?\"\n"
		     "set xrange [0:*]\n"
		     "set key outside right top\n"
		     "set grid\n"
		     "set multiplot layout 2,1\n"
		     "set xlabel \"step\"\n"
		     "set ylabel \"training loss\"\n"
		     "set title \"training loss\"\n");
	plot_series(script, grid, points, n, 2);
	tt_sb_printf(script, "set ylabel \"test accuracy\"\nset title \"test accuracy\"\n");
	plot_series(script, grid, points, n, 3);
	tt_sb_printf(script, "unset multiplot\nset output\n");
	return plotted;
}

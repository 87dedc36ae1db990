/* SPDX-License-Identifier: MIT */
/* train_sweep.c — the train-sweep command: the grid of a hyperparameter sweep for sweep.sh
 * (size, point) and the report of a finished sweep directory (table, report.csv, report.png). */
#include "config.h"

#include "sweep_check.h"
#include "sweep_grid.h"
#include "sweep_report.h"
#include "tt_ckpt_exit.h"
#include "tt_file.h"
#include "tt_strbuf.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PROG "train-sweep"

static const char usage[] =
	"usage: train-sweep size [--program PROG] SWEEPFILE\n"
	"       train-sweep point [--params] [--program PROG] SWEEPFILE INDEX\n"
	"       train-sweep report [--sweep SWEEPFILE] DIR\n"
	"A sweep file has one line per option of the program, 'lr = 1e-3, 3e-3' (# starts a comment);\n"
	"the points are all combinations, the last line varying fastest. For train-mlp (the default\n"
	"PROG) every key and value is checked against its options; for another program only the syntax.\n"
	"  size    print the array range to submit, e.g. 0-5 (sbatch --array=0-5 sweep.sh SWEEPFILE)\n"
	"  point   print point INDEX's options, --key value (--params: key=value lines)\n"
	"  report  rank the points of sweep directory DIR (its grid.sweep unless --sweep): a table here,\n"
	"          DIR/report.csv and DIR/report.png (or .svg) drawn by gnuplot; failed and missing\n"
	"          points with the reason. Points are ranked by their result: a one-line JSON object\n"
	"          {\"metric\": NAME, \"value\": NUMBER, \"goal\": \"max\"|\"min\"} the program wrote to\n"
	"          $TRAIN_TOPO_RESULT_FILE or printed as a line 'TRAIN_RESULT {...}', or train-mlp's summary\n"
	"          (test_accuracy, max). Exit 0: every point finished; 3: some did not; 1: error.\n"
	"Exit 2: a usage error, or a grid train-mlp would refuse.\n";

/* Loads the grid and checks it for PROGRAM (NULL: train-mlp). Returns 0, 1 when the file cannot
 * be read or parsed, 2 when train-mlp would refuse a key or value; the error is printed. */
static int load_checked(const char *file, const char *program, struct sweep_grid *grid)
{
	tt_err err;

	if (sweep_grid_load(file, grid, &err) != 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	if (!sweep_program_is_train_mlp(program)) {
		fprintf(stderr, PROG ": %s is not train-mlp: checked the syntax of %s only (its options are the "
			"program's)\n", program, file);
		return 0;
	}
	if (sweep_grid_check_train_mlp(grid, file, &err) != 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		sweep_grid_free(grid);
		return 2;
	}
	return 0;
}

static int cmd_size(const char *file, const char *program)
{
	struct sweep_grid grid = { 0 };
	int rc = load_checked(file, program, &grid);

	if (rc)
		return rc;
	printf("0-%ld\n", grid.npoints - 1);
	sweep_grid_free(&grid);
	return 0;
}

static int cmd_point(const char *file, const char *index_text, int params, const char *program)
{
	struct sweep_grid grid = { 0 };
	long index;
	tt_err err;
	int rc = load_checked(file, program, &grid);

	if (rc)
		return rc;
	if (sweep_grid_index(&grid, index_text, &index, &err) != 0) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		sweep_grid_free(&grid);
		return 1;
	}
	for (size_t a = 0; a < grid.naxes; a++) {
		const char *v = sweep_grid_value(&grid, index, a);

		if (params)
			printf("%s=%s\n", grid.axes[a].key, v);
		else
			printf("%s--%s %s", a ? " " : "", grid.axes[a].key, v);
	}
	if (!params)
		printf("\n");
	sweep_grid_free(&grid);
	return fflush(stdout) == 0 ? 0 : 1;
}

static int write_buffer(const char *dir, const char *name, const struct tt_strbuf *sb, tt_err *err)
{
	char path[PATH_MAX];

	if (tt_sb_failed(sb))
		return tt_err_set(err, "out of memory rendering %s", name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return tt_file_write_atomic(path, sb->data ? sb->data : "", sb->len, err);
}

/* Runs gnuplot on DIR/report.gp in DIR and moves what it drew into place. Returns the image's
 * name, or NULL with err. */
static const char *run_gnuplot(const char *dir, tt_err *err)
{
	static const char *const images[] = { "report.png", "report.svg" };
	char tmp[PATH_MAX], final[PATH_MAX];
	int status;
	pid_t pid;

	pid = fork();
	if (pid < 0) {
		tt_err_errno(err, "cannot start gnuplot");
		return NULL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		if (chdir(dir) != 0)
			_exit(126);
		execlp("gnuplot", "gnuplot", "report.gp", (char *)NULL);
		_exit(errno == ENOENT ? 127 : 126);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			tt_err_errno(err, "waiting for gnuplot");
			return NULL;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		tt_err_set(err, "gnuplot is not installed (Debian: apt-get install gnuplot-nox); the table and "
			   "report.csv are written, %s/report.gp draws the plot", dir);
		return NULL;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		tt_err_set(err, "gnuplot failed on %s/report.gp (its messages are above)", dir);
		return NULL;
	}
	for (size_t i = 0; i < sizeof(images) / sizeof(images[0]); i++) {
		snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, images[i]);
		snprintf(final, sizeof(final), "%s/%s", dir, images[i]);
		if (access(tmp, F_OK) != 0)
			continue;
		if (rename(tmp, final) != 0) {
			tt_err_errno(err, "cannot rename %s to %s", tmp, final);
			return NULL;
		}
		return images[i];
	}
	tt_err_set(err, "gnuplot drew no image into %s (neither pngcairo nor svg output)", dir);
	return NULL;
}

static int cmd_report(const char *dir, const char *sweep_file)
{
	struct tt_strbuf table = { 0 }, csv = { 0 }, data = { 0 }, script = { 0 };
	struct sweep_point *points = NULL;
	struct sweep_grid grid = { 0 };
	char grid_path[PATH_MAX];
	const char *image;
	long plotted, ok = 0;
	int rc = 1, ckpt;
	tt_err err;
	struct stat st;

	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, PROG ": sweep directory '%s' does not exist (sweep.sh creates it; see TRAIN_SWEEP_DIR)\n",
			dir);
		return 1;
	}
	if (!sweep_file) {
		snprintf(grid_path, sizeof(grid_path), "%s/grid.sweep", dir);
		sweep_file = grid_path;
	}
	if (sweep_grid_load(sweep_file, &grid, &err) != 0) {
		if (sweep_file == grid_path && errno == ENOENT)
			tt_err_set(&err, "%s has no grid.sweep (sweep.sh writes it when a point starts): is it a "
					 "sweep directory? Name the sweep file with --sweep FILE", dir);
		goto fail;
	}
	ckpt = tt_ckpt_exit_parse(getenv(TT_ENV_CKPT_EXIT), &err);
	if (ckpt < 0 || sweep_report_collect(dir, &grid, ckpt, &points, &err) != 0)
		goto fail;
	sweep_report_rank(points, grid.npoints);
	sweep_report_table(&table, &grid, points, grid.npoints);
	sweep_report_csv(&csv, &grid, points, grid.npoints);
	plotted = sweep_report_plot(&data, &script, &grid, points, grid.npoints);
	if (tt_sb_failed(&table)) {
		tt_err_set(&err, "out of memory rendering the report");
		goto fail;
	}
	fputs(table.data, stdout);
	if (write_buffer(dir, "report.csv", &csv, &err) != 0)
		goto fail;
	printf("table: %s/report.csv\n", dir);
	if (plotted) {
		if (write_buffer(dir, "report.dat", &data, &err) != 0 ||
		    write_buffer(dir, "report.gp", &script, &err) != 0)
			goto fail;
		fflush(stdout);
		image = run_gnuplot(dir, &err);
		if (!image)
			goto fail;
		printf("plot: %s/%s (%ld points)\n", dir, image, plotted);
	} else {
		printf("plot: none, no point finished with a loss history\n");
	}
	for (long i = 0; i < grid.npoints; i++)
		ok += points[i].status == SWEEP_OK;
	rc = ok == grid.npoints ? 0 : 3;
	goto out;
fail:
	fflush(stdout);
	fprintf(stderr, PROG ": %s\n", err.msg);
out:
	if (points)
		sweep_report_free(points, grid.npoints);
	sweep_grid_free(&grid);
	tt_sb_free(&table);
	tt_sb_free(&csv);
	tt_sb_free(&data);
	tt_sb_free(&script);
	return rc;
}

int main(int argc, char **argv)
{
	const char *program = NULL, *sweep = NULL, *pos[2] = { NULL, NULL };
	int params = 0, npos = 0, i;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		fputs(usage, stdout);
		return 0;
	}
	if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("train-sweep (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return 0;
	}
	for (i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--params") && !strcmp(argv[1], "point"))
			params = 1;
		else if (!strcmp(argv[i], "--program") && i + 1 < argc && strcmp(argv[1], "report"))
			program = argv[++i];
		else if (!strcmp(argv[i], "--sweep") && i + 1 < argc && !strcmp(argv[1], "report"))
			sweep = argv[++i];
		else if (npos < 2 && (argv[i][0] != '-' || !argv[i][1]))
			pos[npos++] = argv[i];
		else
			npos = 3;	/* an unknown option or a third argument: usage */
	}
	if (program && !*program) {
		fprintf(stderr, PROG ": --program '': give the program's name, e.g. --program python3\n");
		return 2;
	}
	if (argc >= 2 && npos == 1 && strcmp(argv[1], "size") == 0)
		return cmd_size(pos[0], program);
	if (argc >= 2 && npos == 2 && strcmp(argv[1], "point") == 0)
		return cmd_point(pos[0], pos[1], params, program);
	if (argc >= 2 && npos == 1 && strcmp(argv[1], "report") == 0)
		return cmd_report(pos[0], sweep);
	fprintf(stderr, "train-sweep: %s%s%s: expected size, point or report with their arguments\n%s",
		argc >= 2 ? "'" : "", argc >= 2 ? argv[1] : "no command", argc >= 2 ? "'" : "", usage);
	return 2;
}

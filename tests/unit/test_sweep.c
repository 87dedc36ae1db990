/* SPDX-License-Identifier: MIT */
/* test_sweep.c — train-sweep's pure modules: the grid parser and point indexing, the summary
 * reader, each point's status from the files its task left, ranking and the rendered report. */
#include "cunit_main.h"
#include "sweep_check.h"
#include "sweep_grid.h"
#include "sweep_io.h"
#include "sweep_report.h"
#include "sweep_summary.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char example[] =
	"# learning rate and batch\n"
	"lr = 1e-3, 3e-3 , 1e-2   # three rates\n"
	"\n"
	"  batch=64,128\n";

static void test_grid_parses_keys_values_and_size(void)
{
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse(example, "s", &g, &err), 0);
	CU_ASSERT_EQUAL(g.naxes, 2);
	CU_ASSERT_EQUAL(g.npoints, 6);
	CU_ASSERT_STRING_EQUAL(g.axes[0].key, "lr");
	CU_ASSERT_EQUAL(g.axes[0].nvalues, 3);
	CU_ASSERT_STRING_EQUAL(g.axes[0].values[1], "3e-3");
	CU_ASSERT_STRING_EQUAL(g.axes[0].values[2], "1e-2");
	CU_ASSERT_STRING_EQUAL(g.axes[1].key, "batch");
	CU_ASSERT_STRING_EQUAL(g.axes[1].values[1], "128");
	sweep_grid_free(&g);
}

static void test_grid_last_axis_varies_fastest(void)
{
	struct sweep_grid g;
	tt_err err;
	const char *want[6][2] = { { "1e-3", "64" }, { "1e-3", "128" }, { "3e-3", "64" },
				   { "3e-3", "128" }, { "1e-2", "64" }, { "1e-2", "128" } };

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse(example, "s", &g, &err), 0);
	for (long i = 0; i < 6; i++) {
		CU_ASSERT_STRING_EQUAL(sweep_grid_value(&g, i, 0), want[i][0]);
		CU_ASSERT_STRING_EQUAL(sweep_grid_value(&g, i, 1), want[i][1]);
	}
	sweep_grid_free(&g);
}

static void test_grid_quoted_values_may_hold_commas(void)
{
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("layers = \"784,256,10\", \"784,64,10\"\r\nmax-steps = 5\r\n", "s", &g,
					       &err), 0);
	CU_ASSERT_EQUAL(g.npoints, 2);
	CU_ASSERT_STRING_EQUAL(g.axes[0].values[0], "784,256,10");
	CU_ASSERT_STRING_EQUAL(sweep_grid_value(&g, 1, 0), "784,64,10");
	CU_ASSERT_STRING_EQUAL(sweep_grid_value(&g, 1, 1), "5");
	sweep_grid_free(&g);
}

static void expect_grid_error(const char *text, const char *needle)
{
	struct sweep_grid g;
	tt_err err;

	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(sweep_grid_parse(text, "my.sweep", &g, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, needle));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "my.sweep"));
	if (!strstr(err.msg, needle))
		fprintf(stderr, "\nmessage '%s' lacks '%s'\n", err.msg, needle);
}

static void test_grid_errors_name_line_and_problem(void)
{
	expect_grid_error("lr 1e-3\n", "line 1: expected 'option = value");
	expect_grid_error("lr = 1\nlr = 2\n", "line 2: 'lr' is given twice");
	expect_grid_error("lr = 1e-3,,2\n", "line 1: empty value for 'lr'");
	expect_grid_error("lr =\n", "empty value for 'lr'");
	expect_grid_error("lr = 1, 1\n", "value '1' appears twice");
	expect_grid_error("x = \"784,256\n", "unterminated quote");
	expect_grid_error("lr = $(rm)\n", "has the character '$'");
	expect_grid_error("lr = \"a b\"\n", "has the character ' '");
	expect_grid_error("--lr = 1\n", "without dashes ('--lr' -> 'lr')");
	expect_grid_error("-lr = 1\n", "without dashes ('-lr' -> 'lr')");
	expect_grid_error("- = 1\nlr = 2\n", "without dashes ('-' -> '')");
	expect_grid_error("\n\nsummary = x.json\n", "line 3: 'summary' is set by the sweep itself");
	expect_grid_error("# only a comment\n\n", "no 'option = values' line");
	expect_grid_error("lr = \"1\" \"2\"\n", "expected a comma after value '1'");
}

static void test_grid_refuses_huge_grids(void)
{
	char text[4096] = "";

	for (int k = 0; k < 7; k++) {
		char line[128];

		snprintf(line, sizeof(line), "k%d = 1,2,3,4,5,6,7,8,9,10\n", k);
		strcat(text, line);
	}
	expect_grid_error(text, "more than 1000000 points");
}

/* The limit exactly: 10^6 points (six axes of 10) are accepted, 10^6 + 1 = 101 x 9901 are not. */
static void test_grid_size_limit_at_its_boundary(void)
{
	size_t cap = 64 * 1024;
	char *text = malloc(cap);
	struct sweep_grid g;
	size_t used = 0;
	tt_err err;

	CU_ASSERT_PTR_NOT_NULL_FATAL(text);
	text[0] = '\0';
	for (int k = 0; k < 6; k++)
		used += (size_t)snprintf(text + used, cap - used, "k%d = 1,2,3,4,5,6,7,8,9,10\n", k);
	CU_ASSERT_EQUAL(sweep_grid_parse(text, "my.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(g.npoints, SWEEP_MAX_POINTS);
	sweep_grid_free(&g);
	used = (size_t)snprintf(text, cap, "a = 0");
	for (int v = 1; v < 101; v++)
		used += (size_t)snprintf(text + used, cap - used, ",%d", v);
	used += (size_t)snprintf(text + used, cap - used, "\nb = 0");
	for (int v = 1; v < 9901; v++)
		used += (size_t)snprintf(text + used, cap - used, ",%d", v);
	snprintf(text + used, cap - used, "\n");
	CU_ASSERT_FATAL(used < cap - 2);
	expect_grid_error(text, "line 2: the grid has more than 1000000 points");
	free(text);
}

/* sweep_read_file's size limit exactly: a file of max bytes is read whole, one of max + 1 is
 * refused (not cut to max + 1 bytes and terminated past the buffer). */
static void test_read_file_limit_at_its_boundary(void)
{
	char path[] = "/tmp/tt-sweep-read-XXXXXX";
	int fd = mkstemp(path);
	char *text;
	tt_err err;

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "12345678", 8), 8);
	text = sweep_read_file(path, 8, &err);
	CU_ASSERT_PTR_NOT_NULL(text);
	if (text)
		CU_ASSERT_STRING_EQUAL(text, "12345678");
	free(text);
	CU_ASSERT_EQUAL(write(fd, "9", 1), 1);
	err.msg[0] = '\0';
	CU_ASSERT_PTR_NULL(sweep_read_file(path, 8, &err));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is larger than 8 bytes"));
	close(fd);
	unlink(path);
}

static void test_grid_index_checks_range(void)
{
	struct sweep_grid g;
	long index = -1;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse(example, "s", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "5", &index, &err), 0);
	CU_ASSERT_EQUAL(index, 5);
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "0", &index, &err), 0);
	CU_ASSERT_EQUAL(index, 0);
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "6", &index, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "point index 6 is outside the grid of 6 points (0-5); submit with --array=0-5");
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "-1", &index, &err), -1);
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "2x", &index, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'2x' is not a whole number"));
	CU_ASSERT_EQUAL(sweep_grid_index(&g, "", &index, &err), -1);
	CU_ASSERT_EQUAL(index, 0);
	sweep_grid_free(&g);
}

/* As train-mlp writes it (fields trimmed). */
static const char summary_ok[] =
	"{\n  \"layers\": \"784,32,10\",\n  \"world_size\": 2,\n  \"steps\": 16,\n"
	"  \"test_accuracy\": 0.8125,\n  \"test_loss\": 0.5,\n  \"samples_per_sec\": 2100.5,\n"
	"  \"wall_seconds\": 1.250,\n  \"weights_crc32\": \"3290d00a\",\n  \"history\": [\n"
	"    {\"step\": 10, \"loss\": 2.3, \"test_acc\": null},\n"
	"    {\"step\": 16, \"loss\": 1.5, \"test_acc\": 0.8125}\n  ]\n}";

static void test_summary_reads_fields_and_history(void)
{
	struct sweep_summary s;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_summary_parse(summary_ok, &s, &err), 0);
	CU_ASSERT_DOUBLE_EQUAL(s.test_accuracy, 0.8125, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s.test_loss, 0.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s.wall_seconds, 1.25, 1e-9);
	CU_ASSERT_EQUAL(s.steps, 16);
	CU_ASSERT_EQUAL(s.world_size, 2);
	CU_ASSERT_STRING_EQUAL(s.weights_crc32, "3290d00a");
	CU_ASSERT_EQUAL_FATAL(s.nhistory, 2);
	CU_ASSERT_EQUAL(s.history[0].step, 10);
	CU_ASSERT_TRUE(isnan(s.history[0].test_acc));
	CU_ASSERT_DOUBLE_EQUAL(s.history[1].loss, 1.5, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(s.history[1].test_acc, 0.8125, 1e-9);
	sweep_summary_free(&s);
}

static void test_summary_refuses_truncated_or_incomplete(void)
{
	char cut[sizeof(summary_ok)];
	struct sweep_summary s;
	tt_err err;

	memcpy(cut, summary_ok, sizeof(cut));
	cut[sizeof(cut) / 2] = '\0';
	CU_ASSERT_EQUAL(sweep_summary_parse(cut, &s, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a complete JSON object"));
	CU_ASSERT_EQUAL(sweep_summary_parse("", &s, &err), -1);
	CU_ASSERT_EQUAL(sweep_summary_parse("{\"steps\": 3, \"history\": []}", &s, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "no \"test_accuracy\" field");
	CU_ASSERT_EQUAL(sweep_summary_parse("{\"test_accuracy\": \"high\"}", &s, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "\"test_accuracy\" is not a number");
	CU_ASSERT_EQUAL(sweep_summary_parse("{} {}", &s, &err), -1);
	/* Counts are whole numbers: 2.5 steps is refused, not cut to 2. */
	CU_ASSERT_EQUAL(sweep_summary_parse("{\"world_size\": 2, \"steps\": 2.5, \"test_accuracy\": 0.5, "
					    "\"test_loss\": 0.5, \"samples_per_sec\": 1, \"wall_seconds\": 1, "
					    "\"weights_crc32\": \"3290d00a\", \"history\": []}", &s, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "\"steps\" is not a whole number from 0 to 2^53");
}

static void test_log_reason_prefers_the_trainers_last_line(void)
{
	char out[64];

	sweep_log_reason("[rank 0] train-mlp: step 1\n[rank 0] train-mlp: --lr 'x': want a number\n"
			 "srun: error: node1: task 0: Exited with exit code 2\n"
			 "train-run: rank 0 exited with code 2\n\n", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "[rank 0] train-mlp: --lr 'x': want a number");
	sweep_log_reason("partial li", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "partial li");
	sweep_log_reason("srun: error: a\r\nslurmstepd: CANCELLED  \n", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "slurmstepd: CANCELLED");
	sweep_log_reason("\n\n", out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, "");
	sweep_log_reason("train-mlp: a very long line indeed", out, 8);
	CU_ASSERT_STRING_EQUAL(out, "train-m");
}

/* sweep_point_classify with the default checkpoint status. */
static void classify(struct sweep_point *pt, long index, int have_params, const char *exit_text,
		     const char *summary_text, const char *result_text, const char *log_line)
{
	struct sweep_point_files f = { have_params, exit_text, summary_text, result_text, log_line };

	sweep_point_classify(pt, index, &f, 99);
}

static void test_point_status_and_reason(void)
{
	struct sweep_point pt;

	classify(&pt, 4, 0, NULL, NULL, NULL, NULL);
	CU_ASSERT_EQUAL(pt.status, SWEEP_MISSING);
	CU_ASSERT_PTR_NOT_NULL(strstr(pt.reason, "never started (no point-4.params)"));

	classify(&pt, 1, 1, NULL, NULL, NULL, "train-mlp: step 10");
	CU_ASSERT_EQUAL(pt.status, SWEEP_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(pt.reason, "no exit code"));
	CU_ASSERT_PTR_NOT_NULL(strstr(pt.reason, "log: train-mlp: step 10"));

	classify(&pt, 1, 1, "99\n", NULL, NULL, NULL);
	CU_ASSERT_EQUAL(pt.status, SWEEP_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(pt.reason, "exit 99: checkpointed"));

	classify(&pt, 2, 1, "1\n", NULL, NULL, "train-mlp: --lr: bad value");
	CU_ASSERT_STRING_EQUAL(pt.reason, "exit 1: training failed; log: train-mlp: --lr: bad value");

	classify(&pt, 2, 1, "0\n", NULL, NULL, "");
	CU_ASSERT_EQUAL(pt.status, SWEEP_FAILED);
	CU_ASSERT_STRING_EQUAL(pt.reason, "exit 0 but no result: no TRAIN_RESULT line, no $TRAIN_TOPO_RESULT_FILE "
			       "(point-2.result) and no train-mlp summary point-2.json");

	classify(&pt, 2, 1, "0\n", "{\"test_accuracy\": 0.5", NULL, NULL);
	CU_ASSERT_EQUAL(pt.status, SWEEP_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(pt.reason, "summary point-2.json unreadable: not a complete"));

	classify(&pt, 2, 1, "garbage", NULL, NULL, NULL);
	CU_ASSERT_STRING_EQUAL(pt.reason, "point-2.exit does not hold an exit code");

	classify(&pt, 3, 1, "0\n", summary_ok, NULL, NULL);
	CU_ASSERT_EQUAL(pt.status, SWEEP_OK);
	CU_ASSERT_EQUAL(pt.sum.nhistory, 2);
	sweep_summary_free(&pt.sum);
}

/* Six points of `example`: 0 and 5 finish (5 better), 3 fails, the rest are missing. */
static void make_points(struct sweep_point pts[6])
{
	char better[sizeof(summary_ok)];

	memcpy(better, summary_ok, sizeof(better));
	memcpy(strstr(better, "0.8125"), "0.9125", 6);
	for (long i = 0; i < 6; i++)
		classify(&pts[i], i, 0, NULL, NULL, NULL, NULL);
	classify(&pts[0], 0, 1, "0", summary_ok, NULL, NULL);
	classify(&pts[5], 5, 1, "0", better, NULL, NULL);
	classify(&pts[3], 3, 1, "1", NULL, NULL, "boom");
}

static void free_points(struct sweep_point pts[6])
{
	for (int i = 0; i < 6; i++)
		sweep_summary_free(&pts[i].sum);
}

static void test_rank_orders_finished_by_accuracy_then_the_rest(void)
{
	struct sweep_point pts[6];

	make_points(pts);
	sweep_report_rank(pts, 6);
	CU_ASSERT_EQUAL(pts[0].index, 5);
	CU_ASSERT_EQUAL(pts[1].index, 0);
	CU_ASSERT_EQUAL(pts[2].index, 1);
	CU_ASSERT_EQUAL(pts[3].index, 2);
	CU_ASSERT_EQUAL(pts[4].index, 3);
	CU_ASSERT_EQUAL(pts[5].index, 4);
	free_points(pts);
}

static void test_report_table_csv_and_plot(void)
{
	struct tt_strbuf table = { 0 }, csv = { 0 }, data = { 0 }, script = { 0 };
	struct sweep_point pts[6];
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse(example, "s", &g, &err), 0);
	make_points(pts);
	sweep_report_rank(pts, 6);
	sweep_report_table(&table, &g, pts, 6);
	sweep_report_csv(&csv, &g, pts, 6);
	CU_ASSERT_EQUAL(sweep_report_plot(&data, &script, &g, pts, 6), 2);
	CU_ASSERT_FALSE(tt_sb_failed(&table) || tt_sb_failed(&csv) || tt_sb_failed(&data) || tt_sb_failed(&script));

	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "2 of 6 points finished\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "1    5     1e-2 128      0.9125"));
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "2    0     1e-3 64       0.8125"));
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "p3 lr=3e-3 batch=128: failed: exit 1: training failed; log: boom"));
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "p4 lr=1e-2 batch=64: missing: never started"));

	CU_ASSERT_PTR_NOT_NULL(strstr(csv.data, "rank,point,lr,batch,status,test_accuracy,test_loss,steps,world_size,"
						"samples_per_sec,wall_seconds,weights_crc32,metric,value,reason\n"
						"1,5,1e-2,128,ok,0.912500,0.500000,16,2,2100.5,1.250,3290d00a,"
						"test_accuracy,0.9125,\n"
						"2,0,1e-3,64,ok,0.812500,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(csv.data, "\n,3,3e-3,128,failed,,,,,,,,,,exit 1: training failed; log: boom\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(csv.data, "\n,4,1e-2,64,missing,,,,,,,,,,never started (no point-4.params): "));

	CU_ASSERT_PTR_NOT_NULL(strstr(data.data, "# p5 lr=1e-2 batch=128\n# step loss test_acc\n10 2.3 ?\n16 1.5 0.8125\n\n\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(script.data, "plot \"report.dat\" index 0 using 1:2 with linespoints title \"p5 lr=1e-2 batch=128\", \\\n"
						   "    \"report.dat\" index 1 using 1:2 with linespoints title \"p0 lr=1e-3 batch=64\"\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(script.data, "index 1 using 1:3"));
	CU_ASSERT_PTR_NOT_NULL(strstr(script.data, "set output \"report.png.tmp\""));

	tt_sb_free(&table);
	tt_sb_free(&csv);
	tt_sb_free(&data);
	tt_sb_free(&script);
	free_points(pts);
	sweep_grid_free(&g);
}

static void test_plot_is_empty_without_finished_points(void)
{
	struct tt_strbuf data = { 0 }, script = { 0 };
	struct sweep_point pts[2];
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("lr = 1, 2\n", "s", &g, &err), 0);
	classify(&pts[0], 0, 0, NULL, NULL, NULL, NULL);
	classify(&pts[1], 1, 1, "1", NULL, NULL, NULL);
	CU_ASSERT_EQUAL(sweep_report_plot(&data, &script, &g, pts, 2), 0);
	CU_ASSERT_EQUAL(script.len, 0);
	tt_sb_free(&data);
	tt_sb_free(&script);
	sweep_grid_free(&g);
}

/* Any program's result: parsed, checked, ranked by its goal; a table of metrics, not train-mlp's. */
static void test_result_of_any_program(void)
{
	struct tt_strbuf table = { 0 }, csv = { 0 };
	struct sweep_point pts[4];
	struct sweep_result r;
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL(sweep_result_parse("{\"metric\": \"val_loss\", \"value\": 0.31, \"goal\": \"min\", \"epoch\": 3}\n",
					   &r, &err), 0);
	CU_ASSERT_STRING_EQUAL(r.metric, "val_loss");
	CU_ASSERT_DOUBLE_EQUAL(r.value, 0.31, 1e-12);
	CU_ASSERT_EQUAL(r.maximize, 0);
	CU_ASSERT_EQUAL(sweep_result_parse("{\"metric\": \"acc\", \"value\": 0.9", &r, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not one complete JSON object"));
	CU_ASSERT_EQUAL(sweep_result_parse("{\"metric\": \"acc\", \"value\": 0.9, \"goal\": \"up\"}", &r, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "\"goal\" 'up': want \"max\""));
	CU_ASSERT_EQUAL(sweep_result_parse("{\"metric\": \"acc\", \"goal\": \"max\"}", &r, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "no \"value\" field");

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("lr = 1, 2, 3, 4\n", "s", &g, &err), 0);
	classify(&pts[0], 0, 1, "0\n", NULL, "{\"metric\": \"val_loss\", \"value\": 0.5, \"goal\": \"min\"}", NULL);
	classify(&pts[1], 1, 1, "0\n", NULL, "{\"metric\": \"val_loss\", \"value\": 0.2, \"goal\": \"min\"}", NULL);
	classify(&pts[2], 2, 1, "0\n", NULL, "{\"metric\": \"val_loss\", \"value\": 0.9, \"goal\": \"min\"}", NULL);
	classify(&pts[3], 3, 1, "0\n", NULL, "{\"metric\": \"val_loss\"", NULL);
	CU_ASSERT_EQUAL(pts[0].status, SWEEP_OK);
	CU_ASSERT_EQUAL(pts[0].has_summary, 0);
	CU_ASSERT_EQUAL(pts[3].status, SWEEP_FAILED);
	CU_ASSERT_PTR_NOT_NULL(strstr(pts[3].reason, "result point-3.result unreadable: not one complete JSON object"));
	sweep_report_rank(pts, 4);
	CU_ASSERT_EQUAL(pts[0].index, 1);
	CU_ASSERT_EQUAL(pts[1].index, 0);
	CU_ASSERT_EQUAL(pts[2].index, 2);
	CU_ASSERT_EQUAL(pts[3].index, 3);
	sweep_report_table(&table, &g, pts, 4);
	sweep_report_csv(&csv, &g, pts, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "3 of 4 points finished\nrank point lr metric"));
	CU_ASSERT_PTR_NOT_NULL(strstr(table.data, "\n1    1     2  val_loss                  0.2  min\n"));
	CU_ASSERT_PTR_NOT_NULL(strstr(csv.data, "\n1,1,2,ok,,,,,,,,val_loss,0.2,\n"));
	/* The checkpoint status is a checkpoint, whichever the job set. */
	{
		struct sweep_point_files f = { 1, "42\n", NULL, NULL, NULL };

		sweep_point_classify(&pts[0], 0, &f, 42);
		CU_ASSERT_PTR_NOT_NULL(strstr(pts[0].reason, "exit 42: checkpointed on the signal"));
	}
	tt_sb_free(&table);
	tt_sb_free(&csv);
	sweep_grid_free(&g);
}

/* A train-mlp grid: unknown keys, flags and bad values are refused naming key and choices. */
static void test_check_against_train_mlp(void)
{
	struct sweep_grid g;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse(example, "s", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "s", &err), 0);
	sweep_grid_free(&g);

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("lr = 1e-3\nbogusopt = 1, 2\n", "g.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "g.sweep", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "g.sweep: 'bogusopt' is not a train-mlp option; valid keys: layers, data,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "max-steps"));
	sweep_grid_free(&g);

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("lr = 1e-3, abc\n", "g.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "g.sweep", &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "g.sweep: lr = abc: --lr 'abc': want a number >= 0");
	sweep_grid_free(&g);

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("schedule = 1f1b, zigzag\n", "g.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "g.sweep", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "schedule = zigzag: --schedule 'zigzag': want 1f1b or gpipe"));
	sweep_grid_free(&g);

	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("recompute = 1\n", "g.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "g.sweep", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'recompute' is a train-mlp flag without a value"));
	sweep_grid_free(&g);
	/* version is no option a grid may name; a key with _ (argparse's) is no train-mlp option */
	CU_ASSERT_EQUAL_FATAL(sweep_grid_parse("version = 1\nweight_decay = 0.1\n", "g.sweep", &g, &err), 0);
	CU_ASSERT_EQUAL(sweep_grid_check_train_mlp(&g, "g.sweep", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'version' is not a train-mlp option"));
	sweep_grid_free(&g);
}

static void test_program_is_train_mlp(void)
{
	CU_ASSERT_EQUAL(sweep_program_is_train_mlp(NULL), 1);
	CU_ASSERT_EQUAL(sweep_program_is_train_mlp("train-mlp"), 1);
	CU_ASSERT_EQUAL(sweep_program_is_train_mlp("/usr/bin/train-mlp"), 1);
	CU_ASSERT_EQUAL(sweep_program_is_train_mlp("python3"), 0);
	CU_ASSERT_EQUAL(sweep_program_is_train_mlp("train-mlp.py"), 0);
}

int tt_register_suites(void)
{
	CU_pSuite grid = CU_add_suite("sweep_grid", NULL, NULL);
	CU_pSuite report = CU_add_suite("sweep_report", NULL, NULL);

	if (!grid || !report ||
	    !CU_add_test(grid, "keys, values, size", test_grid_parses_keys_values_and_size) ||
	    !CU_add_test(grid, "last axis fastest", test_grid_last_axis_varies_fastest) ||
	    !CU_add_test(grid, "quoted values", test_grid_quoted_values_may_hold_commas) ||
	    !CU_add_test(grid, "errors", test_grid_errors_name_line_and_problem) ||
	    !CU_add_test(grid, "huge grids", test_grid_refuses_huge_grids) ||
	    !CU_add_test(grid, "size limit at its boundary", test_grid_size_limit_at_its_boundary) ||
	    !CU_add_test(grid, "index range", test_grid_index_checks_range) ||
	    !CU_add_test(grid, "file size limit at its boundary", test_read_file_limit_at_its_boundary) ||
	    !CU_add_test(grid, "checked against train-mlp", test_check_against_train_mlp) ||
	    !CU_add_test(grid, "program is train-mlp", test_program_is_train_mlp) ||
	    !CU_add_test(report, "summary fields", test_summary_reads_fields_and_history) ||
	    !CU_add_test(report, "summary truncated", test_summary_refuses_truncated_or_incomplete) ||
	    !CU_add_test(report, "log reason", test_log_reason_prefers_the_trainers_last_line) ||
	    !CU_add_test(report, "point status", test_point_status_and_reason) ||
	    !CU_add_test(report, "rank", test_rank_orders_finished_by_accuracy_then_the_rest) ||
	    !CU_add_test(report, "table, csv, plot", test_report_table_csv_and_plot) ||
	    !CU_add_test(report, "no plot", test_plot_is_empty_without_finished_points) ||
	    !CU_add_test(report, "any program's result", test_result_of_any_program))
		return -1;
	return 0;
}

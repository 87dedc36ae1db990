/* SPDX-License-Identifier: MIT */
/* test_train_opts.c — train-mlp's command line: defaults, every option, the message for each
 * kind of bad value, and the --summary place checked before training. */
#include "cunit_main.h"
#include "train_opts.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ARGV(...) ((char *[]){ "train-mlp", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "train-mlp", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(o, e, ...) tt_train_opts_parse(o, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), e)

static void test_defaults(void)
{
	tt_train_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(PARSE(&o, &err, "--layers", "784,256,10", "--data", "synthetic"), 0);
	CU_ASSERT_EQUAL(o.epochs, 1);
	CU_ASSERT_EQUAL(o.batch, 64);
	CU_ASSERT_EQUAL(o.zero, 0);
	CU_ASSERT_EQUAL(o.accum, 1);
	CU_ASSERT_EQUAL(o.keep, 3);
	CU_ASSERT_EQUAL(o.signal, SIGUSR1);
	CU_ASSERT_EQUAL(o.on_signal, TT_ON_SIGNAL_CHECKPOINT_EXIT);
	CU_ASSERT_DOUBLE_EQUAL(o.bucket_mb, 25.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(o.lr, 1e-3, 1e-9);
	CU_ASSERT_PTR_NULL(o.ckpt_dir);
	CU_ASSERT_EQUAL(o.tp, 1);
	CU_ASSERT_EQUAL(o.pp, 1);
	CU_ASSERT_EQUAL(o.recompute, 0);
	CU_ASSERT_EQUAL(o.schedule, TT_SCHED_1F1B);
}

static void test_all_options(void)
{
	tt_train_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(PARSE(&o, &err, "--layers", "1000x10", "--data", "/d", "--epochs", "3", "--batch", "256",
				    "--lr", "0.01", "--seed", "0x10", "--zero", "3", "--bucket-mb", "0.5", "--ckpt-dir",
				    "/c", "--ckpt-every", "50", "--ckpt-minutes", "1.5", "--keep", "0", "--on-signal",
				    "checkpoint", "--signal", "SIGUSR2", "--summary", "/s.json", "--log-every", "7",
				    "--eval-every", "9", "--accum", "4", "--warmup", "11", "--weight-decay", "0",
				    "--max-steps", "99", "--betas", "0.8,0.95", "--synthetic-samples", "100,20"),
			      0);
	CU_ASSERT_STRING_EQUAL(o.layers, "1000x10");
	CU_ASSERT_EQUAL(o.epochs, 3);
	CU_ASSERT_EQUAL(o.batch, 256);
	CU_ASSERT_EQUAL(o.seed, 16);
	CU_ASSERT_EQUAL(o.zero, 3);
	CU_ASSERT_DOUBLE_EQUAL(o.bucket_mb, 0.5, 1e-9);
	CU_ASSERT_STRING_EQUAL(o.ckpt_dir, "/c");
	CU_ASSERT_EQUAL(o.ckpt_every, 50);
	CU_ASSERT_DOUBLE_EQUAL(o.ckpt_minutes, 1.5, 1e-9);
	CU_ASSERT_EQUAL(o.keep, 0);
	CU_ASSERT_EQUAL(o.on_signal, TT_ON_SIGNAL_CHECKPOINT);
	CU_ASSERT_EQUAL(o.signal, SIGUSR2);
	CU_ASSERT_EQUAL(o.log_every, 7);
	CU_ASSERT_EQUAL(o.eval_every, 9);
	CU_ASSERT_EQUAL(o.accum, 4);
	CU_ASSERT_EQUAL(o.warmup, 11);
	CU_ASSERT_EQUAL(o.max_steps, 99);
	CU_ASSERT_DOUBLE_EQUAL(o.beta1, 0.8, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(o.beta2, 0.95, 1e-6);
	CU_ASSERT_EQUAL(o.synthetic_train, 100);
	CU_ASSERT_EQUAL(o.synthetic_test, 20);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--help"), 1);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "4,2", "--data", "x", "--signal", "12"), 0);
	CU_ASSERT_EQUAL(o.signal, 12);
	CU_ASSERT_EQUAL(o.device, TT_DEVICE_CPU);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "4,2", "--data", "x", "--device", "gpu"), 0);
	CU_ASSERT_EQUAL(o.device, TT_DEVICE_GPU);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "4,2", "--data", "x", "--device", "auto", "--zero", "2"), 0);
	CU_ASSERT_EQUAL(o.device, TT_DEVICE_AUTO);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "4,2", "--data", "x", "--tp", "4", "--pp", "2", "--schedule", "gpipe",
			      "--recompute"),
			0);
	CU_ASSERT_EQUAL(o.tp, 4);
	CU_ASSERT_EQUAL(o.pp, 2);
	CU_ASSERT_EQUAL(o.schedule, TT_SCHED_GPIPE);
	CU_ASSERT_EQUAL(o.recompute, 1);
}

static void expect_error(int argc, char **argv, const char *want)
{
	tt_train_opts o;
	tt_err err = { { 0 } };

	CU_ASSERT_EQUAL(tt_train_opts_parse(&o, argc, argv, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
}

#define EXPECT_ERROR(want, ...) expect_error(ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), want)

static void test_bad_values_name_the_option(void)
{
	EXPECT_ERROR("--layers is required", "--data", "x");
	EXPECT_ERROR("--data is required", "--layers", "4,2");
	EXPECT_ERROR("--zero '4'", "--layers", "4,2", "--data", "x", "--zero", "4");
	EXPECT_ERROR("--batch 'ten'", "--layers", "4,2", "--data", "x", "--batch", "ten");
	EXPECT_ERROR("--batch '0'", "--layers", "4,2", "--data", "x", "--batch", "0");
	EXPECT_ERROR("--lr '-1'", "--layers", "4,2", "--data", "x", "--lr", "-1");
	EXPECT_ERROR("--lr '1e39': want a number from 0 to", "--layers", "4,2", "--data", "x", "--lr", "1e39");
	EXPECT_ERROR("--weight-decay '4e38'", "--layers", "4,2", "--data", "x", "--weight-decay", "4e38");
	EXPECT_ERROR("--on-signal 'stop'", "--layers", "4,2", "--data", "x", "--on-signal", "stop");
	EXPECT_ERROR("--signal 'KILL'", "--layers", "4,2", "--data", "x", "--signal", "KILL");
	EXPECT_ERROR("--signal '9'", "--layers", "4,2", "--data", "x", "--signal", "9");
	EXPECT_ERROR("--betas '0.9'", "--layers", "4,2", "--data", "x", "--betas", "0.9");
	EXPECT_ERROR("--betas '1,0.9'", "--layers", "4,2", "--data", "x", "--betas", "1,0.9");
	EXPECT_ERROR("--bucket-mb '0'", "--layers", "4,2", "--data", "x", "--bucket-mb", "0");
	EXPECT_ERROR("not divisible by --accum 3", "--layers", "4,2", "--data", "x", "--batch", "64", "--accum", "3");
	EXPECT_ERROR("need --ckpt-dir", "--layers", "4,2", "--data", "x", "--ckpt-every", "5");
	EXPECT_ERROR("'--bogus' is unknown", "--layers", "4,2", "--data", "x", "--bogus");
	EXPECT_ERROR("'-x' is unknown", "--layers", "4,2", "--data", "x", "-xy");
	EXPECT_ERROR("unexpected argument 'extra'", "--layers", "4,2", "--data", "x", "extra");
	EXPECT_ERROR("--seed '-3'", "--layers", "4,2", "--data", "x", "--seed", "-3");
	EXPECT_ERROR("--device 'tpu': want cpu, gpu or auto", "--layers", "4,2", "--data", "x", "--device", "tpu");
	EXPECT_ERROR("GPU path is DDP only", "--layers", "4,2", "--data", "x", "--device", "gpu", "--zero", "2");
	EXPECT_ERROR("--summary '': want a file name, or - for standard output", "--layers", "4,2", "--data", "x",
		     "--summary", "");
	EXPECT_ERROR("--tp '0' is not an integer in [1, 4096]", "--layers", "4,2", "--data", "x", "--tp", "0");
	EXPECT_ERROR("--pp 'two'", "--layers", "4,2", "--data", "x", "--pp", "two");
	EXPECT_ERROR("--schedule 'zb'", "--layers", "4,2", "--data", "x", "--schedule", "zb");
	EXPECT_ERROR("--tp 1 --pp 2 --recompute with --device gpu: the GPU path is data parallelism only", "--layers",
		     "4,2", "--data", "x", "--device", "gpu", "--pp", "2", "--recompute");
}

/* --summary DIR, /nonexistent/x and '' were refused only after the whole run, and '-' wrote a file
 * named '-'. */
static void test_summary_place(void)
{
	char dir[] = "/tmp/tt-summary-XXXXXX", path[128], want[160];
	tt_err err = { { 0 } };

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	CU_ASSERT_EQUAL(tt_train_summary_check("-", &err), 0);
	snprintf(path, sizeof(path), "%s/run.json", dir);
	CU_ASSERT_EQUAL(tt_train_summary_check(path, &err), 0);
	CU_ASSERT_EQUAL(tt_train_summary_check(dir, &err), -1);
	snprintf(want, sizeof(want), "--summary %s is a directory: give a file name such as %s/summary.json", dir, dir);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
	CU_ASSERT_EQUAL(tt_train_summary_check("/nonexistent/x", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "directory /nonexistent does not exist"));
	snprintf(path, sizeof(path), "%s/missing/run.json", dir);
	CU_ASSERT_EQUAL(tt_train_summary_check(path, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not exist"));
	/* A FIFO or a link was refused only when the summary was written, after the training. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	CU_ASSERT_EQUAL_FATAL(mkfifo(path, 0600), 0);
	CU_ASSERT_EQUAL(tt_train_summary_check(path, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a FIFO, not a regular file"));
	unlink(path);
	snprintf(path, sizeof(path), "%s/link", dir);
	CU_ASSERT_EQUAL_FATAL(symlink("/tmp/elsewhere.json", path), 0);
	CU_ASSERT_EQUAL(tt_train_summary_check(path, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a symbolic link, not a regular file"));
	unlink(path);
	if (geteuid() != 0) { /* root writes anywhere */
		chmod(dir, 0500);
		snprintf(path, sizeof(path), "%s/run.json", dir);
		CU_ASSERT_EQUAL(tt_train_summary_check(path, &err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not writable"));
		chmod(dir, 0700);
	}
	rmdir(dir);
}

/* The checkpoint-exit status comes from TRAIN_TOPO_CKPT_EXIT (the launcher's protocol). */
static void test_ckpt_exit_from_env(void)
{
	tt_train_opts o;
	tt_err err;

	unsetenv("TRAIN_TOPO_CKPT_EXIT");
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "8,2", "--data", "synthetic"), 0);
	CU_ASSERT_EQUAL(o.ckpt_exit, 99);
	setenv("TRAIN_TOPO_CKPT_EXIT", "42", 1);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "8,2", "--data", "synthetic"), 0);
	CU_ASSERT_EQUAL(o.ckpt_exit, 42);
	setenv("TRAIN_TOPO_CKPT_EXIT", "126", 1);
	CU_ASSERT_EQUAL(PARSE(&o, &err, "--layers", "8,2", "--data", "synthetic"), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "TRAIN_TOPO_CKPT_EXIT='126': want an exit status from 1 to 125"));
	unsetenv("TRAIN_TOPO_CKPT_EXIT");
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("train options", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "defaults", test_defaults);
	CU_add_test(s, "all options", test_all_options);
	CU_add_test(s, "bad values name the option", test_bad_values_name_the_option);
	CU_add_test(s, "summary place", test_summary_place);
	CU_add_test(s, "checkpoint exit from the environment", test_ckpt_exit_from_env);
	return 0;
}

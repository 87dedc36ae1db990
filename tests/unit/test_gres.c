/* SPDX-License-Identifier: MIT */
/* test_gres.c — GPU lists from every GRES variable form, the precedence between the variables,
 * and every malformed value (the message must name the variable). */
#include "cunit_main.h"
#include "gres.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* The list joined with commas, or "ERR: message". */
static const char *parsed(const char *var, const char *value)
{
	static char buf[TT_GPU_MAX * TT_GPU_ID_LEN + 64];
	struct tt_gpu_list l;
	tt_err err;

	if (tt_gpu_list_parse(var, value, &l, &err) != 0) {
		snprintf(buf, sizeof(buf), "ERR: %s", err.msg);
		return buf;
	}
	if (tt_gpu_list_join(&l, 0, l.n, buf, sizeof(buf), &err) != 0)
		snprintf(buf, sizeof(buf), "JOIN ERR: %s", err.msg);
	return buf;
}

static void test_index_lists_and_ranges(void)
{
	CU_ASSERT_STRING_EQUAL(parsed("SLURM_STEP_GPUS", "0"), "0");
	CU_ASSERT_STRING_EQUAL(parsed("SLURM_STEP_GPUS", "0,1,2,3"), "0,1,2,3");
	CU_ASSERT_STRING_EQUAL(parsed("SLURM_JOB_GPUS", "0-3,6"), "0,1,2,3,6");
	CU_ASSERT_STRING_EQUAL(parsed("SLURM_JOB_GPUS", "4-7"), "4,5,6,7");
	CU_ASSERT_STRING_EQUAL(parsed("SLURM_JOB_GPUS", "6,2"), "6,2");
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES", "1,0"), "1,0");
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES", "07"), "7");
}

static void test_uuids_kept_verbatim(void)
{
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES",
				      "GPU-8f2c1a3e-0b1d-4c5e-9f00-123456789abc,GPU-1111"),
			       "GPU-8f2c1a3e-0b1d-4c5e-9f00-123456789abc,GPU-1111");
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES",
				      "MIG-GPU-8f2c1a3e-0b1d-4c5e-9f00-123456789abc/1/0"),
			       "MIG-GPU-8f2c1a3e-0b1d-4c5e-9f00-123456789abc/1/0");
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES",
				      "MIG-5c0ee6f7-2d8e-5b37-a1c8-f0e4e3e8e2a1,0"),
			       "MIG-5c0ee6f7-2d8e-5b37-a1c8-f0e4e3e8e2a1,0");
}

static void test_no_devices(void)
{
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES", "NoDevFiles"), "");
	CU_ASSERT_STRING_EQUAL(parsed("CUDA_VISIBLE_DEVICES", ""), "");
}

static void expect_bad(const char *var, const char *value, const char *needle)
{
	const char *got = parsed(var, value);
	char want[256];

	snprintf(want, sizeof(want), "ERR: %s='%s'", var, value);
	CU_ASSERT_EQUAL(strncmp(got, want, strlen(want)), 0);
	if (!strstr(got, needle))
		fprintf(stderr, "\n'%s' lacks '%s'\n", got, needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(got, needle));
}

static void test_malformed(void)
{
	char many[512] = "0";

	expect_bad("SLURM_STEP_GPUS", "0,,1", "empty entry");
	expect_bad("SLURM_STEP_GPUS", "0,", "empty entry");
	expect_bad("SLURM_STEP_GPUS", "3-1", "reversed range '3-1'");
	expect_bad("SLURM_JOB_GPUS", "a", "'a' is not a GPU index");
	expect_bad("SLURM_JOB_GPUS", "1-", "'' is not a GPU index");
	expect_bad("SLURM_JOB_GPUS", "-1", "is not a GPU index");
	expect_bad("SLURM_JOB_GPUS", " 1", "is not a GPU index");
	expect_bad("CUDA_VISIBLE_DEVICES", "GPU-", "is not a GPU index");
	expect_bad("CUDA_VISIBLE_DEVICES", "99999999", "is not a GPU index");
	expect_bad("CUDA_VISIBLE_DEVICES", "0,1,0", "device '0' is listed twice");
	expect_bad("SLURM_JOB_GPUS", "0-3,2", "device '2' is listed twice");
	expect_bad("SLURM_JOB_GPUS", "0-64", "more than 64 GPUs");
	for (int i = 1; i < 65; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d", i);
	expect_bad("GPU_DEVICE_ORDINAL", many, "more than 64 GPUs");
}

static void test_join_slices(void)
{
	struct tt_gpu_list l;
	char buf[8];
	tt_err err;

	CU_ASSERT_EQUAL(tt_gpu_list_parse("V", "0-7", &l, &err), 0);
	CU_ASSERT_EQUAL(tt_gpu_list_join(&l, 2, 2, buf, sizeof(buf), &err), 0);
	CU_ASSERT_STRING_EQUAL(buf, "2,3");
	CU_ASSERT_EQUAL(tt_gpu_list_join(&l, 7, 2, buf, sizeof(buf), &err), -1);
	CU_ASSERT_EQUAL(tt_gpu_list_join(&l, 0, 8, buf, sizeof(buf), &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not fit in 8 bytes"));
	/* "2,3" takes 4 bytes with its terminator: a buffer of 4 holds it, one of 3 is refused, never
	 * cut to "2,". */
	CU_ASSERT_EQUAL(tt_gpu_list_join(&l, 2, 2, buf, 4, &err), 0);
	CU_ASSERT_STRING_EQUAL(buf, "2,3");
	CU_ASSERT_EQUAL(tt_gpu_list_join(&l, 2, 2, buf, 3, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not fit in 3 bytes"));
}

/* Node GPUs from an environment given as "NAME=VALUE" strings; returns the joined list. */
static const char *node_gpus(char **env, char *checked, size_t len, int *rc)
{
	static char buf[sizeof(tt_err) + 8];
	struct tt_gpu_list l;
	tt_err err;

	*rc = tt_gres_node_gpus(tt_env_array, env, &l, checked, len, &err);
	if (*rc != 0) {
		snprintf(buf, sizeof(buf), "ERR: %s", err.msg);
		return buf;
	}
	tt_gpu_list_join(&l, 0, l.n, buf, sizeof(buf), &err);
	return buf;
}

static void test_precedence(void)
{
	/* Highest precedence last, so cutting the array's tail removes the winner. */
	char *env[] = {"SLURM_GPUS_ON_NODE=4", "SLURM_JOB_GPUS=0-7", "SLURM_STEP_GPUS=4-7",
		       "GPU_DEVICE_ORDINAL=0,1,3", "CUDA_VISIBLE_DEVICES=0,1,2", NULL};
	char checked[160];
	int rc;

	CU_ASSERT_STRING_EQUAL(node_gpus(env, checked, sizeof(checked), &rc), "0,1,2");
	CU_ASSERT_STRING_EQUAL(checked, "CUDA_VISIBLE_DEVICES");
	env[4] = NULL;
	CU_ASSERT_STRING_EQUAL(node_gpus(env, checked, sizeof(checked), &rc), "0,1,3");
	env[3] = NULL;
	CU_ASSERT_STRING_EQUAL(node_gpus(env, checked, sizeof(checked), &rc), "4,5,6,7");
	CU_ASSERT_STRING_EQUAL(checked, "CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, "
			       "SLURM_STEP_GPUS");
	env[2] = NULL;
	CU_ASSERT_STRING_EQUAL(node_gpus(env, checked, sizeof(checked), &rc), "0,1,2,3,4,5,6,7");
	env[1] = NULL;
	CU_ASSERT_STRING_EQUAL(node_gpus(env, checked, sizeof(checked), &rc), "0,1,2,3");
	CU_ASSERT_STRING_EQUAL(checked, "CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, "
			       "SLURM_STEP_GPUS, SLURM_JOB_GPUS, SLURM_GPUS_ON_NODE");
	CU_ASSERT_EQUAL(rc, 0);
}

static void test_gpu_device_ordinal_and_hidden(void)
{
	char *ordinal[] = {"GPU_DEVICE_ORDINAL=2,3", "SLURM_JOB_GPUS=2,3", NULL};
	char *hidden[] = {"CUDA_VISIBLE_DEVICES=NoDevFiles", "SLURM_JOB_GPUS=0-3", NULL};
	int rc;

	CU_ASSERT_STRING_EQUAL(node_gpus(ordinal, NULL, 0, &rc), "2,3");
	/* The first variable that is set decides, even when it hides every device. */
	CU_ASSERT_STRING_EQUAL(node_gpus(hidden, NULL, 0, &rc), "");
	CU_ASSERT_EQUAL(rc, 0);
}

static void test_none_and_bad_counts(void)
{
	char *none[] = {"PATH=/bin", NULL};
	char *bad_count[] = {"SLURM_GPUS_ON_NODE=two", NULL};
	char *big_count[] = {"SLURM_GPUS_ON_NODE=65", NULL};
	char *bad_list[] = {"SLURM_STEP_GPUS=0,x", NULL};
	char checked[40];
	int rc;

	CU_ASSERT_STRING_EQUAL(node_gpus(none, checked, sizeof(checked), &rc), "");
	CU_ASSERT_EQUAL(rc, 0);
	/* Truncated to the buffer, never overflowing it. */
	CU_ASSERT_EQUAL(strlen(checked), sizeof(checked) - 1);
	CU_ASSERT_STRING_EQUAL(node_gpus(bad_count, NULL, 0, &rc),
			       "ERR: SLURM_GPUS_ON_NODE='two' is not a GPU count (0..64)");
	CU_ASSERT_EQUAL(rc, -1);
	node_gpus(big_count, NULL, 0, &rc);
	CU_ASSERT_EQUAL(rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(node_gpus(bad_list, NULL, 0, &rc),
				      "SLURM_STEP_GPUS='0,x': 'x' is not a GPU index"));
}

static bool bound(char **env)
{
	struct tt_gpu_list l;
	bool b = false;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_gres_node_gpus(tt_env_array, env, &l, NULL, 0, &err), 0);
	CU_ASSERT_EQUAL(tt_gres_bound_per_task(tt_env_array, env, &l, &b, &err), 0);
	return b;
}

/* Environments as Slurm 22.05 gives them to tasks (recorded on the test cluster). */
static void test_bound_per_task(void)
{
	char *gpus_per_task[] = {"CUDA_VISIBLE_DEVICES=2,3", "GPU_DEVICE_ORDINAL=2,3",
				 "SLURM_GPUS_ON_NODE=4", "SLURM_STEP_GPUS=2,3", NULL};
	char *ntasks_per_gpu[] = {"CUDA_VISIBLE_DEVICES=1", "SLURM_GPUS_ON_NODE=2",
				  "SLURM_STEP_GPUS=1", NULL};
	char *shared[] = {"CUDA_VISIBLE_DEVICES=0,1,2,3", "SLURM_GPUS_ON_NODE=4",
			  "SLURM_STEP_GPUS=0,1,2,3", NULL};
	char *bind_none[] = {"SLURM_GPUS_ON_NODE=2", NULL};
	char *from_sbatch[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_GPUS_PER_TASK=1", NULL};
	char *tres[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_TRES_PER_TASK=cpu=2,gres/gpu:1", NULL};
	char *bind_env[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_GPU_BIND=map_gpu:0,1", NULL};
	char *bind_env_none[] = {"CUDA_VISIBLE_DEVICES=0", "SLURM_GPU_BIND=none", NULL};
	char *bad[] = {"SLURM_GPUS_ON_NODE=x", NULL};
	struct tt_gpu_list l = {0};
	bool b;
	tt_err err;

	CU_ASSERT_TRUE(bound(gpus_per_task));
	CU_ASSERT_TRUE(bound(ntasks_per_gpu));
	CU_ASSERT_FALSE(bound(shared));
	CU_ASSERT_FALSE(bound(bind_none));
	CU_ASSERT_TRUE(bound(from_sbatch));
	CU_ASSERT_TRUE(bound(tres));
	CU_ASSERT_TRUE(bound(bind_env));
	CU_ASSERT_FALSE(bound(bind_env_none));
	CU_ASSERT_EQUAL(tt_gres_bound_per_task(tt_env_array, bad, &l, &b, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_GPUS_ON_NODE='x'"));
}

static void test_node_index(void)
{
	char *constrained[] = { "CUDA_VISIBLE_DEVICES=0,1", "SLURM_STEP_GPUS=4,6", NULL };
	char *plain[] = { "CUDA_VISIBLE_DEVICES=2,3,4,5", NULL };
	char *uuids[] = { "CUDA_VISIBLE_DEVICES=GPU-aa,GPU-bb", NULL };
	struct tt_gpu_list l;
	tt_err err;

	/* under a device cgroup CUDA's 1 is the node's GPU 6 */
	CU_ASSERT_EQUAL_FATAL(tt_gres_node_gpus(tt_env_array, constrained, &l, NULL, 0, &err), 0);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, constrained, &l, "1"), 6);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, constrained, &l, "0,1"), 4);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_none, NULL, &l, "1"), 1);
	/* without a global list the visible index is the node's */
	CU_ASSERT_EQUAL_FATAL(tt_gres_node_gpus(tt_env_array, plain, &l, NULL, 0, &err), 0);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, plain, &l, "4,5"), 4);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, plain, &l, "7"), -1);	/* not visible */
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, plain, &l, ""), -1);
	/* UUIDs have no index */
	CU_ASSERT_EQUAL_FATAL(tt_gres_node_gpus(tt_env_array, uuids, &l, NULL, 0, &err), 0);
	CU_ASSERT_EQUAL(tt_gres_node_index(tt_env_array, uuids, &l, "GPU-bb"), -1);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("gres", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "index lists and ranges", test_index_lists_and_ranges);
	CU_add_test(s, "UUIDs kept verbatim", test_uuids_kept_verbatim);
	CU_add_test(s, "no devices", test_no_devices);
	CU_add_test(s, "malformed values name the variable", test_malformed);
	CU_add_test(s, "join slices", test_join_slices);
	CU_add_test(s, "precedence of the variables", test_precedence);
	CU_add_test(s, "GPU_DEVICE_ORDINAL and hidden devices", test_gpu_device_ordinal_and_hidden);
	CU_add_test(s, "nothing set and bad counts", test_none_and_bad_counts);
	CU_add_test(s, "GPUs bound per task by Slurm", test_bound_per_task);
	CU_add_test(s, "node-wide index of a task's GPU", test_node_index);
	return 0;
}

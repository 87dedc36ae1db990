/* SPDX-License-Identifier: MIT */
/* test_layout.c — the env contract: facts from a Slurm-like environment, even and uneven task
 * layouts, GPU splits, the worker variant, the MASTER_PORT formula and every contradiction. */
#include "cunit_main.h"
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Facts for task (procid, localid) on node nodeid of a step; gpus is a CUDA_VISIBLE_DEVICES
 * value or NULL. */
static struct tt_step_facts facts(const char *nodelist, const char *tpn, unsigned nodeid,
				  unsigned procid, unsigned localid, const char *gpus)
{
	char v[6][64];
	char *env[10] = {"SLURM_JOB_ID=1234", "SLURM_STEP_ID=0", v[0], v[1], v[2], v[3], v[4]};
	struct tt_step_facts f;
	tt_err err = {""};

	snprintf(v[0], sizeof(v[0]), "SLURM_STEP_NODELIST=%s", nodelist);
	snprintf(v[1], sizeof(v[1]), "SLURM_STEP_TASKS_PER_NODE=%s", tpn);
	snprintf(v[2], sizeof(v[2]), "SLURM_NODEID=%u", nodeid);
	snprintf(v[3], sizeof(v[3]), "SLURM_PROCID=%u", procid);
	snprintf(v[4], sizeof(v[4]), "SLURM_LOCALID=%u", localid);
	if (gpus) {
		snprintf(v[5], sizeof(v[5]), "CUDA_VISIBLE_DEVICES=%s", gpus);
		env[7] = v[5];
	}
	if (tt_step_facts_from_env(&f, tt_env_array, env, &err) != 0)
		fprintf(stderr, "\nfacts: %s\n", err.msg);
	return f;
}

/* The env as "NAME=VALUE NAME=VALUE ..." through tt_task_env_foreach. */
static int collect(void *ctx, const char *name, const char *value)
{
	char *buf = ctx;

	snprintf(buf + strlen(buf), 2048 - strlen(buf), "%s%s=%s", buf[0] ? " " : "", name, value);
	return 0;
}

static const char *env_text(const struct tt_task_env *e)
{
	static char buf[2048];

	buf[0] = '\0';
	tt_task_env_foreach(e, collect, buf);
	return buf;
}

static void test_facts_from_env(void)
{
	char *env[] = {"SLURM_JOBID=77", "SLURM_STEPID=3", "SLURM_JOB_NODELIST=n[1-8]",
		       "SLURM_NODELIST=ignored", "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=2(x2)",
		       "SLURM_NTASKS=4", "SLURM_PROCID=3", "SLURM_LOCALID=1",
		       "SLURM_STEP_GPUS=4-7", "SLURM_GPUS_PER_TASK=1", "OMP_NUM_THREADS=2",
		       "SLURM_STEP_RESV_PORTS=12000-12003", NULL};
	char *bare[] = {"SLURM_JOB_ID=5", "SLURM_NODELIST=a", "SLURM_NODEID=0", NULL};
	struct tt_step_facts f;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.job_id, 77);
	CU_ASSERT_EQUAL(f.step_id, 3);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "n[1-8]");
	CU_ASSERT_EQUAL(f.node_index, 1);
	CU_ASSERT_STRING_EQUAL(f.tasks_per_node, "2(x2)");
	CU_ASSERT_EQUAL(f.ntasks, 4);
	CU_ASSERT_EQUAL(f.task_id, 3);
	CU_ASSERT_EQUAL(f.local_id, 1);
	CU_ASSERT_EQUAL(f.gpus.n, 4);
	CU_ASSERT_STRING_EQUAL(f.gpus.id[0], "4");
	CU_ASSERT_STRING_EQUAL(f.gpus_checked,
			       "CUDA_VISIBLE_DEVICES, GPU_DEVICE_ORDINAL, SLURM_STEP_GPUS");
	CU_ASSERT_TRUE(f.slurm_bound_gpus);
	CU_ASSERT_TRUE(f.omp_set);
	CU_ASSERT_STRING_EQUAL(f.resv_ports, "12000-12003");
	CU_ASSERT_EQUAL(f.ports.lo, TT_PORT_LO_DEFAULT);
	CU_ASSERT_EQUAL(f.ports.hi, TT_PORT_HI_DEFAULT);
	CU_ASSERT_EQUAL(f.cpus, 0);

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, bare, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_BATCH);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "a");
	CU_ASSERT_EQUAL(f.gpus.n, 0);
	CU_ASSERT_FALSE(f.slurm_bound_gpus);
	CU_ASSERT_FALSE(f.omp_set);
}

/* sbatch -N2 -n4 on Slurm 22.05: the batch script's environment as recorded (no step id). */
static void test_batch_step_is_one_task(void)
{
	char *env[] = {"SLURMD_NODENAME=node1", "SLURM_JOB_NODELIST=node[1-2]",
		       "SLURM_JOB_NUM_NODES=2", "SLURM_LOCALID=0", "SLURM_NNODES=2",
		       "SLURM_NODEID=0", "SLURM_NODELIST=node[1-2]", "SLURM_NTASKS=4",
		       "SLURM_PROCID=0", "SLURM_TASKS_PER_NODE=3,1", "SLURM_JOB_ID=9",
		       "SLURM_JOB_GPUS=0,1", NULL};
	struct tt_step_facts f;
	struct tt_task_env e;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_BATCH);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "node1");
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 2, NULL, 1, &e, &err), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), "RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 "
				      "LOCAL_WORLD_SIZE=2 NODE_RANK=0 GROUP_RANK=0 NNODES=1 "
				      "MASTER_ADDR=node1 "));
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "1");
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, &err), 0);
	CU_ASSERT(e.rank == 0 && e.world_size == 1 && e.nnodes == 1);
	/* Without SLURMD_NODENAME, the first host of the job's nodelist. */
	env[0] = "SLURMD_NODENAM=";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "node1");
	env[1] = "SLURM_JOB_NODELIST=node[1-";
	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "batch step without SLURMD_NODENAME: nodelist"));
}

/* Like an adapter over spank_getenv: one buffer, overwritten by every call. */
static const char *one_buffer(void *ctx, const char *name)
{
	static char buf[TT_NODELIST_LEN];
	const char *v = tt_env_array(ctx, name);

	memset(buf, 'X', sizeof(buf) - 1);
	if (!v)
		return NULL;
	snprintf(buf, sizeof(buf), "%s", v);
	return buf;
}

static void test_getenv_may_reuse_one_buffer(void)
{
	char *env[] = {"SLURM_JOB_ID=77", "SLURM_STEP_ID=3", "SLURM_STEP_NODELIST=n[1-2]",
		       "SLURM_NODEID=1", "SLURM_STEP_TASKS_PER_NODE=2(x2)", "SLURM_PROCID=3",
		       "SLURM_LOCALID=1", "SLURM_STEP_GPUS=4-7", "SLURM_GPUS_ON_NODE=4",
		       "SLURM_TRES_PER_TASK=gres/gpu:2", "SLURM_STEP_RESV_PORTS=12000", NULL};
	struct tt_step_facts a, b;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&a, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&b, one_buffer, env, &err), 0);
	CU_ASSERT_EQUAL(memcmp(&a, &b, sizeof(a)), 0);
	/* Bound by SLURM_TRES_PER_TASK alone, read before the other variables. */
	CU_ASSERT_TRUE(b.slurm_bound_gpus);
	env[9] = "SLURM_TRES_PER_TASK=cpu:2";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&b, one_buffer, env, &err), 0);
	CU_ASSERT_FALSE(b.slurm_bound_gpus);
	/* Bound: 4 GPUs visible of the step's 8 on this node. */
	env[8] = "SLURM_GPUS_ON_NODE=8";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&b, one_buffer, env, &err), 0);
	CU_ASSERT_TRUE(b.slurm_bound_gpus);
}

static void expect_facts_error(char **env, const char *needle)
{
	struct tt_step_facts f;
	tt_err err = {""};

	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), -1);
	if (!strstr(err.msg, needle))
		fprintf(stderr, "\n'%s' lacks '%s'\n", err.msg, needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, needle));
}

/* Slurm 26.05 prints its own steps' ids with "%d": the batch script has SLURM_STEP_ID=-5. */
static void test_special_step_ids_printed_negative(void)
{
	char *env[] = {"SLURM_STEP_ID=-5", "SLURMD_NODENAME=node2", "SLURM_JOB_NODELIST=node[1-2]",
		       "SLURM_NODEID=1", "SLURM_TASKS_PER_NODE=2(x2)", "SLURM_JOB_ID=9", NULL};
	struct tt_step_facts f;
	struct tt_task_env e;
	tt_err err = {""};

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_BATCH);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "node2");
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute(&f, &e, &err), 0);
	CU_ASSERT(e.rank == 0 && e.world_size == 1 && e.nnodes == 1);
	env[0] = "SLURM_STEP_ID=4294967291";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_BATCH);
	env[0] = "SLURM_STEP_ID=-4";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_EXTERN);
	env[0] = "SLURM_STEP_ID=-6";
	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(f.step_id, TT_STEP_INTERACTIVE);
	env[0] = "SLURM_STEP_ID=-7";
	expect_facts_error(env, "SLURM_STEP_ID='-7' is neither a step number nor one of Slurm's");
	env[0] = "SLURM_STEP_ID=-";
	expect_facts_error(env, "SLURM_STEP_ID='-' is neither a step number");
	env[0] = "SLURM_STEP_ID=-1";
	expect_facts_error(env, "SLURM_STEP_ID='-1' is neither");
}

static void test_facts_errors(void)
{
	char *no_job[] = {"SLURM_NODELIST=a", "SLURM_NODEID=0", NULL};
	char *no_list[] = {"SLURM_JOB_ID=1", "SLURM_NODEID=0", NULL};
	char *no_node[] = {"SLURM_JOB_ID=1", "SLURM_NODELIST=a", NULL};
	char *bad_job[] = {"SLURM_JOB_ID=12x", "SLURM_NODELIST=a", "SLURM_NODEID=0", NULL};
	char *bad_proc[] = {"SLURM_JOB_ID=1", "SLURM_NODELIST=a", "SLURM_NODEID=0",
			    "SLURM_PROCID=-1", NULL};
	char *bad_gpus[] = {"SLURM_JOB_ID=1", "SLURM_NODELIST=a", "SLURM_NODEID=0",
			    "CUDA_VISIBLE_DEVICES=0,,1", NULL};
	char *unbound[] = {"SLURM_JOB_ID=1", "SLURM_NODELIST=a", "SLURM_NODEID=0",
			   "SLURM_GPU_BIND=none", NULL};
	char big[TT_NODELIST_LEN + 32] = "SLURM_STEP_NODELIST=";
	char *too_long[] = {"SLURM_JOB_ID=1", "SLURM_NODEID=0", big, NULL};
	struct tt_step_facts f;
	tt_err err;

	expect_facts_error(no_job, "SLURM_JOB_ID is not set");
	expect_facts_error(no_list, "SLURM_STEP_NODELIST is not set");
	expect_facts_error(no_node, "SLURM_NODEID is not set");
	expect_facts_error(bad_job, "SLURM_JOB_ID='12x' is not an integer in [0, 4294967295]");
	expect_facts_error(bad_proc, "SLURM_PROCID='-1'");
	expect_facts_error(bad_gpus, "CUDA_VISIBLE_DEVICES='0,,1': empty entry");
	memset(big + strlen(big), 'a', TT_NODELIST_LEN);
	big[sizeof(big) - 1] = '\0';
	expect_facts_error(too_long, "SLURM_STEP_NODELIST is");
	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, unbound, &err), 0);
	CU_ASSERT_FALSE(f.slurm_bound_gpus);
}

/* A 10k-node step Slurm cannot compress (every other node of a 20k-node cluster: "n[0,2,...,
 * 19998]", 54,447 characters): the last node's task gets its rank and
 * the first host as MASTER_ADDR. */
static void test_facts_uncompressible_10k_nodes(void)
{
	size_t cap = 80000, len;
	char *list = malloc(cap);
	char *env[] = {"SLURM_JOB_ID=9", "SLURM_STEP_ID=0", list, "SLURM_NODEID=9999",
		       "SLURM_STEP_TASKS_PER_NODE=1(x10000)", "SLURM_PROCID=9999", NULL};
	struct tt_step_facts *f = malloc(sizeof(*f));
	struct tt_task_env e;
	tt_err err = {""};

	CU_ASSERT_FATAL(list != NULL && f != NULL);
	len = (size_t)snprintf(list, cap, "SLURM_STEP_NODELIST=n[");
	for (int i = 0; i < 10000; i++)
		len += (size_t)snprintf(list + len, cap - len, "%s%d", i ? "," : "", 2 * i);
	snprintf(list + len, cap - len, "]");
	CU_ASSERT(strlen(list) > 50000);
	CU_ASSERT_EQUAL(tt_step_facts_from_env(f, tt_env_array, env, &err), 0);
	if (err.msg[0])
		printf("\n  %s\n", err.msg);
	CU_ASSERT_EQUAL(tt_layout_compute(f, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 9999);
	CU_ASSERT_EQUAL(e.world_size, 10000);
	CU_ASSERT_EQUAL(e.node_rank, 9999);
	CU_ASSERT_EQUAL(e.nnodes, 10000);
	CU_ASSERT_STRING_EQUAL(e.master_addr, "n0");
	free(f);
	free(list);
}

/* A 10k-node step whose nodes alternate between 2 and 1 tasks (mixed hardware): Slurm cannot
 * compress its tasks per node ("2,1,2,1,...", 19,999 characters). The second task of node 9998
 * and the task of node 9999 get their ranks among 15000. */
static void test_facts_uncompressible_tasks_per_node(void)
{
	size_t cap = 40000, len;
	char *tpn = malloc(cap);
	char *env[] = {"SLURM_JOB_ID=9", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=n[0-9999]", "SLURM_NODEID=9998",
		       tpn, "SLURM_PROCID=14998", "SLURM_LOCALID=1", NULL};
	struct tt_step_facts *f = malloc(sizeof(*f));
	struct tt_task_env e;
	tt_err err = {""};

	CU_ASSERT_FATAL(tpn != NULL && f != NULL);
	len = (size_t)snprintf(tpn, cap, "SLURM_STEP_TASKS_PER_NODE=");
	for (int i = 0; i < 10000; i++)
		len += (size_t)snprintf(tpn + len, cap - len, "%s%d", i ? "," : "", i % 2 ? 1 : 2);
	CU_ASSERT(strlen(tpn) > 19000);
	CU_ASSERT_EQUAL(tt_step_facts_from_env(f, tt_env_array, env, &err), 0);
	if (err.msg[0])
		printf("\n  %s\n", err.msg);
	CU_ASSERT_EQUAL(tt_layout_compute(f, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 14998);
	CU_ASSERT_EQUAL(e.world_size, 15000);
	CU_ASSERT_EQUAL(e.local_rank, 1);
	CU_ASSERT_EQUAL(e.local_world_size, 2);
	CU_ASSERT_EQUAL(e.node_rank, 9998);
	env[3] = "SLURM_NODEID=9999";
	env[5] = "SLURM_PROCID=14999";
	env[6] = "SLURM_LOCALID=0";
	CU_ASSERT_EQUAL(tt_step_facts_from_env(f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL(tt_layout_compute(f, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 14999);
	CU_ASSERT_EQUAL(e.local_world_size, 1);
	CU_ASSERT_STRING_EQUAL(e.master_addr, "n0");
	free(f);
	free(tpn);
}

/* tt_layout_compute for the task and its env text, or "ERR: message". */
static const char *task_env(const struct tt_step_facts *f, struct tt_task_env *e)
{
	static char buf[sizeof(tt_err) + 8];
	tt_err err;

	if (tt_layout_compute(f, e, &err) != 0) {
		snprintf(buf, sizeof(buf), "ERR: %s", err.msg);
		return buf;
	}
	return env_text(e);
}

static void test_even_layout(void)
{
	struct tt_step_facts f = facts("gpu[07-08]", "4(x2)", 1, 6, 2, "0,1,2,3,4,5,6,7");
	struct tt_task_env e;
	char want[512];

	snprintf(want, sizeof(want), "RANK=6 WORLD_SIZE=8 LOCAL_RANK=2 LOCAL_WORLD_SIZE=4 "
		 "NODE_RANK=1 GROUP_RANK=1 NNODES=2 MASTER_ADDR=gpu07 MASTER_PORT=%u "
		 "CUDA_VISIBLE_DEVICES=4,5", tt_master_port(1234, 0, f.ports));
	CU_ASSERT_STRING_EQUAL(task_env(&f, &e), want);
	CU_ASSERT_EQUAL(e.nwarnings, 0);
}

static void test_uneven_layouts(void)
{
	/* -n7 over 4 nodes: 2,2,2,1. */
	struct tt_step_facts f = facts("n[1-4]", "2(x3),1", 3, 6, 0, NULL);
	struct tt_task_env e;

	CU_ASSERT_PTR_NOT_NULL(strstr(task_env(&f, &e), "RANK=6 WORLD_SIZE=7 LOCAL_RANK=0 "
				      "LOCAL_WORLD_SIZE=1 NODE_RANK=3 GROUP_RANK=3 NNODES=4 "
				      "MASTER_ADDR=n1 "));
	f = facts("n[1-4]", "2(x3),1", 2, 5, 1, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(task_env(&f, &e), "RANK=5 WORLD_SIZE=7 LOCAL_RANK=1 "
				      "LOCAL_WORLD_SIZE=2 NODE_RANK=2 "));
	/* -N2 -n5: 3,2. */
	f = facts("a,b", "3,2", 0, 2, 2, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(task_env(&f, &e), "RANK=2 WORLD_SIZE=5 LOCAL_RANK=2 "
				      "LOCAL_WORLD_SIZE=3 NODE_RANK=0 "));
	f = facts("a,b", "3,2", 1, 4, 1, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(task_env(&f, &e), "RANK=4 WORLD_SIZE=5 LOCAL_RANK=1 "
				      "LOCAL_WORLD_SIZE=2 NODE_RANK=1 GROUP_RANK=1 NNODES=2 "
				      "MASTER_ADDR=a "));
	/* -m cyclic: RANK is Slurm's task id, not recomputed from the node. */
	f = facts("a,b", "2(x2)", 1, 1, 0, NULL);
	CU_ASSERT_PTR_NOT_NULL(strstr(task_env(&f, &e), "RANK=1 WORLD_SIZE=4 LOCAL_RANK=0 "));
}

/* CUDA_VISIBLE_DEVICES of every local task of a node with gpus, joined by '|'. */
static const char *split(const char *gpus, unsigned ntasks, size_t *warnings)
{
	static char buf[512];
	char tpn[16];

	buf[0] = '\0';
	*warnings = 0;
	snprintf(tpn, sizeof(tpn), "%u", ntasks);
	for (unsigned t = 0; t < ntasks; t++) {
		struct tt_step_facts f = facts("a", tpn, 0, t, t, gpus);
		struct tt_task_env e;
		tt_err err;

		if (tt_layout_compute(&f, &e, &err) != 0)
			return "ERR";
		strncat(buf, t ? "|" : "", sizeof(buf) - strlen(buf) - 1);
		strncat(buf, e.cuda_visible_devices, sizeof(buf) - strlen(buf) - 1);
		*warnings += e.nwarnings;
	}
	return buf;
}

static void test_gpu_splits(void)
{
	struct tt_step_facts f;
	struct tt_task_env e;
	size_t w;

	CU_ASSERT_STRING_EQUAL(split("0,1,2,3,4,5,6,7", 4, &w), "0,1|2,3|4,5|6,7");
	CU_ASSERT_EQUAL(w, 0);
	CU_ASSERT_STRING_EQUAL(split("0-7", 8, &w), "0|1|2|3|4|5|6|7");
	CU_ASSERT_EQUAL(w, 0);
	CU_ASSERT_STRING_EQUAL(split("GPU-a,GPU-b", 2, &w), "GPU-a|GPU-b");
	CU_ASSERT_STRING_EQUAL(split("0,1,2", 4, &w), "0|0|1|2");
	CU_ASSERT_EQUAL(w, 4);
	CU_ASSERT_STRING_EQUAL(split("0-5", 4, &w), "0|1|2|3");
	CU_ASSERT_EQUAL(w, 4);
	f = facts("a", "4", 0, 3, 3, "0,1,2");
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_STRING_EQUAL(e.warnings[0], "3 GPUs for 4 tasks on this node: tasks share GPUs");
	f = facts("a", "4", 0, 0, 0, "0-5");
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_STRING_EQUAL(e.warnings[0], "6 GPUs for 4 tasks on this node: 2 GPUs stay unused");
	/* No GPUs: CUDA_VISIBLE_DEVICES is not touched and nothing is worth a warning. */
	CU_ASSERT_STRING_EQUAL(split(NULL, 2, &w), "|");
	CU_ASSERT_EQUAL(w, 0);
}

static void test_slurm_binding_respected(void)
{
	struct tt_step_facts f = facts("a", "2", 0, 1, 1, "3");
	struct tt_task_env e;

	f.slurm_bound_gpus = true;
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "");
	CU_ASSERT_PTR_NULL(strstr(env_text(&e), "CUDA_VISIBLE_DEVICES"));
}

/* srun -n2 --gpus-per-task=2 on Slurm 22.05: task 1's environment as recorded. */
static void test_slurm_binding_detected_from_env(void)
{
	char *env[] = {"SLURM_JOB_ID=8", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=node1",
		       "SLURM_NODEID=0", "SLURM_STEP_TASKS_PER_NODE=2", "SLURM_PROCID=1",
		       "SLURM_LOCALID=1", "SLURM_GPUS_ON_NODE=4", "SLURM_STEP_GPUS=2,3",
		       "CUDA_VISIBLE_DEVICES=2,3", "GPU_DEVICE_ORDINAL=2,3", NULL};
	struct tt_step_facts f;
	struct tt_task_env e;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_TRUE(f.slurm_bound_gpus);
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, &err), 0);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "");
	/* train-run in that task splits the task's two GPUs over its workers. */
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 2, NULL, 1, &e, &err), 0);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "3");
}

static void test_omp_threads(void)
{
	struct tt_step_facts f = facts("a", "2", 0, 1, 1, NULL);
	struct tt_task_env e;

	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_PTR_NULL(strstr(env_text(&e), "OMP_NUM_THREADS"));
	f.cpus = 12;
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), " OMP_NUM_THREADS=12"));
	f.omp_set = true;
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_EQUAL(e.omp_num_threads, 0);
}

static void test_worker_variant(void)
{
	struct tt_step_facts f = facts("gpu[1-3]", "1(x3)", 2, 2, 0, "0-7");
	struct tt_task_env e;
	char want[512];
	tt_err err;

	f.cpus = 64;
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 8, NULL, 5, &e, &err), 0);
	snprintf(want, sizeof(want), "RANK=21 WORLD_SIZE=24 LOCAL_RANK=5 LOCAL_WORLD_SIZE=8 "
		 "NODE_RANK=2 GROUP_RANK=2 NNODES=3 MASTER_ADDR=gpu1 MASTER_PORT=%u "
		 "CUDA_VISIBLE_DEVICES=5 OMP_NUM_THREADS=8 SLURM_PROCID=21 SLURM_LOCALID=5 "
		 "SLURM_NTASKS=24 SLURM_NPROCS=24 SLURM_STEP_NUM_TASKS=24 SLURM_NTASKS_PER_NODE=8 "
		 "SLURM_TASKS_PER_NODE=8(x3) SLURM_STEP_TASKS_PER_NODE=8(x3) "
		 "SLURM_GTIDS=16,17,18,19,20,21,22,23 SLURM_NODEID=2", tt_master_port(1234, 0, f.ports));
	CU_ASSERT_STRING_EQUAL(env_text(&e), want);
	/* Standalone facts (not from Slurm) give no SLURM_* to contradict. */
	f.from_slurm = false;
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 8, NULL, 5, &e, &err), 0);
	CU_ASSERT_PTR_NULL(strstr(env_text(&e), "SLURM_"));
	f.from_slurm = true;
	/* Workers split the task's GPUs even when Slurm bound them to the task. */
	f.slurm_bound_gpus = true;
	f.cpus = 3;
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 4, NULL, 3, &e, &err), 0);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "6,7");
	CU_ASSERT_EQUAL(e.omp_num_threads, 1);
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 4, NULL, 4, &e, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "worker 4 of 4"));
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 0, NULL, 0, &e, &err), -1);
	/* The worker variant needs no tasks-per-node. */
	f.tasks_per_node[0] = '\0';
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 2, NULL, 1, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 5);
}

/* srun --gpus=12 -N2: node 0 got 8 GPUs, node 1 got 4; the census told every node. */
static void test_worker_uneven_nodes(void)
{
	struct tt_step_facts f = facts("node[1-2]", "1(x2)", 1, 1, 0, "0,1,2,3");
	const uint32_t counts[] = { 8, 4 }, three[] = { 2, 0, 3 }, wrong[] = { 8, 8 };
	struct tt_task_env e;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 4, counts, 2, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 10);
	CU_ASSERT_EQUAL(e.world_size, 12);
	CU_ASSERT_EQUAL(e.local_rank, 2);
	CU_ASSERT_EQUAL(e.local_world_size, 4);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "2");
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), " SLURM_PROCID=10 SLURM_LOCALID=2 SLURM_NTASKS=12 "
				      "SLURM_NPROCS=12 SLURM_STEP_NUM_TASKS=12 SLURM_NTASKS_PER_NODE=4 "
				      "SLURM_TASKS_PER_NODE=8,4 SLURM_STEP_TASKS_PER_NODE=8,4 "
				      "SLURM_GTIDS=8,9,10,11"));
	/* Node 0 of the same step: ranks 0-7 of 12. */
	f = facts("node[1-2]", "1(x2)", 0, 0, 0, "0-7");
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 8, counts, 7, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 7);
	CU_ASSERT_EQUAL(e.world_size, 12);
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 8, wrong, 0, &e, &err), 0);
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 4, counts, 0, &e, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 0 runs 4 workers, not the 8"));
	f = facts("n[1-3]", "1(x3)", 2, 2, 0, "0-2");
	CU_ASSERT_EQUAL(tt_layout_compute_worker(&f, 3, three, 0, &e, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 1 runs no worker"));
}

/* 6 + 4 workers: the 6 ranks before node 1 are not a multiple of its 4 workers, so a GPU picked
 * from the global rank (rank % 4) instead of the worker's index on its node gives another GPU. */
static void test_worker_gpus_follow_the_local_index(void)
{
	struct tt_step_facts f = facts("node[1-2]", "1(x2)", 1, 1, 0, "0,1,2,3");
	const uint32_t counts[] = { 6, 4 }, three_two[] = { 3, 2 };
	const char *want[] = { "0", "1", "2", "3" };
	struct tt_task_env e;
	tt_err err;

	for (uint32_t w = 0; w < 4; w++) {
		CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 4, counts, w, &e, &err), 0);
		CU_ASSERT_EQUAL(e.rank, 6 + w);
		CU_ASSERT_EQUAL(e.local_rank, w);
		CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, want[w]);
	}
	/* Two GPUs each on node 1 of 3 + 2 workers: ranks 3 and 4 hold 0,1 and 2,3. */
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 2, three_two, 0, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 3);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "0,1");
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 2, three_two, 1, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 4);
	CU_ASSERT_STRING_EQUAL(e.cuda_visible_devices, "2,3");
}

/* Slurm's compressed counts for runs of exactly two equal nodes and of one: 4(x2),2 and 2,4(x2). */
static void test_worker_tasks_per_node_runs_of_two(void)
{
	struct tt_step_facts f = facts("n[1-3]", "1(x3)", 2, 2, 0, "0,1");
	const uint32_t a[] = { 4, 4, 2 }, b[] = { 2, 4, 4 };
	struct tt_task_env e;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 2, a, 1, &e, &err), 0);
	CU_ASSERT_EQUAL(e.rank, 9);
	CU_ASSERT_EQUAL(e.world_size, 10);
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), " SLURM_TASKS_PER_NODE=4(x2),2 "));
	f = facts("n[1-3]", "1(x3)", 0, 0, 0, "0,1");
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute_worker(&f, 2, b, 0, &e, &err), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), " SLURM_TASKS_PER_NODE=2,4(x2) "));
}

static void test_user_set_and_topo_set(void)
{
	char *env[] = {"TRAIN_TOPO_SET=OMP_NUM_THREADS,NCCL_IB_HCA", "OMP_NUM_THREADS=96",
		       "NCCL_IB_HCA==mlx5_0:1", "NCCL_SOCKET_IFNAME=ib0", "NCCL_IB=x", NULL};
	char *bare[] = {"OMP_NUM_THREADS=4", NULL};
	char list[32] = "";

	/* Set by the plugin for the launcher task: not the user's. */
	CU_ASSERT_FALSE(tt_env_user_set(tt_env_array, env, "OMP_NUM_THREADS"));
	CU_ASSERT_FALSE(tt_env_user_set(tt_env_array, env, "NCCL_IB_HCA"));
	/* Set and not listed: the user's; a prefix of a listed name is not listed. */
	CU_ASSERT_TRUE(tt_env_user_set(tt_env_array, env, "NCCL_SOCKET_IFNAME"));
	CU_ASSERT_TRUE(tt_env_user_set(tt_env_array, env, "NCCL_IB"));
	CU_ASSERT_FALSE(tt_env_user_set(tt_env_array, env, "NCCL_TOPO_FILE"));	/* unset */
	CU_ASSERT_TRUE(tt_env_user_set(tt_env_array, bare, "OMP_NUM_THREADS"));
	/* A longer name that starts with the asked one is another variable. */
	{
		char *longer[] = {"SLURM_JOB_IDX=1", "SLURM_JOB_ID=7", NULL}, *only_longer[] = {"SLURM_JOB_IDX=1", NULL};

		CU_ASSERT_STRING_EQUAL(tt_env_array(longer, "SLURM_JOB_ID"), "7");
		CU_ASSERT_PTR_NULL(tt_env_array(only_longer, "SLURM_JOB_ID"));
	}

	CU_ASSERT_EQUAL(tt_env_set_list_add(list, sizeof(list), "OMP_NUM_THREADS"), 0);
	CU_ASSERT_EQUAL(tt_env_set_list_add(list, sizeof(list), "OMP_NUM_THREADS"), 0);
	CU_ASSERT_EQUAL(tt_env_set_list_add(list, sizeof(list), "NCCL_IB_HCA"), 0);
	CU_ASSERT_STRING_EQUAL(list, "OMP_NUM_THREADS,NCCL_IB_HCA");
	CU_ASSERT_EQUAL(tt_env_set_list_add(list, sizeof(list), "NCCL_SOCKET_IFNAME"), -1);
	CU_ASSERT_STRING_EQUAL(list, "OMP_NUM_THREADS,NCCL_IB_HCA");
}

static void test_cpu_list_is_emitted(void)
{
	struct tt_step_facts f = facts("a", "2", 0, 1, 1, NULL);
	struct tt_task_env e;

	CU_ASSERT_EQUAL_FATAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_PTR_NULL(strstr(env_text(&e), "TRAIN_CPU_LIST"));
	snprintf(e.cpu_list, sizeof(e.cpu_list), "0-3,8");
	CU_ASSERT_PTR_NOT_NULL(strstr(env_text(&e), " TRAIN_CPU_LIST=0-3,8"));
	/* The plugin's tasks keep Slurm's own SLURM_*. */
	CU_ASSERT_PTR_NULL(strstr(env_text(&e), "SLURM_"));
}

static void expect_compute_error(struct tt_step_facts f, const char *needle)
{
	struct tt_task_env e;
	tt_err err = {""};

	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, &err), -1);
	if (!strstr(err.msg, needle))
		fprintf(stderr, "\n'%s' lacks '%s'\n", err.msg, needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, needle));
}

static void test_contradictions(void)
{
	struct tt_step_facts f = facts("a,b", "2(x2)", 0, 0, 0, NULL);

	expect_compute_error(facts("a,b,c", "2(x2)", 0, 0, 0, NULL),
			     "describes 2 nodes but nodelist 'a,b,c' has 3");
	expect_compute_error(facts("a,b", "2(x2)", 2, 0, 0, NULL),
			     "node index 2 (SLURM_NODEID) is outside the 2 nodes");
	expect_compute_error(facts("a,b", "2(x2)", 0, 4, 0, NULL), "task 4 (SLURM_PROCID)");
	expect_compute_error(facts("a,b", "2(x2)", 0, 0, 2, NULL), "local 2 (SLURM_LOCALID)");
	expect_compute_error(facts("a[1-", "2", 0, 0, 0, NULL), "step nodelist: nodelist 'a[1-'");
	expect_compute_error(facts("a", "2(x", 0, 0, 0, NULL), "element '2(x' is not N or N(xR)");
	f.ntasks = 5;
	expect_compute_error(f, "step has 5 tasks but tasks per node '2(x2)' adds up to 4");
	f.ntasks = 0;
	f.tasks_per_node[0] = '\0';
	expect_compute_error(f, "tasks per node unknown");
	f = facts("a,b", "2(x2)", 0, 0, 0, NULL);
	strcpy(f.resv_ports, "12000-x");
	expect_compute_error(f, "SLURM_STEP_RESV_PORTS='12000-x'");
	f.resv_ports[0] = '\0';
	f.ports.lo = 80;
	expect_compute_error(f, "port range 80-");
}

static void test_tasks_per_node(void)
{
	uint32_t on, nodes, tasks;
	tt_err err;

	CU_ASSERT_EQUAL(tt_tasks_per_node("4", 0, &on, &nodes, &tasks, &err), 0);
	CU_ASSERT(on == 4 && nodes == 1 && tasks == 4);
	CU_ASSERT_EQUAL(tt_tasks_per_node("2(x3),1", 2, &on, &nodes, &tasks, &err), 0);
	CU_ASSERT(on == 2 && nodes == 4 && tasks == 7);
	CU_ASSERT_EQUAL(tt_tasks_per_node("1,3(x2),2", 3, &on, &nodes, &tasks, &err), 0);
	CU_ASSERT(on == 2 && nodes == 4 && tasks == 9);
	CU_ASSERT_EQUAL(tt_tasks_per_node("2(x3),1", 4, &on, &nodes, &tasks, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node index 4 is not among them"));
	const char *bad[] = {"", "0", "2(x0)", "2(3)", "2(x3", "2x3)", "a", "2,,1", "2(x)", "-1",
			     "2(x3)1", "99999999999"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		CU_ASSERT_EQUAL(tt_tasks_per_node(bad[i], 0, &on, &nodes, &tasks, &err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is not N or N(xR)"));
	}
	CU_ASSERT_EQUAL(tt_tasks_per_node("4294967295(x2)", 0, &on, &nodes, &tasks, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "more than"));
}

static void test_port_formula(void)
{
	struct tt_port_range r = {TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT};
	struct tt_port_range one = {40000, 40000};
	struct tt_port_range small = {20000, 20009};
	uint16_t p0 = tt_master_port(4242, 0, r);
	int same_job_neighbours = 0;

	/* Deterministic, inside the range, distinct for the steps of one job. */
	CU_ASSERT_EQUAL(tt_master_port(4242, 0, r), p0);
	for (uint32_t s = 0; s < 100; s++) {
		uint16_t p = tt_master_port(4242, s, r);

		CU_ASSERT(p >= r.lo && p <= r.hi);
		for (uint32_t t = 0; t < s; t++)
			CU_ASSERT_NOT_EQUAL(p, tt_master_port(4242, t, r));
	}
	CU_ASSERT_NOT_EQUAL(tt_master_port(4242, TT_STEP_BATCH, r), p0);
	CU_ASSERT_NOT_EQUAL(tt_master_port(4242, TT_STEP_EXTERN, r), p0);
	CU_ASSERT_NOT_EQUAL(tt_master_port(4242, TT_STEP_BATCH, r),
			    tt_master_port(4242, TT_STEP_EXTERN, r));
	/* Consecutive jobs land far apart: their first 16 steps never meet. */
	for (uint32_t j = 1000; j < 1100; j++)
		for (uint32_t s = 0; s < 16; s++)
			for (uint32_t t = 0; t < 16; t++)
				same_job_neighbours += tt_master_port(j, s, r) ==
						       tt_master_port(j + 1, t, r);
	CU_ASSERT_EQUAL(same_job_neighbours, 0);
	/* Range bounds, including a one-port range and wrap-around in a small one. */
	CU_ASSERT_EQUAL(tt_master_port(99, 7, one), 40000);
	for (uint32_t j = 0; j < 50; j++)
		for (uint32_t s = 0; s < 30; s++) {
			uint16_t p = tt_master_port(j, s, small);

			CU_ASSERT(p >= 20000 && p <= 20009);
		}
	CU_ASSERT(tt_master_port(0, TT_STEP_BATCH, small) >= 20000);
	/* The default range starts at torchrun's port and ends below Linux's default ephemeral ports. */
	CU_ASSERT_EQUAL(TT_PORT_LO_DEFAULT, 29500);
	CU_ASSERT(TT_PORT_HI_DEFAULT < 32768);
}

/* The formula as train_topo(8) and layout.h write it, computed here in its own way (128-bit
 * product, the step as a signed 32-bit number, a floored modulo) rather than taken from layout.c. */
static uint16_t documented_port(uint32_t job, uint32_t step, unsigned lo, unsigned hi)
{
	unsigned __int128 span = hi - lo + 1;
	unsigned __int128 slot = (((unsigned __int128)job * 2654435769u) & 0xffffffffu) * span >> 32;
	long long off = ((long long)slot + (int32_t)step) % (long long)span;

	return (uint16_t)(lo + (off < 0 ? off + (long long)span : off));
}

static void test_port_formula_is_the_documented_one(void)
{
	struct tt_port_range r = {TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT};
	struct tt_port_range small = {20000, 20009};
	const uint32_t steps[] = {0, 1, 2, 7, 100, TT_STEP_BATCH, TT_STEP_EXTERN, TT_STEP_INTERACTIVE};
	uint64_t rng = 0x2545f4914f6cdd1dull;

	/* Worked by hand from the man page: job 0 has slot 0; the batch step 0xfffffffb is -5 as a
	 * signed step id, and (0 - 5) mod 10 = 5; step 12 is 12 mod 10 = 2. Job 1: 2654435769 * 10 /
	 * 2^32 = 6.18 -> slot 6; the extern step -4 gives (6 - 4) mod 10 = 2. */
	CU_ASSERT_EQUAL(tt_master_port(0, 0, small), 20000);
	CU_ASSERT_EQUAL(tt_master_port(0, TT_STEP_BATCH, small), 20005);
	CU_ASSERT_EQUAL(tt_master_port(0, 12, small), 20002);
	CU_ASSERT_EQUAL(tt_master_port(1, TT_STEP_EXTERN, small), 20002);
	/* The man page's example: job 1000 in the default range, step 0 and the batch step. */
	CU_ASSERT_EQUAL(tt_master_port(1000, 0, r), 29601);
	CU_ASSERT_EQUAL(tt_master_port(1000, TT_STEP_BATCH, r), 29596);
	for (int i = 0; i < 2000; i++) {
		uint32_t job = (uint32_t)(rng >> 32), step = steps[i % 8];

		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		CU_ASSERT_EQUAL(tt_master_port(job, step, r), documented_port(job, step, r.lo, r.hi));
		CU_ASSERT_EQUAL(tt_master_port(job, step, small), documented_port(job, step, 20000, 20009));
		CU_ASSERT_EQUAL(tt_master_port(job % 100000, step, r), documented_port(job % 100000, step, r.lo, r.hi));
	}
}

static void test_reserved_ports(void)
{
	struct tt_step_facts f = facts("a", "1", 0, 0, 0, NULL);
	struct tt_task_env e;
	uint16_t port;
	tt_err err;

	CU_ASSERT_EQUAL(tt_resv_ports_first("12000-12003", &port, &err), 0);
	CU_ASSERT_EQUAL(port, 12000);
	CU_ASSERT_EQUAL(tt_resv_ports_first("12005,12000", &port, &err), 0);
	CU_ASSERT_EQUAL(port, 12005);
	CU_ASSERT_EQUAL(tt_resv_ports_first("40000", &port, &err), 0);
	CU_ASSERT_EQUAL(port, 40000);
	const char *bad[] = {"", "0", "70000", "12000-", "12003-12000", "a", "12000,,1", "1 2"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(tt_resv_ports_first(bad[i], &port, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_STEP_RESV_PORTS='1 2'"));
	strcpy(f.resv_ports, "13000-13001");
	CU_ASSERT_EQUAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_EQUAL(e.master_port, 13000);
}

static void test_port_range_parse(void)
{
	struct tt_port_range r;
	tt_err err;

	CU_ASSERT_EQUAL(tt_port_range_parse("20000-20999", &r, &err), 0);
	CU_ASSERT(r.lo == 20000 && r.hi == 20999);
	CU_ASSERT_EQUAL(tt_port_range_parse("1024-1024", &r, &err), 0);
	const char *bad[] = {"", "20000", "1023-2000", "3000-2000", "2000-70000", "a-b", "2000-",
			     "-2000", "2000--3000", " 2000-3000"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(tt_port_range_parse(bad[i], &r, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "port range ' 2000-3000' is not LO-HI with 1024 <= LO "
			       "<= HI <= 65535 (e.g. 29500-32499)");
}

static void test_gpu_split_rule(void)
{
	size_t first, count;

	CU_ASSERT_EQUAL(tt_gpu_split(8, 4, 3, &first, &count), 0);
	CU_ASSERT(first == 6 && count == 2);
	CU_ASSERT_EQUAL(tt_gpu_split(2, 5, 4, &first, &count), 1);
	CU_ASSERT(first == 1 && count == 1);
	CU_ASSERT_EQUAL(tt_gpu_split(0, 5, 4, &first, &count), 0);
	CU_ASSERT_EQUAL(count, 0);
	CU_ASSERT_EQUAL(tt_gpu_split(8, 0, 0, &first, &count), -1);
	CU_ASSERT_EQUAL(tt_gpu_split(8, 2, 2, &first, &count), -1);
}

static int stop_at_master(void *ctx, const char *name, const char *value)
{
	int *calls = ctx;

	(void)value;
	(*calls)++;
	return strcmp(name, "MASTER_ADDR") == 0 ? 42 : 0;
}

static void test_foreach_stops_on_error(void)
{
	struct tt_step_facts f = facts("a", "1", 0, 0, 0, "0");
	struct tt_task_env e;
	int calls = 0;

	CU_ASSERT_EQUAL_FATAL(tt_layout_compute(&f, &e, NULL), 0);
	CU_ASSERT_EQUAL(tt_task_env_foreach(&e, stop_at_master, &calls), 42);
	CU_ASSERT_EQUAL(calls, 8);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("layout", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "facts from the environment", test_facts_from_env);
	CU_add_test(s, "Slurm's own steps printed as negative ids", test_special_step_ids_printed_negative);
	CU_add_test(s, "facts errors name the variable", test_facts_errors);
	CU_add_test(s, "an uncompressible 10k-node nodelist", test_facts_uncompressible_10k_nodes);
	CU_add_test(s, "uncompressible tasks per node on 10k nodes", test_facts_uncompressible_tasks_per_node);
	CU_add_test(s, "the batch step is one task", test_batch_step_is_one_task);
	CU_add_test(s, "getenv may reuse one buffer", test_getenv_may_reuse_one_buffer);
	CU_add_test(s, "even layout", test_even_layout);
	CU_add_test(s, "uneven layouts", test_uneven_layouts);
	CU_add_test(s, "GPU splits", test_gpu_splits);
	CU_add_test(s, "Slurm's GPU binding is respected", test_slurm_binding_respected);
	CU_add_test(s, "Slurm's GPU binding detected from the env", test_slurm_binding_detected_from_env);
	CU_add_test(s, "OMP_NUM_THREADS", test_omp_threads);
	CU_add_test(s, "worker variant", test_worker_variant);
	CU_add_test(s, "contradicting facts", test_contradictions);
	CU_add_test(s, "tasks per node", test_tasks_per_node);
	CU_add_test(s, "MASTER_PORT formula", test_port_formula);
	CU_add_test(s, "MASTER_PORT formula is the documented one", test_port_formula_is_the_documented_one);
	CU_add_test(s, "reserved ports", test_reserved_ports);
	CU_add_test(s, "port range parse", test_port_range_parse);
	CU_add_test(s, "GPU split rule", test_gpu_split_rule);
	CU_add_test(s, "foreach stops on error", test_foreach_stops_on_error);
	CU_add_test(s, "worker layout of uneven nodes", test_worker_uneven_nodes);
	CU_add_test(s, "worker GPUs follow the index on the node", test_worker_gpus_follow_the_local_index);
	CU_add_test(s, "workers per node: runs of two compressed", test_worker_tasks_per_node_runs_of_two);
	CU_add_test(s, "user-set variables and TRAIN_TOPO_SET", test_user_set_and_topo_set);
	CU_add_test(s, "TRAIN_CPU_LIST", test_cpu_list_is_emitted);
	return 0;
}

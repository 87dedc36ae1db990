/* SPDX-License-Identifier: MIT */
/* test_het_step.c — heterogeneous steps: the layout in rank order from the sorted one Slurm
 * gives (het_step.h), and the whole contract from environments as Slurm 22.05.8 and 26.05.3 give
 * them to the tasks of `salloc -w node2 -n2 --gres=gpu:4 : -w node1 -n1 --gres=gpu:2
 * srun --het-group=0,1` (captured on the test cluster; 22.05 adds SLURM_PACK_* aliases). */
#include "cunit_main.h"
#include "het_step.h"
#include "layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char nodelist[256], order_text[256];
static tt_err err;

/* tt_het_step_order, its order as text ("1 0") in order_text. */
static int het(const char *step_nodelist, const char *const *comps, size_t ncomps,
	       const char *host, uint32_t node_id)
{
	size_t *order = NULL, n = 0;
	int rc;

	strcpy(nodelist, "untouched");
	order_text[0] = '\0';
	err.msg[0] = '\0';
	rc = tt_het_step_order(step_nodelist, comps, ncomps, host, node_id, nodelist,
			       sizeof(nodelist), &order, &n, &err);
	for (size_t i = 0; i < n; i++)
		snprintf(order_text + strlen(order_text), sizeof(order_text) - strlen(order_text),
			 "%s%zu", i ? " " : "", order[i]);
	if (rc != 1)
		CU_ASSERT_PTR_NULL(order);
	free(order);
	return rc;
}

static void test_two_components_reordered(void)
{
	const char *comps[] = {"node2", "node1"};

	/* Every node gets the same rank order; its own SLURM_NODEID indexes it. */
	CU_ASSERT_EQUAL(het("node[1-2]", comps, 2, "node2", 0), 1);
	CU_ASSERT_STRING_EQUAL(nodelist, "node2,node1");
	CU_ASSERT_STRING_EQUAL(order_text, "1 0");
	CU_ASSERT_EQUAL(het("node[1-2]", comps, 2, "node1", 1), 1);
	CU_ASSERT_STRING_EQUAL(nodelist, "node2,node1");
	CU_ASSERT_STRING_EQUAL(order_text, "1 0");
}

static void test_three_components_compressed(void)
{
	const char *comps[] = {"n[3-4]", "n[1-2]", "m1"};

	/* Sorted: m1 n1 n2 n3 n4; rank order n3 n4 n1 n2 m1. */
	CU_ASSERT_EQUAL(het("m1,n[1-4]", comps, 3, "n1", 2), 1);
	CU_ASSERT_STRING_EQUAL(nodelist, "n[3-4],n[1-2],m1");
	CU_ASSERT_STRING_EQUAL(order_text, "3 4 1 2 0");
	CU_ASSERT_EQUAL(het("m1,n[1-4]", comps, 3, "m1", 4), 1);
}

static void test_components_outside_the_step(void)
{
	const char *comps[] = {"a[1-2]", "b1", "c[1-3]"};
	const char *unknown[] = {NULL, "b1", "c1"};

	/* srun --het-group=0,2: component 1 has no node in the step. */
	CU_ASSERT_EQUAL(het("a[1-2],c[1-3]", comps, 3, "c1", 2), 1);
	CU_ASSERT_STRING_EQUAL(nodelist, "a[1-2],c[1-3]");
	CU_ASSERT_STRING_EQUAL(order_text, "0 1 2 3 4");
	/* srun --het-group=1 alone, as Slurm gives it: a plain step. */
	CU_ASSERT_EQUAL(het("b1", comps, 3, "b1", 0), 0);
	CU_ASSERT_STRING_EQUAL(nodelist, "untouched");
	/* Within one component that is part of a het job: plain too, whatever the others. */
	CU_ASSERT_EQUAL(het("c[1-2]", comps, 3, "c2", 1), 0);
	/* A component whose nodelist is unknown counts as outside the step. */
	CU_ASSERT_EQUAL(het("b1,c1", unknown, 3, "b1", 0), 1);
	CU_ASSERT_STRING_EQUAL(nodelist, "b1,c1");
}

static void test_refused(void)
{
	const char *comps[] = {"node2", "node1"};
	const char *partial[] = {"n[1-2]", "n3"};
	const char *shared[] = {"n[1-2]", "n[2-3]"};
	const char *short_comps[] = {"n1", "n2"};
	const char *many[TT_HET_COMPONENTS_MAX + 1] = {0};

	/* srun -N1 --het-group=0 : --het-group=1 on a two-node component 0. */
	CU_ASSERT_EQUAL(het("n[1,3]", partial, 2, "n1", 0), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "runs on part of the nodes of component 0 (n[1-2]: not on n2)"));
	CU_ASSERT_STRING_EQUAL(nodelist, "untouched");
	/* A node in two components: whose GPUs are they? */
	CU_ASSERT_EQUAL(het("n[1-3]", shared, 2, "n1", 0), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node n2 is in components 0 and 1"));
	/* Slurm numbering nodes otherwise than component order. */
	CU_ASSERT_EQUAL(het("node[1-2]", comps, 2, "node2", 1), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "this node node2 is node 0 of its components' "
					       "nodelists in order (node2,node1), but SLURM_NODEID is 1"));
	/* A step node no component names. */
	CU_ASSERT_EQUAL(het("n[1-3]", short_comps, 2, "n1", 0), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cover 2 of the 3 nodes"));
	/* This node missing from the step (or no SLURMD_NODENAME). */
	CU_ASSERT_EQUAL(het("node[1-2]", comps, 2, "", 0), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "(SLURMD_NODENAME=) is not in"));
	CU_ASSERT_EQUAL(het("node[1-", comps, 2, "node2", 0), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_STEP_NODELIST"));
	CU_ASSERT_EQUAL(het("node1", many, TT_HET_COMPONENTS_MAX + 1, "node1", 0), -1);
}

/* ---- the whole contract from Slurm's environments ------------------------------------------- */

/* The variables a het step's task gets that the contract reads (both releases). */
#define HET_STEP_ENV(host, nodeid, procid, localid, gpus, gpus_on_node)                          \
	"SLURMD_NODENAME=" host, "SLURM_JOB_ID=1000000", "SLURM_STEP_ID=0",                     \
	"SLURM_HET_SIZE=2", "SLURM_JOB_NODELIST=node[1-2]", "SLURM_NODELIST=node[1-2]",         \
	"SLURM_JOB_NODELIST_HET_GROUP_0=node2", "SLURM_JOB_NODELIST_HET_GROUP_1=node1",         \
	"SLURM_NODELIST_HET_GROUP_0=node2", "SLURM_NODELIST_HET_GROUP_1=node1",                 \
	"SLURM_NTASKS_HET_GROUP_0=2", "SLURM_NTASKS_HET_GROUP_1=1",                             \
	"SLURM_TASKS_PER_NODE_HET_GROUP_0=2", "SLURM_TASKS_PER_NODE_HET_GROUP_1=1",             \
	"SLURM_STEP_NODELIST=node[1-2]", "SLURM_STEP_NUM_NODES=2", "SLURM_STEP_NUM_TASKS=3",    \
	"SLURM_STEP_TASKS_PER_NODE=1,2", "SLURM_TASKS_PER_NODE=1,2", "SLURM_NTASKS=3",          \
	"SLURM_STEP_RESV_PORTS=12001-12005", "SLURM_NODEID=" nodeid, "SLURM_PROCID=" procid,    \
	"SLURM_LOCALID=" localid, "SLURM_STEP_GPUS=" gpus, "SLURM_GPUS_ON_NODE=" gpus_on_node

/* 22.05.8 also sets the SLURM_PACK_* names of 19.05. */
#define PACK_ALIASES                                                                             \
	"SLURM_PACK_SIZE=2", "SLURM_JOB_NODELIST_PACK_GROUP_0=node2",                           \
	"SLURM_JOB_NODELIST_PACK_GROUP_1=node1", "SLURM_NODELIST_PACK_GROUP_0=node2",           \
	"SLURM_NODELIST_PACK_GROUP_1=node1"

static void check_task(char **env, const char *host, const char *expect)
{
	struct tt_step_facts f;
	struct tt_task_env e;
	char got[8192] = "";

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_layout_compute(&f, &e, &err), 0);
	snprintf(got, sizeof(got), "%s RANK=%u WORLD_SIZE=%u LOCAL_RANK=%u LOCAL_WORLD_SIZE=%u "
		 "NODE_RANK=%u NNODES=%u MASTER_ADDR=%s MASTER_PORT=%u CUDA_VISIBLE_DEVICES=%s",
		 host, e.rank, e.world_size, e.local_rank, e.local_world_size, e.node_rank,
		 e.nnodes, e.master_addr, e.master_port, e.cuda_visible_devices);
	CU_ASSERT_STRING_EQUAL(got, expect);
	if (strcmp(got, expect) != 0)
		fprintf(stderr, "\n got: %s\nwant: %s\n", got, expect);
}

static void test_contract_slurm_22_05(void)
{
	char *rank0[] = {HET_STEP_ENV("node2", "0", "0", "0", "0,1,2,3", "4"), PACK_ALIASES, NULL};
	char *rank1[] = {HET_STEP_ENV("node2", "0", "1", "1", "0,1,2,3", "4"), PACK_ALIASES, NULL};
	char *rank2[] = {HET_STEP_ENV("node1", "1", "2", "0", "0,1", "2"), PACK_ALIASES, NULL};

	check_task(rank0, "node2", "node2 RANK=0 WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "
		   "NODE_RANK=0 NNODES=2 MASTER_ADDR=node2 MASTER_PORT=12001 CUDA_VISIBLE_DEVICES=0,1");
	check_task(rank1, "node2", "node2 RANK=1 WORLD_SIZE=3 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 "
		   "NODE_RANK=0 NNODES=2 MASTER_ADDR=node2 MASTER_PORT=12001 CUDA_VISIBLE_DEVICES=2,3");
	check_task(rank2, "node1", "node1 RANK=2 WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "
		   "NODE_RANK=1 NNODES=2 MASTER_ADDR=node2 MASTER_PORT=12001 CUDA_VISIBLE_DEVICES=0,1");
}

static void test_contract_slurm_26_05(void)
{
	char *rank0[] = {HET_STEP_ENV("node2", "0", "0", "0", "0,1,2,3", "4"), NULL};
	char *rank2[] = {HET_STEP_ENV("node1", "1", "2", "0", "0,1", "2"), NULL};

	check_task(rank0, "node2", "node2 RANK=0 WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=2 "
		   "NODE_RANK=0 NNODES=2 MASTER_ADDR=node2 MASTER_PORT=12001 CUDA_VISIBLE_DEVICES=0,1");
	check_task(rank2, "node1", "node1 RANK=2 WORLD_SIZE=3 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "
		   "NODE_RANK=1 NNODES=2 MASTER_ADDR=node2 MASTER_PORT=12001 CUDA_VISIBLE_DEVICES=0,1");
}

/* srun --het-group=1 in the same allocation: one component, Slurm's numbering is plain. */
static void test_one_component_step_in_het_job(void)
{
	char *env[] = {"SLURMD_NODENAME=node1", "SLURM_JOB_ID=1000001", "SLURM_STEP_ID=0",
		       "SLURM_HET_SIZE=2", "SLURM_JOB_NODELIST_HET_GROUP_0=node2",
		       "SLURM_JOB_NODELIST_HET_GROUP_1=node1", "SLURM_STEP_NODELIST=node1",
		       "SLURM_STEP_NUM_TASKS=1", "SLURM_STEP_TASKS_PER_NODE=1", "SLURM_NODEID=0",
		       "SLURM_PROCID=0", "SLURM_LOCALID=0",
		       "SLURM_STEP_RESV_PORTS=12006-12010", NULL};

	check_task(env, "node1", "node1 RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "
		   "NODE_RANK=0 NNODES=1 MASTER_ADDR=node1 MASTER_PORT=12006 CUDA_VISIBLE_DEVICES=");
}

/* Three components, the step's tasks per node compressed: rank order n3 n4 n1 n2 m1. */
static void test_contract_three_components(void)
{
	char *env[] = {"SLURMD_NODENAME=n1", "SLURM_JOB_ID=7", "SLURM_STEP_ID=0", "SLURM_HET_SIZE=3",
		       "SLURM_JOB_NODELIST_HET_GROUP_0=n[3-4]", "SLURM_JOB_NODELIST_HET_GROUP_1=n[1-2]",
		       "SLURM_JOB_NODELIST_HET_GROUP_2=m1", "SLURM_STEP_NODELIST=m1,n[1-4]",
		       "SLURM_STEP_TASKS_PER_NODE=1(x3),2(x2)", "SLURM_STEP_NUM_TASKS=7",
		       "SLURM_NODEID=2", "SLURM_PROCID=4", "SLURM_LOCALID=0",
		       "SLURM_STEP_RESV_PORTS=12000", NULL};
	struct tt_step_facts f;

	CU_ASSERT_EQUAL_FATAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), 0);
	CU_ASSERT_STRING_EQUAL(f.nodelist, "n[3-4],n[1-2],m1");
	CU_ASSERT_STRING_EQUAL(f.tasks_per_node, "2(x2),1(x3)");
	check_task(env, "n1", "n1 RANK=4 WORLD_SIZE=7 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 "
		   "NODE_RANK=2 NNODES=5 MASTER_ADDR=n3 MASTER_PORT=12000 CUDA_VISIBLE_DEVICES=");
}

/* Tasks per node that do not describe the step's nodes: refused, naming the variable. */
static void test_tasks_per_node_of_another_step(void)
{
	char *env[] = {HET_STEP_ENV("node2", "0", "0", "0", "0,1,2,3", "4"),
		       "SLURM_STEP_TASKS_PER_NODE=1,2,1", NULL};
	char *bad[] = {HET_STEP_ENV("node2", "0", "0", "0", "0,1,2,3", "4"),
		       "SLURM_STEP_TASKS_PER_NODE=1,x", NULL};
	struct tt_step_facts f;

	/* tt_env_array takes the first entry of a name: put the override first. */
	env[0] = env[sizeof(env) / sizeof(env[0]) - 2];
	env[sizeof(env) / sizeof(env[0]) - 2] = "SLURMD_NODENAME=node2";
	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "SLURM_STEP_TASKS_PER_NODE='1,2,1' describes 3 nodes, the "
			       "step's nodelist 2: both must come from the same step");
	bad[0] = bad[sizeof(bad) / sizeof(bad[0]) - 2];
	bad[sizeof(bad) / sizeof(bad[0]) - 2] = "SLURMD_NODENAME=node2";
	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, bad, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "element 'x' is not N or N(xR)"));
}

static void test_bad_het_size(void)
{
	char *env[] = {"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=a",
		       "SLURM_NODEID=0", "SLURM_HET_SIZE=two", NULL};
	char *many[] = {"SLURM_JOB_ID=1", "SLURM_STEP_ID=0", "SLURM_STEP_NODELIST=a",
			"SLURM_NODEID=0", "SLURM_HET_SIZE=129", NULL};
	struct tt_step_facts f;

	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, env, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "SLURM_HET_SIZE='two' is not an integer in [0, 4294967295]");
	CU_ASSERT_EQUAL(tt_step_facts_from_env(&f, tt_env_array, many, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "SLURM_HET_SIZE=129"));
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("het_step", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "two components: rank order, not sorted order", test_two_components_reordered);
	CU_add_test(s, "three components, compressed lists", test_three_components_compressed);
	CU_add_test(s, "components outside the step", test_components_outside_the_step);
	CU_add_test(s, "layouts that cannot be told are refused", test_refused);
	CU_add_test(s, "contract from Slurm 22.05.8's het step env", test_contract_slurm_22_05);
	CU_add_test(s, "contract from Slurm 26.05.3's het step env", test_contract_slurm_26_05);
	CU_add_test(s, "contract over three components", test_contract_three_components);
	CU_add_test(s, "tasks per node of another step", test_tasks_per_node_of_another_step);
	CU_add_test(s, "one-component step in a het job", test_one_component_step_in_het_job);
	CU_add_test(s, "malformed SLURM_HET_SIZE", test_bad_het_size);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_bind.c — the CPU rule: even shares cover the allowed set exactly once, holes are skipped,
 * more workers than CPUs share; NUMA-local sets are shared out among their workers and fall
 * back to the allowed CPUs when they do not meet them. */
#include "cunit_main.h"
#include "cpu_bind.h"

static void test_even_split_covers_all_once(void)
{
	cpu_set_t allowed, out, seen, both;
	int i, cpu;

	CPU_ZERO(&allowed);
	CPU_ZERO(&seen);
	for (cpu = 0; cpu < 10; cpu++)
		CPU_SET(cpu, &allowed);
	for (i = 0; i < 4; i++) {
		int n = tt_cpus_split(&allowed, 4, i, &out);

		CU_ASSERT(n == 2 || n == 3);
		CPU_AND(&both, &seen, &out);
		CU_ASSERT_EQUAL(CPU_COUNT(&both), 0);	/* no CPU in two shares */
		CPU_OR(&seen, &seen, &out);
	}
	CU_ASSERT_TRUE(CPU_EQUAL(&seen, &allowed));
	tt_cpus_split(&allowed, 4, 0, &out);
	CU_ASSERT_TRUE(CPU_ISSET(0, &out) && CPU_ISSET(1, &out) && !CPU_ISSET(2, &out));
}

static void test_holes_skipped(void)
{
	cpu_set_t allowed, out;

	CPU_ZERO(&allowed);
	CPU_SET(4, &allowed);
	CPU_SET(5, &allowed);
	CPU_SET(40, &allowed);
	CPU_SET(41, &allowed);
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 2, 1, &out), 2);
	CU_ASSERT_TRUE(CPU_ISSET(40, &out) && CPU_ISSET(41, &out));
	CU_ASSERT_FALSE(CPU_ISSET(5, &out));
}

static void test_more_workers_than_cpus_share(void)
{
	cpu_set_t allowed, out;

	CPU_ZERO(&allowed);
	CPU_SET(0, &allowed);
	CPU_SET(1, &allowed);
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 4, 0, &out), 1);
	CU_ASSERT_TRUE(CPU_ISSET(0, &out));
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 4, 1, &out), 1);
	CU_ASSERT_TRUE(CPU_ISSET(0, &out));
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 4, 3, &out), 1);
	CU_ASSERT_TRUE(CPU_ISSET(1, &out));
}

static void test_bad_arguments(void)
{
	cpu_set_t allowed, out;

	CPU_ZERO(&allowed);
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 2, 0, &out), -1);
	CPU_SET(3, &allowed);
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 2, 2, &out), -1);
	CU_ASSERT_EQUAL(tt_cpus_split(&allowed, 0, 0, &out), -1);
}

/* Two NUMA nodes of 4 CPUs; workers 0,1 on node 0 and worker 2 on node 1. */
static void test_numa_local_shared_by_its_workers(void)
{
	cpu_set_t allowed, local[3], out[3];
	int cpu;

	CPU_ZERO(&allowed);
	for (cpu = 0; cpu < 8; cpu++)
		CPU_SET(cpu, &allowed);
	CPU_ZERO(&local[0]);
	for (cpu = 0; cpu < 4; cpu++)
		CPU_SET(cpu, &local[0]);
	local[1] = local[0];
	CPU_ZERO(&local[2]);
	for (cpu = 4; cpu < 8; cpu++)
		CPU_SET(cpu, &local[2]);
	CU_ASSERT_EQUAL_FATAL(tt_bind_workers(&allowed, local, 3, out), 0);
	CU_ASSERT_EQUAL(CPU_COUNT(&out[0]), 2);
	CU_ASSERT_TRUE(CPU_ISSET(0, &out[0]) && CPU_ISSET(1, &out[0]));
	CU_ASSERT_TRUE(CPU_ISSET(2, &out[1]) && CPU_ISSET(3, &out[1]));
	CU_ASSERT_TRUE(CPU_EQUAL(&out[2], &local[2]));	/* alone on its node: all of it */
}

static void test_local_outside_allowed_falls_back(void)
{
	cpu_set_t allowed, local[2], out[2];

	CPU_ZERO(&allowed);
	CPU_SET(0, &allowed);
	CPU_SET(1, &allowed);
	CPU_ZERO(&local[0]);
	CPU_SET(40, &local[0]);	/* Slurm's cgroup gave us none of the GPU's cores */
	local[1] = local[0];
	CU_ASSERT_EQUAL_FATAL(tt_bind_workers(&allowed, local, 2, out), 0);
	CU_ASSERT_TRUE(CPU_ISSET(0, &out[0]) && !CPU_ISSET(1, &out[0]));
	CU_ASSERT_TRUE(CPU_ISSET(1, &out[1]) && !CPU_ISSET(0, &out[1]));
	CU_ASSERT_EQUAL_FATAL(tt_bind_workers(&allowed, NULL, 2, out), 0);
	CU_ASSERT_TRUE(CPU_ISSET(1, &out[1]) && CPU_COUNT(&out[1]) == 1);
	CPU_ZERO(&allowed);
	CU_ASSERT_EQUAL(tt_bind_workers(&allowed, NULL, 2, out), -1);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("bind", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "even split covers all once", test_even_split_covers_all_once);
	CU_add_test(s, "holes skipped", test_holes_skipped);
	CU_add_test(s, "more workers than CPUs share", test_more_workers_than_cpus_share);
	CU_add_test(s, "bad arguments", test_bad_arguments);
	CU_add_test(s, "NUMA-local CPUs shared by their workers", test_numa_local_shared_by_its_workers);
	CU_add_test(s, "local set outside allowed falls back", test_local_outside_allowed_falls_back);
	return 0;
}

/* test_bind.c — the even CPU split: shares cover the allowed set exactly once, holes in the
 * allowed set are skipped, and more workers than CPUs share. */
#include "cunit_main.h"
#include "bind.h"

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

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("bind", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "even split covers all once", test_even_split_covers_all_once);
	CU_add_test(s, "holes skipped", test_holes_skipped);
	CU_add_test(s, "more workers than CPUs share", test_more_workers_than_cpus_share);
	CU_add_test(s, "bad arguments", test_bad_arguments);
	return 0;
}

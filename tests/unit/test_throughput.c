/* SPDX-License-Identifier: MIT */
/* test_throughput.c — the steady rate behind train-mlp's MFU: the first interval (warm-up) never
 * counts, the median of the rest does (an outlier does not move it), intervals without time are
 * skipped, and fewer than two intervals give 0 ("not measured"). */
#include "cunit_main.h"
#include "throughput.h"

static void test_warmup_dropped_median_taken(void)
{
	tt_rate_log log = { 0 };

	/* 1000 samples per interval: warm-up 1000 samples/s, then 4000, 5000, 100 (a checkpoint), 4500. */
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 1.0), 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_rate_steady(&log), 0.0, 0.0);
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 0.25), 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_rate_steady(&log), 4000.0, 1e-9);
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 0.2), 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_rate_steady(&log), 4500.0, 1e-9);
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 10.0), 0);
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 1000.0 / 4500.0), 0);
	CU_ASSERT_EQUAL(log.n, 5);
	CU_ASSERT_DOUBLE_EQUAL(tt_rate_steady(&log), 4250.0, 1e-6); /* median of 100, 4000, 4500, 5000 */
	tt_rate_free(&log);
	CU_ASSERT_EQUAL(log.n, 0);
}

static void test_empty_intervals_skipped(void)
{
	tt_rate_log log = { 0 };

	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, 0.0), 0);
	CU_ASSERT_EQUAL(tt_rate_add(&log, 1000, -1.0), 0);
	CU_ASSERT_EQUAL(log.n, 0);
	for (int i = 0; i < 200; i++) /* past the first allocation */
		CU_ASSERT_EQUAL(tt_rate_add(&log, 10 * (i + 1), 1.0), 0);
	CU_ASSERT_EQUAL(log.n, 200);
	CU_ASSERT_DOUBLE_EQUAL(tt_rate_steady(&log), 1010.0, 1e-9); /* median of 20..2000 by 10 */
	tt_rate_free(&log);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("throughput", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "warm-up dropped, median taken", test_warmup_dropped_median_taken);
	CU_add_test(s, "intervals without time skipped", test_empty_intervals_skipped);
	return 0;
}

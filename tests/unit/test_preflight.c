/* SPDX-License-Identifier: MIT */
/* test_preflight.c — the node health check's pure parts (wrapper/preflight.c): its words in the
 * census body both ways, the median, and the judgement (a device that does not open, a number
 * below the fraction of the median or a round trip above median / fraction, exactly at it, the
 * round trips' floor, nodes that share a machine); and the device check on a fixture directory
 * (a device file missing, one that opens, none checked without nvidiactl). The oracle of the
 * medians is the definition computed by hand. */
#include "cunit_main.h"
#include "preflight.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_words_both_ways(void)
{
	struct tt_preflight pf = { .mem_mbps = 9800 }, got;
	char buf[300];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_preflight_format(&pf, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, " mem=9800");
	CU_ASSERT_EQUAL_FATAL(tt_preflight_parse(buf, &got, &err), 0);
	CU_ASSERT_EQUAL(got.mem_mbps, 9800);
	CU_ASSERT_STRING_EQUAL(got.gpu_fail, "");
	snprintf(pf.gpu_fail, sizeof(pf.gpu_fail), "/dev/nvidia1 does not open (No\tsuch device)");
	CU_ASSERT_EQUAL_FATAL(tt_preflight_format(&pf, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, " mem=9800 gpu-fail=/dev/nvidia1 does not open (No?such device)");
	CU_ASSERT_EQUAL_FATAL(tt_preflight_parse(buf, &got, &err), 0);
	CU_ASSERT_EQUAL(got.mem_mbps, 9800);
	CU_ASSERT_STRING_EQUAL(got.gpu_fail, "/dev/nvidia1 does not open (No?such device)");
	CU_ASSERT_EQUAL(tt_preflight_format(&pf, buf, 12), -1);	/* does not fit */
	/* Nothing measured: no words, as a node that made no check. */
	memset(&pf, 0, sizeof(pf));
	CU_ASSERT_EQUAL_FATAL(tt_preflight_format(&pf, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "");
	CU_ASSERT_EQUAL(tt_preflight_parse("", &got, &err), 0);
	CU_ASSERT_EQUAL(got.mem_mbps, 0);
	/* A later check's words are not this reader's: ignored. */
	CU_ASSERT_EQUAL(tt_preflight_parse(" nccl=120 mem=5 lat=30", &got, &err), 0);
	CU_ASSERT_EQUAL(got.mem_mbps, 5);
}

static void expect_bad(const char *words, const char *want)
{
	struct tt_preflight got;
	tt_err err = { "" };

	CU_ASSERT_EQUAL(tt_preflight_parse(words, &got, &err), -1);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\n'%s': '%s' lacks '%s'\n", words, err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
}

static void test_bad_words(void)
{
	expect_bad(" mem=0", "expected mem=MB/s");
	expect_bad(" mem=-3", "expected mem=MB/s");
	expect_bad(" mem=1.5", "expected mem=MB/s");
	expect_bad(" mem=4294967296", "expected mem=MB/s");
	expect_bad(" mem=", "expected mem=MB/s");
	expect_bad(" extra", "expected KEY=VALUE");
	expect_bad("mem=5", "after one space each");
	expect_bad(" mem=5  net=1", "after one space each");
	expect_bad(" mem=5 ", "after one space each");
	expect_bad(" gpu-fail=", "a device and why");
	expect_bad(" gpu-fail=/dev/nvidia0 \x01", "printable characters");
}

static void test_median(void)
{
	const uint32_t odd[] = { 30, 10, 20 }, even[] = { 40, 10, 30, 20 }, one[] = { 7 };

	CU_ASSERT_DOUBLE_EQUAL(tt_preflight_median(odd, 3), 20, 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_preflight_median(even, 4), 25, 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_preflight_median(one, 1), 7, 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_preflight_median(one, 0), 0, 0);
}

/* n nodes with these memory numbers (0: not measured). */
static int judge(const uint32_t *mem, uint32_t n, double fraction, uint32_t *bad, char *why)
{
	struct tt_preflight pf[8];

	memset(pf, 0, sizeof(pf));
	for (uint32_t k = 0; k < n; k++)
		pf[k].mem_mbps = mem[k];
	return tt_preflight_judge(pf, n, fraction, bad, why, 200);
}

static void test_judge_fraction_of_median(void)
{
	const uint32_t even[] = { 10000, 10000, 5000, 10000 };	/* median 10000 */
	const uint32_t below[] = { 10000, 10000, 4999, 10000 };
	const uint32_t slow[] = { 9800, 9800, 2100 };		/* median 9800 */
	const uint32_t two[] = { 9000, 2999 };			/* median 5999.5 */
	const uint32_t alone[] = { 0, 100, 0 };
	uint32_t bad = 99;
	char why[200] = "";

	/* Exactly at 0.5 x the median passes; one MB/s below fails, named with both numbers. */
	CU_ASSERT_EQUAL(judge(even, 4, 0.5, &bad, why), 0);
	CU_ASSERT_EQUAL(bad, 99);
	CU_ASSERT_EQUAL(judge(below, 4, 0.5, &bad, why), 1);
	CU_ASSERT_EQUAL(bad, 2);
	CU_ASSERT_STRING_EQUAL(why, "memory bandwidth 5.0 GB/s < 0.5 x median 10.0 GB/s");
	CU_ASSERT_EQUAL(judge(slow, 3, 0.5, &bad, why), 1);
	CU_ASSERT_EQUAL(bad, 2);
	CU_ASSERT_STRING_EQUAL(why, "memory bandwidth 2.1 GB/s < 0.5 x median 9.8 GB/s");
	/* Another fraction moves the line. */
	CU_ASSERT_EQUAL(judge(slow, 3, 0.2, &bad, why), 0);
	CU_ASSERT_EQUAL(judge(even, 4, 0.75, &bad, why), 1);
	CU_ASSERT_STRING_EQUAL(why, "memory bandwidth 5.0 GB/s < 0.75 x median 10.0 GB/s");
	/* Two nodes: the median is their mean, so one fails below a third of the other. */
	CU_ASSERT_EQUAL(judge(two, 2, 0.5, &bad, why), 1);
	CU_ASSERT_EQUAL(bad, 1);
	CU_ASSERT_EQUAL(judge(two, 1, 0.5, &bad, why), 0);
	/* One measured number is compared with nothing; unmeasured ones are not numbers. */
	CU_ASSERT_EQUAL(judge(alone, 3, 0.5, &bad, why), 0);
}

/* The network numbers: a bandwidth below the line fails as memory does; a round trip fails
 * above median / fraction, exactly at it passes, and never at or below TT_PF_RTT_FLOOR_US;
 * node 0's (none) are not numbers. */
static void test_judge_network(void)
{
	struct tt_preflight pf[4] = { { .mem_mbps = 9000 }, { .mem_mbps = 9000, .net_mbps = 1200, .rtt_us = 700 },
				      { .mem_mbps = 9000, .net_mbps = 1200, .rtt_us = 1400 },
				      { .mem_mbps = 9000, .net_mbps = 1200, .rtt_us = 700 } };
	uint32_t bad = 99;
	char why[300], buf[300];
	struct tt_preflight got;
	tt_err err;

	/* Median round trip 700 us: 1400 is exactly 700 / 0.5, not above it. */
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 0);
	pf[2].rtt_us = 1401;
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 2);
	CU_ASSERT_STRING_EQUAL(why, "round trip to node 0 1401 us > median 700 us / 0.5");
	/* 20 us against a median of 5: above the line, but round trips this short are not told
	 * apart (the floor); 1001 us is past the floor and the line. */
	pf[1].rtt_us = pf[3].rtt_us = 5;
	pf[2].rtt_us = 1000;
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 0);
	pf[2].rtt_us = 1001;
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_STRING_EQUAL(why, "round trip to node 0 1001 us > median 5 us / 0.5");
	pf[2].rtt_us = 5;
	pf[3].net_mbps = 590;
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 3);
	CU_ASSERT_STRING_EQUAL(why, "network bandwidth to node 0 0.59 GB/s < 0.5 x median 1.20 GB/s");
	/* Memory is judged before the network. */
	pf[1].mem_mbps = 100;
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 4, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, "memory bandwidth"));
	/* Their words both ways. */
	CU_ASSERT_EQUAL_FATAL(tt_preflight_format(&pf[3], buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, " mem=9000 net=590 rtt=5");
	CU_ASSERT_EQUAL_FATAL(tt_preflight_parse(buf, &got, &err), 0);
	CU_ASSERT_EQUAL(got.net_mbps, 590);
	CU_ASSERT_EQUAL(got.rtt_us, 5);
	expect_bad(" rtt=0", "expected rtt=US");
	expect_bad(" net=x", "expected net=MB/s");
}

/* Two nodes on one machine (one boot id) compete for its memory and CPUs: their memory
 * bandwidths and round trips are not compared, their network bandwidths (each node's own link,
 * against the fraction over the nodes sharing the machine) and devices are. Distinct boot ids
 * are compared as ever. */
static void test_judge_one_machine(void)
{
	struct tt_preflight pf[3] = { { .mem_mbps = 9000, .boot_id = "a" }, { .mem_mbps = 100, .boot_id = "b" },
				      { .mem_mbps = 9000, .boot_id = "c" } };
	uint32_t bad = 99;
	char why[300], buf[300];
	struct tt_preflight got;
	tt_err err;

	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 1);
	snprintf(pf[2].boot_id, sizeof(pf[2].boot_id), "b");
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), 0);
	/* A round trip 10x the others' on the shared machine: not judged; a link a tenth as fast
	 * (a shaped veth): named with its numbers, against 0.5 / 2 nodes on machine b. */
	pf[0].rtt_us = pf[2].rtt_us = 2000;
	pf[1].rtt_us = 20000;
	pf[2].net_mbps = 1000;	/* node 0 probes no link of its own */
	for (uint32_t link = 100; link <= 200; link += 100) {
		pf[1].net_mbps = link;
		/* 200: a fifth of the other's, 0.33 x their median, which 0.5 alone would fail,
		 * passes: on one machine that is the CPUs' share, not the link. */
		CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), link == 100);
	}
	CU_ASSERT_EQUAL(bad, 1);
	CU_ASSERT_STRING_EQUAL(why, "network bandwidth to node 0 0.10 GB/s < 0.25 x median 0.55 GB/s");
	pf[2].net_mbps = pf[1].net_mbps = 0;
	pf[0].rtt_us = pf[2].rtt_us = pf[1].rtt_us = 0;
	snprintf(pf[0].gpu_fail, sizeof(pf[0].gpu_fail), "/dev/nvidia0 does not open (No such device)");
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 0);
	/* The word both ways, before the device failure (the last word). */
	CU_ASSERT_EQUAL_FATAL(tt_preflight_format(&pf[0], buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, " mem=9000 boot=a gpu-fail=/dev/nvidia0 does not open (No such device)");
	CU_ASSERT_EQUAL_FATAL(tt_preflight_parse(buf, &got, &err), 0);
	CU_ASSERT_STRING_EQUAL(got.boot_id, "a");
	expect_bad(" boot=", "expected boot=ID");
	expect_bad(" boot=0123456789012345678901234567890123456789", "expected boot=ID");
	/* This machine's own: a UUID. */
	tt_preflight_boot_id(&got);
	CU_ASSERT_EQUAL(strlen(got.boot_id), 36);
}

static void test_judge_device_first(void)
{
	struct tt_preflight pf[3] = { { .mem_mbps = 100 }, { .mem_mbps = 10000 }, { .mem_mbps = 10000 } };
	uint32_t bad = 99;
	char why[300];

	snprintf(pf[2].gpu_fail, sizeof(pf[2].gpu_fail), "/dev/nvidia3 does not open (No such device)");
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 2);
	CU_ASSERT_STRING_EQUAL(why, "GPU device /dev/nvidia3 does not open (No such device)");
	pf[2].gpu_fail[0] = '\0';
	CU_ASSERT_EQUAL(tt_preflight_judge(pf, 3, 0.5, &bad, why, sizeof(why)), 1);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(tt_preflight_judge(pf + 1, 2, 0.5, &bad, why, sizeof(why)), 0);
}

/* The device check on a fixture directory: nvidiactl and nvidia0 present, nvidia1 missing. */
static void test_devices_on_a_fixture(void)
{
	char dir[] = "/tmp/tt-preflight-XXXXXX", path[64];
	struct tt_gpu_list gpus = { .n = 2, .id = { "0", "1" } };
	struct tt_preflight pf;
	FILE *f;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	setenv(TT_ENV_PREFLIGHT_TEST_DEV_DIR, dir, 1);
	/* No nvidiactl: no NVIDIA driver, nothing checked. */
	memset(&pf, 0, sizeof(pf));
	tt_preflight_devices(&gpus, 0, &pf);
	CU_ASSERT_STRING_EQUAL(pf.gpu_fail, "");
	snprintf(path, sizeof(path), "%s/nvidiactl", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/nvidia0", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	tt_preflight_devices(&gpus, 0, &pf);
	CU_ASSERT_PTR_NOT_NULL(strstr(pf.gpu_fail, "/nvidia1 does not open (No such file or directory)"));
	CU_ASSERT_PTR_NULL(strstr(pf.gpu_fail, "nvidia0"));
	/* Only this node's GPU 0: it opens. A UUID names no device file: not checked. */
	gpus.n = 1;
	memset(&pf, 0, sizeof(pf));
	tt_preflight_devices(&gpus, 0, &pf);
	CU_ASSERT_STRING_EQUAL(pf.gpu_fail, "");
	snprintf(gpus.id[0], sizeof(gpus.id[0]), "GPU-8f2c0000-0000-0000-0000-000000000000");
	tt_preflight_devices(&gpus, 0, &pf);
	CU_ASSERT_STRING_EQUAL(pf.gpu_fail, "");
	unsetenv(TT_ENV_PREFLIGHT_TEST_DEV_DIR);
	unlink(path);
	snprintf(path, sizeof(path), "%s/nvidiactl", dir);
	unlink(path);
	rmdir(dir);
}

/* The memory probe gives a number (no timing asserted: only that it measured). */
static void test_memory_measures(void)
{
	struct tt_preflight pf = { 0 };
	tt_err err;

	CU_ASSERT_EQUAL(tt_preflight_memory(&pf, &err), 0);
	CU_ASSERT(pf.mem_mbps > 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("preflight", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "words both ways", test_words_both_ways);
	CU_add_test(s, "bad words", test_bad_words);
	CU_add_test(s, "median", test_median);
	CU_add_test(s, "judge: fraction of the median", test_judge_fraction_of_median);
	CU_add_test(s, "judge: the network", test_judge_network);
	CU_add_test(s, "judge: one machine", test_judge_one_machine);
	CU_add_test(s, "judge: a device first", test_judge_device_first);
	CU_add_test(s, "devices on a fixture", test_devices_on_a_fixture);
	CU_add_test(s, "memory measures", test_memory_measures);
	return 0;
}

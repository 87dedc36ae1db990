/* SPDX-License-Identifier: MIT */
/* test_steps.c — the job-wide straggler report (wrapper/steps.c): the table keeps one row per
 * node and rank in order, the report names the ranks and nodes above the factor x the median
 * (exact text, the medians worked out by hand), and the JSON is exact, escaped, and refused
 * when it does not fit, with the faults in it too; a node that left takes its rows with it.
 * End to end (the nodes' rows over the control plane, --report's file): tests/wrapper/ft.sh. */
#include "cunit_main.h"
#include "steps.h"

#include <string.h>

static void put(struct tt_steps *t, uint32_t node, int32_t rank, const char *host, int64_t p50,
		int64_t p99, uint64_t samples)
{
	struct tt_step_row r = { .node = node, .rank = rank, .p50_us = p50, .p99_us = p99,
				 .samples = samples };

	strcpy(r.host, host);
	CU_ASSERT_EQUAL_FATAL(tt_steps_put(t, &r), 0);
}

/* Node 0 (a): ranks 0, 1 at 100 ms; node 1 (b): ranks 2, 3 at 400 ms, put out of order, rank 0
 * twice (the newer summary wins), and a rank 4 without samples (not counted). */
static void job(struct tt_steps *t)
{
	put(t, 1, 3, "b", 400000, 500000, 20);
	put(t, 0, 0, "a", 90000, 90000, 5);
	put(t, 1, 2, "b", 400000, 500000, 20);
	put(t, 0, 1, "a", 100000, 120000, 20);
	put(t, 0, 0, "a", 100000, 110000, 20);
	put(t, 1, 4, "b", 0, 0, 0);
}

static void test_table(void)
{
	struct tt_steps t = { 0 };
	static const int32_t order[] = { 0, 1, 2, 3, 4 };

	job(&t);
	CU_ASSERT_EQUAL_FATAL(t.n, 5);
	for (int i = 0; i < t.n; i++)
		CU_ASSERT_EQUAL(t.rows[i].rank, order[i]);
	CU_ASSERT_EQUAL(t.rows[0].p99_us, 110000);
	CU_ASSERT_EQUAL(t.rows[0].samples, 20);
	tt_steps_free(&t);
	CU_ASSERT_EQUAL(t.n, 0);
}

static void test_report(void)
{
	struct tt_steps t = { 0 };
	char out[2048];

	/* Ranks' p50s 100 100 400 400: median 100 ms (nearest rank); nodes' 100 400: 100 ms. */
	job(&t);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 1, out, sizeof(out)), 3);
	CU_ASSERT_STRING_EQUAL(out,
		"train-run: job: step times of 4 ranks on 2 nodes: median p50 100.0 ms\n"
		"train-run: job: straggler: rank 2 on host b (node 1) p50 400.0 ms p99 500.0 ms is 4.0x the job's median 100.0 ms\n"
		"train-run: job: straggler: rank 3 on host b (node 1) p50 400.0 ms p99 500.0 ms is 4.0x the job's median 100.0 ms\n"
		"train-run: job: straggler node 1 (host b): median p50 400.0 ms is 4.0x the median of nodes 100.0 ms\n");
	/* Periodic: the stragglers only; a factor above 4: nothing at all. */
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 0, out, sizeof(out)), 3);
	CU_ASSERT_NSTRING_EQUAL(out, "train-run: job: straggler: rank 2 ", 34);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 4.0, 0, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	/* One slow rank among three on one node: the rank, no node (one node is no comparison). */
	tt_steps_free(&t);
	put(&t, 0, 0, "a", 100000, 100000, 9);
	put(&t, 0, 1, "a", 100000, 100000, 9);
	put(&t, 0, 2, "a", 151000, 160000, 9);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 0, out, sizeof(out)), 1);
	CU_ASSERT_STRING_EQUAL(out, "train-run: job: straggler: rank 2 on host a (node 0) p50 151.0 ms p99 "
			       "160.0 ms is 1.5x the job's median 100.0 ms\n");
	/* One rank: nobody to be slower than. */
	tt_steps_free(&t);
	put(&t, 0, 0, "a", 100000, 100000, 9);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "train-run: job: step times of 1 ranks on 1 nodes: median p50 100.0 ms\n");
	tt_steps_free(&t);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
}

/* The busy times when every rank with samples has them: step times all 400 ms (a data-parallel
 * step), busy p50s 100 100 | 300 300: median 100 ms, node b at 3x. One rank without busy times:
 * the step times are judged, nobody is slower. */
static void busy_job(struct tt_steps *t, int all)
{
	static const int64_t busy[] = { 100000, 100000, 300000, 300000 };

	for (int32_t r = 0; r < 4; r++) {
		struct tt_step_row row = { .node = (uint32_t)r / 2, .rank = r, .p50_us = 400000, .p99_us = 410000,
					   .samples = 20, .busy_p50_us = busy[r], .busy_p99_us = busy[r] + 5000,
					   .busy_samples = all || r != 1 ? 20 : 0 };

		strcpy(row.host, r < 2 ? "a" : "b");
		CU_ASSERT_EQUAL_FATAL(tt_steps_put(t, &row), 0);
	}
}

static void test_busy(void)
{
	struct tt_steps t = { 0 };
	char out[TT_STEPS_ROW_MAX * 6];

	busy_job(&t, 1);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 1, out, sizeof(out)), 3);
	CU_ASSERT_STRING_EQUAL(out,
		"train-run: job: busy times of 4 ranks on 2 nodes: median busy p50 100.0 ms\n"
		"train-run: job: straggler: rank 2 on host b (node 1) busy p50 300.0 ms p99 305.0 ms is 3.0x the job's median 100.0 ms\n"
		"train-run: job: straggler: rank 3 on host b (node 1) busy p50 300.0 ms p99 305.0 ms is 3.0x the job's median 100.0 ms\n"
		"train-run: job: straggler node 1 (host b): median busy p50 300.0 ms is 3.0x the median of nodes 100.0 ms\n");
	CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 0, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out,
		"{\"factor\":1.5,\"restarts\":0,\"judged\":\"busy\",\"median_p50_ms\":100.000,\"ranks\":["
		"{\"host\":\"a\",\"node\":0,\"rank\":0,\"p50_ms\":400.000,\"p99_ms\":410.000,\"samples\":20,"
		"\"busy_p50_ms\":100.000,\"busy_p99_ms\":105.000,\"busy_samples\":20},"
		"{\"host\":\"a\",\"node\":0,\"rank\":1,\"p50_ms\":400.000,\"p99_ms\":410.000,\"samples\":20,"
		"\"busy_p50_ms\":100.000,\"busy_p99_ms\":105.000,\"busy_samples\":20},"
		"{\"host\":\"b\",\"node\":1,\"rank\":2,\"p50_ms\":400.000,\"p99_ms\":410.000,\"samples\":20,"
		"\"busy_p50_ms\":300.000,\"busy_p99_ms\":305.000,\"busy_samples\":20},"
		"{\"host\":\"b\",\"node\":1,\"rank\":3,\"p50_ms\":400.000,\"p99_ms\":410.000,\"samples\":20,"
		"\"busy_p50_ms\":300.000,\"busy_p99_ms\":305.000,\"busy_samples\":20}],"
		"\"stragglers\":{\"ranks\":[2,3],\"nodes\":[1]},\"faults\":[]}\n");
	tt_steps_free(&t);
	busy_job(&t, 0);
	CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 1, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "train-run: job: step times of 4 ranks on 2 nodes: median p50 400.0 ms\n");
	CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 0, out, sizeof(out)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"judged\":\"step\",\"median_p50_ms\":400.000,"));
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "\"stragglers\":{\"ranks\":[],\"nodes\":[]},\"faults\":[]}"));
	tt_steps_free(&t);
}

static void test_json(void)
{
	struct tt_steps t = { 0 };
	char out[TT_STEPS_ROW_MAX * 4];

	job(&t);
	CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 2, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out,
		"{\"factor\":1.5,\"restarts\":2,\"judged\":\"step\",\"median_p50_ms\":100.000,\"ranks\":["
		"{\"host\":\"a\",\"node\":0,\"rank\":0,\"p50_ms\":100.000,\"p99_ms\":110.000,\"samples\":20},"
		"{\"host\":\"a\",\"node\":0,\"rank\":1,\"p50_ms\":100.000,\"p99_ms\":120.000,\"samples\":20},"
		"{\"host\":\"b\",\"node\":1,\"rank\":2,\"p50_ms\":400.000,\"p99_ms\":500.000,\"samples\":20},"
		"{\"host\":\"b\",\"node\":1,\"rank\":3,\"p50_ms\":400.000,\"p99_ms\":500.000,\"samples\":20}],"
		"\"stragglers\":{\"ranks\":[2,3],\"nodes\":[1]},\"faults\":[]}\n");
	/* Too small by one byte (its NUL), or by most: refused, not cut. */
	{
		char small[2048];
		size_t full = strlen(out);

		CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 2, small, full + 1), 0);
		CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 2, small, full), -1);
		CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 2, small, 100), -1);
	}
	tt_steps_free(&t);
	put(&t, 0, 0, "q\"b\\\n", 1500, 2500, 1);
	CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 2, 0, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "{\"factor\":2,\"restarts\":0,\"judged\":\"step\",\"median_p50_ms\":1.500,\"ranks\":["
			       "{\"host\":\"q\\\"b\\\\\\u000a\",\"node\":0,\"rank\":0,\"p50_ms\":1.500,"
			       "\"p99_ms\":2.500,\"samples\":1}],\"stragglers\":{\"ranks\":[],\"nodes\":[]},\"faults\":[]}\n");
	/* The worst host (every byte escaped, the longest numbers) fits the room promised. */
	tt_steps_free(&t);
	{
		char host[TT_STEPS_HOST];

		memset(host, '\x01', sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		struct tt_step_row r = { .node = UINT32_MAX, .rank = INT32_MIN, .p50_us = INT64_MAX,
					 .p99_us = INT64_MAX, .samples = UINT64_MAX, .busy_p50_us = INT64_MAX,
					 .busy_p99_us = INT64_MAX, .busy_samples = UINT64_MAX };

		strcpy(r.host, host);
		CU_ASSERT_EQUAL_FATAL(tt_steps_put(&t, &r), 0);
		CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, INT32_MAX, out, TT_STEPS_ROW_MAX * 3), 0);
		CU_ASSERT(tt_steps_report(&t, 1.5, 1, out, TT_STEPS_ROW_MAX * 3) == 0 &&
			  strlen(out) < TT_STEPS_ROW_MAX);
	}
	tt_steps_free(&t);
	CU_ASSERT_EQUAL(tt_steps_json(&t, NULL, 1.5, 0, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "{\"factor\":1.5,\"restarts\":0,\"judged\":\"step\",\"median_p50_ms\":null,\"ranks\":[],"
			       "\"stragglers\":{\"ranks\":[],\"nodes\":[]},\"faults\":[]}\n");
}

/* A node's rows after it left: a spare's replacement drops them and keeps every other rank; a
 * shrink drops them and moves the ranks above them down by as many, as the next round numbers
 * them (3 nodes of 2 ranks, node 1 with ranks 2 3 gone: node 2's ranks 4 5 become 2 3). */
static void test_forget(void)
{
	struct tt_steps t = { 0 };

	for (int32_t r = 0; r < 6; r++)
		put(&t, (uint32_t)r / 2, r, r < 2 ? "a" : r < 4 ? "b" : "c", 100000 + r, 100000 + r, 9);
	tt_steps_forget(&t, 1, 2, 0);
	CU_ASSERT_EQUAL_FATAL(t.n, 4);
	CU_ASSERT(t.rows[0].rank == 0 && t.rows[1].rank == 1 && t.rows[2].rank == 4 && t.rows[3].rank == 5);
	CU_ASSERT(t.rows[2].node == 2 && t.rows[2].p50_us == 100004);
	tt_steps_free(&t);
	for (int32_t r = 0; r < 6; r++)
		put(&t, (uint32_t)r / 2, r, r < 2 ? "a" : r < 4 ? "b" : "c", 100000 + r, 100000 + r, 9);
	tt_steps_forget(&t, 1, 2, 2);
	CU_ASSERT_EQUAL_FATAL(t.n, 4);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(t.rows[i].rank, i);
	/* Their times and nodes stay: node 2's rows, ranks 2 3 now. */
	CU_ASSERT(t.rows[2].node == 2 && t.rows[2].p50_us == 100004 && strcmp(t.rows[2].host, "c") == 0);
	CU_ASSERT(t.rows[3].node == 2 && t.rows[3].p50_us == 100005);
	/* A later summary of the new rank 2 replaces its row: one row per rank. */
	put(&t, 2, 2, "c", 100500, 100500, 3);
	CU_ASSERT_EQUAL(t.n, 4);
	CU_ASSERT_EQUAL(t.rows[2].p50_us, 100500);
	/* The report names the current ranks: rank 3 (node 2) 100005 us is no straggler, no rank 4 or 5. */
	{
		char out[2048];

		put(&t, 2, 3, "c", 900000, 900000, 9);
		CU_ASSERT_EQUAL(tt_steps_report(&t, 1.5, 0, out, sizeof(out)), 1);
		CU_ASSERT_STRING_EQUAL(out, "train-run: job: straggler: rank 3 on host c (node 2) p50 900.0 ms p99 "
				       "900.0 ms is 9.0x the job's median 100.0 ms\n");
	}
	/* A node without rows, or the last one: nothing else changes. */
	tt_steps_forget(&t, 7, 9, 2);
	CU_ASSERT_EQUAL(t.n, 4);
	tt_steps_forget(&t, 2, 2, 2);
	CU_ASSERT_EQUAL(t.n, 2);
	tt_steps_free(&t);
}

static void test_fault_kind(void)
{
	CU_ASSERT_EQUAL(tt_fault_kind_of("hung in section step: no progress for 5.0 s (timeout 5.0 s)"), TT_FAULT_HANG);
	CU_ASSERT_EQUAL(tt_fault_kind_of("was killed by SIGKILL (status 137)"), TT_FAULT_CRASH);
	CU_ASSERT_EQUAL(tt_fault_kind_of("exited with code 3"), TT_FAULT_CRASH);
	CU_ASSERT_EQUAL(tt_fault_kind_of("hung"), TT_FAULT_CRASH);
	CU_ASSERT_EQUAL(tt_fault_kind_of(""), TT_FAULT_CRASH);
}

/* The faults, in order, each with what its action has: a crash's restart (rank, no detect_s), a
 * node lost by its silence replaced by a spare, a preflight failure shrinking the job, a spare
 * lost standing by, a hang stopping it; hosts and WHAT escaped (non-ASCII too). */
static void test_faults_json(void)
{
	struct tt_steps t = { 0 };
	struct tt_faults f = { 0 };
	const struct tt_fault list[] = {
		{ .round = 0, .kind = TT_FAULT_CRASH, .action = TT_FAULT_RESTART, .rank = 3, .node = 1,
		  .host = "b", .detect_ms = -1, .what = "was killed by SIGKILL (status 137)" },
		{ .round = 1, .kind = TT_FAULT_LOST, .action = TT_FAULT_REPLACE, .rank = -1, .node = 1,
		  .host = "b", .spare = 3, .spare_host = "d", .node_rank = 1, .detect_ms = 5012,
		  .what = "silent for 5.0 s" },
		{ .round = 2, .kind = TT_FAULT_PREFLIGHT, .action = TT_FAULT_SHRINK, .rank = -1, .node = 2,
		  .host = "c\"\\", .node_rank = 2, .nnodes = 2, .detect_ms = 0,
		  .what = "failed preflight before round 2: GPU \xc3\xa9\n" },
		{ .round = 3, .kind = TT_FAULT_LOST, .action = TT_FAULT_CONTINUE, .rank = -1, .node = 4,
		  .host = "e", .detect_ms = 999, .what = "x" },
		{ .round = 3, .kind = TT_FAULT_HANG, .action = TT_FAULT_STOP, .rank = 0, .node = 0,
		  .host = "a", .detect_ms = -1, .what = "hung in section step" },
	};
	char out[TT_STEPS_ROW_MAX * 2 + TT_STEPS_FAULT_MAX * 5];

	for (size_t i = 0; i < sizeof(list) / sizeof(list[0]); i++)
		CU_ASSERT_EQUAL_FATAL(tt_faults_add(&f, &list[i]), 0);
	CU_ASSERT_EQUAL(f.n, 5);
	CU_ASSERT_EQUAL(tt_steps_json(&t, &f, 1.5, 3, out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out,
		"{\"factor\":1.5,\"restarts\":3,\"judged\":\"step\",\"median_p50_ms\":null,\"ranks\":[],"
		"\"stragglers\":{\"ranks\":[],\"nodes\":[]},\"faults\":["
		"{\"round\":0,\"kind\":\"crash\",\"rank\":3,\"node\":1,\"host\":\"b\",\"action\":\"restart\","
		"\"what\":\"was killed by SIGKILL (status 137)\"},"
		"{\"round\":1,\"kind\":\"lost\",\"rank\":null,\"node\":1,\"host\":\"b\",\"action\":\"replace\","
		"\"node_rank\":1,\"spare_node\":3,\"spare_host\":\"d\",\"detect_s\":5.012,\"what\":\"silent for 5.0 s\"},"
		"{\"round\":2,\"kind\":\"preflight\",\"rank\":null,\"node\":2,\"host\":\"c\\\"\\\\\",\"action\":\"shrink\","
		"\"node_rank\":2,\"nnodes\":2,\"detect_s\":0.000,"
		"\"what\":\"failed preflight before round 2: GPU \\u00c3\\u00a9\\u000a\"},"
		"{\"round\":3,\"kind\":\"lost\",\"rank\":null,\"node\":4,\"host\":\"e\",\"action\":\"continue\","
		"\"detect_s\":0.999,\"what\":\"x\"},"
		"{\"round\":3,\"kind\":\"hang\",\"rank\":0,\"node\":0,\"host\":\"a\",\"action\":\"stop\","
		"\"what\":\"hung in section step\"}]}\n");
	/* One byte short: refused, not cut. */
	{
		size_t full = strlen(out);
		char small[sizeof(out)];

		CU_ASSERT_EQUAL(tt_steps_json(&t, &f, 1.5, 3, small, full + 1), 0);
		CU_ASSERT_EQUAL(tt_steps_json(&t, &f, 1.5, 3, small, full), -1);
	}
	tt_faults_free(&f);
	CU_ASSERT_EQUAL(f.n, 0);
	/* The worst fault (every byte of the hosts and WHAT escaped, the longest numbers) fits the
	 * room promised, with the worst row. */
	{
		struct tt_fault w = { .round = UINT32_MAX, .kind = TT_FAULT_PREFLIGHT, .action = TT_FAULT_REPLACE,
				      .rank = INT32_MAX, .node = UINT32_MAX, .spare = UINT32_MAX,
				      .node_rank = UINT32_MAX, .nnodes = UINT32_MAX, .detect_ms = INT64_MAX };
		struct tt_step_row r = { .node = UINT32_MAX, .rank = INT32_MIN, .p50_us = INT64_MAX,
					 .p99_us = INT64_MAX, .samples = UINT64_MAX };

		memset(w.host, '\x01', sizeof(w.host) - 1);
		memset(w.spare_host, '\xff', sizeof(w.spare_host) - 1);
		memset(w.what, '\x02', sizeof(w.what) - 1);
		memset(r.host, '\x01', sizeof(r.host) - 1);
		CU_ASSERT_EQUAL_FATAL(tt_steps_put(&t, &r), 0);
		CU_ASSERT_EQUAL_FATAL(tt_faults_add(&f, &w), 0);
		w.action = TT_FAULT_SHRINK;
		CU_ASSERT_EQUAL_FATAL(tt_faults_add(&f, &w), 0);
		CU_ASSERT_EQUAL(tt_steps_json(&t, &f, 1.5, INT32_MAX, out,
					      TT_STEPS_ROW_MAX * 3 + TT_STEPS_FAULT_MAX * 2), 0);
	}
	tt_steps_free(&t);
	tt_faults_free(&f);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("steps", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "one row per node and rank, in order", test_table);
	CU_add_test(s, "the report names slow ranks and nodes", test_report);
	CU_add_test(s, "the JSON, exact and escaped", test_json);
	CU_add_test(s, "busy times judged when every rank has them", test_busy);
	CU_add_test(s, "a lost node's rows go, a shrink's ranks move down", test_forget);
	CU_add_test(s, "a hang told from a crash by its WHAT", test_fault_kind);
	CU_add_test(s, "the faults in the JSON, exact and escaped", test_faults_json);
	return 0;
}

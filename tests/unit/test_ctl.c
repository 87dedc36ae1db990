/* SPDX-License-Identifier: MIT */
/* test_ctl.c — the control plane's pure parts (wrapper/ctl.c): its messages both ways, the
 * proofs with sequence numbers (a replayed, reordered, reflected or foreign line does not check
 * out; a rank's step times too), the coordinator's one decision per round, a spare taking a lost
 * node's rank, and the lost node's resubmission line. The
 * connections themselves are tested end to end by tests/wrapper/ft.sh. */
#include "cunit_main.h"
#include "ctl.h"
#include "tt_io.h"

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEY "test-job-key"
#define ID "77.12001"

static void roundtrip(const struct tt_ctl_msg *m, uint64_t seq, const char *want)
{
	struct tt_ctl_msg got;
	uint64_t s = 0;
	char body[512];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_ctl_format(m, seq, body, sizeof(body)), 0);
	CU_ASSERT_STRING_EQUAL(body, want);
	CU_ASSERT_EQUAL_FATAL(tt_ctl_parse(body, strlen(body), &s, &got, &err), 0);
	CU_ASSERT_EQUAL(s, seq);
	CU_ASSERT_EQUAL(got.kind, m->kind);
	CU_ASSERT_EQUAL(got.round, m->round);
	CU_ASSERT_EQUAL(got.node, m->node);
	CU_ASSERT_EQUAL(got.rank, m->rank);
	CU_ASSERT_EQUAL(got.p50_us, m->p50_us);
	CU_ASSERT_EQUAL(got.p99_us, m->p99_us);
	CU_ASSERT_EQUAL(got.samples, m->samples);
	CU_ASSERT_EQUAL(got.spare, m->spare);
}

static void test_messages_both_ways(void)
{
	struct tt_ctl_msg m = { .kind = TT_CTL_FAULT, .round = 2, .rank = 13, .host = "gpu-7",
				.what = "was killed by SIGKILL (status 137)" };
	struct tt_ctl_msg got;
	uint64_t seq;
	tt_err err;

	roundtrip(&m, 5, "5 fault 2 13 gpu-7 was killed by SIGKILL (status 137)");
	m.kind = TT_CTL_RESTART;
	roundtrip(&m, 6, "6 restart 2 13 gpu-7 was killed by SIGKILL (status 137)");
	m.kind = TT_CTL_STOP;
	roundtrip(&m, 7, "7 stop 2 13 gpu-7 was killed by SIGKILL (status 137)");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_LOST, .node = 3, .host = "n3", .what = "silent for 5.1 s" };
	roundtrip(&m, 8, "8 lost 3 n3 silent for 5.1 s");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_SPARE_LOST, .node = 4, .host = "n4", .what = "silent" };
	roundtrip(&m, 8, "8 spare-lost 4 n4 silent");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_REPLACE, .round = 3, .node = 1, .host = "n1", .spare = 4,
				 .spare_host = "n 4", .rank = 1, .what = "silent for 5.1 s" };
	roundtrip(&m, 9, "9 replace 3 1 n1 4 n?4 1 silent for 5.1 s");
	CU_ASSERT_EQUAL(tt_ctl_parse("9 replace 3 1 n1 4 n4 1 w", 25, &seq, &got, &err), 0);
	CU_ASSERT_STRING_EQUAL(got.spare_host, "n4");
	CU_ASSERT_STRING_EQUAL(got.what, "w");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_SHRINK, .round = 2, .node = 3, .host = "n3", .rank = 2,
				 .nnodes = 3, .what = "silent for 5.1 s" };
	roundtrip(&m, 9, "9 shrink 2 3 n3 2 3 silent for 5.1 s");
	CU_ASSERT_EQUAL(tt_ctl_parse("9 shrink 2 3 n3 0 3 w", 21, &seq, &got, &err), -1);	/* node rank 0 stays */
	m = (struct tt_ctl_msg){ .kind = TT_CTL_JOIN, .node = 1, .host = "node one" };
	roundtrip(&m, 1, "1 join 1 node?one");	/* a host is one token */
	m = (struct tt_ctl_msg){ .kind = TT_CTL_PING };
	roundtrip(&m, 2, "2 ping");
	m.kind = TT_CTL_BYE;
	roundtrip(&m, 9, "9 bye");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_STEPS, .rank = 7, .p50_us = 102400, .p99_us = 410431,
				 .samples = 1024 };
	roundtrip(&m, 10, "10 steps 7 102400 410431 1024");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_STEPS, .rank = INT32_MAX, .p50_us = INT64_MAX,
				 .p99_us = INT64_MAX, .samples = INT64_MAX };
	roundtrip(&m, 11, "11 steps 2147483647 9223372036854775807 9223372036854775807 "
		  "9223372036854775807");
	/* With the busy times (optional: an older node sends none, as above). */
	m = (struct tt_ctl_msg){ .kind = TT_CTL_STEPS, .rank = 7, .p50_us = 102400, .p99_us = 410431,
				 .samples = 1024, .busy_p50_us = 20000, .busy_p99_us = 0, .busy_samples = 3 };
	roundtrip(&m, 12, "12 steps 7 102400 410431 1024 busy 20000 0 3");
	/* A node's checks before round 2 (preflight.h's words), and node 0's go. */
	m = (struct tt_ctl_msg){ .kind = TT_CTL_HEALTH, .round = 2,
				 .pf = { .mem_mbps = 9000, .boot_id = "b-1", .gpu_fail = "/dev/nvidia1 gone" } };
	roundtrip(&m, 13, "13 health 2 mem=9000 boot=b-1 gpu-fail=/dev/nvidia1 gone");
	CU_ASSERT_EQUAL_FATAL(tt_ctl_parse("13 health 2 mem=9000 boot=b-1 gpu-fail=/dev/nvidia1 gone", 56,
					   &seq, &got, &err), 0);
	CU_ASSERT_EQUAL(got.pf.mem_mbps, 9000);
	CU_ASSERT_STRING_EQUAL(got.pf.boot_id, "b-1");
	CU_ASSERT_STRING_EQUAL(got.pf.gpu_fail, "/dev/nvidia1 gone");
	m = (struct tt_ctl_msg){ .kind = TT_CTL_HEALTH, .round = 1 };
	roundtrip(&m, 14, "14 health 1");	/* nothing measured */
	m = (struct tt_ctl_msg){ .kind = TT_CTL_GO, .round = 3 };
	roundtrip(&m, 15, "15 go 3");
	CU_ASSERT_EQUAL(tt_ctl_parse("5 fault 2 13 gpu-7 x", 20, &seq, &got, &err), 0);
	CU_ASSERT_STRING_EQUAL(got.host, "gpu-7");
	CU_ASSERT_STRING_EQUAL(got.what, "x");
	/* What is not a message. */
	static const char *const bad[] = {
		"", "ping", "0 ping", "-1 ping", "1 pong", "1 ping extra", "1 ping ", "1 join 1",
		"1 join x h", "1 fault 2 13 gpu-7", "1 fault 2 13", "1 fault x 13 h w", "1 lost 3 n3",
		"1 restart 2 -2 h w", "1  ping", "1 join 1 h extra", "1 join 1 h\xd4", "1 lost 1 h a\tb",
		"1 steps", "1 steps 1 2 3", "1 steps -1 2 3 4", "1 steps 1 -2 3 4", "1 steps 1 2 3 x",
		"1 steps 1 2 3 4 5", "1 steps 1 2 3 4 ", "1 steps 2147483648 2 3 4",
		"1 steps 1 2 3 4 busy", "1 steps 1 2 3 4 busy 1 2", "1 steps 1 2 3 4 busy 1 2 0",
		"1 steps 1 2 3 4 busy -1 2 3", "1 steps 1 2 3 4 idle 1 2 3", "1 steps 1 2 3 4 busy 1 2 3 4",
		"1 steps 1 2 3 4 busy 1 2 3 ",
		"1 replace 3 1 n1 4 n4 1", "1 replace 3 1 n1 4 n4 -1 w", "1 replace 3 1 n1 x n4 1 w",
		"1 spare-lost 4 n4", "1 replace",
		"1 go", "1 go 0", "1 go 1 x", "1 go x", "1 health", "1 health 0", "1 health 1 ",
		"1 health 1  mem=1", "1 health 1 mem=x", "1 health 1 mem", "1 health x mem=1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = tt_ctl_parse(bad[i], strlen(bad[i]), &seq, &got, &err);

		CU_ASSERT_EQUAL(rc, -1);
		if (rc != -1)
			fprintf(stderr, "\naccepted: '%s'\n", bad[i]);
	}
}

/* A line as a peer sends it: seq, role and this connection's nonces. */
static void line(char *buf, int server, const unsigned char *nc, const unsigned char *ns,
		 const struct tt_ctl_msg *m, uint64_t seq)
{
	char body[512];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_ctl_format(m, seq, body, sizeof(body)), 0);
	CU_ASSERT_EQUAL_FATAL(tt_nc_format_msg(buf, KEY, server, ID, nc, ns, body, &err), 0);
	buf[strlen(buf) - 1] = '\0';	/* the '\n' */
}

static void test_proofs_with_sequence_numbers(void)
{
	unsigned char nc[RT_NONCE_LEN] = { 1 }, ns[RT_NONCE_LEN] = { 2 }, other[RT_NONCE_LEN] = { 3 };
	const struct tt_ctl_msg fault = { .kind = TT_CTL_FAULT, .round = 0, .rank = 3, .host = "n1",
					  .what = "exited with code 1" };
	static char l[TT_NC_LINE];
	struct tt_ctl_msg got;
	tt_err err;

	line(l, 0, nc, ns, &fault, 4);
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 0, 4, l, strlen(l), &got, &err), 0);
	CU_ASSERT_EQUAL(got.kind, TT_CTL_FAULT);
	CU_ASSERT_EQUAL(got.rank, 3);
	/* Replayed (the number was due before) or reordered (not yet due). */
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 0, 5, l, strlen(l), &got, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "replayed or reordered"));
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 0, 3, l, strlen(l), &got, &err), -1);
	/* Reflected: a client's line taken for the coordinator's. */
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 1, 4, l, strlen(l), &got, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "without the proof"));
	/* Another connection's nonces, another launch, another key. */
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, other, 0, 4, l, strlen(l), &got, &err), -1);
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, "77.12002", nc, ns, 0, 4, l, strlen(l), &got, &err), -1);
	CU_ASSERT_EQUAL(tt_ctl_open("other-key", ID, nc, ns, 0, 4, l, strlen(l), &got, &err), -1);
	/* A body changed under its proof. */
	strstr(l, "code 1")[5] = '2';
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 0, 4, l, strlen(l), &got, &err), -1);
	/* A handshake line is no message. */
	snprintf(l, TT_NC_LINE, "challenge %064d", 0);
	CU_ASSERT_EQUAL(tt_ctl_open(KEY, ID, nc, ns, 0, 1, l, strlen(l), &got, &err), -1);
}

/* One decision per round: the first fault of the round restarts everyone into the next one, the
 * rest of that round's faults and the past rounds' change nothing; the last restart used, the
 * next fault stops everyone, and nothing is decided after. */
static void test_one_decision_per_round(void)
{
	struct tt_ctl_rounds r = { .max_restarts = 2 };
	struct tt_ctl_msg f = { .kind = TT_CTL_FAULT, .round = 0, .rank = 5, .host = "n1", .what = "w" };
	struct tt_ctl_msg out;

	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 1);
	CU_ASSERT_EQUAL(out.kind, TT_CTL_RESTART);
	CU_ASSERT_EQUAL(out.round, 1);
	CU_ASSERT_EQUAL(out.rank, 5);
	CU_ASSERT_STRING_EQUAL(out.host, "n1");
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 0);	/* another node's, same round */
	f.round = 1;
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 1);
	CU_ASSERT_EQUAL(out.round, 2);
	f.round = 3;
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 0);	/* not a round there was */
	f.round = 2;
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 1);
	CU_ASSERT_EQUAL(out.kind, TT_CTL_STOP);
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 0);
	CU_ASSERT_EQUAL(r.round, 2);
	/* Only faults are decided on. */
	r = (struct tt_ctl_rounds){ .max_restarts = 2 };
	f.kind = TT_CTL_PING;
	f.round = 0;
	CU_ASSERT_EQUAL(tt_ctl_decide(&r, &f, &out), 0);
}

/* Node 0's spares (tt_ctl_replace), with nodes 3 and 4 of 5 the spares standing by. */
static void test_spare_takes_the_lost_rank(void)
{
	struct tt_ctl_rounds r = { .max_restarts = 0 };
	uint32_t role[5] = { 0, 1, 2, TT_CTL_SPARE, TT_CTL_SPARE };
	const uint32_t count[5] = { 8, 8, 4, 8, 4 };
	uint32_t spare = 99, rank = 99;

	/* Node 2 (4 workers) lost: the first spare with 4 workers, node 4, takes node rank 2 in
	 * round 1, though no restart is left. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 2, 1, 0, &spare, &rank), 1);
	CU_ASSERT_EQUAL(spare, 4);
	CU_ASSERT_EQUAL(rank, 2);
	CU_ASSERT_EQUAL(role[4], 2);
	CU_ASSERT_EQUAL(role[2], TT_CTL_GONE);
	CU_ASSERT_EQUAL(r.round, 1);
	/* Lost again (its silence judged twice): nothing more. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 2, 1, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(r.round, 1);
	/* The spare that took rank 2 lost: no spare with 4 workers left. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 4, 1, 0, &spare, &rank), 0);
	/* Node 1 lost while draining: not replaced; then node 3, a spare standing by: 2. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 1, 0, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(role[3], TT_CTL_SPARE);
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 3, 1, 0, &spare, &rank), 2);
	CU_ASSERT_EQUAL(role[3], TT_CTL_GONE);
	/* Node 0, the coordinator, is never replaced; nor a node outside the launch. */
	uint32_t role2[3] = { 0, 1, TT_CTL_SPARE };
	const uint32_t count2[3] = { 2, 2, 2 };

	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 0, 1, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 7, 1, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(role2[2], TT_CTL_SPARE);
	/* A decision that was over (a stop): nothing taken. */
	r.over = 1;
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 1, 1, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(role2[2], TT_CTL_SPARE);
	r.over = 0;
	role2[1] = 1;
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 1, 1, 0, &spare, &rank), 1);
	CU_ASSERT_EQUAL(spare, 2);
	CU_ASSERT_EQUAL(role2[2], 1);
	/* A node standing aside (the census replaced it at the start) lost: like a spare standing
	 * by, 2 and no spare taken. */
	uint32_t role3[3] = { 0, TT_CTL_ASIDE, 1 };

	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role3, count2, 3, 1, 1, 0, &spare, &rank), 2);
	CU_ASSERT_EQUAL(role3[1], TT_CTL_GONE);
	CU_ASSERT_EQUAL(role3[2], 1);
	/* A node standing aside has no NODE_RANK: it does not count among the nodes a shrink keeps
	 * (--nnodes 3:4, node 3 lost leaves nodes 0 and 2 only: the loss stops the job). */
	uint32_t role4[4] = { 0, TT_CTL_ASIDE, 1, 2 }, count4[4] = { 1, 1, 1, 1 };

	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role4, count4, 4, 3, 1, 3, &spare, &rank), 0);
	CU_ASSERT_EQUAL(role4[1], TT_CTL_ASIDE);
}

/* The census's list at the start (tt_ctl_start_roles): node 1 replaced by spare 4, spare 3 set
 * aside after its preflight failed; a later loss finds no spare standing by, since spare 3 is
 * never chosen. */
static void test_start_roles_set_aside(void)
{
	struct tt_ctl_rounds r = { .max_restarts = 0 };
	const struct tt_census_swap swaps[3] = { { .node = 1, .spare = 4 }, { .node = 3 } };
	const uint32_t count[5] = { 2, 2, 2, 2, 2 };
	uint32_t role[5], spare = 99, rank = 99;

	tt_ctl_start_roles(role, 5, 2, NULL);
	CU_ASSERT(role[0] == 0 && role[1] == 1 && role[2] == 2 && role[3] == TT_CTL_SPARE &&
		  role[4] == TT_CTL_SPARE);
	tt_ctl_start_roles(role, 5, 2, swaps);
	CU_ASSERT(role[0] == 0 && role[1] == TT_CTL_ASIDE && role[2] == 2 && role[3] == TT_CTL_ASIDE &&
		  role[4] == 1);
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 2, 1, 0, &spare, &rank), 0);
	CU_ASSERT_EQUAL(spare, 99);
	CU_ASSERT_EQUAL(role[3], TT_CTL_ASIDE);
}

/* --nnodes 2:4 (tt_ctl_replace's shrink) on 5 nodes, node 4 a spare with 4 workers. */
static void test_shrink_renumbers(void)
{
	struct tt_ctl_rounds r = { .max_restarts = 0 };
	uint32_t role[5] = { 0, 1, 2, 3, TT_CTL_SPARE };
	const uint32_t count[5] = { 8, 8, 8, 8, 4 };
	uint32_t spare = 99, rank = 99;

	/* Node 1 lost, no spare with 8 workers: nodes 0, 2, 3 go on as node ranks 0, 1, 2 in
	 * round 1, though no restart is left; the spare stands by. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 1, 1, 2, &spare, &rank), 3);
	CU_ASSERT_EQUAL(rank, 1);
	CU_ASSERT_EQUAL(r.round, 1);
	CU_ASSERT_EQUAL(role[0], 0);
	CU_ASSERT_EQUAL(role[1], TT_CTL_GONE);
	CU_ASSERT_EQUAL(role[2], 1);
	CU_ASSERT_EQUAL(role[3], 2);
	CU_ASSERT_EQUAL(role[4], TT_CTL_SPARE);
	/* The first ranks of the new world: node rank 1 (node 2) starts at 8, not 16; the
	 * spare's and the lost node's workers count for nothing. */
	CU_ASSERT_EQUAL(tt_ctl_first_rank(role, count, 5, 0), 0);
	CU_ASSERT_EQUAL(tt_ctl_first_rank(role, count, 5, 1), 8);
	CU_ASSERT_EQUAL(tt_ctl_first_rank(role, count, 5, 2), 16);
	/* Node 3 (now node rank 2) lost: two nodes left, MIN 2: node 2 stays node rank 1. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 3, 1, 2, &spare, &rank), 3);
	CU_ASSERT_EQUAL(rank, 2);
	CU_ASSERT_EQUAL(role[2], 1);
	CU_ASSERT_EQUAL(r.round, 2);
	/* Node 2 lost: one node would be left, below MIN: the loss stops the job. */
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role, count, 5, 2, 1, 2, &spare, &rank), 0);
	CU_ASSERT_EQUAL(r.round, 2);
	/* Without MIN (0) or while draining: no shrink. */
	uint32_t role2[3] = { 0, 1, 2 };
	const uint32_t count2[3] = { 2, 2, 2 };

	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 1, 1, 0, &spare, &rank), 0);
	role2[1] = 1;
	CU_ASSERT_EQUAL(tt_ctl_replace(&r, role2, count2, 3, 1, 0, 2, &spare, &rank), 0);
	CU_ASSERT_EQUAL(role2[2], 2);
	/* A spare's replacement: the spare's place is the lost node's, its first rank too. */
	{
		uint32_t role3[4] = { 0, 1, 2, TT_CTL_SPARE };
		const uint32_t count3[4] = { 2, 3, 2, 3 };
		struct tt_ctl_rounds r3 = { .max_restarts = 0 };

		CU_ASSERT_EQUAL(tt_ctl_replace(&r3, role3, count3, 4, 1, 1, 0, &spare, &rank), 1);
		CU_ASSERT_EQUAL(tt_ctl_first_rank(role3, count3, 4, role3[3]), 2);
		CU_ASSERT_EQUAL(tt_ctl_first_rank(role3, count3, 4, role3[2]), 5);
	}
	/* The one renumbering rule. */
	CU_ASSERT_EQUAL(tt_ctl_renumber(0, 1), 0);
	CU_ASSERT_EQUAL(tt_ctl_renumber(1, 1), 1);
	CU_ASSERT_EQUAL(tt_ctl_renumber(5, 1), 4);
}

static void test_lost_line(void)
{
	const struct tt_ctl_msg lost = { .kind = TT_CTL_LOST, .node = 1, .host = "gpu-2",
					 .what = "silent for 5.3 s" };
	char buf[256];

	tt_ctl_lost_line(&lost, buf, sizeof(buf));
	CU_ASSERT_STRING_EQUAL(buf, "node gpu-2 lost (silent for 5.3 s); resubmit with: sbatch "
			       "--exclude=gpu-2 ...");
}

/* Node 0 of a two-node control plane, in a thread: joins, then serves until done is set; what
 * tt_ctl_service decided is counted in verdicts. */
struct coordinator {
	struct tt_ctl c;
	volatile int done;
	int rc, verdicts;
	tt_err err;
};

static void *coordinate(void *arg)
{
	struct coordinator *co = arg;

	co->rc = tt_ctl_connect(&co->c, 0, 1, &co->err);
	while (co->rc == 0 && !co->done) {
		struct pollfd *p = calloc((size_t)tt_ctl_nfds(&co->c), sizeof(*p));
		struct tt_ctl_msg v;

		if (!p)
			break;
		(void)poll(p, (nfds_t)tt_ctl_pollfds(&co->c, p), 50);
		free(p);
		co->verdicts += tt_ctl_service(&co->c, &v);
	}
	tt_ctl_close(&co->c);
	return NULL;
}

/* With --preflight node 0 serves the other nodes' network probes on its control port once
 * every node joined, without losing a node: a proven probe request is measured; a proven
 * message that is not one (a late join) is closed unanswered; the control connection goes on.
 * Without --preflight the port is closed after the joins: a probe fails within its bound. */
static void test_probes_on_the_control_port(void)
{
	for (int health = 1; health >= 0; health--) {
		struct coordinator co = { .c = { .key = KEY, .id = ID, .server = "127.0.0.1",
						 .host = "n0", .nnodes = 2, .node = 0, .health = health,
						 .min_fraction = 0.5, .health_wait_ms = 5000, .lfd = -1,
						 .timerfd = -1 } };
		struct tt_ctl me = { .key = KEY, .id = ID, .server = "127.0.0.1", .host = "n1",
				     .nnodes = 2, .node = 1, .health = health, .lfd = -1, .timerfd = -1 };
		struct tt_nc_client cl = { .fd = -1 };
		struct tt_probe_result r = { 0 };
		char body[TT_NC_BODY_MAX + 1];
		pthread_t th;
		long t0;
		tt_err err;

		CU_ASSERT_EQUAL_FATAL(tt_ctl_listen(&co.c, &err), 0);
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, coordinate, &co), 0);
		CU_ASSERT_EQUAL_FATAL(tt_ctl_connect(&me, co.c.port, 1, &err), 0);
		CU_ASSERT_EQUAL(me.port, co.c.port);
		t0 = tt_now_ms();
		CU_ASSERT_EQUAL(tt_probe_run(me.server, me.port, KEY, ID, 1, NULL,
					     tt_now_ms() + (health ? 5000 : 500), &r, &err), health ? 0 : -1);
		CU_ASSERT(tt_now_ms() - t0 < (health ? 2000 : 2600));
		CU_ASSERT(!health || (r.net_mbps > 0 && r.rtt_us > 0));
		if (health) {
			CU_ASSERT_EQUAL_FATAL(tt_nc_client_say(&cl, me.server, me.port, KEY, ID, "1 join 1 n1",
							       tt_now_ms() + 2000, 0, NULL, NULL, &err), 0);
			CU_ASSERT_EQUAL(tt_nc_client_hear(&cl, KEY, ID, body, tt_now_ms() + 2000, &err), -1);
			tt_nc_client_close(&cl);
		}
		for (int i = 0; i < 10; i++) {	/* node 1's control loop: nothing to decide */
			struct tt_ctl_msg v;

			CU_ASSERT_EQUAL(tt_ctl_service(&me, &v), 0);
			(void)poll(NULL, 0, 20);
		}
		co.done = 1;
		pthread_join(th, NULL);
		CU_ASSERT_EQUAL(co.rc, 0);
		CU_ASSERT_EQUAL(co.verdicts, 0);	/* node 1 never lost */
		tt_ctl_close(&me);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("ctl", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "messages both ways", test_messages_both_ways);
	CU_add_test(s, "proofs with sequence numbers", test_proofs_with_sequence_numbers);
	CU_add_test(s, "one decision per round", test_one_decision_per_round);
	CU_add_test(s, "the lost line", test_lost_line);
	CU_add_test(s, "a spare takes the lost rank", test_spare_takes_the_lost_rank);
	CU_add_test(s, "a spare set aside at the start is never chosen", test_start_roles_set_aside);
	CU_add_test(s, "a shrink renumbers the nodes left", test_shrink_renumbers);
	CU_add_test(s, "probes on the control port", test_probes_on_the_control_port);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_census.c — train-run's node count exchange and the authenticated node channel under it:
 * the bodies and their checks, the channel's lines and proofs, and the exchange itself between
 * threads over loopback, attacked by raw clients that do not hold the key (a forged count, an
 * idle connection, a stranger's wrong count), by a key holder claiming a node twice, and with a
 * node that refuses or dies before the answer; node 0's judgement of the nodes' preflight and
 * its answers to network probe requests, good and bad, with and without a preflight. */
#include "cunit_main.h"
#include "census.h"
#include "nodechan.h"
#include "probe.h"
#include "tt_io.h"
#include "tt_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define KEY "test-job-key"

static const struct tt_census server = { .id = "77.12001", .key = KEY, .server = "localhost",
					  .port = 1, .nnodes = 3, .node = 0, .count = 8,
					  .host = "n0", .timeout_s = 5 };

static void test_body_accepted_once(void)
{
	struct tt_census c = server;
	struct tt_census_said s;
	uint32_t per_node[3] = { 8, 0, 0 };
	unsigned char seen[3] = { 1, 0, 0 };
	char hosts[3][TT_CENSUS_HOST] = { "" }, body[256];
	tt_err err;

	c.node = 2;
	c.count = 4;
	c.host = "n 2";	/* made one token */
	CU_ASSERT_EQUAL_FATAL(tt_census_body(&c, body, sizeof(body)), 0);
	CU_ASSERT_STRING_EQUAL(body, "census 3 2 4 n?2");
	CU_ASSERT_EQUAL_FATAL(tt_census_parse(body, &s, &err), 0);
	CU_ASSERT_EQUAL(tt_census_accept(&server, &s, per_node, seen, hosts, &err), 0);
	CU_ASSERT_EQUAL(per_node[2], 4);
	CU_ASSERT_EQUAL(seen[2], 1);
	CU_ASSERT_STRING_EQUAL(hosts[2], "n?2");
	/* The same node twice: two train-runs on one node. */
	CU_ASSERT_EQUAL(tt_census_accept(&server, &s, per_node, seen, hosts, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "two train-runs say they are node 2 (n?2 and n?2)"));
	CU_ASSERT_EQUAL(tt_census_body(&c, body, 8), -1);	/* does not fit */
	{
		struct tt_preflight pf = { .mem_mbps = 9800, .gpu_fail = "/dev/nvidia1 does not open" };

		c.preflight = &pf;
		CU_ASSERT_EQUAL_FATAL(tt_census_body(&c, body, sizeof(body)), 0);
		CU_ASSERT_STRING_EQUAL(body, "census 3 2 4 n?2 mem=9800 gpu-fail=/dev/nvidia1 does not open");
		CU_ASSERT_EQUAL_FATAL(tt_census_parse(body, &s, &err), 0);
		CU_ASSERT_EQUAL(s.count, 4);
		CU_ASSERT_STRING_EQUAL(s.host, "n?2");
		CU_ASSERT_EQUAL(s.pf.mem_mbps, 9800);
		CU_ASSERT_STRING_EQUAL(s.pf.gpu_fail, "/dev/nvidia1 does not open");
		CU_ASSERT_EQUAL(tt_census_body(&c, body, 30), -1);	/* the words do not fit */
		c.preflight = NULL;
	}
	c.refusal = "bad\noption";
	CU_ASSERT_EQUAL_FATAL(tt_census_body(&c, body, sizeof(body)), 0);
	CU_ASSERT_STRING_EQUAL(body, "refuse 3 2 n?2 bad?option");
	CU_ASSERT_EQUAL_FATAL(tt_census_parse(body, &s, &err), 0);
	CU_ASSERT_STRING_EQUAL(s.reason, "bad?option");
}

static void expect_refused(const char *body, const char *want)
{
	uint32_t per_node[3] = { 0 };
	unsigned char seen[3] = { 1, 0, 0 };
	char hosts[3][TT_CENSUS_HOST] = { "" };
	struct tt_census_said s;
	tt_err err = { "" };

	CU_ASSERT_EQUAL(tt_census_parse(body, &s, &err) != 0 ||
			tt_census_accept(&server, &s, per_node, seen, hosts, &err) != 0, 1);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\n'%s' lacks '%s'\n", err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_EQUAL(per_node[1] + per_node[2], 0);
}

static void test_bad_bodies_and_disagreements(void)
{
	expect_refused("GET / HTTP/1.1", "not a worker count or a refusal");
	expect_refused("census 3 1 4", "not a worker count");
	expect_refused("census 3 1 4 h extra", "node 1 (h): preflight result 'extra': expected KEY=VALUE");
	expect_refused("census 3 1 -4 h", "not a worker count");
	expect_refused("census 3 1 4 h mem=fast", "node 1 (h): preflight result 'mem=fast'");
	expect_refused("refuse 3 1 h", "not a worker count");
	expect_refused("census 2 1 4 h", "node 1 (h) counts 2 nodes, node 0 counts 3");
	expect_refused("census 3 0 4 h", "h says it is node 0");
	expect_refused("census 3 3 4 h", "outside 1..2");
	expect_refused("census 3 1 0 h", "node 1 (h) runs no worker");
	expect_refused("refuse 3 2 h2 --node-rank 0 contradicts", "node 2 (h2) refused: --node-rank 0 contradicts");
}

static void test_answer_both_ways(void)
{
	const uint32_t counts[3] = { 8, 4, 8 }, counts4[4] = { 8, 4, 8, 4 };
	uint32_t got[3] = { 0 }, got4[4];
	uint16_t port = 1;
	struct tt_census_swap swap[3], swap4[4], sent[3] = {
		{ .node = 1, .spare = 2, .host = "n1",
		  .line = "node 1 (n1) failed preflight: x; spare node 2 (n2) takes its node rank 1" },
	};
	char line[320];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts, 3, 0, NULL, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "ok 8,4,8");
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 3, got, &port, swap, &err), 0);
	CU_ASSERT_EQUAL(got[1], 4);
	CU_ASSERT_EQUAL(port, 0);
	/* The control plane's port (ctl.h) rides on the answer. */
	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts, 3, 40123, NULL, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "ok 8,4,8 ctl 40123");
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 3, got, &port, swap, &err), 0);
	CU_ASSERT_EQUAL(port, 40123);
	CU_ASSERT_EQUAL(got[2], 8);
	CU_ASSERT_EQUAL(tt_census_answer(counts, 3, 40123, NULL, line, 12), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 ctl 0", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 ctl 65536", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 port 1", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4 ctl 1", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_answer(counts, 3, 0, NULL, line, 6), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4", 3, got, &port, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a list of 3 worker counts"));
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8,1", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,0,8", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,-4,8", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("error node 1 (h) counts 2 nodes", 3, got, &port, swap, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "node 1 (h) counts 2 nodes");
	/* A node replaced by a spare at the start (census.h): after the port, or without one. */
	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts, 3, 40123, sent, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "ok 8,4,8 ctl 40123 swap 1 2 n1 72 node 1 (n1) failed preflight: x; "
			       "spare node 2 (n2) takes its node rank 1");
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 3, got, &port, swap, &err), 0);
	CU_ASSERT_EQUAL(port, 40123);
	CU_ASSERT(swap[0].node == 1 && swap[0].spare == 2 && swap[1].node == 0);
	CU_ASSERT_STRING_EQUAL(swap[0].host, "n1");
	CU_ASSERT_STRING_EQUAL(swap[0].line, sent[0].line);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 2 1 n2 3 why", 3, got, &port, swap, &err), 0);
	CU_ASSERT(swap[0].node == 2 && swap[0].spare == 1 && swap[1].node == 0 && port == 0);
	CU_ASSERT_EQUAL(tt_census_answer(counts, 3, 40123, sent, line, 40), -1);
	/* Two nodes of four standing aside: one replaced, a spare set aside (SPARE 0). */
	sent[1] = (struct tt_census_swap){ .node = 3, .spare = 0, .host = "n3", .line = "spare node 3 why" };
	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts4, 4, 0, sent, line, sizeof(line)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "takes its node rank 1 swap 3 0 n3 16 spare node 3 why"));
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 4, got4, &port, swap4, &err), 0);
	CU_ASSERT(swap4[0].node == 1 && swap4[0].spare == 2 && swap4[1].node == 3 && swap4[1].spare == 0 &&
		  swap4[2].node == 0);
	CU_ASSERT_STRING_EQUAL(swap4[1].host, "n3");
	CU_ASSERT_STRING_EQUAL(swap4[1].line, "spare node 3 why");
	/* The spare that takes a rank cannot stand aside too. */
	sent[1].node = 2;
	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts4, 4, 0, sent, line, sizeof(line)), 0);
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 4, got4, &port, swap4, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 0 2 n0 3 why", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 3 n1 3 why", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 1 n1 3 why", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 2 n1", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 2 n1 3", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 2 n1 4 why", 3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 2 n1 2 why", 3, got, &port, swap, &err), -1);
	/* A node named twice, and more swaps than nodes other than 0. */
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 0 n1 1 a swap 1 0 n1 1 b", 3, got, &port,
					      swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 2 n1 1 a swap 2 0 n2 1 b", 3, got, &port,
					      swap, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8 swap 1 0 n1 1 a swap 2 0 n2 1 b swap 2 0 n2 1 c",
					      3, got, &port, swap, &err), -1);
	CU_ASSERT_EQUAL(swap[0].node, 0);
}

/* The channel's lines: each kind parsed, anything else refused; the proofs differ by role,
 * nonce and body, so none can stand for another. */
static void test_channel_lines_and_proofs(void)
{
	unsigned char nc[RT_NONCE_LEN] = { 1 }, ns[RT_NONCE_LEN] = { 2 }, a[RT_MAC_LEN], b[RT_MAC_LEN];
	char hello[200], msg[TT_NC_LINE];
	struct tt_nc_line l;
	tt_err err;

	snprintf(hello, sizeof(hello), TT_NC_MAGIC " hello 77.1 %064d", 0);
	CU_ASSERT_EQUAL(tt_nc_parse(hello, strlen(hello), &l, &err), 0);
	CU_ASSERT_EQUAL(l.kind, TT_NC_HELLO);
	CU_ASSERT_STRING_EQUAL(l.id, "77.1");
	CU_ASSERT_EQUAL(tt_nc_parse(hello, strlen(hello) - 1, &l, &err), -1);
	CU_ASSERT_EQUAL(tt_nc_parse("challenge 00", 12, &l, &err), -1);
	CU_ASSERT_EQUAL(tt_nc_parse("hello\x01", 6, &l, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "printable"));
	CU_ASSERT_EQUAL_FATAL(tt_nc_format_msg(msg, KEY, 0, "77.1", nc, ns, "census 2 1 4 h", &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_nc_parse(msg, strlen(msg) - 1, &l, &err), 0);
	CU_ASSERT_EQUAL(l.kind, TT_NC_MSG);
	CU_ASSERT_EQUAL(l.body_len, 14);
	CU_ASSERT_EQUAL(tt_nc_mac(KEY, 0, "77.1", nc, ns, l.body, l.body_len, a, &err), 0);
	CU_ASSERT(rt_token_mac_equal(a, l.mac));
	CU_ASSERT_EQUAL(tt_nc_mac(KEY, 1, "77.1", nc, ns, l.body, l.body_len, b, &err), 0);
	CU_ASSERT(!rt_token_mac_equal(a, b));	/* the server's proof is not the client's */
	CU_ASSERT_EQUAL(tt_nc_mac(KEY, 0, "77.1", ns, nc, l.body, l.body_len, b, &err), 0);
	CU_ASSERT(!rt_token_mac_equal(a, b));	/* bound to both nonces, in order */
	CU_ASSERT_EQUAL(tt_nc_mac(KEY, 0, "77.1", nc, ns, "census 2 1 5 h", 14, b, &err), 0);
	CU_ASSERT(!rt_token_mac_equal(a, b));	/* and to the body */
	CU_ASSERT_EQUAL(tt_nc_mac("other", 0, "77.1", nc, ns, l.body, l.body_len, b, &err), 0);
	CU_ASSERT(!rt_token_mac_equal(a, b));
}

/* A port nobody listens on now (below the ephemeral range: see tt_port.h). */
static uint16_t free_port(void)
{
	uint16_t port = 0;
	tt_err err;

	CU_ASSERT_FATAL(tt_free_loopback_port(&port, &err) == 0);
	return port;
}

struct node_run {
	struct tt_census c;
	uint32_t per_node[3];
	tt_err err;
	int rc;
	long ms;	/* how long its exchange took */
	int notices;
};

static void count_notice(void *arg, const char *line)
{
	struct node_run *r = arg;

	if (strstr(line, "waiting"))
		r->notices++;
}

static void *run_node(void *arg)
{
	struct node_run *r = arg;
	long t0 = tt_now_ms();

	r->rc = tt_census_run(&r->c, r->per_node, &r->err);
	r->ms = tt_now_ms() - t0;
	return NULL;
}

/* n nodes of one launch on a free loopback port; nodes[i] is node n-1-i, so the clients start
 * before the server. */
static void setup_nodes(struct node_run *nodes, int n)
{
	uint16_t port = free_port();

	for (int i = 0; i < n; i++) {
		memset(&nodes[i], 0, sizeof(nodes[i]));
		nodes[i].c = server;
		nodes[i].c.server = "127.0.0.1";
		nodes[i].c.port = port;
		nodes[i].c.nnodes = (uint32_t)n;
		nodes[i].c.node = (uint32_t)(n - 1 - i);
		nodes[i].c.count = (uint32_t)(n - 1 - i) + 2;
		nodes[i].c.host = i == n - 1 ? "n0" : i == n - 2 ? "n1" : "n2";
		nodes[i].c.notice = count_notice;
		nodes[i].c.arg = &nodes[i];
	}
}

static void start_nodes(struct node_run *nodes, int n, pthread_t *th)
{
	for (int i = 0; i < n; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, run_node, &nodes[i]), 0);
}

static void join_nodes(int n, pthread_t *th)
{
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* Runs the exchange of every node, each in its own thread. */
static void run_nodes(struct node_run *nodes, int n)
{
	pthread_t th[4];

	start_nodes(nodes, n, th);
	join_nodes(n, th);
}

static void expect_counts(struct node_run *nodes, int n)
{
	for (int i = 0; i < n; i++) {
		if (nodes[i].rc != 0)
			fprintf(stderr, "\nnode %u: %s\n", nodes[i].c.node, nodes[i].err.msg);
		CU_ASSERT_EQUAL(nodes[i].rc, 0);
		for (int k = 0; k < n; k++)
			CU_ASSERT_EQUAL(nodes[i].per_node[k], (uint32_t)k + 2);
	}
}

/* Three nodes on loopback, the clients started before the server listens. */
static void test_exchange_over_loopback(void)
{
	struct node_run nodes[3];

	setup_nodes(nodes, 3);
	run_nodes(nodes, 3);
	expect_counts(nodes, 3);
}

/* A node that disagrees fails the launch on node 0 and on the node, both naming it. */
static void test_exchange_disagreement_fails_both(void)
{
	struct node_run nodes[2];	/* [0] is node 1, [1] node 0 */

	setup_nodes(nodes, 2);
	nodes[0].c.nnodes = 3;	/* node 1 counts 3 nodes */
	run_nodes(nodes, 2);
	CU_ASSERT_EQUAL(nodes[1].rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(nodes[1].err.msg, "node 1 (n1) counts 3 nodes, node 0 counts 2"));
	CU_ASSERT_EQUAL(nodes[0].rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(nodes[0].err.msg, "node 1 (n1) counts 3 nodes"));
}

/* A refusing node stops every node at once, each naming it and its reason; a refusing node 0
 * as well. */
static void test_refusal_reaches_every_node(void)
{
	struct node_run nodes[3];	/* [0] node 2, [1] node 1, [2] node 0 */
	int who;

	for (who = 0; who < 3; who++) {
		setup_nodes(nodes, 3);
		nodes[who].c.refusal = "--node-rank 0 contradicts SLURM_NODEID";
		run_nodes(nodes, 3);
		for (int i = 0; i < 3; i++) {
			char want[128];

			snprintf(want, sizeof(want), "node %d (%s) refused: --node-rank 0 contradicts",
				 2 - who, nodes[who].c.host);
			if (!strstr(nodes[i].err.msg, want))
				fprintf(stderr, "\nnode %u: '%s' lacks '%s'\n", nodes[i].c.node,
					nodes[i].err.msg, want);
			CU_ASSERT_EQUAL(nodes[i].rc, -1);
			CU_ASSERT_PTR_NOT_NULL(strstr(nodes[i].err.msg, want));
			CU_ASSERT(nodes[i].ms < 3000);
		}
	}
}

/* Node 0 judges every node's health check once all are heard: a node below half the median
 * stops every node, each naming it with its numbers and the sbatch --exclude; a number exactly
 * at the line starts everyone, the other nodes' network probes measured on the way; a node 0
 * without a check judges nobody's and serves no probe, and the nodes start unmeasured. */
static void test_preflight_judged_by_node0(void)
{
	struct node_run nodes[3];	/* [0] node 2, [1] node 1, [2] node 0 */
	struct tt_preflight pf[3] = { { .mem_mbps = 2100 }, { .mem_mbps = 9800 }, { .mem_mbps = 9900 } };
	const char *want = "node 2 (n2) failed preflight: memory bandwidth 2.1 GB/s < 0.5 x median "
			   "9.8 GB/s; resubmit with sbatch --exclude=n2";

	setup_nodes(nodes, 3);
	for (int i = 0; i < 3; i++) {
		nodes[i].c.preflight = &pf[i];
		nodes[i].c.min_fraction = 0.5;
	}
	run_nodes(nodes, 3);
	for (int i = 0; i < 3; i++) {
		if (strcmp(nodes[i].err.msg, want))
			fprintf(stderr, "\nnode %u: '%s'\n", nodes[i].c.node, nodes[i].err.msg);
		CU_ASSERT_EQUAL(nodes[i].rc, -1);
		CU_ASSERT_STRING_EQUAL(nodes[i].err.msg, want);
	}
	/* Two nodes: 3000 is exactly 0.5 x the median 6000 of 3000 and 9000 (one network number
	 * alone is not compared). */
	memset(pf, 0, sizeof(pf));
	pf[0].mem_mbps = 3000;
	pf[1].mem_mbps = 9000;
	setup_nodes(nodes, 2);
	for (int i = 0; i < 2; i++) {
		nodes[i].c.preflight = &pf[i];
		nodes[i].c.min_fraction = 0.5;
	}
	run_nodes(nodes, 2);
	expect_counts(nodes, 2);
	CU_ASSERT(pf[0].net_mbps > 0 && pf[0].rtt_us > 0);	/* node 1 probed node 0 */
	CU_ASSERT(pf[1].net_mbps == 0 && pf[1].rtt_us == 0);	/* node 0 probes no one */
	memset(pf, 0, sizeof(pf));
	pf[0].mem_mbps = 100;
	setup_nodes(nodes, 2);
	nodes[0].c.preflight = &pf[0];
	run_nodes(nodes, 2);
	expect_counts(nodes, 2);
	CU_ASSERT_EQUAL(pf[0].net_mbps, 0);
}

/* A node other than 0 failing the start preflight with a spare standing by with its worker
 * count: the spare takes its place, named in one line; node 0 failing, no passing spare with
 * its count, or no swap wanted: the verdict as without spares. */
static void test_preflight_failing_node_replaced(void)
{
	struct tt_preflight pf[4] = { { .mem_mbps = 9900 }, { .mem_mbps = 2100 }, { .mem_mbps = 9800 },
				      { .mem_mbps = 9700 } };
	char hosts[4][TT_CENSUS_HOST] = { "n0", "n1", "n2", "n3" };
	uint32_t counts[4] = { 2, 2, 2, 2 };
	struct tt_census_swap swap[4];
	tt_err err;

	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 1, 0.5, swap, &err), 0);
	CU_ASSERT(swap[0].node == 1 && swap[0].spare == 3 && swap[1].node == 0);
	CU_ASSERT_STRING_EQUAL(swap[0].host, "n1");
	CU_ASSERT_STRING_EQUAL(swap[0].line, "node 1 (n1) failed preflight: memory bandwidth 2.1 GB/s < 0.5 x "
			       "median 9.8 GB/s; spare node 3 (n3) takes its node rank 1");
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 1, 0.5, NULL, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 1 (n1) failed preflight: memory bandwidth 2.1 GB/s"));
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 0, 0.5, swap, &err), -1);
	CU_ASSERT_EQUAL(swap[0].node, 0);
	counts[3] = 4;	/* the spare runs another worker count */
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 1, 0.5, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "resubmit with sbatch --exclude=n1"));
	counts[3] = 2;
	pf[3].mem_mbps = 1000;	/* the only spare fails: set aside, and node 1 is left unreplaced */
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 1, 0.5, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 1 (n1) failed preflight: memory bandwidth 2.1 GB/s"));
	CU_ASSERT_EQUAL(swap[0].node, 0);
	pf[3].mem_mbps = 9700;
	pf[1].mem_mbps = 9600;
	pf[0].mem_mbps = 2000;	/* node 0, the coordinator */
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 1, 0.5, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 0 (n0) failed preflight"));
	CU_ASSERT_EQUAL(swap[0].node, 0);
	pf[0].mem_mbps = 9900;
	pf[1].mem_mbps = 2100;
	pf[3].mem_mbps = 1000;	/* a spare failing first, then node 0 after it */
	strcpy(pf[0].gpu_fail, "/dev/nvidia0: gone");
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 4, 2, 0.5, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 0 (n0) failed preflight: GPU device /dev/nvidia0"));
	CU_ASSERT_EQUAL(swap[0].node, 0);
}

/* Every failing node other than 0 is replaced by its own passing spare; a failing spare is set
 * aside, no verdict, and never chosen; more failing nodes than fitting spares: the verdict names
 * the first left unreplaced. */
static void test_preflight_failing_nodes_and_spares(void)
{
	struct tt_preflight pf[6];
	char hosts[6][TT_CENSUS_HOST] = { "n0", "n1", "n2", "n3", "n4", "n5" };
	uint32_t counts[6] = { 2, 2, 2, 2, 2, 2 };
	struct tt_census_swap swap[6];
	tt_err err;

	for (int k = 0; k < 6; k++)
		pf[k] = (struct tt_preflight){ .mem_mbps = 9900 - 10 * k };
	/* Two failing nodes, two spares: two swaps, each spare once. */
	pf[1].mem_mbps = 2100;
	strcpy(pf[2].gpu_fail, "/dev/nvidia1: No such device");
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 6, 2, 0.5, swap, &err), 0);
	CU_ASSERT(swap[0].node == 2 && swap[0].spare == 4);	/* the device, found first */
	CU_ASSERT(swap[1].node == 1 && swap[1].spare == 5);
	CU_ASSERT_EQUAL(swap[2].node, 0);
	CU_ASSERT_STRING_EQUAL(swap[0].line, "node 2 (n2) failed preflight: GPU device /dev/nvidia1: No "
			       "such device; spare node 4 (n4) takes its node rank 2");
	CU_ASSERT_STRING_EQUAL(swap[1].line, "node 1 (n1) failed preflight: memory bandwidth 2.1 GB/s < "
			       "0.5 x median 9.9 GB/s; spare node 5 (n5) takes its node rank 1");
	CU_ASSERT_STRING_EQUAL(swap[1].host, "n1");
	/* Two failing, one spare: the verdict names the second, left unreplaced. */
	pf[2].gpu_fail[0] = '\0';
	pf[2].mem_mbps = 1900;
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 6, 1, 0.5, swap, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "node 2 (n2) failed preflight: memory bandwidth 1.9 GB/s < 0.5 x "
			       "median 9.9 GB/s; resubmit with sbatch --exclude=n2");
	CU_ASSERT_EQUAL(swap[0].node, 0);
	/* A failing spare: set aside, one line, the others pass. */
	pf[1].mem_mbps = 9890;
	pf[2].mem_mbps = 9880;
	pf[4].mem_mbps = 1000;
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 6, 2, 0.5, swap, &err), 0);
	CU_ASSERT(swap[0].node == 4 && swap[0].spare == 0 && swap[1].node == 0);
	CU_ASSERT_STRING_EQUAL(swap[0].host, "n4");
	CU_ASSERT_STRING_EQUAL(swap[0].line, "spare node 4 (n4) failed preflight: memory bandwidth 1.0 GB/s "
			       "< 0.5 x median 9.9 GB/s; the job goes on with 1 spare fewer");
	/* A failing spare, a failing node and one more passing spare: the passing one replaces the
	 * node, the failing one (first of the spares, same count) is never chosen. */
	strcpy(pf[4].gpu_fail, "/dev/nvidia0: gone");
	pf[4].mem_mbps = 9860;
	pf[3].mem_mbps = 2000;
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 6, 2, 0.5, swap, &err), 0);
	CU_ASSERT(swap[0].node == 4 && swap[0].spare == 0);
	CU_ASSERT(swap[1].node == 3 && swap[1].spare == 5);
	CU_ASSERT_EQUAL(swap[2].node, 0);
	CU_ASSERT_STRING_EQUAL(swap[1].line, "node 3 (n3) failed preflight: memory bandwidth 2.0 GB/s < 0.5 x "
			       "median 9.9 GB/s; spare node 5 (n5) takes its node rank 3");
	/* The same with the passing spare running another worker count: the node is left over. */
	counts[5] = 4;
	CU_ASSERT_EQUAL(tt_census_preflight(pf, hosts, counts, 6, 2, 0.5, swap, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "node 3 (n3) failed preflight: memory bandwidth 2.0 GB/s"));
	CU_ASSERT_EQUAL(swap[0].node, 0);
}

/* Node 0's probe thread answers a key holder's malformed probe request with an error, and a
 * probe of a node 0 without a preflight with the error that it serves none; neither touches
 * the launch, which completes when node 1 comes. */
static void test_probe_requests_answered(void)
{
	struct node_run node0;
	struct tt_preflight pf = { .mem_mbps = 9000 };
	struct tt_nc_client cl = { .fd = -1 };
	struct tt_census me;
	struct tt_probe_result r = { 0 };
	char body[TT_NC_BODY_MAX + 1];
	pthread_t th;
	tt_err err;

	for (int with = 1; with >= 0; with--) {
		setup_nodes(&node0, 1);
		node0.c.nnodes = 2;
		node0.c.node = 0;
		node0.c.preflight = with ? &pf : NULL;
		node0.c.min_fraction = 0.5;
		me = node0.c;
		me.node = 1;
		me.count = 3;
		me.host = "n1";
		me.preflight = NULL;
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, run_node, &node0), 0);
		CU_ASSERT_EQUAL_FATAL(tt_nc_client_say(&cl, "127.0.0.1", me.port, KEY, me.id,
						       "probe 1 0 1024 1", tt_now_ms() + 5000, 0, NULL,
						       NULL, &err), 0);
		CU_ASSERT_EQUAL(tt_nc_client_hear(&cl, KEY, me.id, body, tt_now_ms() + 5000, &err), 0);
		CU_ASSERT_PTR_NOT_NULL(strstr(body, with ? "error a probe request that is not"
						  : "error node 0 serves no network probe"));
		tt_nc_client_close(&cl);
		/* A well-formed probe: measured with node 0's preflight, refused without. */
		CU_ASSERT_EQUAL(tt_probe_run("127.0.0.1", me.port, KEY, me.id, 1, NULL,
					     tt_now_ms() + 5000, &r, &err), with ? 0 : -1);
		CU_ASSERT(!with || (r.net_mbps > 0 && r.rtt_us > 0));
		CU_ASSERT_EQUAL_FATAL(tt_census_body(&me, body, sizeof(body)), 0);
		CU_ASSERT_EQUAL_FATAL(tt_nc_client_say(&cl, "127.0.0.1", me.port, KEY, me.id, body,
						       tt_now_ms() + 5000, 0, NULL, NULL, &err), 0);
		CU_ASSERT_EQUAL(tt_nc_client_hear(&cl, KEY, me.id, body, tt_now_ms() + 5000, &err), 0);
		CU_ASSERT_STRING_EQUAL(body, "ok 2,3");
		tt_nc_client_close(&cl);
		pthread_join(th, NULL);
		CU_ASSERT_EQUAL(node0.rc, 0);
	}
}

/* A raw client of node 0's port. */
static int dial(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				 .sin_port = htons(port) };

	for (int tries = 0; tries < 500; tries++) {	/* until node 0 listens */
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			return fd;
		if (fd >= 0)
			close(fd);
		usleep(10000);
	}
	return -1;
}

static ssize_t say(int fd, const char *s)
{
	return send(fd, s, strlen(s), MSG_NOSIGNAL);	/* a closed peer is a result, not a kill */
}

/* Reads until '\n' or the peer closes (at most 2 s); the bytes read. */
static size_t hear(int fd, char *buf, size_t cap)
{
	struct timeval tv = { .tv_sec = 2 };
	size_t got = 0;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (got < cap - 1 && !memchr(buf, '\n', got)) {
		ssize_t n = read(fd, buf + got, cap - 1 - got);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	return got;
}

/* A keyless local user's attacks while the real nodes meet: an idle connection (it must not
 * hold a node's place: the nodes meet in well under its deadline), a forged count (the old
 * protocol's line, and the new one with a made-up proof), a stranger's wrong node count (it
 * must not fail the launch blaming node 1). The real nodes' counts come out unchanged. */
static void test_strangers_change_nothing(void)
{
	struct node_run nodes[2];	/* [0] node 1, [1] node 0 */
	pthread_t th[2];
	char line[TT_NC_LINE], hello[200];
	int idle, forged, wrong;

	setup_nodes(nodes, 2);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[1], NULL, run_node, &nodes[1]), 0);
	idle = dial(nodes[1].c.port);
	forged = dial(nodes[1].c.port);
	wrong = dial(nodes[1].c.port);
	CU_ASSERT_FATAL(idle >= 0 && forged >= 0 && wrong >= 0);
	CU_ASSERT(say(forged, "traintopo-census 1 77.12001 2 1 1000\n") > 0);
	CU_ASSERT_EQUAL(hear(forged, line, sizeof(line)), 0);	/* closed unanswered */
	snprintf(hello, sizeof(hello), TT_NC_MAGIC " hello 77.12001 %064d\n", 7);
	CU_ASSERT(say(wrong, hello) > 0);
	CU_ASSERT(hear(wrong, line, sizeof(line)) > 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "challenge "));
	snprintf(line, sizeof(line), "msg %064d census 3 1 1000 n1\n", 0);
	CU_ASSERT(say(wrong, line) > 0);
	CU_ASSERT_EQUAL(hear(wrong, line, sizeof(line)), 0);	/* no proof: closed unanswered */
	/* Now the real node 1, while the idle connection still sits there. */
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[0], NULL, run_node, &nodes[0]), 0);
	join_nodes(2, th);
	expect_counts(nodes, 2);
	CU_ASSERT(nodes[0].ms < 3000);
	close(idle);
	close(forged);
	close(wrong);
}

/* A second train-run that holds the key and claims node 1 again is refused, and the launch
 * fails naming the node twice (only a misconfigured launch has one). */
static void test_duplicate_node_refused(void)
{
	struct node_run nodes[3];	/* [0] node 2, [1] node 1, [2] node 0 */

	setup_nodes(nodes, 3);
	nodes[0].c.node = 1;	/* two node 1s, no node 2 */
	run_nodes(nodes, 3);
	CU_ASSERT_EQUAL(nodes[2].rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(nodes[2].err.msg, "two train-runs say they are node 1"));
	CU_ASSERT_EQUAL(nodes[0].rc, -1);
	CU_ASSERT_EQUAL(nodes[1].rc, -1);
}

/* A node whose connection drops after its proof and before the answer fails the launch on the
 * other nodes, named; a node that waits says so. */
static void test_dead_node_named_and_waiting_said(void)
{
	struct node_run nodes[2];	/* [0] node 2, [1] node 0; node 1 dies */
	pthread_t th[2];
	struct tt_nc_client cl = { .fd = -1 };
	tt_err err;
	char body[128];
	struct tt_census dead;

	{
		struct node_run all[3];

		setup_nodes(all, 3);
		nodes[0] = all[0];
		nodes[0].c.arg = &nodes[0];
		nodes[1] = all[2];
		nodes[1].c.arg = &nodes[1];
		dead = all[1].c;
	}
	nodes[1].c.notice_s = 1;
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[1], NULL, run_node, &nodes[1]), 0);
	usleep(1300 * 1000);	/* node 0 waits for nodes 1 and 2: one notice */
	CU_ASSERT_EQUAL_FATAL(tt_census_body(&dead, body, sizeof(body)), 0);
	CU_ASSERT_EQUAL_FATAL(tt_nc_client_say(&cl, "127.0.0.1", dead.port, KEY, dead.id, body,
					       tt_now_ms() + 3000, 0, NULL, NULL, &err), 0);
	usleep(100 * 1000);
	tt_nc_client_close(&cl);	/* dies before the answer */
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th[0], NULL, run_node, &nodes[0]), 0);
	join_nodes(2, th);
	CU_ASSERT(nodes[1].notices >= 1);
	for (int i = 0; i < 2; i++) {
		if (!strstr(nodes[i].err.msg, "node 1 (n1) left the node count exchange"))
			fprintf(stderr, "\nnode %u: %s\n", nodes[i].c.node, nodes[i].err.msg);
		CU_ASSERT_EQUAL(nodes[i].rc, -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(nodes[i].err.msg, "node 1 (n1) left the node count exchange"));
	}
}

/* Once node 1 has its answer, node 0 listens no more: a worker that node 1 starts at once and
 * that dials MASTER_PORT is refused (and retries until rank 0's store listens), where a still
 * listening census socket would queue it and reset it on closing. Node 1 here keeps its census
 * connection open while it dials. */
static void test_answered_node_finds_the_port_closed(void)
{
	struct node_run node0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tt_nc_client cl = { .fd = -1 };
	struct tt_census me;
	char body[TT_NC_BODY_MAX + 1];
	pthread_t th;
	tt_err err;
	int worker, rc;

	setup_nodes(&node0, 1);
	node0.c.nnodes = 2;
	node0.c.node = 0;
	me = node0.c;
	me.node = 1;
	me.count = 3;
	me.host = "n1";
	a.sin_port = htons(node0.c.port);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, run_node, &node0), 0);
	CU_ASSERT_EQUAL_FATAL(tt_census_body(&me, body, sizeof(body)), 0);
	CU_ASSERT_EQUAL_FATAL(tt_nc_client_say(&cl, "127.0.0.1", me.port, KEY, me.id, body,
					       tt_now_ms() + 5000, 0, NULL, NULL, &err), 0);
	CU_ASSERT_EQUAL(tt_nc_client_hear(&cl, KEY, me.id, body, tt_now_ms() + 5000, &err), 0);
	CU_ASSERT_STRING_EQUAL(body, "ok 2,3");
	worker = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(worker >= 0);
	rc = connect(worker, (struct sockaddr *)&a, sizeof(a));
	CU_ASSERT_EQUAL(rc, -1);
	CU_ASSERT_EQUAL(rc == -1 ? errno : 0, ECONNREFUSED);
	close(worker);
	tt_nc_client_close(&cl);
	pthread_join(th, NULL);
	if (node0.rc != 0)
		fprintf(stderr, "\nnode 0: %s\n", node0.err.msg);
	CU_ASSERT_EQUAL(node0.rc, 0);
}

/* A node 0 that does not answer a connection at all (here a listener whose accept queue is
 * full, so the kernel drops the SYNs) costs one attempt of TT_NC_CONNECT_MS, not the whole
 * budget: the node tries again on a fresh socket (where one connect left to the kernel's SYN
 * retransmits, 1, 3, 7, 15 and 31 s apart, misses a node 0 that listens from second 16 of a
 * refusing node's 30), and the final line says what the connections met. */
static void test_unanswered_connection_retried(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tt_nc_client cl = { .fd = -1 };
	struct tt_census me = server;
	char body[TT_NC_BODY_MAX + 1];
	const char *n;
	int one = 1, bh, filler, probe;
	struct pollfd p;
	unsigned tries = 0;
	long t0;
	tt_err err;

	me.node = 1;
	me.host = "n1";
	me.port = free_port();
	a.sin_port = htons(me.port);
	bh = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(bh >= 0);
	setsockopt(bh, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	CU_ASSERT_EQUAL_FATAL(bind(bh, (struct sockaddr *)&a, sizeof(a)), 0);
	CU_ASSERT_EQUAL_FATAL(listen(bh, 0), 0);
	filler = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);	/* fills the queue */
	CU_ASSERT_EQUAL_FATAL(connect(filler, (struct sockaddr *)&a, sizeof(a)), 0);
	/* The precondition: a further connection gets no answer. */
	probe = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	CU_ASSERT_FATAL(probe >= 0);
	CU_ASSERT_EQUAL(connect(probe, (struct sockaddr *)&a, sizeof(a)), -1);
	p = (struct pollfd){ .fd = probe, .events = POLLOUT };
	CU_ASSERT_EQUAL_FATAL(poll(&p, 1, 300), 0);
	close(probe);
	CU_ASSERT_EQUAL_FATAL(tt_census_body(&me, body, sizeof(body)), 0);
	t0 = tt_now_ms();
	CU_ASSERT_EQUAL(tt_nc_client_say(&cl, "127.0.0.1", me.port, KEY, me.id, body,
					 t0 + 4500, 0, NULL, NULL, &err), -1);
	t0 = tt_now_ms() - t0;
	CU_ASSERT(t0 >= 4400 && t0 < 9000);	/* the budget, with room for a loaded machine */
	n = strstr(err.msg, "did not take our message in time (");
	CU_ASSERT_FATAL(n != NULL);
	CU_ASSERT_EQUAL(sscanf(n, "did not take our message in time (%u attempt", &tries), 1);
	CU_ASSERT(tries >= 2);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "last: no answer to a connection within 2000 ms"));
	if (tries < 2 || !strstr(err.msg, "no answer to a connection"))
		fprintf(stderr, "\n%s\n", err.msg);
	close(filler);
	close(bh);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("census", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "a body accepted once", test_body_accepted_once);
	CU_add_test(s, "bad bodies and disagreements", test_bad_bodies_and_disagreements);
	CU_add_test(s, "answer both ways", test_answer_both_ways);
	CU_add_test(s, "channel lines and proofs", test_channel_lines_and_proofs);
	CU_add_test(s, "exchange over loopback", test_exchange_over_loopback);
	CU_add_test(s, "a disagreement fails both sides", test_exchange_disagreement_fails_both);
	CU_add_test(s, "a refusal reaches every node", test_refusal_reaches_every_node);
	CU_add_test(s, "preflight judged by node 0", test_preflight_judged_by_node0);
	CU_add_test(s, "probe requests answered", test_probe_requests_answered);
	CU_add_test(s, "a node failing preflight is replaced by a spare", test_preflight_failing_node_replaced);
	CU_add_test(s, "failing nodes each replaced, a failing spare set aside",
		    test_preflight_failing_nodes_and_spares);
	CU_add_test(s, "strangers change nothing", test_strangers_change_nothing);
	CU_add_test(s, "a duplicate node is refused", test_duplicate_node_refused);
	CU_add_test(s, "a dead node is named, waiting is said", test_dead_node_named_and_waiting_said);
	CU_add_test(s, "an answered node finds the port closed", test_answered_node_finds_the_port_closed);
	CU_add_test(s, "an unanswered connection is retried", test_unanswered_connection_retried);
	return 0;
}

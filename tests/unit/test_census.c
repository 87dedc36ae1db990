/* SPDX-License-Identifier: MIT */
/* test_census.c — the lines of train-run's node count exchange: a hello and its checks (a stranger
 * is turned away, a node of the launch that disagrees fails it), the answer both ways, and the
 * exchange itself between two threads over loopback. */
#include "cunit_main.h"
#include "census.h"
#include "tt_port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static const struct tt_census server = { .id = "77.12001", .server = "localhost", .port = 1,
					  .nnodes = 3, .node = 0, .count = 8, .timeout_s = 5 };

static void test_hello_accepted(void)
{
	struct tt_census c = server;
	uint32_t per_node[3] = { 8, 0, 0 };
	unsigned char seen[3] = { 1, 0, 0 };
	char line[256];
	tt_err err;

	c.node = 2;
	c.count = 4;
	CU_ASSERT_EQUAL_FATAL(tt_census_hello(&c, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "traintopo-census 1 77.12001 3 2 4\n");
	CU_ASSERT_EQUAL(tt_census_accept(&server, line, per_node, seen, &err), 0);
	CU_ASSERT_EQUAL(per_node[2], 4);
	CU_ASSERT_EQUAL(seen[2], 1);
	/* The same node twice: two train-runs on one node. */
	CU_ASSERT_EQUAL(tt_census_accept(&server, line, per_node, seen, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "two train-runs say they are node 2"));
	CU_ASSERT_EQUAL(tt_census_hello(&c, line, 8), -1);	/* does not fit */
}

static void expect_refused(const char *line, int rc, const char *want)
{
	uint32_t per_node[3] = { 0 };
	unsigned char seen[3] = { 1, 0, 0 };
	tt_err err = { "" };

	CU_ASSERT_EQUAL(tt_census_accept(&server, line, per_node, seen, &err), rc);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\n'%s' lacks '%s'\n", err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_EQUAL(per_node[1] + per_node[2], 0);
}

static void test_strangers_and_disagreements(void)
{
	/* Strangers (1): turned away, the launch goes on. */
	expect_refused("GET / HTTP/1.1\n", 1, "not a train-run of this launch");
	expect_refused("traintopo-census 1 77.12001 3 1\n", 1, "not a train-run");
	expect_refused("traintopo-census 1 77.12001 3 1 4 extra\n", 1, "not a train-run");
	expect_refused("traintopo-census 2 77.12001 3 1 4\n", 1, "not a train-run");
	expect_refused("traintopo-census 1 78.12001 3 1 4\n", 1, "another launch (78.12001");
	/* Nodes of this launch that disagree (-1): the launch fails on every node. */
	expect_refused("traintopo-census 1 77.12001 2 1 4\n", -1, "node 1 counts 2 nodes, node 0 counts 3");
	expect_refused("traintopo-census 1 77.12001 3 0 4\n", -1, "says it is node 0");
	expect_refused("traintopo-census 1 77.12001 3 3 4\n", -1, "outside 1..2");
	expect_refused("traintopo-census 1 77.12001 3 1 0\n", -1, "node 1 runs no worker");
}

static void test_answer_both_ways(void)
{
	const uint32_t counts[3] = { 8, 4, 8 };
	uint32_t got[3] = { 0 };
	char line[64];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_census_answer(counts, 3, line, sizeof(line)), 0);
	CU_ASSERT_STRING_EQUAL(line, "ok 8,4,8\n");
	CU_ASSERT_EQUAL(tt_census_read_answer(line, 3, got, &err), 0);
	CU_ASSERT_EQUAL(got[1], 4);
	CU_ASSERT_EQUAL(tt_census_answer(counts, 3, line, 6), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4\n", 3, got, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a list of 3 worker counts"));
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,4,8,1\n", 3, got, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,0,8\n", 3, got, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("ok 8,-4,8\n", 3, got, &err), -1);
	CU_ASSERT_EQUAL(tt_census_read_answer("error node 1 counts 2 nodes\n", 3, got, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "node 0 refused: node 1 counts 2 nodes");
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
};

static void *run_node(void *arg)
{
	struct node_run *r = arg;

	r->rc = tt_census_run(&r->c, r->per_node, &r->err);
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
	}
}

/* Runs the exchange of every node, each in its own thread. */
static void run_nodes(struct node_run *nodes, int n)
{
	pthread_t th[4];
	int i;

	for (i = 0; i < n; i++)
		CU_ASSERT_EQUAL_FATAL(pthread_create(&th[i], NULL, run_node, &nodes[i]), 0);
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
}

/* Three nodes on loopback, the clients started before the server listens. */
static void test_exchange_over_loopback(void)
{
	struct node_run nodes[3];
	int i;

	setup_nodes(nodes, 3);
	run_nodes(nodes, 3);
	for (i = 0; i < 3; i++) {
		if (nodes[i].rc != 0)
			fprintf(stderr, "\nnode %u: %s\n", nodes[i].c.node, nodes[i].err.msg);
		CU_ASSERT_EQUAL(nodes[i].rc, 0);
		CU_ASSERT_EQUAL(nodes[i].per_node[0], 2);
		CU_ASSERT_EQUAL(nodes[i].per_node[1], 3);
		CU_ASSERT_EQUAL(nodes[i].per_node[2], 4);
	}
}

/* A node that disagrees fails the launch on node 0 and on the node, both naming it. */
static void test_exchange_disagreement_fails_both(void)
{
	struct node_run nodes[2];	/* [0] is node 1, [1] node 0 */

	setup_nodes(nodes, 2);
	nodes[0].c.nnodes = 3;	/* node 1 counts 3 nodes */
	run_nodes(nodes, 2);
	CU_ASSERT_EQUAL(nodes[1].rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(nodes[1].err.msg, "node 1 counts 3 nodes, node 0 counts 2"));
	CU_ASSERT_EQUAL(nodes[0].rc, -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(nodes[0].err.msg, "node 0 refused: node 1 counts 3 nodes"));
}

/* Once node 1 has its answer, node 0 listens no more: a worker that node 1 starts at once and
 * that dials MASTER_PORT is refused (and retries until rank 0's store listens), where a still
 * listening census socket would queue it and reset it on closing. Node 1 here is a raw client
 * that keeps its census connection open while it dials. */
static void test_answered_node_finds_the_port_closed(void)
{
	struct node_run node0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct tt_census me;
	char line[256], answer[256];
	pthread_t th;
	ssize_t got = 0;
	int fd = -1, worker, rc, tries;

	setup_nodes(&node0, 1);
	node0.c.nnodes = 2;
	node0.c.node = 0;
	me = node0.c;
	me.node = 1;
	me.count = 3;
	a.sin_port = htons(node0.c.port);
	CU_ASSERT_EQUAL_FATAL(pthread_create(&th, NULL, run_node, &node0), 0);
	for (tries = 0; tries < 500; tries++) {	/* until node 0 listens */
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(10000);
	}
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(tt_census_hello(&me, line, sizeof(line)), 0);
	CU_ASSERT_EQUAL(write(fd, line, strlen(line)), (ssize_t)strlen(line));
	while (got < (ssize_t)sizeof(answer) - 1 && !memchr(answer, '\n', (size_t)got)) {
		ssize_t n = read(fd, answer + got, sizeof(answer) - 1 - (size_t)got);

		if (n <= 0)
			break;
		got += n;
	}
	answer[got > 0 ? got : 0] = '\0';
	CU_ASSERT_STRING_EQUAL(answer, "ok 2,3\n");
	worker = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	CU_ASSERT_FATAL(worker >= 0);
	rc = connect(worker, (struct sockaddr *)&a, sizeof(a));
	CU_ASSERT_EQUAL(rc, -1);
	CU_ASSERT_EQUAL(rc == -1 ? errno : 0, ECONNREFUSED);
	close(worker);
	close(fd);
	pthread_join(th, NULL);
	if (node0.rc != 0)
		fprintf(stderr, "\nnode 0: %s\n", node0.err.msg);
	CU_ASSERT_EQUAL(node0.rc, 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("census", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "hello accepted once", test_hello_accepted);
	CU_add_test(s, "strangers and disagreements", test_strangers_and_disagreements);
	CU_add_test(s, "answer both ways", test_answer_both_ways);
	CU_add_test(s, "exchange over loopback", test_exchange_over_loopback);
	CU_add_test(s, "a disagreement fails both sides", test_exchange_disagreement_fails_both);
	CU_add_test(s, "an answered node finds the port closed", test_answered_node_finds_the_port_closed);
	return 0;
}

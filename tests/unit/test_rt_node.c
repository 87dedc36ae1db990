/* SPDX-License-Identifier: MIT */
/* test_rt_node.c — the rendezvous through node leaders (rt_node.h) of 64 simulated nodes x 8 ranks
 * as threads: everyone meets; a rank that never comes is named in the one line every other rank
 * gets; a rank that leaves its leader, or comes to it twice, is named at once; a leader (in a
 * child process) that dies after joining is named with its node's ranks to every other rank, and
 * its own ranks are told their leader closed; a node socket held by another user (as root: a
 * child that drops to uid 65534) is refused by the follower, naming the uid; a leader that fails
 * before it leads hands its line to each of its ranks (rt_node_refuse); a leader that exits before
 * it listens is named, once, by each of its ranks as soon as they learn that it is gone; the
 * environment match that tells whether a leader's process runs (rt_node_env_has); the notes of the
 * agreement after the backend's set-up (rt_node_recv stops at one, rt_node_recv_note reads it) and
 * its verdict's line (rt_node_up_line). */
#include "cunit_main.h"
#include "rt_net.h"
#include "rt_node.h"
#include "rt_store.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define TOKEN "42:secret"
#define LOCAL 8
#define NODES 64
#define WORLD (NODES * LOCAL)
#define ROUND "rdv"

/* valgrind runs at most 500 threads: fewer nodes there (its subject is memory, not scale). */
static int nodes = NODES;

enum role { SKIP, COME, LEAVE, TWICE, CHILD_LEADER };

struct rank {
	int port, rank, ok;
	enum role role;
	double timeout;
	char msg[1024];
};

static void *rank_main(void *arg);

/* A second process of the same rank (TWICE). */
static void *again(void *arg)
{
	struct rank *r = arg;
	tt_err err = { "" };

	rt_node_follow(TOKEN, "", ROUND, r->rank / LOCAL, r->rank, r->rank / LOCAL * LOCAL, r->timeout, NULL, NULL, &err);
	return NULL;
}

static void *rank_main(void *arg)
{
	struct rank *r = arg;
	int node = r->rank / LOCAL, leader = node * LOCAL, fd;
	tt_err err = { "" };

	if (r->rank == leader) {
		rt_node *n = rt_node_listen(TOKEN, "", ROUND, node, leader, LOCAL, &err);
		rt_store *st = n ? rt_store_connect("127.0.0.1", r->port, TOKEN, nodes * LOCAL, r->timeout, &err) : NULL;

		r->ok = st && rt_node_lead(n, st, r->timeout, &err) == 0;
		rt_store_close(st);
		rt_node_close(n);
	} else if (r->role == LEAVE) {
		/* Says its rank, then its connection closes: the leader reports it left. */
		if (rt_node_follow_start(TOKEN, "", ROUND, node, r->rank, leader, r->timeout, NULL, NULL, &fd, &err) == 0)
			close(fd);
		r->ok = -1;
	} else if (r->role == TWICE) {
		pthread_t t;

		r->ok = -1;
		if (pthread_create(&t, NULL, again, r) == 0) {
			rt_node_follow(TOKEN, "", ROUND, node, r->rank, leader, r->timeout, NULL, NULL, &err);
			pthread_join(t, NULL);
		}
	} else {
		r->ok = rt_node_follow(TOKEN, "", ROUND, node, r->rank, leader, r->timeout, NULL, NULL, &err) == 0;
	}
	snprintf(r->msg, sizeof(r->msg), "%s", err.msg);
	return NULL;
}

/* The leader of node 1 in a child process that dies (exits) 0.5 s after it started leading, by
 * when its ranks (threads of this process, started before it) have come and it joined for them. */
static pid_t dying_leader(int port, double timeout)
{
	pid_t pid = fork();

	if (pid == 0) {
		static struct rank r;
		pthread_t t;

		r = (struct rank){ .port = port, .rank = LOCAL, .role = COME, .timeout = timeout };
		if (pthread_create(&t, NULL, rank_main, &r) != 0)
			_exit(1);
		usleep(500 * 1000);
		_exit(0);
	}
	return pid;
}

/* The world of nodes x LOCAL ranks with their roles; the ranks of node 1 first when its leader
 * is the dying child. Returns how many ranks met. */
static int run(struct rank *r, double timeout)
{
	int world = nodes * LOCAL, met = 0;
	rt_store_server *srv;
	tt_err err;
	pthread_t th[WORLD];
	pthread_attr_t attr;
	pid_t child = -1;

	srv = rt_store_server_start("127.0.0.1", 0, 1, TOKEN, world, &err);
	CU_ASSERT_FATAL(srv != NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	for (int i = 0; i < world; i++) {
		r[i].port = rt_store_server_port(srv);
		r[i].rank = i;
		r[i].timeout = timeout;
	}
	for (int pass = 0; pass < 2; pass++) {
		/* pass 0: the dying leader's node; pass 1: the rest. */
		for (int i = 0; i < world; i++) {
			int first = r[LOCAL].role == CHILD_LEADER && i / LOCAL == 1;

			if (first != (pass == 0) || r[i].role == SKIP || r[i].role == CHILD_LEADER)
				continue;
			CU_ASSERT_FATAL(pthread_create(&th[i], &attr, rank_main, &r[i]) == 0);
		}
		if (pass == 0 && r[LOCAL].role == CHILD_LEADER) {
			child = dying_leader(r[LOCAL].port, timeout);
			CU_ASSERT_FATAL(child > 0);
			waitpid(child, NULL, 0);
		}
	}
	for (int i = 0; i < world; i++)
		if (r[i].role != SKIP && r[i].role != CHILD_LEADER) {
			pthread_join(th[i], NULL);
			met += r[i].ok == 1;
		}
	pthread_attr_destroy(&attr);
	rt_store_server_stop(srv);
	return met;
}

/* The ranks that came (not those in `except`, a node number or -1) all have the same line, which
 * contains needle; returns how many. */
static int same_line(const struct rank *r, int except, const char *needle)
{
	const char *first = NULL;
	int n = 0;

	for (int i = 0; i < nodes * LOCAL; i++) {
		if (r[i].role != COME || i / LOCAL == except)
			continue;
		if (!first)
			first = r[i].msg;
		n += strcmp(r[i].msg, first) == 0;
	}
	if (!first || !strstr(first, needle))
		fprintf(stderr, "\nnode rendezvous: '%s' lacks '%s'\n", first ? first : "(none)", needle);
	CU_ASSERT_PTR_NOT_NULL(first ? strstr(first, needle) : NULL);
	return n;
}

static void reset(struct rank *r)
{
	for (int i = 0; i < WORLD; i++)
		r[i] = (struct rank){ .role = COME };
}

static void test_node_rendezvous(void)
{
	static struct rank r[WORLD];
	int valgrind = getenv("LD_PRELOAD") && strstr(getenv("LD_PRELOAD"), "vgpreload");
	char needle[160];
	struct rlimit rl;
	int world;

	/* Both ends of every Unix connection and the store's 64 live in this process. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max < 2 * WORLD + 256) {
		tt_test_skip("ulimit -Hn is below the 1300 descriptors a 512-rank rendezvous in one process needs");
		return;
	}
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	nodes = valgrind ? 8 : NODES;
	world = nodes * LOCAL;

	/* Everyone comes: everyone meets, once each. */
	reset(r);
	CU_ASSERT_EQUAL(run(r, 10), world);

	/* Rank 43 (local rank 3 of node 5) never comes: every other rank has the one line naming it. */
	reset(r);
	r[43].role = SKIP;
	CU_ASSERT_EQUAL(run(r, 2), 0);
	snprintf(needle, sizeof(needle), "rank 43 (1 of %d) did not arrive within 2 s", world);
	CU_ASSERT_EQUAL(same_line(r, -1, needle), world - 1);

	/* Rank 20 says its rank to its leader and leaves (rank 43 never comes, so the world cannot
	 * meet before): every other rank is told, long before the timeout. */
	reset(r);
	r[43].role = SKIP;
	r[20].role = LEAVE;
	CU_ASSERT_EQUAL(run(r, 5), 0);
	CU_ASSERT_EQUAL(same_line(r, -1, "rank 20 left (its connection to its node leader, rank 16, closed"), world - 2);

	/* Rank 9 launched twice (rank 43 missing again): its leader names it to every rank. */
	reset(r);
	r[43].role = SKIP;
	r[9].role = TWICE;
	CU_ASSERT_EQUAL(run(r, 5), 0);
	CU_ASSERT_EQUAL(same_line(r, -1, "rank 9 arrived twice (was RANK 9 launched twice?)"), world - 2);

	/* Node 1's leader (rank 8) joins and dies: its ranks 9-15 are told their leader closed; every
	 * other rank has the store's one line naming the node's ranks 8-15 (the leader's death, or,
	 * were it to die before it joined, their absence). */
	reset(r);
	r[LOCAL].role = CHILD_LEADER;
	CU_ASSERT_EQUAL(run(r, 3), 0);
	CU_ASSERT_EQUAL(same_line(r, 1, "8-15"), world - LOCAL);
	for (int i = LOCAL + 1; i < 2 * LOCAL; i++)
		CU_ASSERT_PTR_NOT_NULL(strstr(r[i].msg, "this node's leader, rank 8 (LOCAL_RANK 0), closed its connection"));
	CU_ASSERT_PTR_NOT_NULL(strstr(r[0].msg, "the node leader, rank 8, left with its node's ranks 8-15"));
}

static void test_squatter_refused(void)
{
	int p[2], fd = -1;
	char c;
	tt_err err = { "" };
	pid_t pid;

	if (geteuid() != 0) {
		tt_test_skip("not root: no second user to squat the node socket");
		return;
	}
	CU_ASSERT_FATAL(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		rt_node *n = setgid(65534) == 0 && setuid(65534) == 0 ? rt_node_listen(TOKEN, "", "squat", 0, 0, 2, &err) : NULL;

		if (n && write(p[1], "x", 1) == 1)
			pause();
		_exit(1);
	}
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_FATAL(read(p[0], &c, 1) == 1);
	CU_ASSERT_EQUAL(rt_node_follow_start(TOKEN, "", "squat", 0, 1, 0, 5, NULL, NULL, &fd, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is held by uid 65534, not this user"));
	CU_ASSERT_EQUAL(fd, -1);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(p[0]);
	close(p[1]);
}

/* A node of LOCAL ranks whose followers are threads of this process. */
struct follower {
	int rank;
	rt_node_gone_fn gone;
	void *ctx;
	int rc;
	char msg[1024];
};

static void *follower_main(void *arg)
{
	struct follower *f = arg;
	tt_err err = { "" };

	f->rc = rt_node_follow(TOKEN, "", "early", 0, f->rank, 0, 60, f->gone, f->ctx, &err);
	snprintf(f->msg, sizeof(f->msg), "%s", err.msg);
	return NULL;
}

/* How often needle occurs in s. */
static int occurrences(const char *s, const char *needle)
{
	int n = 0;

	for (const char *at = strstr(s, needle); at; at = strstr(at + 1, needle))
		n++;
	return n;
}

/* The followers' gone function: the leader (a child) was reaped. */
static volatile int leader_reaped;

static int reaped(void *ctx)
{
	int *asked = ctx;

	__atomic_add_fetch(asked, 1, __ATOMIC_SEQ_CST);
	return leader_reaped;
}

/* Ranks 1-7 of node 0 with their gone function; their leader does `leader` meanwhile. Returns
 * after all followers ended. */
static void run_node(struct follower *f, rt_node_gone_fn gone, void *ctx, void (*leader)(void))
{
	pthread_t t[LOCAL];

	for (int l = 1; l < LOCAL; l++) {
		f[l] = (struct follower){ .rank = l, .gone = gone, .ctx = ctx, .rc = 7 };
		CU_ASSERT_FATAL(pthread_create(&t[l], NULL, follower_main, &f[l]) == 0);
	}
	leader();
	for (int l = 1; l < LOCAL; l++)
		pthread_join(t[l], NULL);
}

/* A leader that exits (status 3) before it listens, as rank 0 did on a squatted MASTER_PORT
 * before it listened first. */
static void exits_early(void)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0)
		_exit(3);
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	leader_reaped = 1;
}

/* A leader that listens and then fails before it leads (its store refused it). */
static void fails_before_leading(void)
{
	tt_err err = { "" };
	rt_node *n = rt_node_listen(TOKEN, "", "early", 0, 0, LOCAL, &err);

	CU_ASSERT_PTR_NOT_NULL_FATAL(n);
	rt_node_refuse(n, "the store's port 29500 is taken", 60);
	rt_node_refuse(n, "a second refusal tells nobody", 60);
	rt_node_close(n);
}

static void test_leader_fails_early(void)
{
	static struct follower f[LOCAL];
	const char *line = "rendezvous 'early': rank %d's node leader, rank 0 (LOCAL_RANK 0), no longer runs on this node "
			   "and never listened: it exited or crashed before its start (its own output says why); fix that and relaunch";
	char want[512];
	int asked = 0;

	/* Died before listening: each follower names it, once, when told the leader is gone. */
	leader_reaped = 0;
	run_node(f, reaped, &asked, exits_early);
	for (int l = 1; l < LOCAL; l++) {
		snprintf(want, sizeof(want), line, l);
		CU_ASSERT_EQUAL(f[l].rc, -1);
		CU_ASSERT_EQUAL(occurrences(f[l].msg, want), 1);
		CU_ASSERT_EQUAL(occurrences(f[l].msg, "LOCAL_RANK 0"), 1);
		if (occurrences(f[l].msg, want) != 1)
			fprintf(stderr, "\nrank %d: '%s'\n", l, f[l].msg);
	}
	CU_ASSERT(asked >= LOCAL - 1); /* each follower asked at least once */

	/* Failed after listening: each follower has the leader's line, exactly once. */
	run_node(f, NULL, NULL, fails_before_leading);
	for (int l = 1; l < LOCAL; l++) {
		CU_ASSERT_EQUAL(f[l].rc, -1);
		CU_ASSERT_STRING_EQUAL(f[l].msg, "the store's port 29500 is taken");
	}
}

static void test_env_match(void)
{
	static const char env[] = "PATH=/bin\0RANK=0\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0SLURM_JOB_ID=77";
	struct rt_node_whom w;
	int bad = setenv("MASTER_ADDR", "10.0.0.1", 1) | setenv("MASTER_PORT", "29500", 1) | setenv("SLURM_JOB_ID", "77", 1);

	CU_ASSERT_FATAL(bad == 0);
	unsetenv("SLURM_STEP_ID");
	rt_node_whom_init(&w, 3, 0);
	CU_ASSERT_EQUAL(w.n, 4);
	CU_ASSERT_STRING_EQUAL(w.want[0], "RANK=0");
	CU_ASSERT_STRING_EQUAL(w.mine, "RANK=3");
	/* the last string has no NUL of its own: its length ends it */
	CU_ASSERT_EQUAL(rt_node_env_has(env, sizeof(env) - 1, &w, NULL), 1);
	CU_ASSERT_EQUAL(rt_node_env_has(env, sizeof(env) - 2, &w, NULL), 0); /* SLURM_JOB_ID=7 */
	CU_ASSERT_EQUAL(rt_node_env_has(env, sizeof(env) - 1, &w, w.mine), 0);
	CU_ASSERT_EQUAL(rt_node_env_has("RANK=00\0MASTER_ADDR=10.0.0.1\0MASTER_PORT=29500\0SLURM_JOB_ID=77", 62, &w, NULL), 0);
	setenv("MASTER_PORT", "29501", 1);
	rt_node_whom_init(&w, 3, 0);
	CU_ASSERT_EQUAL(rt_node_env_has(env, sizeof(env) - 1, &w, NULL), 0);
	/* This process's own environment at exec has no RANK=3: nobody can tell, so not gone. */
	CU_ASSERT_EQUAL(rt_node_leader_gone(&w), 0);
	unsetenv("MASTER_ADDR");
	unsetenv("MASTER_PORT");
	unsetenv("SLURM_JOB_ID");
}

/* The notes of the agreement after the backend's set-up: rt_node_recv stops at one and leaves it
 * in the socket; rt_node_recv_note drops the data before it and reads it; a closed end fails. */
static void test_notes(void)
{
	char buf[64];
	size_t len = 0;
	int sv[2], type = -1;
	tt_err err;

	CU_ASSERT_FATAL(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CU_ASSERT_EQUAL(rt_node_send(sv[0], "left over", 9, 1.0, &err), 0);
	CU_ASSERT_EQUAL(rt_node_send_frame(sv[0], RT_NODE_DONE, "rank 5: no", 10, 1.0, &err), 0);
	CU_ASSERT_EQUAL(rt_node_recv(sv[1], buf, sizeof(buf), &len, 1.0, &err), 0);
	CU_ASSERT_EQUAL(len, 9);
	CU_ASSERT_EQUAL(rt_node_recv(sv[1], buf, sizeof(buf), &len, 1.0, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, RT_NODE_ENDED);
	CU_ASSERT_EQUAL(rt_node_recv(sv[1], buf, sizeof(buf), &len, 1.0, &err), -1); /* still there */
	CU_ASSERT_EQUAL(rt_node_recv_note(sv[1], &type, buf, sizeof(buf), 1.0, &err), 0);
	CU_ASSERT_EQUAL(type, RT_NODE_DONE);
	CU_ASSERT_STRING_EQUAL(buf, "rank 5: no");
	/* data before a note is dropped; an empty STOP, then an empty DONE */
	CU_ASSERT_EQUAL(rt_node_send(sv[0], "abc", 3, 1.0, &err), 0);
	CU_ASSERT_EQUAL(rt_node_send_frame(sv[0], RT_NODE_STOP, NULL, 0, 1.0, &err), 0);
	CU_ASSERT_EQUAL(rt_node_send_frame(sv[0], RT_NODE_DONE, "", 0, 1.0, &err), 0);
	CU_ASSERT_EQUAL(rt_node_recv_note(sv[1], &type, buf, sizeof(buf), 1.0, &err), 0);
	CU_ASSERT_EQUAL(type, RT_NODE_STOP);
	CU_ASSERT_EQUAL(rt_node_recv_note(sv[1], &type, buf, sizeof(buf), 1.0, &err), 0);
	CU_ASSERT_EQUAL(type, RT_NODE_DONE);
	CU_ASSERT_STRING_EQUAL(buf, "");
	/* nothing more within the wait, then the other end closes */
	CU_ASSERT_EQUAL(rt_node_recv_note(sv[1], &type, buf, sizeof(buf), 0.05, &err), -1);
	close(sv[0]);
	CU_ASSERT_EQUAL(rt_node_recv_note(sv[1], &type, buf, sizeof(buf), 1.0, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "peer closed the connection"));
	close(sv[1]);
}

/* The verdict's one line: the ranks that ended, one by one (at most RT_NODE_UP_GONE_MAX, then how
 * many more), else the first other problem and whether there were more. */
static void test_up_line(void)
{
	const char *gone[RT_NODE_UP_GONE_MAX] = { "rank 5 (LOCAL_RANK 1) on node 1 (host a)",
						  "rank 9 (LOCAL_RANK 1) on node 2 (host b)" };
	char line[RT_NODE_NOTE_MAX];

	rt_node_up_line(line, sizeof(line), 1, 1, gone, 3, "rank 4: tcp ring broke");
	CU_ASSERT_STRING_EQUAL(line, "the backend's set-up failed: rank 5 (LOCAL_RANK 1) on node 1 (host a) ended during it "
				     "(crashed or killed? its own output says why); fix that and relaunch");
	rt_node_up_line(line, sizeof(line), 2, 2, gone, 0, "");
	CU_ASSERT_STRING_EQUAL(line, "the backend's set-up failed: 2 ranks ended during it (crashed or killed? their own output "
				     "says why; fix that and relaunch): rank 5 (LOCAL_RANK 1) on node 1 (host a); rank 9 "
				     "(LOCAL_RANK 1) on node 2 (host b)");
	rt_node_up_line(line, sizeof(line), 12, 2, gone, 0, "");
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "12 ranks ended"));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "(host b); and 10 more"));
	rt_node_up_line(line, sizeof(line), 0, 0, gone, 1, "rank 4: tcp ring broke");
	CU_ASSERT_STRING_EQUAL(line, "the backend's set-up failed: rank 4: tcp ring broke");
	rt_node_up_line(line, sizeof(line), 0, 0, gone, 2, "rank 4: tcp ring broke");
	CU_ASSERT_STRING_EQUAL(line, "the backend's set-up failed: rank 4: tcp ring broke (and other ranks reported problems too)");
	rt_node_up_line(line, 40, 2, 2, gone, 0, ""); /* cut, still NUL-ended */
	CU_ASSERT_EQUAL(strlen(line), 39);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("rt_node", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "64 nodes x 8: who did not come, who left, a dead leader", test_node_rendezvous);
	CU_add_test(s, "another user's node socket is refused", test_squatter_refused);
	CU_add_test(s, "a leader that fails before leading or listening is named at once", test_leader_fails_early);
	CU_add_test(s, "the leader's process is found by its environment", test_env_match);
	CU_add_test(s, "set-up notes stop an exchange and are read by the agreement", test_notes);
	CU_add_test(s, "the set-up verdict names the ranks that ended one by one", test_up_line);
	return 0;
}

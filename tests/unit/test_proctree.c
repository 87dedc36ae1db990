/* SPDX-License-Identifier: MIT */
/* test_proctree.c — the signal relay's choice of targets and the /proc snapshot it reads. */
#include "cunit_main.h"
#include "proctree.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BIT(sig) ((uint64_t)1 << ((sig) - 1))

static int contains(const pid_t *pids, size_t n, pid_t pid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (pids[i] == pid)
			return 1;
	return 0;
}

/* relay(100) -> bash(101) -> python(102, catches USR1) -> worker(103, catches USR1, new session)
 *            -> sleep(104); unrelated(200, catches USR1) with parent 1. */
static const struct tt_proc tree[] = {
	{ 1, 0, 0, 0 },
	{ 100, 1, BIT(SIGUSR1) | BIT(SIGTERM), 0 },
	{ 101, 100, BIT(SIGINT), 0 },
	{ 102, 101, BIT(SIGUSR1), 0 },
	{ 103, 102, BIT(SIGUSR1) | BIT(SIGUSR2), 0 },
	{ 104, 101, 0, 0 },
	{ 200, 1, BIT(SIGUSR1), 0 },
};

static void test_catching_descendants_only(void)
{
	pid_t out[8];
	size_t n = tt_relay_targets(tree, 7, 100, SIGUSR1, out, 8);

	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT(contains(out, n, 102));
	CU_ASSERT(contains(out, n, 103));
	CU_ASSERT(!contains(out, n, 100));	/* the relay itself */
	CU_ASSERT(!contains(out, n, 101));	/* bash without a trap would die */
	CU_ASSERT(!contains(out, n, 200));	/* not ours */
}

static void test_other_signal_picks_its_catchers(void)
{
	pid_t out[8];
	size_t n = tt_relay_targets(tree, 7, 100, SIGUSR2, out, 8);

	CU_ASSERT_EQUAL(n, 1);
	CU_ASSERT_EQUAL(out[0], 103);
}

static void test_nobody_catches_returns_zero(void)
{
	pid_t out[8];

	CU_ASSERT_EQUAL(tt_relay_targets(tree, 7, 100, SIGHUP, out, 8), 0);
	CU_ASSERT_EQUAL(tt_relay_targets(tree, 7, 100, 0, out, 8), 0);
	CU_ASSERT_EQUAL(tt_relay_targets(tree, 7, 100, 65, out, 8), 0);
}

static void test_cap_bounds_writes(void)
{
	pid_t out[1] = { -1 };
	size_t n = tt_relay_targets(tree, 7, 100, SIGUSR1, out, 1);

	CU_ASSERT_EQUAL(n, 2);
	CU_ASSERT(out[0] == 102 || out[0] == 103);
}

static void test_order_independent_of_listing(void)
{
	/* children listed before their parents still count as descendants */
	const struct tt_proc shuffled[] = {
		{ 103, 102, BIT(SIGUSR1), 0 }, { 102, 101, 0, 0 }, { 101, 100, 0, 0 }, { 100, 1, 0, 0 },
	};
	pid_t out[4];

	CU_ASSERT_EQUAL(tt_relay_targets(shuffled, 4, 100, SIGUSR1, out, 4), 1);
	CU_ASSERT_EQUAL(out[0], 103);
}

static void write_status(const char *root, int pid, const char *body)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/status", root, pid);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(body, f);
	fclose(f);
}

static void test_snapshot_reads_fake_proc(void)
{
	char root[] = "/tmp/tt-proc-XXXXXX";
	char path[600];
	struct tt_proc *procs = NULL;
	size_t n = 0, i;
	int seen = 0;
	tt_err err;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	write_status(root, 10, "Name:\tbash\nPPid:\t1\nSigBlk:\t0\nSigCgt:\t0000000000010002\n");
	write_status(root, 11, "Name:\tpython3\nPPid:\t10\nSigBlk:\t0\nSigCgt:\t0000000180000200\n");
	/* srun: blocks USR2 and takes it with sigwait, no handler */
	write_status(root, 13, "Name:\tsrun\nPPid:\t10\nSigBlk:\t0000000000000800\nSigCgt:\t0\n");
	write_status(root, 12, "Name:\tbroken\n");	/* no PPid: skipped */
	snprintf(path, sizeof(path), "%s/self", root);	/* not a pid: ignored */
	mkdir(path, 0755);
	CU_ASSERT_EQUAL_FATAL(tt_proc_snapshot(root, &procs, &n, &err), 0);
	CU_ASSERT_EQUAL(n, 3);
	for (i = 0; i < n; i++) {
		if (procs[i].pid == 13)
			CU_ASSERT_EQUAL(procs[i].handled, BIT(SIGUSR2));
		if (procs[i].pid == 11) {
			CU_ASSERT_EQUAL(procs[i].ppid, 10);
			CU_ASSERT(procs[i].handled & BIT(SIGUSR1));
			CU_ASSERT(!(procs[i].handled & BIT(SIGUSR2)));
			seen++;
		}
	}
	CU_ASSERT_EQUAL(seen, 1);
	free(procs);
	snprintf(path, sizeof(path), "rm -rf %s", root);
	CU_ASSERT_EQUAL(system(path), 0);
}

static void test_snapshot_missing_root_is_an_error(void)
{
	struct tt_proc *procs = NULL;
	size_t n = 0;
	tt_err err;

	CU_ASSERT_EQUAL(tt_proc_snapshot("/nonexistent-proc", &procs, &n, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent-proc"));
}

static void test_snapshot_live_proc_sees_self(void)
{
	struct tt_proc *procs = NULL;
	size_t n = 0, i;
	struct stat ns;
	int found = 0;

	CU_ASSERT_EQUAL_FATAL(stat("/proc/self/ns/mnt", &ns), 0);
	CU_ASSERT_EQUAL_FATAL(tt_proc_snapshot("/proc", &procs, &n, NULL), 0);
	for (i = 0; i < n; i++)
		if (procs[i].pid == getpid() && procs[i].ppid == getppid() &&
		    procs[i].mnt_ns == (uint64_t)ns.st_ino)
			found = 1;
	CU_ASSERT(found);
	free(procs);
}

/* relay(20) -> train-run(21) -> worker(22); a batch-step relay(30) elsewhere; 23 loops to itself. */
static void test_ancestor_walks_the_parent_chain(void)
{
	char root[] = "/tmp/tt-proc-XXXXXX";
	char cmd[600];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	write_status(root, 1, "Name:\tinit\nPPid:\t0\n");
	write_status(root, 20, "Name:\trelay\nPPid:\t1\n");
	write_status(root, 21, "Name:\ttrain-run\nPPid:\t20\n");
	write_status(root, 22, "Name:\tworker\nPPid:\t21\n");
	write_status(root, 30, "Name:\tbatch relay\nPPid:\t1\n");
	write_status(root, 23, "Name:\tloop\nPPid:\t23\n");
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 22, 20), 1);
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 22, 21), 1);
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 21, 20), 1);
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 22, 30), 0);	/* inherited from another step */
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 20, 21), 0);	/* a child is not an ancestor */
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 22, 22), 0);	/* nor is the process itself */
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 22, 0), 0);
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 99, 20), 0);	/* gone */
	CU_ASSERT_EQUAL(tt_proc_is_ancestor(root, 23, 20), 0);	/* bounded walk */
	CU_ASSERT_EQUAL(tt_proc_is_ancestor("/proc", getpid(), getppid()), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

/* relay(100, ns 1) -> sh(101, ns 1) -> crun(102, ns 1, blocks USR1) -> python(103, ns 2, the
 * container's first process, catches) -> worker(104, ns 2, catches); relay -> train-run(110,
 * ns 1, blocks) -> worker(111, ns 1, catches); relay -> unshare'd trainer(120, ns 3, catches)
 * whose parent is the relay; an unreadable namespace (0) counts as the same; a parent that
 * takes no USR1 (140) passes none on, so its child in another namespace (141) is signalled;
 * crun(150) -> bash(151, ns 5, no trap: drops what crun passes on) -> trainer(152, ns 5). */
static void test_container_reached_through_its_runtime(void)
{
	const struct tt_proc procs[] = {
		{ 100, 1, BIT(SIGUSR1), 1 },
		{ 101, 100, 0, 1 },
		{ 102, 101, BIT(SIGUSR1) | BIT(SIGTERM), 1 },
		{ 103, 102, BIT(SIGUSR1), 2 },
		{ 104, 103, BIT(SIGUSR1), 2 },
		{ 110, 100, BIT(SIGUSR1), 1 },
		{ 111, 110, BIT(SIGUSR1), 1 },
		{ 120, 100, BIT(SIGUSR1), 3 },
		{ 130, 110, BIT(SIGUSR1), 0 },
		{ 140, 100, 0, 1 },
		{ 141, 140, BIT(SIGUSR1), 4 },
		{ 150, 100, BIT(SIGUSR1), 1 },
		{ 151, 150, 0, 5 },
		{ 152, 151, BIT(SIGUSR1), 5 },
	};
	pid_t out[16];
	size_t n = tt_relay_targets(procs, 14, 100, SIGUSR1, out, 16);

	CU_ASSERT_EQUAL(n, 8);
	CU_ASSERT(contains(out, n, 102));	/* the runtime passes it on to 103 */
	CU_ASSERT(!contains(out, n, 103));
	CU_ASSERT(!contains(out, n, 104));	/* the container's own train-run passes it on */
	CU_ASSERT(contains(out, n, 110));
	CU_ASSERT(contains(out, n, 111));	/* same namespace: the host rule */
	CU_ASSERT(contains(out, n, 120));	/* the relay passes nothing on: it is signalled */
	CU_ASSERT(contains(out, n, 130));
	CU_ASSERT(contains(out, n, 141));	/* 140 takes no USR1, so passes none on */
	CU_ASSERT(contains(out, n, 150));
	CU_ASSERT(!contains(out, n, 151));
	CU_ASSERT(contains(out, n, 152));	/* its shell would drop it */
}

/* Gives fake process pid the mount namespace named ns: hard links to one file per namespace, so
 * the snapshot's inode of PID/ns/mnt is equal exactly for processes of one namespace. */
static void set_mnt_ns(const char *root, int pid, const char *ns)
{
	char path[512], target[512];
	FILE *f;

	snprintf(target, sizeof(target), "%s/ns-%s", root, ns);
	f = fopen(target, "a");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/%d/ns", root, pid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/ns/mnt", root, pid);
	CU_ASSERT_EQUAL(link(target, path), 0);
}

/* relay(20, ns a) -> apptainer's starter(21, a, catches USR1) -> train-run(22, b, not blocking
 * USR1 yet) -> worker(23, b); relay -> train-run(30, b) in a container the relay entered itself
 * (pyxis); relay -> a runtime that takes no USR1 (40, a) -> train-run(41, b); 50: no relay above. */
static void test_relay_reaches_through_no_runtime(void)
{
	char root[] = "/tmp/tt-proc-XXXXXX";
	char cmd[600];

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	write_status(root, 1, "PPid:\t0\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 20, "PPid:\t1\nSigBlk:\t0000000000000200\nSigCgt:\t0\n");
	write_status(root, 21, "PPid:\t20\nSigBlk:\t0\nSigCgt:\t0000000000000200\n");
	write_status(root, 22, "PPid:\t21\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 23, "PPid:\t22\nSigBlk:\t0\nSigCgt:\t0000000000000200\n");
	write_status(root, 30, "PPid:\t20\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 40, "PPid:\t20\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 41, "PPid:\t40\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 50, "PPid:\t1\nSigBlk:\t0\nSigCgt:\t0\n");
	set_mnt_ns(root, 20, "a");
	set_mnt_ns(root, 21, "a");
	set_mnt_ns(root, 22, "b");
	set_mnt_ns(root, 23, "b");
	set_mnt_ns(root, 30, "b");
	set_mnt_ns(root, 40, "a");
	set_mnt_ns(root, 41, "b");
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 22, 20, SIGUSR1, 0), 0);	/* the starter passes it on */
	/* 22 does not take USR1 (yet): the rule does not stop at it, so its worker is reached. */
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 23, 20, SIGUSR1, 0), 1);
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 22, 20, SIGUSR2, 0), 1);	/* the starter takes no USR2 */
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 30, 20, SIGUSR1, 0), 1);	/* the relay's own child */
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 41, 20, SIGUSR1, 0), 1);
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 50, 20, SIGUSR1, 0), 0);	/* not above it */
	CU_ASSERT_EQUAL(tt_relay_reaches(root, 22, 0, SIGUSR1, 0), 0);
	/* Seen from inside a container (60, ns c) the namespaces above are unreadable: relay(20) ->
	 * sh(61) -> crun(62, catches USR1) -> train-run(60). Another namespace than the relay's and a
	 * handler between: the runtime's; in the relay's own namespace, or with no handler between,
	 * the relay reaches it. */
	write_status(root, 61, "PPid:\t20\nSigBlk:\t0\nSigCgt:\t0\n");
	write_status(root, 62, "PPid:\t61\nSigBlk:\t0000000000000200\nSigCgt:\t0\n");
	write_status(root, 60, "PPid:\t62\nSigBlk:\t0\nSigCgt:\t0\n");
	set_mnt_ns(root, 60, "c");
	{
		struct stat a, c;
		char path[600];

		snprintf(path, sizeof(path), "%s/ns-a", root);
		CU_ASSERT_EQUAL_FATAL(stat(path, &a), 0);
		snprintf(path, sizeof(path), "%s/ns-c", root);
		CU_ASSERT_EQUAL_FATAL(stat(path, &c), 0);
		CU_ASSERT_EQUAL(tt_relay_reaches(root, 60, 20, SIGUSR1, (uint64_t)a.st_ino), 0);
		CU_ASSERT_EQUAL(tt_relay_reaches(root, 60, 20, SIGUSR1, (uint64_t)c.st_ino), 1);
		CU_ASSERT_EQUAL(tt_relay_reaches(root, 60, 20, SIGUSR1, 0), 1);	/* not told: as before */
		CU_ASSERT_EQUAL(tt_relay_reaches(root, 60, 20, SIGUSR2, (uint64_t)a.st_ino), 1);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("proctree", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "catching descendants only", test_catching_descendants_only);
	CU_add_test(s, "other signal picks its catchers", test_other_signal_picks_its_catchers);
	CU_add_test(s, "nobody catches -> 0", test_nobody_catches_returns_zero);
	CU_add_test(s, "cap bounds writes", test_cap_bounds_writes);
	CU_add_test(s, "order independent", test_order_independent_of_listing);
	CU_add_test(s, "snapshot of a fake /proc", test_snapshot_reads_fake_proc);
	CU_add_test(s, "missing /proc root", test_snapshot_missing_root_is_an_error);
	CU_add_test(s, "live /proc sees this process", test_snapshot_live_proc_sees_self);
	CU_add_test(s, "ancestor walks the parent chain", test_ancestor_walks_the_parent_chain);
	CU_add_test(s, "container reached through its runtime", test_container_reached_through_its_runtime);
	CU_add_test(s, "relay reaches through no runtime", test_relay_reaches_through_no_runtime);
	return 0;
}

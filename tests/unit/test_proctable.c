/* SPDX-License-Identifier: MIT */
/* test_proctable.c — train-run's exit policy: who failed, what is reported, when the group
 * stops, restarts or exits, and with which status. Wait statuses are built with W_EXITCODE. */
#include "cunit_main.h"
#include "proctable.h"

#include <signal.h>
#include <string.h>
#include <sys/wait.h>

static struct tt_proctable pt;

/* A table of n workers with pids 100, 101, ... all running. */
static void start(int n, int max_restarts)
{
	int i;

	CU_ASSERT_EQUAL_FATAL(tt_pt_init(&pt, n, max_restarts, NULL), 0);
	for (i = 0; i < n; i++)
		tt_pt_started(&pt, i, 100 + i);
}

static void test_init_rejects_bad_counts(void)
{
	tt_err err;

	CU_ASSERT_EQUAL(tt_pt_init(&pt, 0, 0, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "worker count 0"));
	CU_ASSERT_EQUAL(tt_pt_init(&pt, 2, -1, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--max-restarts -1"));
}

static void test_status_codes(void)
{
	int sig;

	CU_ASSERT_EQUAL(tt_pt_status_code(W_EXITCODE(3, 0), &sig), 3);
	CU_ASSERT_EQUAL(sig, 0);
	CU_ASSERT_EQUAL(tt_pt_status_code(W_EXITCODE(0, SIGKILL), &sig), 137);
	CU_ASSERT_EQUAL(sig, SIGKILL);
}

static void test_all_succeed_exit_zero(void)
{
	int rep;

	start(3, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_running(&pt), 1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 102, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	tt_pt_free(&pt);
}

static void test_first_failure_stops_group_and_sets_status(void)
{
	int rep;

	start(4, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 102, W_EXITCODE(3, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(rep, 2);
	/* The others die of our SIGTERM: not reported, status stays the failing worker's. */
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 103, W_EXITCODE(0, SIGKILL), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 3);
	tt_pt_free(&pt);
}

static void test_killed_worker_gives_128_plus_signal(void)
{
	int rep;

	start(2, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, SIGKILL), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(pt.workers[rep].signo, SIGKILL);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 137);
	tt_pt_free(&pt);
}

static void test_last_worker_failing_exits_without_stop(void)
{
	int rep;

	start(2, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(5, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(rep, 1);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 5);
	tt_pt_free(&pt);
}

static void test_unknown_pid_is_ignored(void)
{
	int rep;

	start(1, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 999, W_EXITCODE(1, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_running(&pt), 1);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	tt_pt_free(&pt);
}

static void test_restarts_counted_then_exhausted(void)
{
	int rep;

	start(2, 2);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(1, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_RESTART);
	CU_ASSERT_EQUAL(pt.restarts, 1);
	tt_pt_round_begin(&pt);
	CU_ASSERT_EQUAL(pt.workers[0].state, TT_WORKER_NEW);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	tt_pt_started(&pt, 0, 200);
	tt_pt_started(&pt, 1, 201);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 201, W_EXITCODE(2, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(rep, 1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 200, W_EXITCODE(0, 0), &rep), TT_ACT_RESTART);
	CU_ASSERT_EQUAL(pt.restarts, 2);
	tt_pt_round_begin(&pt);
	tt_pt_started(&pt, 0, 300);
	tt_pt_started(&pt, 1, 301);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 300, W_EXITCODE(4, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 301, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(pt.restarts, 2);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 4);
	tt_pt_free(&pt);
}

static void test_clean_round_does_not_restart(void)
{
	int rep;

	start(1, 3);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(pt.restarts, 0);
	tt_pt_free(&pt);
}

static void test_stop_request_prevents_restart_and_is_not_a_failure(void)
{
	int rep;

	start(2, 5);
	CU_ASSERT_EQUAL(tt_pt_stop_requested(&pt, SIGTERM), 1);
	CU_ASSERT_EQUAL(tt_pt_stop_requested(&pt, SIGTERM), 0);	/* grace timer armed once */
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 143);
	tt_pt_free(&pt);
}

static void test_stop_request_with_clean_exits_gives_zero(void)
{
	int rep;

	start(1, 0);
	tt_pt_stop_requested(&pt, SIGINT);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	tt_pt_free(&pt);
}

static void test_abort_ends_without_restart(void)
{
	int rep;

	CU_ASSERT_EQUAL_FATAL(tt_pt_init(&pt, 3, 4, NULL), 0);
	tt_pt_started(&pt, 0, 100);	/* spawning worker 1 failed */
	tt_pt_abort(&pt, 1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 1);
	tt_pt_free(&pt);
}

/* The checkpoint stop (tt_ckpt_exit.h): every worker exits 99 -> no stop, no report, exit 0. */
static void test_checkpoint_exits_are_a_clean_stop(void)
{
	int rep;

	start(3, 2);
	tt_pt_set_ckpt_code(&pt, 99);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(99, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(99, 0), &rep), TT_ACT_NONE);
	/* One that had finished its work anyway exits 0: still a checkpoint stop, no restart. */
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 102, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	CU_ASSERT_EQUAL(tt_pt_checkpointed(&pt), 1);
	CU_ASSERT_EQUAL(pt.checkpointed, 2);
	CU_ASSERT_EQUAL(pt.restarts, 0);
	tt_pt_free(&pt);
}

/* A crash while the others checkpoint (another status, or a signal) is a failure as ever. */
static void test_crash_during_checkpoint_is_a_failure(void)
{
	int rep;

	start(3, 0);
	tt_pt_set_ckpt_code(&pt, 99);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(99, 0), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(98, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(rep, 1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 102, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 98);
	CU_ASSERT_EQUAL(tt_pt_checkpointed(&pt), 0);
	tt_pt_free(&pt);
	/* Killed by a signal: never a checkpoint stop. */
	start(1, 0);
	tt_pt_set_ckpt_code(&pt, 99);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, SIGSEGV), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(rep, 0);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 128 + SIGSEGV);
	CU_ASSERT_EQUAL(tt_pt_checkpointed(&pt), 0);
	tt_pt_free(&pt);
}

/* Without a checkpoint status (0) an exit 99 is a failure like any other. */
static void test_no_checkpoint_code_means_failure(void)
{
	int rep;

	start(2, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(99, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(rep, 0);
	tt_pt_free(&pt);
}

/* Coordinated (ctl.h): a failed round waits for the coordinator instead of restarting, and
 * restarts into the round it names; a decision stops a round with no failure here. */
static void test_coordinated_failure_waits_for_the_decision(void)
{
	int rep;

	start(2, 5);
	tt_pt_set_coordinated(&pt);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(1, 0), &rep), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(rep, 0);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 101, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_WAIT);
	CU_ASSERT_EQUAL(pt.restarts, 0);
	/* A stale decision (not after this round) changes nothing; the next one restarts. */
	CU_ASSERT_EQUAL(tt_pt_decided(&pt, 0), TT_ACT_NONE);
	CU_ASSERT_EQUAL(tt_pt_decided(&pt, 3), TT_ACT_RESTART);
	CU_ASSERT_EQUAL(pt.restarts, 3);
	tt_pt_round_begin(&pt);
	tt_pt_started(&pt, 0, 200);
	tt_pt_started(&pt, 1, 201);
	/* Another node's failure: this round is stopped, then restarts, though nothing failed here. */
	CU_ASSERT_EQUAL(tt_pt_decided(&pt, 4), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 200, W_EXITCODE(0, SIGTERM), &rep), TT_ACT_NONE);
	CU_ASSERT_EQUAL(rep, -1);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 201, W_EXITCODE(0, 0), &rep), TT_ACT_RESTART);
	CU_ASSERT_EQUAL(pt.restarts, 4);
	tt_pt_free(&pt);
}

static void test_coordinated_stop_fails_the_launch(void)
{
	int rep;

	start(1, 5);
	tt_pt_set_coordinated(&pt);
	/* Stopped for another node (a stop or a loss) with workers that exit 0 on SIGTERM: still 1. */
	CU_ASSERT_EQUAL(tt_pt_decided(&pt, -1), TT_ACT_STOP_GROUP);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 1);
	tt_pt_free(&pt);
	/* The stop after a failure here, while waiting: exit with the failure's status. */
	start(1, 0);
	tt_pt_set_coordinated(&pt);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(7, 0), &rep), TT_ACT_WAIT);
	CU_ASSERT_EQUAL(tt_pt_decided(&pt, -1), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 7);
	tt_pt_free(&pt);
	/* A clean round never waits. */
	start(1, 5);
	tt_pt_set_coordinated(&pt);
	CU_ASSERT_EQUAL(tt_pt_exited(&pt, 100, W_EXITCODE(0, 0), &rep), TT_ACT_EXIT);
	CU_ASSERT_EQUAL(tt_pt_exit_code(&pt), 0);
	tt_pt_free(&pt);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("proctable", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "init rejects bad counts", test_init_rejects_bad_counts);
	CU_add_test(s, "status codes", test_status_codes);
	CU_add_test(s, "all succeed: exit 0", test_all_succeed_exit_zero);
	CU_add_test(s, "first failure stops the group", test_first_failure_stops_group_and_sets_status);
	CU_add_test(s, "killed worker: 128+signal", test_killed_worker_gives_128_plus_signal);
	CU_add_test(s, "last worker failing", test_last_worker_failing_exits_without_stop);
	CU_add_test(s, "unknown pid ignored", test_unknown_pid_is_ignored);
	CU_add_test(s, "restarts counted then exhausted", test_restarts_counted_then_exhausted);
	CU_add_test(s, "clean round does not restart", test_clean_round_does_not_restart);
	CU_add_test(s, "stop request: no restart, no report", test_stop_request_prevents_restart_and_is_not_a_failure);
	CU_add_test(s, "stop request with clean exits", test_stop_request_with_clean_exits_gives_zero);
	CU_add_test(s, "abort ends without restart", test_abort_ends_without_restart);
	CU_add_test(s, "checkpoint exits: a clean stop", test_checkpoint_exits_are_a_clean_stop);
	CU_add_test(s, "crash during a checkpoint: failure", test_crash_during_checkpoint_is_a_failure);
	CU_add_test(s, "no checkpoint status: 99 fails", test_no_checkpoint_code_means_failure);
	CU_add_test(s, "coordinated: a failure waits for the decision", test_coordinated_failure_waits_for_the_decision);
	CU_add_test(s, "coordinated: a stop fails the launch", test_coordinated_stop_fails_the_launch);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_rt_heartbeat.c — libtrainrt's heartbeat lines on TRAIN_HEARTBEAT_FD: the exact bytes, the
 * 10 ms limit on step lines (a section line lifts it for the next step), a name too long for a
 * line, a full pipe (the call returns at once, the line is dropped) and a channel that is gone
 * (given up for good). The library looks the variable up once per process, so the suite sets it
 * before the first call and the tests run in this order. */
#include "cunit_main.h"
#include "trainrt.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int rd = -1, wr = -1;

static int setup(void)
{
	int p[2];
	char fd[16];

	/* As train-run makes it: non-blocking, so a full pipe drops lines instead of waiting. */
	if (pipe2(p, O_NONBLOCK) != 0)
		return -1;
	rd = p[0];
	wr = p[1];
	snprintf(fd, sizeof(fd), "%d", wr);
	signal(SIGPIPE, SIG_IGN);	/* the gone channel's write fails with EPIPE instead */
	return setenv("TRAIN_HEARTBEAT_FD", fd, 1);
}

/* Everything in the pipe now, as a string. */
static const char *drain(void)
{
	static char buf[1 << 17];
	size_t used = 0;
	ssize_t n;

	while (used < sizeof(buf) - 1 && (n = read(rd, buf + used, sizeof(buf) - 1 - used)) > 0)
		used += (size_t)n;
	buf[used] = '\0';
	return buf;
}

static void pause_past_limit(void)
{
	struct timespec t = { 0, 12000000 };	/* 12 ms > the 10 ms limit */

	nanosleep(&t, NULL);
}

static long long now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void test_lines_and_rate_limit(void)
{
	long long t0 = now_ns(), dt;

	CU_ASSERT_EQUAL(trainrt_heartbeat_step(1), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step(2), 0);
	dt = now_ns() - t0;
	/* Within 10 ms the second is held back; a machine that stalled this thread longer than
	 * that between the two calls may write both (measured, so the test cannot flake). */
	if (dt < 10000000) {
		CU_ASSERT_STRING_EQUAL(drain(), "step 1\n");
	} else {
		drain();
	}
	CU_ASSERT_EQUAL(trainrt_heartbeat_section("checkpoint"), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step(3), 0);	/* right after a section: written */
	CU_ASSERT_STRING_EQUAL(drain(), "section checkpoint\nstep 3\n");
	pause_past_limit();
	CU_ASSERT_EQUAL(trainrt_heartbeat_step(-4000000000LL), 0);
	CU_ASSERT_STRING_EQUAL(drain(), "step -4000000000\n");
}

/* The busy time: the mean of the steps since the last line, in whole microseconds; the steps
 * held back by the limit count into the next line's, a section starts the mean afresh, and a
 * time out of range (negative, over an hour) is left out of it. */
static void test_busy_times(void)
{
	long long t0;

	CU_ASSERT_EQUAL(trainrt_heartbeat_section("setup"), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(1, 0.0015), 0);
	CU_ASSERT_STRING_EQUAL(drain(), "section setup\nstep 1 busy 1500\n");
	pause_past_limit();
	t0 = now_ns();
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(2, 0.004), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(3, 0.002), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(4, -1.0), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(5, 4000.0), 0);
	if (now_ns() - t0 < 10000000) {	/* as above: a stalled thread may write more lines */
		CU_ASSERT_STRING_EQUAL(drain(), "step 2 busy 4000\n");
		pause_past_limit();
		CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(6, 0.006), 0);
		CU_ASSERT_STRING_EQUAL(drain(), "step 6 busy 4000\n");	/* (2 + 6) / 2 ms */
	} else {
		drain();
	}
	/* Held back (or, on a stalled machine, written): either way not in the mean after the
	 * section. */
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(7, 0.1), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_section("eval"), 0);
	CU_ASSERT_EQUAL(trainrt_heartbeat_step_busy(8, 0.001), 0);
	{
		const char *got = drain(), *want = "section eval\nstep 8 busy 1000\n";

		CU_ASSERT(strlen(got) >= strlen(want) && !strcmp(got + strlen(got) - strlen(want), want));
	}
	pause_past_limit();
	CU_ASSERT_EQUAL(trainrt_heartbeat_step(9), 0);		/* without: no busy time */
	CU_ASSERT_STRING_EQUAL(drain(), "step 9\n");
}

static void test_long_name_refused(void)
{
	char name[80];

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	CU_ASSERT_EQUAL(trainrt_heartbeat_section(name), -1);
	CU_ASSERT_STRING_EQUAL(drain(), "");
}

static void test_full_pipe_drops(void)
{
	int k, written = 0, failed = 0;

	/* Far more than a pipe holds (64 KiB by default): none of the calls may wait or fail. */
	for (k = 0; k < 10000; k++)
		failed += trainrt_heartbeat_section("eval") != 0;
	CU_ASSERT_EQUAL(failed, 0);
	written = (int)(strlen(drain()) / strlen("section eval\n"));
	CU_ASSERT(written > 0 && written < 10000);
	CU_ASSERT_EQUAL(trainrt_heartbeat_section("eval"), 0);	/* room again */
	CU_ASSERT_STRING_EQUAL(drain(), "section eval\n");
}

static void test_gone_channel_given_up(void)
{
	int p[2];

	close(rd);
	rd = -1;
	CU_ASSERT_EQUAL(trainrt_heartbeat_section("setup"), -1);	/* EPIPE */
	/* The fd number is reused by a new pipe: a channel given up stays given up. */
	CU_ASSERT_EQUAL_FATAL(pipe2(p, O_NONBLOCK), 0);
	rd = p[0];
	if (p[1] != wr)
		CU_ASSERT_EQUAL_FATAL(dup2(p[1], wr), wr);
	CU_ASSERT_EQUAL(trainrt_heartbeat_section("setup"), -1);
	CU_ASSERT_STRING_EQUAL(drain(), "");
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("rt_heartbeat", setup, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "lines and the 10 ms limit", test_lines_and_rate_limit);
	CU_add_test(s, "busy times per step", test_busy_times);
	CU_add_test(s, "a name too long is refused", test_long_name_refused);
	CU_add_test(s, "a full pipe drops lines", test_full_pipe_drops);
	CU_add_test(s, "a gone channel is given up", test_gone_channel_given_up);
	return 0;
}

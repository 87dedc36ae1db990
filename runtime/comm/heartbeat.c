/* SPDX-License-Identifier: MIT */
/* heartbeat.c — trainrt_heartbeat_step/_step_busy/_section (trainrt.h): progress lines for train-run's hang
 * detection on the fd named in TRAIN_HEARTBEAT_FD. No communicator is needed, so a program may
 * write them before trainrt_init and without one. */
#include "trainrt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "tt_envnames.h"
#include "tt_io.h"
#include "tt_parse.h"

/* A step line at most this often: train-run wakes up per line, and a step of a small model can
 * take microseconds. The hang timeout has a floor of seconds, so nothing is lost by it. */
#define MIN_STEP_GAP_US 10000

static int hb_fd = -2;		/* -2: not looked up yet, -1: none or broken */
static int64_t last_us = -1;
/* The busy times of the steps not written yet (the rate limit held their lines back). */
static double busy_sum;
static long long busy_steps;

static int channel(void)
{
	const char *v;
	long long fd;

	if (hb_fd != -2)
		return hb_fd;
	v = getenv(TT_ENV_HEARTBEAT_FD);
	hb_fd = v && tt_parse_int(v, 3, 1 << 20, TT_ENV_HEARTBEAT_FD, &fd, NULL) == 0 ? (int)fd : -1;
	return hb_fd;
}

/* Writes one line. A full pipe (train-run busy) drops it; a channel that is gone (closed, not a
 * pipe any more) is given up for good. */
static int put(const char *line, size_t len)
{
	int fd = channel();
	ssize_t n;

	if (fd < 0)
		return -1;
	do
		n = write(fd, line, len);
	while (n < 0 && errno == EINTR);
	if (n == (ssize_t)len || (n < 0 && errno == EAGAIN))
		return 0;
	if (n < 0)
		hb_fd = -1;
	return n < 0 ? -1 : 0;
}

/* A step line, with the mean busy time of the steps since the last one when busy. */
static int step_line(long long step, int busy)
{
	char line[64];
	int64_t t;
	int n;

	if (channel() < 0)
		return -1;
	t = tt_now_us();
	if (last_us >= 0 && t - last_us < MIN_STEP_GAP_US)
		return 0;
	last_us = t;
	if (busy && busy_steps > 0)
		n = snprintf(line, sizeof(line), "step %lld busy %lld\n", step,
			     (long long)(busy_sum / (double)busy_steps * 1e6 + 0.5));
	else
		n = snprintf(line, sizeof(line), "step %lld\n", step);
	busy_sum = 0.0;
	busy_steps = 0;
	return put(line, (size_t)n);
}

int trainrt_heartbeat_step(long long step)
{
	return step_line(step, 0);
}

int trainrt_heartbeat_step_busy(long long step, double busy_seconds)
{
	/* Up to an hour per step, as train-run takes it. */
	if (busy_seconds >= 0.0 && busy_seconds <= 3600.0) {
		busy_sum += busy_seconds;
		busy_steps++;
	}
	return step_line(step, 1);
}

int trainrt_heartbeat_section(const char *name)
{
	char line[64];
	int n;

	if (channel() < 0)
		return -1;
	n = snprintf(line, sizeof(line), "section %s\n", name);
	if (n < 0 || (size_t)n >= sizeof(line))
		return -1;
	/* The next step line closes the section: it must not be held back by the rate limit, and
	 * its busy time is of the steps after the section. */
	last_us = -1;
	busy_sum = 0.0;
	busy_steps = 0;
	return put(line, (size_t)n);
}

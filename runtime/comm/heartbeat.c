/* SPDX-License-Identifier: MIT */
/* heartbeat.c — trainrt_heartbeat_step/_section (trainrt.h): progress lines for train-run's hang
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

int trainrt_heartbeat_step(long long step)
{
	char line[32];
	int64_t t;
	int n;

	if (channel() < 0)
		return -1;
	t = tt_now_us();
	if (last_us >= 0 && t - last_us < MIN_STEP_GAP_US)
		return 0;
	last_us = t;
	n = snprintf(line, sizeof(line), "step %lld\n", step);
	return put(line, (size_t)n);
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
	/* The next step line closes the section: it must not be held back by the rate limit. */
	last_us = -1;
	return put(line, (size_t)n);
}

/* SPDX-License-Identifier: MIT */
/* comm_harness.c — forks ranks for the communicator tests (see comm_harness.h). */
#include "comm_harness.h"
#include "tt_port.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void child(const world_spec *spec, int rank, int port, rank_fn fn, void *arg)
{
	char buf[32], errbuf[1200] = "";
	trainrt_comm *c;
	int rc;

	snprintf(buf, sizeof(buf), "%d", rank);
	setenv("RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%d", spec->n);
	setenv("WORLD_SIZE", buf, 1);
	snprintf(buf, sizeof(buf), "%d", rank % spec->local);
	setenv("LOCAL_RANK", buf, 1);
	snprintf(buf, sizeof(buf), "%d", spec->local);
	setenv("LOCAL_WORLD_SIZE", buf, 1);
	snprintf(buf, sizeof(buf), "%d", port);
	setenv("MASTER_PORT", buf, 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	setenv("TRAINRT_TOKEN", "unit-test-secret", 1);
	setenv("TRAINRT_BACKEND", spec->backend ? spec->backend : "auto", 1);
	setenv("TRAINRT_TIMEOUT", spec->timeout ? spec->timeout : "20", 1);
	setenv("TRAINRT_SHM_ARENA_MB", "64", 1);
	unsetenv("PMIX_RANK");
	unsetenv("PMIX_NAMESPACE");
	unsetenv("SLURM_JOB_ID");
	if (rank < 8 && spec->env_override[rank]) {
		char kv[256], *eq;

		snprintf(kv, sizeof(kv), "%s", spec->env_override[rank]);
		eq = strchr(kv, '=');
		if (eq) {
			*eq = '\0';
			setenv(kv, eq + 1, 1);
		}
	}
	c = trainrt_init_for(spec->buffers, errbuf, sizeof(errbuf));
	rc = fn(c, errbuf, arg);
	if (rc != 0)
		fprintf(stderr, "rank %d failed (init: %s; last error: %s)\n", rank, c ? "ok" : errbuf,
			c ? trainrt_last_error(c) : "");
	trainrt_finalize(c);
	fflush(NULL);
	_exit(rc ? 1 : 0);
}

int run_world(const world_spec *spec, rank_fn fn, void *arg)
{
	pid_t pids[64];
	int failed = 0, left = spec->n;
	double start = now(), limit = spec->kill_after_s > 0 ? spec->kill_after_s : 60;
	uint16_t port;
	tt_err err;

	if (spec->n > 64)
		return -1;
	if (tt_free_loopback_port(&port, &err) != 0) {
		fprintf(stderr, "run_world: %s\n", err.msg);
		return -1;
	}
	fflush(NULL);
	for (int r = 0; r < spec->n; r++) {
		pids[r] = fork();
		if (pids[r] < 0)
			return -1;
		if (pids[r] == 0)
			child(spec, r, port, fn, arg);
	}
	while (left > 0) {
		int status;
		pid_t p = waitpid(-1, &status, WNOHANG);

		if (p > 0) {
			for (int r = 0; r < spec->n; r++)
				if (pids[r] == p) {
					pids[r] = 0;
					left--;
					if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
						failed++;
				}
			continue;
		}
		if (now() - start > limit) {
			for (int r = 0; r < spec->n; r++)
				if (pids[r] > 0)
					kill(pids[r], SIGKILL);
		}
		usleep(2000);
	}
	return failed;
}

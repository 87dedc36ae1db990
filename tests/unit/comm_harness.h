/* SPDX-License-Identifier: MIT */
/* comm_harness.h — runs a function as N forked ranks on this host under the env contract
 * (MASTER_ADDR=127.0.0.1, a free port, a test token), for the communicator tests and bench.
 * A rank function returns 0 when its checks passed; run_world reports how many ranks failed. */
#ifndef COMM_HARNESS_H
#define COMM_HARNESS_H

#include "trainrt.h"

/* Called in each child after trainrt_init succeeded (comm != NULL), or with comm == NULL and
 * the init error in initerr when want_init_fail is set for that rank. */
typedef int (*rank_fn)(trainrt_comm *comm, const char *initerr, void *arg);

typedef struct world_spec {
	int n;            /* WORLD_SIZE */
	int local;        /* LOCAL_WORLD_SIZE (n / local fake "nodes") */
	const char *backend;
	const char *timeout; /* TRAINRT_TIMEOUT */
	/* Per-rank environment overrides ("NAME=value"), NULL entries allowed. */
	const char *env_override[8];
	/* Kill children still running after this many seconds (a test that hangs fails). */
	int kill_after_s;
	/* Passed to trainrt_init_for (0 = TRAINRT_BUFFERS_ANY, what trainrt_init does). */
	trainrt_buffers buffers;
} world_spec;

/* Returns the number of ranks that exited non-zero (or were killed); -1 on harness error. */
int run_world(const world_spec *spec, rank_fn fn, void *arg);

#endif

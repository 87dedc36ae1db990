/* SPDX-License-Identifier: MIT */
/* split_time.c — one rank of `make bench-split`: joins the job (env contract, launched by
 * tests/trainer/launch_local.sh), splits the world in two by parity and prints, on rank 0, the
 * seconds from a barrier before the split to a barrier after it (the slowest rank's time).
 *   split-time agree   every rank passes TRAINRT_UNDEFINED: only the agreement on the groups
 *   split-time groups  the two groups are built too (their own backends) */
#include "trainrt.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
	char errbuf[1200];
	trainrt_comm *c, *g = NULL;
	int build = argc == 2 && strcmp(argv[1], "groups") == 0;
	double t0;

	if (argc != 2 || (!build && strcmp(argv[1], "agree") != 0)) {
		fprintf(stderr, "usage: split-time agree|groups (as every rank of a job)\n");
		return 2;
	}
	if (!(c = trainrt_init_for(TRAINRT_BUFFERS_HOST, errbuf, sizeof(errbuf)))) {
		fprintf(stderr, "split-time: %s\n", errbuf);
		return 1;
	}
	if (trainrt_barrier(c) != 0)
		goto fail;
	t0 = now();
	if (trainrt_comm_split(c, build ? trainrt_rank(c) % 2 : TRAINRT_UNDEFINED, 0, &g) != 0 ||
	    trainrt_barrier(c) != 0)
		goto fail;
	if (trainrt_rank(c) == 0)
		printf("%.4f\n", now() - t0);
	if (g)
		trainrt_finalize(g);
	trainrt_finalize(c);
	return 0;
fail:
	fprintf(stderr, "split-time: %s\n", trainrt_last_error(c));
	trainrt_finalize(c);
	return 1;
}

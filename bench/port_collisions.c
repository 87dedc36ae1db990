/* SPDX-License-Identifier: MIT */
/* port_collisions.c — how often K jobs sharing a node get the same MASTER_PORT from the plugin's
 * formula (tt_master_port, used when Slurm reserved no ports), for job ids submitted together
 * (consecutive) and for unrelated jobs (ids drawn from a window), each job in its step 0 or in a
 * step drawn from 0..STEPS-1, against the birthday estimate 1 - prod(1 - i/span).
 * bench/ports.sh prints it beside the ports measured on the test cluster.
 *   port-collisions K [TRIALS] [WINDOW] [STEPS] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

#define K_MAX 1024

/* splitmix64: a fixed, seedable sequence, so every run prints the same numbers. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Whether two of the k jobs get one port (job i in step step[i], the default range). */
static int collides(const uint32_t *job, const uint32_t *step, int k)
{
	static const struct tt_port_range range = {TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT};
	unsigned char used[65536];

	memset(used, 0, sizeof(used));
	for (int i = 0; i < k; i++) {
		uint16_t port = tt_master_port(job[i], step[i], range);

		if (used[port]++)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int k = argc > 1 ? atoi(argv[1]) : 0;
	long trials = argc > 2 ? atol(argv[2]) : 100000;
	uint32_t window = argc > 3 ? (uint32_t)strtoul(argv[3], NULL, 10) : 100000;
	uint32_t steps = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 1;
	uint32_t span = TT_PORT_HI_DEFAULT - TT_PORT_LO_DEFAULT + 1, job[K_MAX], step[K_MAX];
	uint64_t state = 18;
	long consecutive = 0, unrelated = 0;
	double birthday = 1.0;

	if (k < 2 || k > K_MAX || trials < 1 || window < (uint32_t)k || steps < 1) {
		fprintf(stderr, "usage: port-collisions K(2-%d) [TRIALS] [WINDOW >= K] [STEPS >= 1]\n",
			K_MAX);
		return 2;
	}
	for (long t = 0; t < trials; t++) {
		uint32_t base = (uint32_t)(next_random(&state) % 100000000u) + 1;

		for (int i = 0; i < k; i++) {
			job[i] = base + (uint32_t)i;
			step[i] = (uint32_t)(next_random(&state) % steps);
		}
		consecutive += collides(job, step, k);
		/* k distinct ids out of [base, base + window) */
		for (int i = 0; i < k; i++) {
			int dup;

			do {
				job[i] = base + (uint32_t)(next_random(&state) % window);
				dup = 0;
				for (int j = 0; j < i; j++)
					dup |= job[j] == job[i];
			} while (dup);
		}
		unrelated += collides(job, step, k);
	}
	for (int i = 1; i < k; i++)
		birthday *= 1.0 - (double)i / span;
	printf("%3d jobs, step 0-%u, %ld trials, ports %u-%u: consecutive ids %.3f%%, ids within %u "
	       "%.3f%%, birthday estimate %.3f%%\n", k, steps - 1, trials, TT_PORT_LO_DEFAULT,
	       TT_PORT_HI_DEFAULT, 100.0 * consecutive / trials, window, 100.0 * unrelated / trials,
	       100.0 * (1.0 - birthday));
	return 0;
}

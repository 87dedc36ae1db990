/* SPDX-License-Identifier: MIT */
/* throughput.h — the steady training rate that MFU is computed from: samples per second of the
 * compute part of each logging interval (data loading and the input copy left out), with the first
 * interval dropped as warm-up (cuBLAS heuristics, NCCL connections, first-touch page faults) and
 * the median of the rest, so one slow interval (a checkpoint, a noisy neighbour) does not move it. */
#ifndef TT_THROUGHPUT_H
#define TT_THROUGHPUT_H

#include <stddef.h>

typedef struct tt_rate_log {
	double *rates; /* samples per second of each finished interval */
	size_t n, cap;
} tt_rate_log;

/* Appends one interval of `samples` done in `seconds` of compute; -1 when out of memory. An
 * interval without time is skipped (nothing to divide by). */
int tt_rate_add(tt_rate_log *log, double samples, double seconds);

/* The median rate of the intervals after the first; 0 when fewer than two intervals ran. */
double tt_rate_steady(const tt_rate_log *log);

void tt_rate_free(tt_rate_log *log);

#endif

/* SPDX-License-Identifier: MIT */
/* tt_cpuset.h — CPU sets as list text, "0-7,16-23" (cpuset cgroups, taskset -c, TRAIN_CPU_LIST):
 * the one writer every component uses and its strict reader (the topology probe's report, read by
 * the plugin), side by side so that what one writes the other reads back. */
#ifndef TT_CPUSET_H
#define TT_CPUSET_H

#include <sched.h>
#include <stddef.h>

#include "tt_err.h"

/* Ascending ranges ("0-3,8,10-11"; "" for the empty set). -1 when buf is too small. */
int tt_cpuset_to_list(const cpu_set_t *set, char *buf, size_t len);

/* Reads what tt_cpuset_to_list writes: decimal CPU numbers below CPU_SETSIZE, single or a range
 * A-B with A < B, in ascending order without overlap, separated by single commas; "" is the empty
 * set. -1 with err naming the text and the offending part. */
int tt_cpuset_from_list(const char *text, cpu_set_t *set, tt_err *err);

#endif

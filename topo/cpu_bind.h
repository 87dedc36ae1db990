/* bind.h — the CPU rule of train-run: each worker gets its GPU's NUMA-local CPUs (from the
 * topology policy) that train-run may use, shared out among the workers of the same NUMA node;
 * where locality is unknown, the CPUs train-run may use are split evenly among the workers.
 * Pure (cpu_set_t in, cpu_set_t out) so the rule is unit-tested. */
#ifndef TT_BIND_H
#define TT_BIND_H

#include <sched.h>

/* Worker local of nproc gets a contiguous share of the CPUs in allowed, in CPU-number order:
 * with k = CPU_COUNT(allowed) >= nproc, worker i gets the CPUs at positions
 * [i*k/nproc, (i+1)*k/nproc); with k < nproc workers share, worker i gets position i*k/nproc.
 * Returns the number of CPUs in out, or -1 when allowed is empty or local >= nproc. */
int tt_cpus_split(const cpu_set_t *allowed, int nproc, int local, cpu_set_t *out);

/* Fills out[0..n) for n workers. local[i] is worker i's NUMA-local set, or local is NULL when
 * locality is unknown. Each worker's base set is local[i] & allowed (allowed when that is empty
 * or unknown); workers with equal base sets split it with tt_cpus_split in worker order.
 * Returns 0, or -1 when allowed is empty or n < 1. */
int tt_bind_workers(const cpu_set_t *allowed, const cpu_set_t *local, int n, cpu_set_t *out);

#endif

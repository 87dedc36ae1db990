/* bind.h — the fallback CPU rule of train-run: when the node's topology does not say which
 * cores are local to a worker's GPU, the CPUs train-run may use are split evenly among workers.
 * Pure (cpu_set_t in, cpu_set_t out) so the rule is unit-tested. */
#ifndef TT_BIND_H
#define TT_BIND_H

#include <sched.h>

/* Worker local of nproc gets a contiguous share of the CPUs in allowed, in CPU-number order:
 * with k = CPU_COUNT(allowed) >= nproc, worker i gets the CPUs at positions
 * [i*k/nproc, (i+1)*k/nproc); with k < nproc workers share, worker i gets position i*k/nproc.
 * Returns the number of CPUs in out, or -1 when allowed is empty or local >= nproc. */
int tt_cpus_split(const cpu_set_t *allowed, int nproc, int local, cpu_set_t *out);

#endif

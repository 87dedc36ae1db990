/* SPDX-License-Identifier: MIT */
/* cpu_bind.h — the CPU rule for the processes of one node, the same for train-run's workers
 * and the plugin's tasks (when Slurm did not bind them): each gets its GPUs' NUMA-local CPUs
 * (from the topology policy) among those it may use, shared out among the processes with the
 * same set; where locality is unknown, the CPUs are split evenly. Pure (cpu_set_t in,
 * cpu_set_t out) so the rule is unit-tested. */
#ifndef TT_CPU_BIND_H
#define TT_CPU_BIND_H

#include <sched.h>
#include <stdint.h>

#include "gres.h"
#include "tt_env.h"

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

/* The whole rule for n processes on a node that share allowed: process i gets the GPUs
 * tt_gpu_split gives local rank i of n from gpus (NULL: GPUs unknown), its local set is the union
 * of numa[g] over the node-wide index g (tt_gres_node_index through get/ctx) of each of those
 * GPUs (numa NULL, or a GPU whose index is unknown or >= nnuma, adds nothing), and
 * tt_bind_workers shares the sets out. Fills out[0..n). Returns 0, or -1 as tt_bind_workers. */
int tt_bind_node_processes(const cpu_set_t *allowed, const struct tt_gpu_list *gpus,
			   tt_getenv_fn get, void *ctx, const cpu_set_t *numa, int nnuma,
			   uint32_t n, cpu_set_t *out);

#endif

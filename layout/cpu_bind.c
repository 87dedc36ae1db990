/* SPDX-License-Identifier: MIT */
/* cpu_bind.c — the CPUs of each process of a node (see cpu_bind.h). */
#include "cpu_bind.h"

#include <stdlib.h>

#include "layout.h"

int tt_cpus_split(const cpu_set_t *allowed, int nproc, int local, cpu_set_t *out)
{
	int k = CPU_COUNT(allowed);
	int from, to, pos = 0, cpu;

	CPU_ZERO(out);
	if (k == 0 || nproc < 1 || local < 0 || local >= nproc)
		return -1;
	from = (int)((long)local * k / nproc);
	to = k >= nproc ? (int)((long)(local + 1) * k / nproc) : from + 1;
	for (cpu = 0; cpu < CPU_SETSIZE && pos < to; cpu++) {
		if (!CPU_ISSET(cpu, allowed))
			continue;
		if (pos >= from)
			CPU_SET(cpu, out);
		pos++;
	}
	return CPU_COUNT(out);
}

/* Worker i's base set: its NUMA-local CPUs that train-run may use, else all it may use. */
static void base_set(const cpu_set_t *allowed, const cpu_set_t *local, int i, cpu_set_t *base)
{
	if (local) {
		CPU_AND(base, allowed, &local[i]);
		if (CPU_COUNT(base) > 0)
			return;
	}
	*base = *allowed;
}

int tt_bind_workers(const cpu_set_t *allowed, const cpu_set_t *local, int n, cpu_set_t *out)
{
	int i, j;

	if (n < 1 || CPU_COUNT(allowed) == 0)
		return -1;
	for (i = 0; i < n; i++) {
		cpu_set_t base, other;
		int sharers = 0, position = 0;

		base_set(allowed, local, i, &base);
		for (j = 0; j < n; j++) {
			base_set(allowed, local, j, &other);
			if (!CPU_EQUAL(&base, &other))
				continue;
			if (j < i)
				position++;
			sharers++;
		}
		if (tt_cpus_split(&base, sharers, position, &out[i]) < 0)
			return -1;
	}
	return 0;
}

int tt_bind_node_processes(const cpu_set_t *allowed, const struct tt_gpu_list *gpus,
			   tt_getenv_fn get, void *ctx, const cpu_set_t *numa, int nnuma,
			   uint32_t n, cpu_set_t *out)
{
	cpu_set_t *local = NULL;
	int rc;

	if (n < 1)
		return -1;
	if (numa && gpus && gpus->n > 0) {
		local = calloc(n, sizeof(*local));
		if (!local)
			return -1;
		for (uint32_t i = 0; i < n; i++) {
			size_t first, count;

			CPU_ZERO(&local[i]);
			if (tt_gpu_split(gpus->n, n, i, &first, &count) < 0)
				continue;
			for (size_t g = first; g < first + count; g++) {
				int idx = tt_gres_node_index(get, ctx, gpus, gpus->id[g]);

				if (idx >= 0 && idx < nnuma)
					CPU_OR(&local[i], &local[i], &numa[idx]);
			}
		}
	}
	rc = tt_bind_workers(allowed, local, (int)n, out);
	free(local);
	return rc;
}

/* bind.c — the CPUs of each worker (see bind.h). */
#include "bind.h"

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

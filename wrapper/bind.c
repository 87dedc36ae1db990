/* bind.c — even split of the allowed CPUs among workers (see bind.h). */
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

/* SPDX-License-Identifier: MIT */
/* tt_cpuset.c — CPU list text to and from cpu_set_t (see tt_cpuset.h). */
#include "tt_cpuset.h"

#include <stdio.h>

int tt_cpuset_to_list(const cpu_set_t *set, char *buf, size_t len)
{
	size_t used = 0;
	int n;

	buf[0] = '\0';
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		int last = cpu;

		if (!CPU_ISSET(cpu, set))
			continue;
		while (last + 1 < CPU_SETSIZE && CPU_ISSET(last + 1, set))
			last++;
		if (last == cpu)
			n = snprintf(buf + used, len - used, "%s%d", used ? "," : "", cpu);
		else
			n = snprintf(buf + used, len - used, "%s%d-%d", used ? "," : "", cpu, last);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
		cpu = last;
	}
	return 0;
}

/* A CPU number at *p (digits only, no sign, no leading zero but "0"), advanced past it. */
static int read_cpu(const char **p, int *cpu)
{
	const char *s = *p;
	long v = 0;

	if (*s < '0' || *s > '9' || (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
		return -1;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (*s - '0');
		if (v >= CPU_SETSIZE)
			return -1;
	}
	*cpu = (int)v;
	*p = s;
	return 0;
}

int tt_cpuset_from_list(const char *text, cpu_set_t *set, tt_err *err)
{
	const char *p = text;
	int next = 0;	/* the lowest CPU the next part may start at */

	CPU_ZERO(set);
	while (*p) {
		const char *part = p;
		int first, last;

		if (read_cpu(&p, &first) != 0)
			return tt_err_set(err, "CPU list '%s': '%s' does not start with a CPU number below %d",
					  text, part, CPU_SETSIZE);
		last = first;
		if (*p == '-') {
			p++;
			if (read_cpu(&p, &last) != 0 || last <= first)
				return tt_err_set(err, "CPU list '%s': '%s' is not a range A-B with A < B < %d",
						  text, part, CPU_SETSIZE);
		}
		if (first < next)
			return tt_err_set(err, "CPU list '%s': '%s' is not above the part before it (ascending, "
					  "without overlap)", text, part);
		for (int c = first; c <= last; c++)
			CPU_SET(c, set);
		next = last + 1;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return tt_err_set(err, "CPU list '%s': unexpected '%s' (parts are N or A-B, separated "
					  "by single commas)", text, p);
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* throughput.c — see throughput.h. */
#include "throughput.h"

#include <stdlib.h>
#include <string.h>

int tt_rate_add(tt_rate_log *log, double samples, double seconds)
{
	if (!(seconds > 0))
		return 0;
	if (log->n == log->cap) {
		size_t cap = log->cap ? 2 * log->cap : 64;
		double *r = realloc(log->rates, cap * sizeof(*r));

		if (!r)
			return -1;
		log->rates = r;
		log->cap = cap;
	}
	log->rates[log->n++] = samples / seconds;
	return 0;
}

static int by_value(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

double tt_rate_steady(const tt_rate_log *log)
{
	size_t n = log->n ? log->n - 1 : 0;
	double *v, m;

	if (n == 0)
		return 0.0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return 0.0;
	memcpy(v, log->rates + 1, n * sizeof(*v));
	qsort(v, n, sizeof(*v), by_value);
	m = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	free(v);
	return m;
}

void tt_rate_free(tt_rate_log *log)
{
	free(log->rates);
	memset(log, 0, sizeof(*log));
}

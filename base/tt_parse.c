/* SPDX-License-Identifier: MIT */
/* tt_parse.c — the strict integer parser (see tt_parse.h). Digit by digit rather than strtoll:
 * strtoll skips whitespace, takes '+' and needs a NUL where a span has none. */
#include "tt_parse.h"

#include <limits.h>

int tt_parse_int_span(const char *text, size_t len, long long min, long long max,
		      long long *out)
{
	int neg = len > 0 && text[0] == '-' && min < 0;
	/* Accumulated as a negative number: LLONG_MIN has no positive twin. */
	long long v = 0;
	size_t i = (size_t)neg;

	if (i == len)
		return -1;
	for (; i < len; i++) {
		int d = text[i] - '0';

		if (d < 0 || d > 9 || v < (LLONG_MIN + d) / 10)
			return -1;
		v = v * 10 - d;
	}
	if (!neg && v == LLONG_MIN)
		return -1;
	v = neg ? v : -v;
	if (v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int tt_parse_int(const char *text, long long min, long long max, const char *name,
		 long long *out, tt_err *err)
{
	size_t len = 0;

	while (text[len])
		len++;
	if (tt_parse_int_span(text, len, min, max, out) == 0)
		return 0;
	return tt_err_set(err, "%s%s'%s' is not an integer in [%lld, %lld]", name,
			  name[0] == '-' ? " " : "=", text, min, max);
}

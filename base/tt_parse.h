/* SPDX-License-Identifier: MIT */
/* tt_parse.h — the one strict integer parser: every command-line option, environment variable
 * and wire field traintopo reads as a number goes through it, so "is 29500x a port?" has one
 * answer everywhere. Strict means: decimal digits only, a leading '-' only where min < 0, no
 * whitespace, no '+', no trailing text, no overflow. */
#ifndef TT_PARSE_H
#define TT_PARSE_H

#include <stddef.h>

#include "tt_err.h"

/* Parses all of text as a decimal integer in [min, max] into *out. On failure *out is left as
 * it was and err (may be NULL) says "NAME='TEXT' is not an integer in [MIN, MAX]" for an
 * environment variable, or "NAME 'TEXT' is not ..." when name is an option (starts with '-').
 * Returns 0 or -1. */
int tt_parse_int(const char *text, long long min, long long max, const char *name,
		 long long *out, tt_err *err);

/* The same rule over text[0..len) (a field inside a longer value: "12000-12003", "2(x3)"),
 * without a message: the caller knows what the field is part of. Returns 0 or -1. */
int tt_parse_int_span(const char *text, size_t len, long long min, long long max,
		      long long *out);

#endif

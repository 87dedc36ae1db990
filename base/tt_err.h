/* SPDX-License-Identifier: MIT */
/* tt_err.h — the error record every traintopo function fills when it fails.
 * Library code never prints: it returns -1 (or NULL) and leaves one sentence in a tt_err saying
 * what failed, on which input, and what to do. Only main()s and SPANK hooks decide where it goes. */
#ifndef TT_ERR_H
#define TT_ERR_H

#include <stddef.h>

typedef struct tt_err {
	char msg[1024];
} tt_err;

/* Formats the message into err (when err is not NULL) and returns -1, so a failing path can
 * end with `return tt_err_set(err, "...")`. */
int tt_err_set(tt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Like tt_err_set, with ": strerror(errno)" appended. */
int tt_err_errno(tt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Prefixes an existing message with more context ("reading /x: " + old message). */
int tt_err_wrap(tt_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

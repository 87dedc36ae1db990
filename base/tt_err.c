/* SPDX-License-Identifier: MIT */
/* tt_err.c — formatting of the error record (see tt_err.h). */
#include "tt_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int tt_err_set(tt_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -1;
}

int tt_err_errno(tt_err *err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t len;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	len = strlen(err->msg);
	snprintf(err->msg + len, sizeof(err->msg) - len, ": %s", strerror(saved));
	errno = saved;
	return -1;
}

int tt_err_wrap(tt_err *err, const char *fmt, ...)
{
	char prefix[512];
	char old[sizeof(err->msg)];
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	/* Truncation keeps the context and the start of the old message, which is what matters. */
	if (snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old) < 0)
		err->msg[0] = '\0';
	return -1;
}

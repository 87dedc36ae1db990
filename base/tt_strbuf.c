/* SPDX-License-Identifier: MIT */
/* tt_strbuf.c — the growing text buffer (see tt_strbuf.h). */
#include "tt_strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void tt_sb_printf(struct tt_strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (sb->failed)
		return;
	for (;;) {
		size_t room = sb->cap - sb->len;

		va_start(ap, fmt);
		n = vsnprintf(sb->data ? sb->data + sb->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			sb->failed = 1;
			return;
		}
		if ((size_t)n < room) {
			sb->len += (size_t)n;
			return;
		}
		size_t cap = sb->cap ? sb->cap * 2 : 4096;
		while (cap - sb->len <= (size_t)n)
			cap *= 2;
		char *bigger = realloc(sb->data, cap);
		if (!bigger) {
			sb->failed = 1;
			return;
		}
		sb->data = bigger;
		sb->cap = cap;
	}
}

int tt_sb_failed(const struct tt_strbuf *sb)
{
	return sb->failed;
}

void tt_sb_free(struct tt_strbuf *sb)
{
	free(sb->data);
	sb->data = NULL;
	sb->len = sb->cap = 0;
	sb->failed = 0;
}

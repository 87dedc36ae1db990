/* SPDX-License-Identifier: MIT */
/* tt_strbuf.h — a growing text buffer for the writers (NCCL XML, JSON, the matrix view), so each
 * renders into memory first and a file is only written whole. An allocation failure sticks:
 * keep appending, check tt_sb_failed() once at the end. */
#ifndef TT_STRBUF_H
#define TT_STRBUF_H

#include <stddef.h>

struct tt_strbuf {
	char *data; /* NUL-terminated once anything was appended */
	size_t len, cap;
	int failed;
};

void tt_sb_printf(struct tt_strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tt_sb_failed(const struct tt_strbuf *sb);
void tt_sb_free(struct tt_strbuf *sb);

#endif

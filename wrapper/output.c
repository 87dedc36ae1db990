/* SPDX-License-Identifier: MIT */
/* output.c — the line splitter behind train-run's output re-emission (see output.h). */
#include "output.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tt_out_init(struct tt_linesplit *ls, const char *prefix, tt_err *err)
{
	size_t plen = prefix ? strlen(prefix) : 0;

	ls->cap = plen + TT_OUT_MAX_LINE + 1;
	ls->buf = malloc(ls->cap);
	if (!ls->buf)
		return tt_err_errno(err, "allocating an output line buffer of %zu bytes", ls->cap);
	if (plen)
		memcpy(ls->buf, prefix, plen);
	ls->prefix_len = plen;
	ls->len = plen;
	return 0;
}

void tt_out_free(struct tt_linesplit *ls)
{
	free(ls->buf);
	ls->buf = NULL;
}

void tt_out_rank_prefix(char *dst, size_t cap, int rank)
{
	snprintf(dst, cap, "[rank %d] ", rank);
}

/* Ends the pending line with '\n', hands it out and keeps only the prefix. */
static int emit_pending(struct tt_linesplit *ls, tt_out_emit_fn emit, void *ctx)
{
	int rc;

	ls->buf[ls->len++] = '\n';
	rc = emit(ctx, ls->buf, ls->len);
	ls->len = ls->prefix_len;
	return rc;
}

int tt_out_feed(struct tt_linesplit *ls, const char *data, size_t n, tt_out_emit_fn emit, void *ctx)
{
	const size_t max_text = ls->prefix_len + TT_OUT_MAX_LINE;

	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t text = nl ? (size_t)(nl - data) : n;
		size_t room = max_text - ls->len;
		size_t take = text < room ? text : room;
		int has_newline = nl && take == text;
		size_t used = take + (has_newline ? 1 : 0);

		memcpy(ls->buf + ls->len, data, take);
		ls->len += take;
		data += used;
		n -= used;
		/* A full buffer is a forced break of an over-long line. */
		if ((has_newline || ls->len == max_text) && emit_pending(ls, emit, ctx) != 0)
			return -1;
	}
	return 0;
}

int tt_out_flush(struct tt_linesplit *ls, tt_out_emit_fn emit, void *ctx)
{
	if (ls->len == ls->prefix_len)
		return 0;
	return emit_pending(ls, emit, ctx);
}

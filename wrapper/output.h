/* SPDX-License-Identifier: MIT */
/* output.h — splits a worker's byte stream into whole lines, each with an optional "[rank N] "
 * prefix, so train-run can re-emit every line with one write() and lines of different workers
 * never interleave. Pure: bytes in, lines out through a callback. */
#ifndef TT_OUTPUT_H
#define TT_OUTPUT_H

#include <stddef.h>

#include "tt_err.h"

/* A line longer than this is emitted in pieces of this size, each ended by a newline, so one
 * worker printing without newlines cannot grow train-run's memory without bound. */
#define TT_OUT_MAX_LINE 65536

/* Receives one line: prefix + text + '\n', ready for a single write(). Returns 0, or -1 to stop. */
typedef int (*tt_out_emit_fn)(void *ctx, const char *line, size_t len);

struct tt_linesplit {
	char *buf;		/* prefix, then the pending partial line */
	size_t prefix_len;
	size_t len;		/* bytes used in buf, prefix included */
	size_t cap;
};

/* prefix may be NULL or "" for untagged output. */
int tt_out_init(struct tt_linesplit *ls, const char *prefix, tt_err *err);
void tt_out_free(struct tt_linesplit *ls);

/* Formats the --tag-output prefix "[rank N] " into dst (at least 32 bytes). */
void tt_out_rank_prefix(char *dst, size_t cap, int rank);

/* Feeds n bytes; emits every completed line. Returns 0, or -1 when emit failed. */
int tt_out_feed(struct tt_linesplit *ls, const char *data, size_t n, tt_out_emit_fn emit, void *ctx);

/* Emits the pending partial line, if any, with a newline added (the stream ended without one). */
int tt_out_flush(struct tt_linesplit *ls, tt_out_emit_fn emit, void *ctx);

#endif

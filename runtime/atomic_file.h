/* atomic_file.h — all-or-nothing file writes: DIR/NAME.tmp is written, fsync'd and renamed over
 * DIR/NAME, then DIR is fsync'd, so readers see the old file or the whole new one, even after a
 * crash. Used for checkpoints and the training summary. */
#ifndef TT_ATOMIC_FILE_H
#define TT_ATOMIC_FILE_H

#include <stddef.h>

#include "tt_err.h"

typedef struct tt_chunk {
	const void *data;
	size_t len;
} tt_chunk;

/* Writes the concatenation of chunks[0..n) as dir/name. */
int tt_atomic_write(const char *dir, const char *name, const tt_chunk *chunks, int n, tt_err *err);

/* Same for a full path (its directory is everything before the last '/', or "."). */
int tt_atomic_write_path(const char *path, const void *data, size_t len, tt_err *err);

#endif

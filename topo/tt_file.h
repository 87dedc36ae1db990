/* tt_file.h — whole-file writes that never leave a half-written file behind: readers see either
 * the old file or the complete new one, also after a crash (a unique temp file in the same
 * directory, fsync, rename, then fsync of the directory). The one implementation used for NCCL
 * topology files, train-topo -o, checkpoints and training summaries. */
#ifndef TT_FILE_H
#define TT_FILE_H

#include "tt_err.h"

#include <stddef.h>

/* One piece of a file written from several buffers. */
typedef struct tt_chunk {
	const void *data;
	size_t len;
} tt_chunk;

/* Writes the concatenation of chunks[0..n) as path, created like any file: mode 0666 less the
 * process's umask (0644 under the usual 022, 0600 under 077). */
int tt_file_write_chunks(const char *path, const tt_chunk *chunks, int n, tt_err *err);

/* Writes len bytes of data as path (mode as above). */
int tt_file_write_atomic(const char *path, const void *data, size_t len, tt_err *err);

#endif

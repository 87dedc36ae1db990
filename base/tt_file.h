/* SPDX-License-Identifier: MIT */
/* tt_file.h — whole-file writes that never leave a half-written file behind: readers see either
 * the old file or the complete new one, also after a crash (a unique temp file in the same
 * directory, fsync, rename, then fsync of the directory). The one implementation used for NCCL
 * topology files, train-topo -o, checkpoints and training summaries. Files are created like any
 * file: mode 0666 less the process's umask (0644 under the usual 022, 0600 under 077). */
#ifndef TT_FILE_H
#define TT_FILE_H

#include "tt_err.h"

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

/* One piece of a file written from several buffers. */
typedef struct tt_chunk {
	const void *data;
	size_t len;
} tt_chunk;

/* A file being written piece by piece (for writers that compute as they go, such as a CRC
 * trailer). Writeback of each piece starts as soon as it is written, so the disk works while the
 * caller prepares the next one and the final fsync has little left to wait for. */
typedef struct tt_file_out {
	int fd;
	off_t written, flushed; /* bytes written; bytes whose writeback was started */
	int dir;		/* directory descriptor name and tmp are relative to (AT_FDCWD: paths) */
	const char *path;	/* the file as messages name it */
	const char *name;	/* the file relative to dir */
	char tmp[PATH_MAX];	/* the temporary file relative to dir */
} tt_file_out;

/* Creates the temporary file next to path (mode 0666 less the umask). An existing path that is
 * not a regular file (a device, FIFO, directory or symbolic link) is refused, never replaced. */
int tt_file_open(tt_file_out *f, const char *path, tt_err *err);
/* The same inside the directory open as dirfd: name is a bare file name in it, created, renamed
 * and synced through the descriptor, so no symbolic link on the way to the directory is followed
 * again (the checkpoint writer); path names the file in messages. dirfd stays the caller's. */
int tt_file_openat(tt_file_out *f, int dirfd, const char *name, const char *path, tt_err *err);
/* Appends len bytes. */
int tt_file_write(tt_file_out *f, const void *data, size_t len, tt_err *err);
/* fsync, close, rename over path, fsync of the directory; on failure the temporary file is gone. */
int tt_file_commit(tt_file_out *f, tt_err *err);
/* Closes and removes the temporary file (after a failed write). */
void tt_file_abort(tt_file_out *f);

/* The directory that holds path: "." for a bare name, "/" for a name at the root. */
void tt_file_dir_of(const char *path, char *dir, size_t len);

/* Writes the concatenation of chunks[0..n) as path. */
int tt_file_write_chunks(const char *path, const tt_chunk *chunks, int n, tt_err *err);

/* tt_file_write_chunks through a directory descriptor (see tt_file_openat). */
int tt_file_write_chunks_at(int dirfd, const char *name, const char *path, const tt_chunk *chunks, int n,
			    tt_err *err);

/* Writes len bytes of data as path. */
int tt_file_write_atomic(const char *path, const void *data, size_t len, tt_err *err);

#endif

/* SPDX-License-Identifier: MIT */
/* sweep_io.h — reading a small whole file (a sweep file, a summary, an exit code) into memory,
 * with errors that name the file. */
#ifndef SWEEP_IO_H
#define SWEEP_IO_H

#include "tt_err.h"

#include <stddef.h>

/* The NUL-terminated contents of path, at most max bytes; NULL and err on failure (errno is kept
 * from the failing call, so a caller can tell ENOENT apart). Free with free(). */
char *sweep_read_file(const char *path, size_t max, tt_err *err);

#endif

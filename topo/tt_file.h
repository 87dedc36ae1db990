/* tt_file.h — whole-file writes that never leave a half-written file behind: readers see either
 * the old file or the complete new one (temp file in the same directory + fsync + rename). */
#ifndef TT_FILE_H
#define TT_FILE_H

#include "tt_err.h"

#include <stddef.h>

int tt_file_write_atomic(const char *path, const char *data, size_t len, tt_err *err);

#endif

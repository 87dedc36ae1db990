/* SPDX-License-Identifier: MIT */
/* idx.h — reader for the IDX files of MNIST / Fashion-MNIST (unsigned byte tensors), plain or
 * gzip'd (zlib reads both), with every header field and length checked against the file. */
#ifndef TT_IDX_H
#define TT_IDX_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

#define TT_IDX_MAX_DIMS 4

typedef struct tt_idx {
	int n_dims;
	uint32_t dims[TT_IDX_MAX_DIMS];
	size_t n_bytes; /* product of dims */
	uint8_t *data;	/* malloc'd, n_bytes */
} tt_idx;

/* Reads a ubyte IDX tensor (magic 0x0000 08 NDIMS) from path. */
int tt_idx_read(const char *path, tt_idx *out, tt_err *err);
void tt_idx_free(tt_idx *t);

#endif

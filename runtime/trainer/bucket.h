/* SPDX-License-Identifier: MIT */
/* bucket.h — DDP gradient buckets: layers grouped in reverse order (the order backward finishes
 * them) into buckets of about cap bytes, the first one smaller (like PyTorch's 1 MB first bucket)
 * so communication starts as early as possible. A bucket is a contiguous range of the flat vector. */
#ifndef TT_BUCKET_H
#define TT_BUCKET_H

#include <stddef.h>

typedef struct tt_bucket {
	int lo_layer, hi_layer; /* layers lo..hi; ready once backward of lo_layer is done */
	size_t off, len;	/* elements of the flat gradient vector */
} tt_bucket;

/* Fills out[] (room for max_out, at least n_layers) and returns the bucket count. A layer is never
 * split: a bucket closes as soon as it holds >= its cap in bytes (first_cap for bucket 0). off[l]
 * is the flat offset of layer l, off[n_layers] the total. */
int tt_bucket_plan(const size_t *off, int n_layers, size_t elem_size, size_t first_cap, size_t cap, tt_bucket *out,
		   int max_out);

#endif

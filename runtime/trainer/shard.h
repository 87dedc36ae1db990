/* SPDX-License-Identifier: MIT */
/* shard.h — how ZeRO splits each parameter block (one layer's W and b) across ranks.
 * Every block is padded up to a multiple of the world size so each rank owns an equal slice and
 * all-gather / reduce-scatter see equal counts; the padding is never read as a parameter. */
#ifndef TT_SHARD_H
#define TT_SHARD_H

#include <stddef.h>

#include "tt_err.h"

#define TT_SHARD_MAX_BLOCKS 64

typedef struct tt_shard_plan {
	int world, rank, n_blocks;
	size_t block_len[TT_SHARD_MAX_BLOCKS];	   /* real elements of each block */
	size_t shard_len[TT_SHARD_MAX_BLOCKS];	   /* padded slice per rank: ceil(block_len / world) */
	size_t shard_off[TT_SHARD_MAX_BLOCKS + 1]; /* where block b's slice sits in this rank's shard storage */
} tt_shard_plan;

int tt_shard_plan_init(tt_shard_plan *p, const size_t *block_len, int n_blocks, int world, int rank, tt_err *err);

/* Real (unpadded) elements of `rank`'s slice of block b; *begin receives the slice's first
 * element in block coordinates (rank * shard_len). Ranks past the block's end own 0 elements. */
size_t tt_shard_valid(const tt_shard_plan *p, int b, int rank, size_t *begin);

/* Total elements of this rank's shard storage (padded), i.e. shard_off[n_blocks]. */
static inline size_t tt_shard_total(const tt_shard_plan *p)
{
	return p->shard_off[p->n_blocks];
}

#endif

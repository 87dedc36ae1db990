/* SPDX-License-Identifier: MIT */
/* shard.c — padded per-block shard ranges for ZeRO (see shard.h). */
#include "shard.h"

#include <string.h>

int tt_shard_plan_init(tt_shard_plan *p, const size_t *block_len, int n_blocks, int world, int rank, tt_err *err)
{
	memset(p, 0, sizeof(*p));
	if (world < 1 || rank < 0 || rank >= world)
		return tt_err_set(err, "shard plan: rank %d is not in a world of %d; check RANK and WORLD_SIZE", rank,
				  world);
	if (n_blocks < 1 || n_blocks > TT_SHARD_MAX_BLOCKS)
		return tt_err_set(err, "shard plan: %d parameter blocks, supported 1..%d", n_blocks,
				  TT_SHARD_MAX_BLOCKS);
	p->world = world;
	p->rank = rank;
	p->n_blocks = n_blocks;
	for (int b = 0; b < n_blocks; b++) {
		p->block_len[b] = block_len[b];
		p->shard_len[b] = (block_len[b] + (size_t)world - 1) / (size_t)world;
		p->shard_off[b + 1] = p->shard_off[b] + p->shard_len[b];
	}
	return 0;
}

size_t tt_shard_valid(const tt_shard_plan *p, int b, int rank, size_t *begin)
{
	size_t start = (size_t)rank * p->shard_len[b];

	*begin = start;
	if (start >= p->block_len[b])
		return 0;
	return p->block_len[b] - start < p->shard_len[b] ? p->block_len[b] - start : p->shard_len[b];
}

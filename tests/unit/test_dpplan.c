/* SPDX-License-Identifier: MIT */
/* test_dpplan.c — data-parallel plans: DDP bucket assignment (reverse order, first bucket small,
 * layers never split, full coverage) and ZeRO shard ranges (padding, any size on any world). */
#include "bucket.h"
#include "cunit_main.h"
#include "shard.h"

static void test_buckets_reverse_order_first_small(void)
{
	/* Four layers of 100, 300, 200, 50 floats. */
	size_t off[5] = { 0, 100, 400, 600, 650 };
	tt_bucket b[4];
	int n = tt_bucket_plan(off, 4, 4, 100 * 4, 400 * 4, b, 4);

	CU_ASSERT_EQUAL_FATAL(n, 2);
	/* first bucket closes at >= 400 bytes: layer 3 (200 B) + layer 2 (800 B) */
	CU_ASSERT_EQUAL(b[0].hi_layer, 3);
	CU_ASSERT_EQUAL(b[0].lo_layer, 2);
	CU_ASSERT_EQUAL(b[0].off, 400);
	CU_ASSERT_EQUAL(b[0].len, 250);
	/* then >= 1600 bytes: layer 1 alone is 1200 B, so layers 1 and 0 (1600 B) */
	CU_ASSERT_EQUAL(b[1].hi_layer, 1);
	CU_ASSERT_EQUAL(b[1].lo_layer, 0);
	CU_ASSERT_EQUAL(b[1].off, 0);
	CU_ASSERT_EQUAL(b[1].len, 400);
	/* A bucket closes as soon as it reaches its cap, also exactly: layer 3 alone (200 B) is the
	 * first bucket's 200 B, layer 2 alone the next cap's 800 B; then 1 (1200 B) and 0. */
	n = tt_bucket_plan(off, 4, 4, 50 * 4, 200 * 4, b, 4);
	CU_ASSERT_EQUAL_FATAL(n, 4);
	for (int k = 0; k < 4; k++)
		CU_ASSERT(b[k].lo_layer == 3 - k && b[k].hi_layer == 3 - k);
}

static void test_buckets_cover_everything_once(void)
{
	size_t off[11];
	tt_bucket b[10];
	size_t covered = 0;
	int n;

	off[0] = 0;
	for (int l = 0; l < 10; l++)
		off[l + 1] = off[l] + 1001000; /* ten Linear(1000,1000), ~4 MB each */
	n = tt_bucket_plan(off, 10, 4, 1 << 20, 25u << 20, b, 10);
	CU_ASSERT_EQUAL_FATAL(n, 3); /* 1 layer (>= 1 MB), 7 layers (>= 25 MB), the remaining 2 */
	CU_ASSERT_EQUAL(b[0].lo_layer, 9);
	CU_ASSERT_EQUAL(b[1].hi_layer, 8);
	CU_ASSERT_EQUAL(b[1].lo_layer, 2);
	CU_ASSERT_EQUAL(b[2].lo_layer, 0);
	for (int i = 0; i < n; i++) {
		covered += b[i].len;
		CU_ASSERT_EQUAL(b[i].off, off[b[i].lo_layer]);
		if (i)
			CU_ASSERT_EQUAL(b[i].off + b[i].len, b[i - 1].off);
	}
	CU_ASSERT_EQUAL(covered, off[10]);
	CU_ASSERT_EQUAL(tt_bucket_plan(off, 10, 4, 1, 1, b, 5), -1); /* too little room */
	CU_ASSERT_EQUAL(tt_bucket_plan(off, 10, 4, 1, 1, b, 10), 10); /* one layer per bucket */
}

static void test_shards_pad_and_cover(void)
{
	size_t blocks[3] = { 10, 3, 1 };
	tt_shard_plan p;
	tt_err err;

	for (int world = 1; world <= 5; world++) {
		for (int b = 0; b < 3; b++) {
			size_t total = 0, next = 0;

			for (int r = 0; r < world; r++) {
				size_t begin, n;

				CU_ASSERT_EQUAL_FATAL(tt_shard_plan_init(&p, blocks, 3, world, r, &err), 0);
				n = tt_shard_valid(&p, b, r, &begin);
				CU_ASSERT_EQUAL(p.shard_len[b] * world >= blocks[b], 1);
				CU_ASSERT(p.shard_len[b] * world < blocks[b] + world);
				CU_ASSERT(n <= p.shard_len[b]);
				if (n) {
					CU_ASSERT_EQUAL(begin, next);
					next = begin + n;
				}
				total += n;
			}
			CU_ASSERT_EQUAL(total, blocks[b]);
		}
	}
	CU_ASSERT_EQUAL_FATAL(tt_shard_plan_init(&p, blocks, 3, 4, 3, &err), 0);
	CU_ASSERT_EQUAL(p.shard_len[0], 3);
	CU_ASSERT_EQUAL(p.shard_off[1], 3);
	CU_ASSERT_EQUAL(p.shard_off[2], 4);
	CU_ASSERT_EQUAL(tt_shard_total(&p), 5);
	{
		size_t begin;

		CU_ASSERT_EQUAL(tt_shard_valid(&p, 0, 3, &begin), 1); /* 9..9 */
		CU_ASSERT_EQUAL(begin, 9);
		CU_ASSERT_EQUAL(tt_shard_valid(&p, 2, 3, &begin), 0); /* pure padding */
	}
	CU_ASSERT_EQUAL(tt_shard_plan_init(&p, blocks, 3, 4, 4, &err), -1);
	CU_ASSERT_EQUAL(tt_shard_plan_init(&p, blocks, 0, 4, 0, &err), -1);
	/* As many blocks as the plan holds, and not one more (past block_len[]). */
	{
		size_t many[TT_SHARD_MAX_BLOCKS + 1];

		for (int b = 0; b <= TT_SHARD_MAX_BLOCKS; b++)
			many[b] = 3;
		CU_ASSERT_EQUAL(tt_shard_plan_init(&p, many, TT_SHARD_MAX_BLOCKS, 2, 1, &err), 0);
		CU_ASSERT_EQUAL(tt_shard_plan_init(&p, many, TT_SHARD_MAX_BLOCKS + 1, 2, 1, &err), -1);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("dp plans", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "buckets reverse order, first small", test_buckets_reverse_order_first_small);
	CU_add_test(s, "buckets cover everything once", test_buckets_cover_everything_once);
	CU_add_test(s, "shards pad and cover", test_shards_pad_and_cover);
	return 0;
}

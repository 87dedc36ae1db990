/* SPDX-License-Identifier: MIT */
/* test_rt_reduce.c — the pure pieces under every backend: bf16 rounding, the reduction kernel
 * (several outputs, aliasing, AVG/MAX), even splitting, and operation-header comparison, one to
 * one and through the MAX all-reduce of bounds (the nccl backend's). */
#include "cunit_main.h"
#include "comm_backend.h"
#include "rt_reduce.h"

#include <math.h>
#include <string.h>

static void test_bf16_round_to_nearest_even(void)
{
	/* 1 + 2^-8 lies halfway between bf16 1.0 and 1 + 2^-7: ties go to the even mantissa (1.0). */
	CU_ASSERT_EQUAL(rt_f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);
	/* 1 + 3*2^-8 is halfway between 1+2^-7 (odd) and 1+2^-6 (even): rounds up. */
	CU_ASSERT_EQUAL(rt_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
	CU_ASSERT_EQUAL(rt_f32_to_bf16(-2.0f), 0xc000);
	CU_ASSERT(isnan(rt_bf16_to_f32(rt_f32_to_bf16(NAN))));
	CU_ASSERT(isinf(rt_bf16_to_f32(rt_f32_to_bf16(INFINITY))));
	CU_ASSERT_EQUAL(rt_bf16_to_f32(0x3f80), 1.0f);
}

/* Two full kernel blocks (2048 elements) and a tail, so every block boundary is crossed. */
#define NR 4100

static void test_reduce_sum_avg_max_many_outputs(void)
{
	static float a[NR], b[NR], c[NR], o1[NR], o2[NR];
	const void *in[3] = { a, b, c };
	void *out[2] = { o1, o2 };
	int bad = 0;

	for (int i = 0; i < NR; i++) {
		a[i] = (float)i;
		b[i] = (float)(2 * i);
		c[i] = (float)(-i);
	}
	rt_reduce(out, 2, in, 3, NR, TRAINRT_FLOAT32, TRAINRT_SUM, 3);
	for (int i = 0; i < NR; i++)
		bad += o1[i] != (float)(2 * i);
	CU_ASSERT_EQUAL(bad, 0);
	CU_ASSERT_EQUAL(memcmp(o1, o2, sizeof(o1)), 0);
	rt_reduce(out, 1, in, 3, NR, TRAINRT_FLOAT32, TRAINRT_AVG, 3);
	CU_ASSERT_EQUAL(o1[600], 400.0f);
	CU_ASSERT_EQUAL(o1[NR - 1], (float)(2 * (NR - 1)) / 3.0f);
	rt_reduce(out, 1, in, 3, NR, TRAINRT_FLOAT32, TRAINRT_MAX, 3);
	CU_ASSERT_EQUAL(o1[5], 10.0f);
	CU_ASSERT_EQUAL(o1[NR - 1], (float)(2 * (NR - 1)));
	/* In place: the output is the first input. */
	out[0] = a;
	rt_reduce(out, 1, in, 3, NR, TRAINRT_FLOAT32, TRAINRT_SUM, 3);
	bad = 0;
	for (int i = 0; i < NR; i++)
		bad += a[i] != (float)(2 * i);
	CU_ASSERT_EQUAL(bad, 0);
}

/* The float32 sum is ((in0 + in1) + in2) in that order for every element: 1e8 + 1 rounds back
 * to 1e8, so this order gives 0 where any other gives 1. Bit-identical runs rely on it. */
static void test_reduce_keeps_input_order(void)
{
	static float a[NR], b[NR], c[NR], o[NR];
	const void *in[3] = { a, b, c };
	void *out[1] = { o };
	int bad = 0;

	for (int i = 0; i < NR; i++) {
		a[i] = 1e8f;
		b[i] = 1.0f;
		c[i] = -1e8f;
	}
	rt_reduce(out, 1, in, 3, NR, TRAINRT_FLOAT32, TRAINRT_SUM, 3);
	for (int i = 0; i < NR; i++)
		bad += o[i] != 0.0f;
	CU_ASSERT_EQUAL(bad, 0);
}

static void test_reduce_bf16_accumulates_in_f32(void)
{
	/* 256 + 1 + 1 in bf16 steps would stay 256 (1 is below half an ulp at 256); accumulating in
	 * float32 and rounding once gives 258. */
	uint16_t x = rt_f32_to_bf16(256.0f), y = rt_f32_to_bf16(1.0f), z = y, o;
	const void *in[3] = { &x, &y, &z };
	void *out[1] = { &o };

	rt_reduce(out, 1, in, 3, 1, TRAINRT_BF16, TRAINRT_SUM, 3);
	CU_ASSERT_EQUAL(rt_bf16_to_f32(o), 258.0f);
}

static void test_split_covers_everything_evenly(void)
{
	size_t lo, hi, next = 0;

	for (int i = 0; i < 5; i++) {
		rt_split(7, 5, i, &lo, &hi);
		CU_ASSERT_EQUAL(lo, next);
		CU_ASSERT(hi - lo == (i < 2 ? 2u : 1u));
		next = hi;
	}
	CU_ASSERT_EQUAL(next, 7);
	rt_split(2, 4, 3, &lo, &hi);
	CU_ASSERT_EQUAL(lo, hi);
}

static void test_header_check_names_the_difference(void)
{
	rt_op_hdr a = { .kind = RT_ALLREDUCE, .count = 7, .seq = 3 }, b = a;
	tt_err err;

	CU_ASSERT_EQUAL(rt_op_hdr_check(&a, &b, 2, &err), 0);
	b.count = 8;
	CU_ASSERT_EQUAL(rt_op_hdr_check(&a, &b, 2, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "rank 2 has count 8"));
	b = a;
	b.kind = RT_BROADCAST;
	CU_ASSERT_EQUAL(rt_op_hdr_check(&a, &b, 1, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "rank 1 issued broadcast"));
	b = a;
	b.root = 1;
	CU_ASSERT_EQUAL(rt_op_hdr_check(&a, &b, 1, &err), -1);
}

/* What every rank of world hdrs[0..n-1] concludes from the MAX all-reduce of their bounds:
 * the number of ranks whose rt_op_hdr_bounds_agree says all agree. */
static int ranks_agreeing(const rt_op_hdr *hdrs, int n)
{
	uint64_t reduced[RT_OP_HDR_BOUNDS], b[RT_OP_HDR_BOUNDS];
	int agree = 0;

	rt_op_hdr_bounds(&hdrs[0], reduced);
	for (int q = 1; q < n; q++) {
		rt_op_hdr_bounds(&hdrs[q], b);
		for (int i = 0; i < RT_OP_HDR_BOUNDS; i++)
			reduced[i] = b[i] > reduced[i] ? b[i] : reduced[i];
	}
	for (int q = 0; q < n; q++)
		agree += rt_op_hdr_bounds_agree(&hdrs[q], reduced);
	return agree;
}

/* Equal headers agree on every rank; one rank differing in any field, above or below the others
 * (the largest value alone would miss one below), and no rank agrees: all fail together. */
static void test_header_bounds_agree_only_when_all_equal(void)
{
	/* Every field above 0, so that one below the others is a real value, not a wrap-around. */
	const rt_op_hdr base = { .kind = RT_BROADCAST, .dtype = TRAINRT_BF16, .redop = TRAINRT_MAX, .root = 2,
				 .count = 1000, .seq = 41 };
	rt_op_hdr h[5];

	for (int q = 0; q < 5; q++)
		h[q] = base;
	CU_ASSERT_EQUAL(ranks_agreeing(h, 5), 5);
	CU_ASSERT_EQUAL(ranks_agreeing(h, 1), 1);
	for (int field = 0; field < 6; field++)
		for (int delta = -1; delta <= 1; delta += 2) {
			for (int q = 0; q < 5; q++)
				h[q] = base;
			switch (field) {
			case 0: h[3].kind += (uint32_t)delta; break;
			case 1: h[3].dtype += (uint32_t)delta; break;
			case 2: h[3].redop += (uint32_t)delta; break;
			case 3: h[3].root += delta; break;
			case 4: h[3].count += (uint64_t)(int64_t)delta; break;
			default: h[3].seq += (uint64_t)(int64_t)delta; break;
			}
			CU_ASSERT_EQUAL(ranks_agreeing(h, 5), 0);
		}
	/* A negative root differs from every other root too. */
	for (int q = 0; q < 5; q++)
		h[q] = base;
	h[4].root = -1;
	CU_ASSERT_EQUAL(ranks_agreeing(h, 5), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("rt_reduce", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "bf16 round to nearest even", test_bf16_round_to_nearest_even);
	CU_add_test(s, "reduce sum/avg/max, many outputs, in place", test_reduce_sum_avg_max_many_outputs);
	CU_add_test(s, "reduce keeps the input order of the sum", test_reduce_keeps_input_order);
	CU_add_test(s, "bf16 accumulates in f32", test_reduce_bf16_accumulates_in_f32);
	CU_add_test(s, "split covers evenly", test_split_covers_everything_evenly);
	CU_add_test(s, "header check names the difference", test_header_check_names_the_difference);
	CU_add_test(s, "header bounds agree only when all are equal", test_header_bounds_agree_only_when_all_equal);
	return 0;
}

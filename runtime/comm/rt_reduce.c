/* SPDX-License-Identifier: MIT */
/* rt_reduce.c — the reduction kernels (see rt_reduce.h). Blocks of 2048 elements (8 KiB of
 * float32) keep the accumulator in L1/L2 while all inputs stream through it once; 512 measured
 * 1.4x slower on the shm all-reduce (shorter runs per input, more calls; BENCHMARKS.md). */
#include "rt_reduce.h"

#include <cblas.h>
#include <string.h>

#define RT_BLOCK 2048
/* OpenBLAS keeps saxpy single-threaded up to 10000 elements (interface/axpy.c). */
#define RT_AXPY_PIECE 4096

size_t trainrt_dtype_size(trainrt_dtype dtype)
{
	return dtype == TRAINRT_BF16 ? 2 : 4;
}

static void load_block(float *acc, const void *src, size_t off, size_t len, trainrt_dtype dtype)
{
	if (dtype == TRAINRT_FLOAT32) {
		memcpy(acc, (const float *)src + off, len * sizeof(float));
		return;
	}
	rt_bf16_to_f32_array(acc, (const uint16_t *)src + off, len);
}

static void combine_block(float *acc, const void *src, size_t off, size_t len, trainrt_dtype dtype,
			  trainrt_redop op)
{
	if (dtype == TRAINRT_FLOAT32) {
		rt_f32_accumulate(acc, (const float *)src + off, len, op);
		return;
	}
	const uint16_t *s = (const uint16_t *)src + off;
	if (op == TRAINRT_MAX) {
		for (size_t i = 0; i < len; i++) {
			float v = rt_bf16_to_f32(s[i]);
			acc[i] = v > acc[i] ? v : acc[i];
		}
	} else {
		for (size_t i = 0; i < len; i++)
			acc[i] += rt_bf16_to_f32(s[i]);
	}
}

void rt_reduce(void *const *out, int nout, const void *const *in, int nin, size_t n,
	       trainrt_dtype dtype, trainrt_redop op, int avg_div)
{
	float acc[RT_BLOCK];
	uint16_t half[RT_BLOCK];

	for (size_t off = 0; off < n; off += RT_BLOCK) {
		size_t len = n - off < RT_BLOCK ? n - off : RT_BLOCK;

		load_block(acc, in[0], off, len, dtype);
		for (int k = 1; k < nin; k++)
			combine_block(acc, in[k], off, len, dtype, op);
		if (op == TRAINRT_AVG)
			rt_f32_scale(acc, len, (float)avg_div);
		if (dtype == TRAINRT_FLOAT32) {
			for (int j = 0; j < nout; j++)
				memcpy((float *)out[j] + off, acc, len * sizeof(float));
			continue;
		}
		rt_f32_to_bf16_array(half, acc, len);
		for (int j = 0; j < nout; j++)
			memcpy((uint16_t *)out[j] + off, half, len * sizeof(uint16_t));
	}
}

void rt_f32_accumulate(float *restrict acc, const float *restrict in, size_t n, trainrt_redop op)
{
	if (op == TRAINRT_MAX) {
		for (size_t i = 0; i < n; i++)
			acc[i] = in[i] > acc[i] ? in[i] : acc[i];
		return;
	}
	/* OpenBLAS' saxpy is the vectorised y += x for whatever SIMD this CPU has. Pieces of
	 * RT_AXPY_PIECE stay below its threading threshold: a rank must not start a thread pool
	 * that competes with its peers for the node's cores. */
	for (size_t off = 0; off < n; off += RT_AXPY_PIECE) {
		size_t len = n - off < RT_AXPY_PIECE ? n - off : RT_AXPY_PIECE;

		cblas_saxpy((blasint)len, 1.0f, in + off, 1, acc + off, 1);
	}
}

void rt_f32_scale(float *buf, size_t n, float div)
{
	for (size_t i = 0; i < n; i++)
		buf[i] /= div;
}

void rt_bf16_to_f32_array(float *out, const uint16_t *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = rt_bf16_to_f32(in[i]);
}

void rt_f32_to_bf16_array(uint16_t *out, const float *in, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = rt_f32_to_bf16(in[i]);
}

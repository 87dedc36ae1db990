/* SPDX-License-Identifier: MIT */
/* rt_reduce.h — element-wise reductions and bfloat16 conversion shared by every CPU backend.
 * bf16 is widened to float32, combined in float32 and rounded to nearest even once, so all
 * backends round the same way and a sum over n ranks is rounded once per reduction stage. */
#ifndef RT_REDUCE_H
#define RT_REDUCE_H

#include "trainrt.h"

#include <stddef.h>
#include <stdint.h>

static inline float rt_bf16_to_f32(uint16_t h)
{
	union { uint32_t u; float f; } v = { .u = (uint32_t)h << 16 };

	return v.f;
}

/* Round to nearest even; NaN stays a (quiet) NaN instead of rounding into infinity. */
static inline uint16_t rt_f32_to_bf16(float f)
{
	union { float f; uint32_t u; } v = { .f = f };

	if ((v.u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((v.u >> 16) | 0x40u);
	v.u += 0x7fffu + ((v.u >> 16) & 1u);
	return (uint16_t)(v.u >> 16);
}

/* out[j][i] = op over k < nin of in[k][i] for every j < nout, i < n, AVG dividing by avg_div.
 * Writing several outputs in the same pass lets one rank deliver its reduced slice to all its
 * peers while the block is still in L1. Outputs may alias inputs (each block is read completely
 * before it is written). */
void rt_reduce(void *const *out, int nout, const void *const *in, int nin, size_t n,
	       trainrt_dtype dtype, trainrt_redop op, int avg_div);

/* Float32 helpers for the ring algorithms, which carry partial sums in float32. */
void rt_f32_accumulate(float *acc, const float *in, size_t n, trainrt_redop op);
void rt_f32_scale(float *buf, size_t n, float div);
void rt_bf16_to_f32_array(float *out, const uint16_t *in, size_t n);
void rt_f32_to_bf16_array(uint16_t *out, const float *in, size_t n);

#endif

/* SPDX-License-Identifier: MIT */
/* rng.h — the trainer's counter-based random numbers (splitmix64).
 * Every random draw is a pure function of (seed, stream, index), so weight init, shuffling and
 * synthetic data are identical on every rank and after a resume without saving generator state. */
#ifndef TT_RNG_H
#define TT_RNG_H

#include <stdint.h>

static inline uint64_t tt_rng_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* The index-th 64-bit draw of stream `stream` under `seed`. */
static inline uint64_t tt_rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
	return tt_rng_mix(tt_rng_mix(seed ^ tt_rng_mix(stream)) + index);
}

/* Uniform in [0, 1) with 24 random bits, exact in float. */
static inline float tt_rng_unit(uint64_t seed, uint64_t stream, uint64_t index)
{
	return (float)(tt_rng_u64(seed, stream, index) >> 40) * (1.0f / 16777216.0f);
}

#endif

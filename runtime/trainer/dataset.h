/* SPDX-License-Identifier: MIT */
/* dataset.h — the training data in memory: features as float32 rows and int labels, loaded
 * from an MNIST-style IDX directory or generated synthetically, plus the seeded per-epoch shuffle
 * that tells every rank which samples make up each global batch. */
#ifndef TT_DATASET_H
#define TT_DATASET_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

typedef struct tt_dataset {
	size_t n;    /* samples */
	int dim;     /* features per sample */
	int classes; /* labels are 0..classes-1 */
	float *x;    /* n x dim */
	int32_t *y;  /* n */
} tt_dataset;

/* Loads DIR/{train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz]; pixels are scaled to [0, 1]. */
int tt_dataset_load_dir(tt_dataset *train, tt_dataset *test, const char *dir, tt_err *err);

/* Loads one images/labels pair (paths as given). */
int tt_dataset_load_idx(tt_dataset *d, const char *images, const char *labels, tt_err *err);

/* A learnable synthetic task: features uniform in [-1, 1), label = argmax of a fixed random linear
 * map of them; train and test are disjoint draws. A pure function of (seed, sizes). */
int tt_dataset_synthetic(tt_dataset *train, tt_dataset *test, int dim, int classes, size_t n_train, size_t n_test,
			 uint64_t seed, tt_err *err);

void tt_dataset_free(tt_dataset *d);

/* perm[0..n) = the order of epoch `epoch` under `seed` (Fisher-Yates on counter-based draws). */
void tt_dataset_shuffle(uint32_t *perm, size_t n, uint64_t seed, long epoch);

/* Copies samples idx[0..count) into x (count x dim) and y. */
void tt_dataset_gather(const tt_dataset *d, const uint32_t *idx, int count, float *x, int32_t *y);

#endif

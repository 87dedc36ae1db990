/* SPDX-License-Identifier: MIT */
/* dataset.c — IDX and synthetic data sets, shuffling and batch gathering (see dataset.h). */
#include "dataset.h"
#include "idx.h"
#include "rng.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int alloc_dataset(tt_dataset *d, size_t n, int dim, int classes, tt_err *err)
{
	d->n = n;
	d->dim = dim;
	d->classes = classes;
	d->x = malloc(sizeof(float) * n * (size_t)dim);
	d->y = malloc(sizeof(int32_t) * n);
	if (!d->x || !d->y) {
		tt_dataset_free(d);
		return tt_err_set(err, "cannot allocate a data set of %zu samples x %d features", n, dim);
	}
	return 0;
}

int tt_dataset_load_idx(tt_dataset *d, const char *images, const char *labels, tt_err *err)
{
	tt_idx img = { 0 }, lab = { 0 };
	size_t n, dim = 1;
	int classes = 0, rc = -1;

	memset(d, 0, sizeof(*d));
	if (tt_idx_read(images, &img, err) || tt_idx_read(labels, &lab, err))
		goto fail;
	if (img.n_dims < 2 || lab.n_dims != 1) {
		tt_err_set(err, "%s / %s: want an images tensor of 2+ dimensions and a 1-dimensional labels tensor, "
			   "got %d and %d", images, labels, img.n_dims, lab.n_dims);
		goto fail;
	}
	n = img.dims[0];
	if (lab.dims[0] != n) {
		tt_err_set(err, "%s has %zu images but %s has %u labels; use files from the same split", images, n,
			   labels, lab.dims[0]);
		goto fail;
	}
	for (int i = 1; i < img.n_dims; i++)
		dim *= img.dims[i];
	for (size_t i = 0; i < n; i++)
		if (lab.data[i] + 1 > classes)
			classes = lab.data[i] + 1;
	if (dim > INT_MAX || alloc_dataset(d, n, (int)dim, classes, err))
		goto fail;
	for (size_t i = 0; i < n * dim; i++)
		d->x[i] = img.data[i] * (1.0f / 255.0f);
	for (size_t i = 0; i < n; i++)
		d->y[i] = lab.data[i];
	rc = 0;
fail:
	tt_idx_free(&img);
	tt_idx_free(&lab);
	return rc;
}

/* DIR/name, or DIR/name.gz when only the compressed file is there. */
static void find_file(char *out, size_t len, const char *dir, const char *name)
{
	snprintf(out, len, "%s/%s", dir, name);
	if (access(out, R_OK) == 0)
		return;
	snprintf(out, len, "%s/%s.gz", dir, name);
}

int tt_dataset_load_dir(tt_dataset *train, tt_dataset *test, const char *dir, tt_err *err)
{
	char img[4096], lab[4096];

	memset(test, 0, sizeof(*test));
	find_file(img, sizeof(img), dir, "train-images-idx3-ubyte");
	find_file(lab, sizeof(lab), dir, "train-labels-idx1-ubyte");
	if (tt_dataset_load_idx(train, img, lab, err))
		return tt_err_wrap(err, "--data %s (training split)", dir);
	find_file(img, sizeof(img), dir, "t10k-images-idx3-ubyte");
	find_file(lab, sizeof(lab), dir, "t10k-labels-idx1-ubyte");
	if (tt_dataset_load_idx(test, img, lab, err)) {
		tt_dataset_free(train);
		return tt_err_wrap(err, "--data %s (test split)", dir);
	}
	if (test->dim != train->dim) {
		tt_err_set(err, "--data %s: test images have %d features, training images %d", dir, test->dim,
			   train->dim);
		tt_dataset_free(train);
		tt_dataset_free(test);
		return -1;
	}
	if (test->classes < train->classes)
		test->classes = train->classes;
	train->classes = test->classes;
	return 0;
}

static void synth_fill(tt_dataset *d, const float *proj, uint64_t seed, uint64_t stream)
{
	for (size_t i = 0; i < d->n; i++) {
		float *x = d->x + i * (size_t)d->dim;
		int best = 0;
		float best_score = 0.0f;

		for (int k = 0; k < d->dim; k++)
			x[k] = 2.0f * tt_rng_unit(seed, stream, i * (uint64_t)d->dim + (uint64_t)k) - 1.0f;
		for (int c = 0; c < d->classes; c++) {
			const float *w = proj + (size_t)c * d->dim;
			float s = 0.0f;

			for (int k = 0; k < d->dim; k++)
				s += w[k] * x[k];
			if (c == 0 || s > best_score) {
				best = c;
				best_score = s;
			}
		}
		d->y[i] = best;
	}
}

int tt_dataset_synthetic(tt_dataset *train, tt_dataset *test, int dim, int classes, size_t n_train, size_t n_test,
			 uint64_t seed, tt_err *err)
{
	float *proj;

	memset(train, 0, sizeof(*train));
	memset(test, 0, sizeof(*test));
	if (dim < 1 || classes < 2)
		return tt_err_set(err, "--data synthetic: the model needs at least 1 input and 2 classes, got %d and %d",
				  dim, classes);
	proj = malloc(sizeof(float) * (size_t)dim * classes);
	if (!proj)
		return tt_err_set(err, "--data synthetic: cannot allocate the %d x %d label map", classes, dim);
	for (size_t i = 0; i < (size_t)dim * classes; i++)
		proj[i] = 2.0f * tt_rng_unit(seed, 0x5eed0, i) - 1.0f;
	if (alloc_dataset(train, n_train, dim, classes, err) || alloc_dataset(test, n_test, dim, classes, err)) {
		tt_dataset_free(train);
		free(proj);
		return -1;
	}
	synth_fill(train, proj, seed, 0x5eed1);
	synth_fill(test, proj, seed, 0x5eed2);
	free(proj);
	return 0;
}

void tt_dataset_free(tt_dataset *d)
{
	free(d->x);
	free(d->y);
	d->x = NULL;
	d->y = NULL;
	d->n = 0;
}

void tt_dataset_shuffle(uint32_t *perm, size_t n, uint64_t seed, long epoch)
{
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n; i > 1; i--) {
		size_t j = tt_rng_u64(seed, 0xe90c0000ULL + (uint64_t)epoch, i) % i;
		uint32_t t = perm[i - 1];

		perm[i - 1] = perm[j];
		perm[j] = t;
	}
}

void tt_dataset_gather(const tt_dataset *d, const uint32_t *idx, int count, float *x, int32_t *y)
{
	for (int i = 0; i < count; i++) {
		memcpy(x + (size_t)i * d->dim, d->x + (size_t)idx[i] * d->dim, sizeof(float) * d->dim);
		y[i] = d->y[idx[i]];
	}
}

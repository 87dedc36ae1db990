/* SPDX-License-Identifier: MIT */
/* mlp_dump.c — writes what train-mlp's float32 step computes on a small fixed problem, for
 * tests/trainer/torch_oracle.py to recompute in PyTorch: the initial weights, the batches, each
 * step's loss and hits, the first step's gradient, the weights and AdamW moments after the last
 * step, and an evaluation with them. Everything goes through tt_dp (dp.h), the step train-mlp runs.
 * usage: mlp_dump DIR   (writes DIR/config.txt, *.f32 and *.i32 little-endian arrays, results.txt) */
#include "dataset.h"
#include "dp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The problem: 3 layers with padding-free odd sizes, a warmup then cosine schedule, a weight decay
 * large enough that its effect on the weights is far above float32 rounding. */
#define LAYERS "20,16,12,5"
enum { IN = 20, CLASSES = 5, BATCH = 32, STEPS = 6, WARMUP = 2, TEST_N = 24, SEED = 3, DATA_SEED = 9 };
static const float LR = 1e-2f, WEIGHT_DECAY = 0.1f;

static int write_array(const char *dir, const char *name, const void *data, size_t bytes)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(data, 1, bytes, f) != bytes || fclose(f) != 0) {
		fprintf(stderr, "mlp_dump: cannot write %s\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *dir = argc == 2 ? argv[1] : NULL;
	tt_mlp model;
	tt_dataset train, test;
	tt_dp dp;
	tt_err err = { { 0 } };
	tt_dp_cfg cfg = { .zero = 0, .accum = 1, .micro_batch = BATCH, .bucket_bytes = 256,
			  .first_bucket_bytes = 64, .seed = SEED, .opt = tt_adamw_defaults(LR) };
	float *p, *m, *v, *grad0;
	char path[4096];
	size_t n;
	FILE *res;
	int rc = 1;

	if (!dir) {
		fprintf(stderr, "usage: mlp_dump DIR\n");
		return 2;
	}
	cfg.opt.weight_decay = WEIGHT_DECAY;
	cfg.opt.warmup_steps = WARMUP;
	cfg.opt.total_steps = STEPS;
	if (tt_mlp_parse(&model, LAYERS, &err) ||
	    tt_dataset_synthetic(&train, &test, IN, CLASSES, (size_t)BATCH * STEPS, TEST_N, DATA_SEED, &err) ||
	    tt_dp_init(&dp, &model, NULL, &cfg, &err)) {
		fprintf(stderr, "mlp_dump: %s\n", err.msg);
		return 1;
	}
	n = model.n_params;
	p = malloc(sizeof(float) * 4 * n);
	if (!p) {
		fprintf(stderr, "mlp_dump: out of memory\n");
		goto out;
	}
	m = p + n, v = p + 2 * n, grad0 = p + 3 * n;
	snprintf(path, sizeof(path), "%s/results.txt", dir);
	res = fopen(path, "w");
	if (!res) {
		fprintf(stderr, "mlp_dump: cannot write %s\n", path);
		goto out;
	}
	fprintf(res, "layers %s\nbatch %d\nsteps %d\nlr %.9g\nweight_decay %.9g\nwarmup %d\nbetas %.9g %.9g\neps %.9g\n",
		LAYERS, BATCH, STEPS, LR, WEIGHT_DECAY, WARMUP, cfg.opt.beta1, cfg.opt.beta2, cfg.opt.eps);
	/* World 1: one slice holding the whole unpadded parameter vector, in tt_mlp's layout. */
	if (tt_dp_export(&dp, p, m, v, &err) || write_array(dir, "params0.f32", p, sizeof(float) * n) ||
	    write_array(dir, "x.f32", train.x, sizeof(float) * train.n * IN) ||
	    write_array(dir, "y.i32", train.y, sizeof(int32_t) * train.n) ||
	    write_array(dir, "test_x.f32", test.x, sizeof(float) * test.n * IN) ||
	    write_array(dir, "test_y.i32", test.y, sizeof(int32_t) * test.n))
		goto fail;
	for (long s = 0; s < STEPS; s++) {
		double loss = 0.0;
		long hits = 0;

		if (tt_dp_train_step(&dp, s, train.x + (size_t)s * BATCH * IN, train.y + (size_t)s * BATCH, BATCH,
				     &loss, &hits, &err))
			goto fail;
		fprintf(res, "step %ld loss %.9g hits %ld\n", s, loss / BATCH, hits);
		if (s == 0) /* the reduced mean gradient stays in dp.grads until the next step */
			for (int l = 0; l < model.n_layers; l++)
				memcpy(grad0 + model.param_off[l], dp.grads + dp.poff[l],
				       sizeof(float) * tt_mlp_layer_params(&model, l));
	}
	{
		double loss = 0.0;
		long hits = 0;

		if (tt_dp_eval(&dp, test.x, test.y, (int)test.n, &loss, &hits, &err))
			goto fail;
		fprintf(res, "eval loss %.9g hits %ld of %zu\n", loss / (double)test.n, hits, test.n);
	}
	if (tt_dp_export(&dp, p, m, v, &err) || write_array(dir, "grad0.f32", grad0, sizeof(float) * n) ||
	    write_array(dir, "params.f32", p, sizeof(float) * n) || write_array(dir, "m.f32", m, sizeof(float) * n) ||
	    write_array(dir, "v.f32", v, sizeof(float) * n))
		goto fail;
	rc = fclose(res) == 0 ? 0 : 1;
	res = NULL;
	goto out;
fail:
	if (err.msg[0])
		fprintf(stderr, "mlp_dump: %s\n", err.msg);
	fclose(res);
out:
	free(p);
	tt_dp_free(&dp);
	tt_dataset_free(&train);
	tt_dataset_free(&test);
	return rc;
}

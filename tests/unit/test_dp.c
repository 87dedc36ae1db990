/* SPDX-License-Identifier: MIT */
/* test_dp.c — the data-parallel step in one process (no communicator): every ZeRO stage computes
 * bit-identical weights, gradient accumulation matches one big micro-batch to rounding, export /
 * import carries the state across stages, and training lowers the loss. Multi-rank behaviour is
 * covered by tests/trainer/equivalence.sh. */
#include "cunit_main.h"
#include "dataset.h"
#include "dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { BATCH = 8, STEPS = 6 };

static tt_mlp model;
static tt_dataset train, test;

static int setup(void)
{
	return tt_mlp_parse(&model, "6,9,5,4", NULL) ||
	       tt_dataset_synthetic(&train, &test, 6, 4, BATCH * STEPS * 4, 8, 3, NULL);
}

static int teardown(void)
{
	tt_dataset_free(&train);
	tt_dataset_free(&test);
	return 0;
}

static tt_dp_cfg cfg_of(int zero, int accum)
{
	tt_dp_cfg c = { .zero = zero, .accum = accum, .micro_batch = BATCH / accum, .bucket_bytes = 64,
			.first_bucket_bytes = 16, .seed = 9, .opt = tt_adamw_defaults(0.01f) };

	c.opt.total_steps = STEPS;
	return c;
}

/* Runs `steps` steps from sample 0 on; returns the mean loss of the last step. */
static double run_steps(tt_dp *dp, int steps)
{
	double loss = 0.0;
	long correct = 0;
	tt_err err;

	for (int s = 0; s < steps; s++) {
		loss = 0.0;
		CU_ASSERT_EQUAL_FATAL(tt_dp_train_step(dp, s, train.x + (size_t)s * BATCH * train.dim,
						       train.y + (size_t)s * BATCH, BATCH, &loss, &correct, &err),
				      0);
	}
	return loss / BATCH;
}

static void test_stages_bit_identical(void)
{
	uint32_t crc[4];
	tt_err err;

	for (int z = 0; z < 4; z++) {
		tt_dp dp;
		tt_dp_cfg c = cfg_of(z, 1);

		CU_ASSERT_EQUAL_FATAL(tt_dp_init(&dp, &model, NULL, &c, &err), 0);
		run_steps(&dp, STEPS);
		CU_ASSERT_EQUAL(tt_dp_params_crc32(&dp, &crc[z], &err), 0);
		tt_dp_free(&dp);
	}
	CU_ASSERT_EQUAL(crc[1], crc[0]);
	CU_ASSERT_EQUAL(crc[2], crc[0]);
	CU_ASSERT_EQUAL(crc[3], crc[0]);
}

static void test_accumulation_matches_one_batch(void)
{
	size_t s;
	float *p1, *m1, *v1, *p2, *m2, *v2;
	tt_dp a, b;
	tt_dp_cfg ca = cfg_of(0, 1), cb = cfg_of(2, 4);
	tt_err err;
	double la, lb;

	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&a, &model, NULL, &ca, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&b, &model, NULL, &cb, &err), 0);
	la = run_steps(&a, STEPS);
	lb = run_steps(&b, STEPS);
	CU_ASSERT_DOUBLE_EQUAL(la, lb, 1e-5);
	s = tt_shard_total(&a.plan);
	p1 = calloc(6 * s, sizeof(float));
	CU_ASSERT_PTR_NOT_NULL_FATAL(p1);
	m1 = p1 + s;
	v1 = p1 + 2 * s;
	p2 = p1 + 3 * s;
	m2 = p1 + 4 * s;
	v2 = p1 + 5 * s;
	CU_ASSERT_EQUAL(tt_dp_export(&a, p1, m1, v1, &err), 0);
	CU_ASSERT_EQUAL(tt_dp_export(&b, p2, m2, v2, &err), 0);
	for (size_t i = 0; i < s; i++)
		CU_ASSERT(fabsf(p1[i] - p2[i]) <= 1e-5f);
	free(p1);
	tt_dp_free(&a);
	tt_dp_free(&b);
}

/* The step's gradient is that of the mean loss over the global batch, whatever the micro-batches:
 * after one step from zero moments AdamW's first moment is (1 - beta1) g, compared with central
 * differences of the summed evaluation loss / BATCH at the same parameters. A constant factor
 * (a micro-batch mean, a missing 1/accum) changes no loss after AdamW but shows here. */
static void test_step_gradient_is_the_mean_loss_gradient(void)
{
	const float h = 5e-3f;
	tt_dp a, ev;
	tt_dp_cfg ca = cfg_of(0, 2), ce = cfg_of(0, 1);
	double dot = 0.0, ref2 = 0.0, got2 = 0.0, scale, cosine;
	float *p0, *m0, *v0, *probe, *m1, *v1;
	size_t s;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&a, &model, NULL, &ca, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&ev, &model, NULL, &ce, &err), 0);
	s = tt_shard_total(&a.plan);
	p0 = calloc(6 * s, sizeof(float));
	CU_ASSERT_PTR_NOT_NULL_FATAL(p0);
	m0 = p0 + s;
	v0 = p0 + 2 * s;
	probe = p0 + 3 * s;
	m1 = p0 + 4 * s;
	v1 = p0 + 5 * s;
	CU_ASSERT_EQUAL_FATAL(tt_dp_export(&a, p0, m0, v0, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_train_step(&a, 0, train.x, train.y, BATCH, &(double){ 0 }, &(long){ 0 }, &err),
			      0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_export(&a, probe, m1, v1, &err), 0);
	for (size_t i = 0; i < s; i++) {
		double loss[2];

		for (int side = 0; side < 2; side++) {
			long hits = 0;

			memcpy(probe, p0, sizeof(float) * s);
			probe[i] += side ? -h : h;
			loss[side] = 0.0;
			CU_ASSERT_EQUAL_FATAL(tt_dp_import(&ev, probe, m0, v0, &err), 0);
			CU_ASSERT_EQUAL_FATAL(tt_dp_eval(&ev, train.x, train.y, BATCH, &loss[side], &hits, &err), 0);
		}
		{
			double ref = (loss[0] - loss[1]) / (2.0 * h) / BATCH;
			double got = m1[i] / (1.0 - ca.opt.beta1);

			dot += got * ref;
			ref2 += ref * ref;
			got2 += got * got;
		}
	}
	CU_ASSERT_FATAL(ref2 > 0.0);
	/* Least squares: got = scale x ref; the cosine says the directions agree too. */
	scale = dot / ref2;
	cosine = dot / sqrt(ref2 * got2);
	if (fabs(scale - 1.0) > 0.02 || cosine < 0.995)
		fprintf(stderr, "\nstep gradient = %.5f x the mean-loss gradient, cosine %.6f\n", scale, cosine);
	CU_ASSERT(fabs(scale - 1.0) <= 0.02);
	CU_ASSERT(cosine >= 0.995);
	free(p0);
	tt_dp_free(&a);
	tt_dp_free(&ev);
}

static void test_export_import_across_stages(void)
{
	tt_dp a, b;
	tt_dp_cfg ca = cfg_of(0, 1), cb = cfg_of(3, 1);
	uint32_t crc_a, crc_b, crc_c;
	float *p, *m, *v;
	size_t s;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&a, &model, NULL, &ca, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&b, &model, NULL, &cb, &err), 0);
	run_steps(&a, 3);
	s = tt_shard_total(&a.plan);
	p = malloc(3 * s * sizeof(float));
	CU_ASSERT_PTR_NOT_NULL_FATAL(p);
	m = p + s;
	v = p + 2 * s;
	CU_ASSERT_EQUAL(tt_dp_export(&a, p, m, v, &err), 0);
	CU_ASSERT_EQUAL(tt_dp_import(&b, p, m, v, &err), 0);
	tt_dp_params_crc32(&a, &crc_a, &err);
	tt_dp_params_crc32(&b, &crc_b, &err);
	CU_ASSERT_EQUAL(crc_a, crc_b);
	/* both continue identically: the moments came along too */
	for (int s2 = 3; s2 < STEPS; s2++) {
		double l = 0.0;
		long c = 0;

		tt_dp_train_step(&a, s2, train.x + (size_t)s2 * BATCH * train.dim, train.y + (size_t)s2 * BATCH, BATCH,
				 &l, &c, &err);
		tt_dp_train_step(&b, s2, train.x + (size_t)s2 * BATCH * train.dim, train.y + (size_t)s2 * BATCH, BATCH,
				 &l, &c, &err);
	}
	tt_dp_params_crc32(&a, &crc_a, &err);
	tt_dp_params_crc32(&b, &crc_c, &err);
	CU_ASSERT_EQUAL(crc_a, crc_c);
	free(p);
	tt_dp_free(&a);
	tt_dp_free(&b);
}

static void test_training_lowers_loss_and_eval_counts(void)
{
	tt_dp dp;
	tt_dp_cfg c = cfg_of(1, 1);
	double first = 0.0, last = 0.0, eval_loss = 0.0;
	long correct = 0, hits = 0;
	tt_err err;

	c.opt.total_steps = 0;
	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&dp, &model, NULL, &c, &err), 0);
	for (int epoch = 0; epoch < 40; epoch++)
		for (int s = 0; s < STEPS * 4; s++) {
			double l = 0.0;

			CU_ASSERT_EQUAL_FATAL(tt_dp_train_step(&dp, epoch * STEPS * 4 + s,
							       train.x + (size_t)s * BATCH * train.dim,
							       train.y + (size_t)s * BATCH, BATCH, &l, &correct, &err),
					      0);
			if (epoch == 0 && s == 0)
				first = l / BATCH;
			last = l / BATCH;
		}
	CU_ASSERT(last < 0.5 * first);
	CU_ASSERT_EQUAL(tt_dp_eval(&dp, test.x, test.y, 8, &eval_loss, &hits, &err), 0);
	CU_ASSERT(eval_loss > 0.0);
	CU_ASSERT(hits >= 0 && hits <= 8);
	CU_ASSERT_EQUAL(tt_dp_eval(&dp, NULL, NULL, 0, &eval_loss, &hits, &err), 0);
	CU_ASSERT_EQUAL(tt_dp_eval(&dp, test.x, test.y, BATCH + 1, &eval_loss, &hits, &err), -1);
	tt_dp_free(&dp);
}

/* Activation floats a step holds: kept in slots, plus the recompute scratch. */
static size_t activation_floats(const tt_dp *dp)
{
	size_t n = 0;

	for (int l = 0; l <= dp->part.n_layers; l++)
		if (dp->slot_act[l])
			n += (size_t)dp->act_rows *
			     (size_t)(l < dp->part.n_layers ? dp->part.layer[l].in : dp->part.out_width);
	for (int i = 0; i < dp->n_scratch; i++)
		n += (size_t)dp->act_rows * 9; /* the widest layer */
	return n;
}

/* --recompute: bit-identical weights under every ZeRO stage, and the step keeps fewer activations
 * (ten layers: the inputs of segments of four, and the output). */
static void test_recompute_identical_and_keeps_less(void)
{
	tt_mlp deep;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&deep, "6,9x8,4", &err), 0);
	for (int z = 0; z < 4; z += 3) {
		tt_dp a, b;
		tt_dp_cfg ca = cfg_of(z, 2), cb = cfg_of(z, 2);
		uint32_t crc_a, crc_b;

		cb.recompute = 1;
		CU_ASSERT_EQUAL_FATAL(tt_dp_init(&a, &deep, NULL, &ca, &err), 0);
		CU_ASSERT_EQUAL_FATAL(tt_dp_init(&b, &deep, NULL, &cb, &err), 0);
		run_steps(&a, STEPS);
		run_steps(&b, STEPS);
		CU_ASSERT_EQUAL(tt_dp_params_crc32(&a, &crc_a, &err), 0);
		CU_ASSERT_EQUAL(tt_dp_params_crc32(&b, &crc_b, &err), 0);
		CU_ASSERT_EQUAL(crc_a, crc_b);
		CU_ASSERT_EQUAL(b.seg, 4);
		CU_ASSERT_PTR_NULL(b.slot_act[1]);
		CU_ASSERT_PTR_NOT_NULL(b.slot_act[4]);
		CU_ASSERT_PTR_NOT_NULL(b.slot_act[10]);
		CU_ASSERT(activation_floats(&b) < activation_floats(&a));
		tt_dp_free(&a);
		tt_dp_free(&b);
	}
}

static void test_bad_config_is_refused(void)
{
	tt_dp dp;
	tt_dp_cfg c = cfg_of(4, 1);
	tt_err err;

	CU_ASSERT_EQUAL(tt_dp_init(&dp, &model, NULL, &c, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--zero 4"));
	c = cfg_of(0, 1);
	c.micro_batch = 0;
	CU_ASSERT_EQUAL(tt_dp_init(&dp, &model, NULL, &c, &err), -1);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("dp (one process)", setup, teardown);

	if (!s)
		return -1;
	CU_add_test(s, "ZeRO stages bit-identical", test_stages_bit_identical);
	CU_add_test(s, "accumulation matches one batch", test_accumulation_matches_one_batch);
	CU_add_test(s, "the step's gradient is the mean loss's", test_step_gradient_is_the_mean_loss_gradient);
	CU_add_test(s, "export/import across stages", test_export_import_across_stages);
	CU_add_test(s, "training lowers loss, eval counts", test_training_lowers_loss_and_eval_counts);
	CU_add_test(s, "bad config refused", test_bad_config_is_refused);
	CU_add_test(s, "recompute identical, keeps less", test_recompute_identical_and_keeps_less);
	return 0;
}

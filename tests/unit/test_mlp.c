/* SPDX-License-Identifier: MIT */
/* test_mlp.c — MLP shape parsing, and every layer's gradient against central finite differences
 * (hidden ReLU layers and the softmax cross-entropy output), plus the loss itself. */
#include "cunit_main.h"
#include "mlp.h"
#include "rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 784->256->10: forward 2(784*256 + 256*10), weight grads the same, input grad only for layer 1. */
static void test_train_flops(void)
{
	tt_mlp m;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "784,256,10", &err), 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_mlp_train_flops(&m), 4.0 * 784 * 256 + 6.0 * 256 * 10, 0.5);
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "1000x10", &err), 0);
	CU_ASSERT_DOUBLE_EQUAL(tt_mlp_train_flops(&m), 4e6 + 9 * 6e6, 0.5);
}

static void test_parse_list_and_repeat(void)
{
	tt_mlp m;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "784,256,10", &err), 0);
	CU_ASSERT_EQUAL(m.n_layers, 2);
	CU_ASSERT_EQUAL(m.n_params, 784 * 256 + 256 + 256 * 10 + 10);
	CU_ASSERT_EQUAL(m.param_off[1], 784 * 256 + 256);
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "1000x10", &err), 0);
	CU_ASSERT_EQUAL(m.n_layers, 10);
	CU_ASSERT_EQUAL(m.dims[0], 1000);
	CU_ASSERT_EQUAL(m.dims[10], 1000);
	CU_ASSERT_EQUAL(m.n_params, 10 * (1000 * 1000 + 1000));
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "784,1000x2,10", &err), 0);
	CU_ASSERT_EQUAL(m.n_layers, 4);
	CU_ASSERT_EQUAL(m.dims[1], 1000);
	CU_ASSERT_EQUAL(m.dims[3], 1000);
	CU_ASSERT_EQUAL(m.dims[4], 10);
	CU_ASSERT_EQUAL(tt_mlp_max_width(&m), 1000);
}

static void test_parse_rejects_bad_specs(void)
{
	const char *bad[] = { "", "784", "784,,10", "784,0,10", "784;10", "10x0", "a,b", "10x65", "784,10," };
	tt_mlp m;
	tt_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err.msg[0] = '\0';
		CU_ASSERT_EQUAL(tt_mlp_parse(&m, bad[i], &err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--layers"));
	}
}

static void test_init_is_deterministic_and_bounded(void)
{
	tt_mlp m;
	float a[4 * 3 + 3], b[4 * 3 + 3];

	tt_mlp_parse(&m, "4,3", NULL);
	tt_mlp_init_layer(&m, 0, 7, a);
	tt_mlp_init_layer(&m, 0, 7, b);
	CU_ASSERT_EQUAL(memcmp(a, b, sizeof(a)), 0);
	for (size_t i = 0; i < sizeof(a) / sizeof(a[0]); i++)
		CU_ASSERT(fabsf(a[i]) <= 0.5f);
	tt_mlp_init_layer(&m, 0, 8, b);
	CU_ASSERT_NOT_EQUAL(memcmp(a, b, sizeof(a)), 0);
}

static void test_xent_value_and_gradient(void)
{
	float logits[2 * 3] = { 1.0f, 2.0f, 3.0f, 0.0f, 0.0f, 0.0f };
	int32_t labels[2] = { 2, 0 };
	float d[6];
	double loss = 0.0;
	long correct = 0;
	tt_err err;
	double lse = log(exp(1.0) + exp(2.0) + exp(3.0));

	CU_ASSERT_EQUAL(tt_softmax_xent(logits, labels, 2, 3, 0.5f, d, &loss, &correct, &err), 0);
	CU_ASSERT_DOUBLE_EQUAL(loss, (lse - 3.0) + log(3.0), 1e-5);
	CU_ASSERT_EQUAL(correct, 2); /* row 2 is a tie: the first maximum (0) counts */
	CU_ASSERT_DOUBLE_EQUAL(d[2], 0.5 * (exp(3.0 - lse) - 1.0), 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(d[3], 0.5 * (1.0 / 3.0 - 1.0), 1e-6);
	labels[1] = 3;
	CU_ASSERT_EQUAL(tt_softmax_xent(logits, labels, 2, 3, 0.5f, d, &loss, &correct, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "label 3"));
}

/* A 5-6-4-3 network on 4 samples: mean loss as a pure function of the flat parameters. */
enum { GC_N = 4 };

static double full_loss(const tt_mlp *m, const float *params, const float *x, const int32_t *y)
{
	float act[TT_MLP_MAX_LAYERS + 1][GC_N * 8], dz[GC_N * 8];
	double loss = 0.0;
	long correct = 0;

	memcpy(act[0], x, sizeof(float) * GC_N * m->dims[0]);
	for (int l = 0; l < m->n_layers; l++)
		tt_mlp_forward_layer(m, l, params + m->param_off[l], act[l], act[l + 1], GC_N);
	tt_softmax_xent(act[m->n_layers], y, GC_N, m->dims[m->n_layers], 1.0f / GC_N, dz, &loss, &correct, NULL);
	return loss / GC_N;
}

static void test_gradients_match_finite_differences(void)
{
	tt_mlp m;
	float params[256], grad[256], x[GC_N * 5];
	float act[TT_MLP_MAX_LAYERS + 1][GC_N * 8], dy[GC_N * 8], dx[GC_N * 8];
	int32_t y[GC_N] = { 0, 2, 1, 2 };
	double loss = 0.0, num2 = 0.0, diff2 = 0.0;
	long correct = 0;

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "5,6,4,3", NULL), 0);
	CU_ASSERT_FATAL(m.n_params <= 256);
	for (int l = 0; l < m.n_layers; l++)
		tt_mlp_init_layer(&m, l, 42, params + m.param_off[l]);
	/* Non-zero biases so every bias gradient is exercised away from a ReLU kink. */
	for (size_t i = 0; i < m.n_params; i++)
		params[i] += 0.1f * (tt_rng_unit(3, 3, i) - 0.5f);
	for (int i = 0; i < GC_N * 5; i++)
		x[i] = 2.0f * tt_rng_unit(5, 5, (uint64_t)i) - 1.0f;

	memcpy(act[0], x, sizeof(x));
	for (int l = 0; l < m.n_layers; l++)
		tt_mlp_forward_layer(&m, l, params + m.param_off[l], act[l], act[l + 1], GC_N);
	tt_softmax_xent(act[m.n_layers], y, GC_N, 3, 1.0f / GC_N, dy, &loss, &correct, NULL);
	for (size_t i = 0; i < m.n_params; i++)
		grad[i] = 123.0f; /* beta = 0 must overwrite */
	for (int l = m.n_layers - 1; l >= 0; l--) {
		tt_mlp_backward_layer(&m, l, params + m.param_off[l], act[l], act[l + 1], dy, grad + m.param_off[l],
				      0.0f, l ? dx : NULL, GC_N);
		memcpy(dy, dx, sizeof(float) * GC_N * m.dims[l]);
	}
	for (size_t i = 0; i < m.n_params; i++) {
		const float h = 1e-2f;
		float keep = params[i];
		double up, down, num;

		params[i] = keep + h;
		up = full_loss(&m, params, x, y);
		params[i] = keep - h;
		down = full_loss(&m, params, x, y);
		params[i] = keep;
		num = (up - down) / (2.0 * h);
		CU_ASSERT(fabs(num - grad[i]) <= 2e-3 + 2e-2 * fabs(num));
		num2 += num * num;
		diff2 += (num - grad[i]) * (num - grad[i]);
	}
	CU_ASSERT(num2 > 1e-4);
	CU_ASSERT(sqrt(diff2 / num2) < 1e-2);
}

static void test_backward_accumulates_with_beta_one(void)
{
	tt_mlp m;
	float p[3 * 2 + 2], x[2 * 3] = { 1, 2, 3, -1, 0, 2 }, y[2 * 2], dy[2 * 2], g1[8], g2[8];

	tt_mlp_parse(&m, "3,2", NULL);
	tt_mlp_init_layer(&m, 0, 1, p);
	tt_mlp_forward_layer(&m, 0, p, x, y, 2);
	for (int i = 0; i < 4; i++)
		dy[i] = 0.25f * (float)(i + 1);
	for (int i = 0; i < 8; i++)
		g1[i] = NAN; /* beta 0 must overwrite, never scale, what was there */
	tt_mlp_backward_layer(&m, 0, p, x, y, dy, g1, 0.0f, NULL, 2);
	memcpy(g2, g1, sizeof(g1));
	for (int i = 0; i < 4; i++)
		dy[i] = 0.25f * (float)(i + 1);
	tt_mlp_backward_layer(&m, 0, p, x, y, dy, g2, 1.0f, NULL, 2);
	for (int i = 0; i < 8; i++)
		CU_ASSERT_DOUBLE_EQUAL(g2[i], 2.0f * g1[i], 1e-6);
	/* Last layer: no ReLU, so y = xW^T + b exactly. */
	CU_ASSERT_DOUBLE_EQUAL(y[0], p[0] * 1 + p[1] * 2 + p[2] * 3 + p[6], 1e-6);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("mlp", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "parse list and DxN", test_parse_list_and_repeat);
	CU_add_test(s, "train flops per sample", test_train_flops);
	CU_add_test(s, "parse rejects bad specs", test_parse_rejects_bad_specs);
	CU_add_test(s, "init deterministic and bounded", test_init_is_deterministic_and_bounded);
	CU_add_test(s, "softmax xent value and gradient", test_xent_value_and_gradient);
	CU_add_test(s, "gradients match finite differences", test_gradients_match_finite_differences);
	CU_add_test(s, "backward accumulates with beta 1", test_backward_accumulates_with_beta_one);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* mlp_check.c — train-mlp's GPU math (gpu_mlp.h, dp_gpu.c) against the float32 CPU reference
 * (mlp.c, adamw.c, dp_cpu.c) on one GPU: every Linear layer's forward and backward, softmax
 * cross-entropy, AdamW, then whole training steps of tt_dp on GPU and CPU side by side, and a
 * checkpoint export/import round trip. Run by tests/gpu/run.sh.
 *
 * Tolerances: the CPU reference gets the same bf16-rounded operands, so what remains is the
 * rounding of bf16 outputs (2^-9 relative) and float32 summation order. Outputs are compared by
 * max |gpu - cpu| / max |cpu| over the tensor: 2e-2 for bf16 results, 1e-4 for float32 ones. */
#include "dataset.h"
#include "dp.h"
#include "gpu_mlp.h"
#include "mlp.h"
#include "rng.h"
#include "rt_reduce.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                    \
	do {                                                                                \
		if (!(cond)) {                                                              \
			fprintf(stderr, "mlp_check: %s:%d: ", __FILE__, __LINE__);          \
			fprintf(stderr, __VA_ARGS__);                                       \
			fputc('\n', stderr);                                                \
			failures++;                                                         \
		}                                                                           \
	} while (0)

#define MUST(call, err)                                                                     \
	do {                                                                                \
		if ((call) != 0) {                                                          \
			fprintf(stderr, "mlp_check: %s:%d: %s\n", __FILE__, __LINE__, (err)->msg); \
			exit(1);                                                            \
		}                                                                           \
	} while (0)

static float bf16_round(float f)
{
	return rt_bf16_to_f32(rt_f32_to_bf16(f));
}

/* n random values in [-scale, scale], rounded to bf16 so CPU and GPU start from the same numbers. */
static float *random_bf16_values(size_t n, float scale, uint64_t stream)
{
	float *v = malloc(sizeof(float) * (n ? n : 1));

	for (size_t i = 0; i < n; i++)
		v[i] = bf16_round(scale * (2.0f * tt_rng_unit(7, stream, i) - 1.0f));
	return v;
}

static uint16_t *to_bf16_host(const float *v, size_t n)
{
	uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));

	for (size_t i = 0; i < n; i++)
		h[i] = rt_f32_to_bf16(v[i]);
	return h;
}

static double rel_error(const float *gpu, const float *cpu, size_t n)
{
	double diff = 0.0, scale = 1e-30;

	for (size_t i = 0; i < n; i++) {
		if (fabs((double)gpu[i] - cpu[i]) > diff || isnan(gpu[i]))
			diff = isnan(gpu[i]) ? INFINITY : fabs((double)gpu[i] - cpu[i]);
		if (fabs(cpu[i]) > scale)
			scale = fabs(cpu[i]);
	}
	return diff / scale;
}

static void *dev_put(tt_gpu *g, const void *host, size_t bytes, tt_err *err)
{
	void *d = tt_gpu_alloc(g, bytes, err);

	if (!d)
		MUST(-1, err);
	if (host && bytes)
		MUST(tt_gpu_put(g, d, host, bytes, err), err);
	return d;
}

static void get_bf16(tt_gpu *g, float *out, const uint16_t *dev, size_t n, tt_err *err)
{
	uint16_t *h = malloc(sizeof(uint16_t) * (n ? n : 1));

	MUST(tt_gpu_get(g, h, dev, sizeof(uint16_t) * n, err), err);
	for (size_t i = 0; i < n; i++)
		out[i] = rt_bf16_to_f32(h[i]);
	free(h);
}

/* Layer l of `spec` on n rows: forward, then backward with a random upstream gradient. */
static void check_layer(tt_gpu *g, const char *spec, int l, int n)
{
	tt_err err;
	tt_mlp m;
	MUST(tt_mlp_parse(&m, spec, &err), &err);
	if (l < 0 || l >= m.n_layers || n < 0) {
		fprintf(stderr, "mlp_check: layer %d of %s on %d rows: no such layer, or a negative row count\n", l, spec, n);
		exit(2);
	}
	int in = m.dims[l], out = m.dims[l + 1], hidden = l < m.n_layers - 1;
	size_t nw = (size_t)in * out, ny = (size_t)n * out, nx = (size_t)n * in;
	float *params = random_bf16_values(nw + out, 0.3f, 1 + (uint64_t)l), *x = random_bf16_values(nx, 1.0f, 2);
	float *dy = random_bf16_values(ny, 0.05f, 3), *y = calloc(ny, sizeof(float));
	float *grad = calloc(nw + out, sizeof(float)), *dx = calloc(nx, sizeof(float));
	float *got = malloc(sizeof(float) * (nw + out + nx + ny));
	uint16_t *w_h = to_bf16_host(params, nw), *x_h = to_bf16_host(x, nx), *dy_h = to_bf16_host(dy, ny);
	uint16_t *w_d = dev_put(g, w_h, nw * 2, &err), *x_d = dev_put(g, x_h, nx * 2, &err);
	uint16_t *dy_d = dev_put(g, dy_h, ny * 2, &err), *y_d = dev_put(g, NULL, ny * 2, &err);
	uint16_t *dx_d = dev_put(g, NULL, nx * 2, &err);
	float *b_d = dev_put(g, params + nw, sizeof(float) * out, &err), *z_d = dev_put(g, NULL, ny * 4, &err);
	float *gw_d = dev_put(g, NULL, nw * 4, &err), *gb_d = dev_put(g, NULL, (size_t)out * 4, &err);
	double e;

	tt_mlp_forward_layer(&m, l, params, x, y, n);
	MUST(tt_gpu_linear_forward(g, in, out, w_d, b_d, x_d, n, z_d, hidden ? y_d : NULL, &err), &err);
	if (hidden)
		get_bf16(g, got, y_d, ny, &err);
	else
		MUST(tt_gpu_get(g, got, z_d, ny * 4, &err), &err);
	e = rel_error(got, y, ny);
	CHECK(e <= (hidden ? 2e-2 : 1e-4), "%s layer %d forward: relative error %.2e", spec, l, e);

	/* The CPU masks dy with its own float32 y; the GPU with its bf16 y, which has the same signs.
	 * Stale gradients in the GPU's buffers must be overwritten (beta 0), also with no rows. */
	for (size_t i = 0; i < nw + out; i++)
		got[i] = 7.0f;
	MUST(tt_gpu_put(g, gw_d, got, nw * 4, &err), &err);
	MUST(tt_gpu_put(g, gb_d, got + nw, (size_t)out * 4, &err), &err);
	tt_mlp_backward_layer(&m, l, params, x, y, dy, grad, 0.0f, dx, n);
	MUST(tt_gpu_linear_backward(g, in, out, w_d, x_d, hidden ? y_d : NULL, dy_d, gw_d, gb_d, 0.0f, dx_d, n, &err),
	     &err);
	MUST(tt_gpu_get(g, got, gw_d, nw * 4, &err), &err);
	e = rel_error(got, grad, nw);
	CHECK(e <= 1e-4, "%s layer %d weight gradient: relative error %.2e", spec, l, e);
	MUST(tt_gpu_get(g, got, gb_d, (size_t)out * 4, &err), &err);
	e = rel_error(got, grad + nw, (size_t)out);
	CHECK(e <= 1e-4, "%s layer %d bias gradient: relative error %.2e", spec, l, e);
	get_bf16(g, got, dx_d, nx, &err);
	e = rel_error(got, dx, nx);
	CHECK(e <= 2e-2, "%s layer %d input gradient: relative error %.2e", spec, l, e);

	void *devs[] = { w_d, x_d, dy_d, y_d, dx_d, b_d, z_d, gw_d, gb_d };
	for (size_t i = 0; i < sizeof(devs) / sizeof(devs[0]); i++)
		tt_gpu_free(g, devs[i]);
	free(params), free(x), free(dy), free(y), free(grad), free(dx), free(got), free(w_h), free(x_h), free(dy_h);
}

static void check_xent(tt_gpu *g, int n, int classes)
{
	tt_err err;
	float *logits = random_bf16_values((size_t)n * classes, 4.0f, 5), *dz = calloc((size_t)n * classes, 4);
	float *got = malloc(sizeof(float) * (size_t)n * classes), *row_loss = malloc(sizeof(float) * (size_t)n);
	int32_t *labels = malloc(sizeof(int32_t) * (size_t)n), *row_hit = malloc(sizeof(int32_t) * (size_t)n);
	double loss = 0.0, gpu_loss = 0.0;
	long correct = 0, gpu_correct = 0;

	for (int i = 0; i < n; i++)
		labels[i] = (int32_t)(tt_rng_unit(7, 6, (uint64_t)i) * classes) % classes;
	logits[0] = logits[1]; /* a tie: the first maximal class must win on both */
	MUST(tt_softmax_xent(logits, labels, n, classes, 0.25f, dz, &loss, &correct, &err), &err);

	float *logits_d = dev_put(g, logits, sizeof(float) * (size_t)n * classes, &err);
	int32_t *labels_d = dev_put(g, labels, sizeof(int32_t) * (size_t)n, &err);
	uint16_t *dz_d = dev_put(g, NULL, (size_t)n * classes * 2, &err);
	float *loss_d = dev_put(g, NULL, sizeof(float) * (size_t)n, &err);
	int32_t *hit_d = dev_put(g, NULL, sizeof(int32_t) * (size_t)n, &err);

	MUST(tt_gpu_softmax_xent(g, logits_d, labels_d, n, classes, 0.25f, dz_d, loss_d, hit_d, &err), &err);
	MUST(tt_gpu_get(g, row_loss, loss_d, sizeof(float) * (size_t)n, &err), &err);
	MUST(tt_gpu_get(g, row_hit, hit_d, sizeof(int32_t) * (size_t)n, &err), &err);
	for (int i = 0; i < n; i++) {
		gpu_loss += row_loss[i];
		gpu_correct += row_hit[i];
	}
	get_bf16(g, got, dz_d, (size_t)n * classes, &err);
	CHECK(fabs(gpu_loss - loss) <= 1e-4 * fabs(loss), "xent %dx%d: loss %.6f vs %.6f", n, classes, gpu_loss, loss);
	CHECK(gpu_correct == correct, "xent %dx%d: %ld hits vs %ld", n, classes, gpu_correct, correct);
	CHECK(rel_error(got, dz, (size_t)n * classes) <= 2e-2, "xent %dx%d: gradient differs", n, classes);
	tt_gpu_free(g, logits_d), tt_gpu_free(g, labels_d), tt_gpu_free(g, dz_d), tt_gpu_free(g, loss_d);
	tt_gpu_free(g, hit_d);
	free(logits), free(dz), free(got), free(row_loss), free(labels), free(row_hit);
}

static void check_adamw(tt_gpu *g)
{
	const size_t n = 100003;
	tt_err err;
	tt_adamw_cfg cfg = tt_adamw_defaults(1e-2f);
	tt_adamw_step s = tt_adamw_step_factors(&cfg, 4, 5e-3f);
	float *p = random_bf16_values(n, 1.0f, 8), *gr = random_bf16_values(n, 0.1f, 9);
	float *m = random_bf16_values(n, 0.01f, 10), *v = random_bf16_values(n, 0.01f, 11), *got = malloc(4 * n);
	float *p_d, *g_d, *m_d, *v_d;

	for (size_t i = 0; i < n; i++)
		v[i] = fabsf(v[i]);
	p_d = dev_put(g, p, 4 * n, &err), g_d = dev_put(g, gr, 4 * n, &err);
	m_d = dev_put(g, m, 4 * n, &err), v_d = dev_put(g, v, 4 * n, &err);
	tt_adamw_update(&cfg, 4, 5e-3f, p, gr, m, v, n);
	MUST(tt_gpu_adamw(g, &s, p_d, g_d, m_d, v_d, n, &err), &err);
	MUST(tt_gpu_get(g, got, p_d, 4 * n, &err), &err);
	CHECK(rel_error(got, p, n) <= 1e-5, "AdamW parameters differ: %.2e", rel_error(got, p, n));
	MUST(tt_gpu_get(g, got, v_d, 4 * n, &err), &err);
	CHECK(rel_error(got, v, n) <= 1e-5, "AdamW second moments differ");
	tt_gpu_free(g, p_d), tt_gpu_free(g, g_d), tt_gpu_free(g, m_d), tt_gpu_free(g, v_d);
	free(p), free(gr), free(m), free(v), free(got);
}

/* 60 steps of the same run on CPU (float32) and GPU (bf16): the losses must track each other and
 * both must learn; then the GPU run's checkpoint slices restore into a fresh GPU run exactly. */
static void check_training(void)
{
	const int steps = 60, batch = 64;
	tt_err err;
	tt_mlp m;
	tt_dataset train, test;
	tt_dp cpu, gpu, back;
	tt_dp_cfg cfg = { .zero = 0, .accum = 2, .micro_batch = batch / 2, .bucket_bytes = 1 << 14,
			  .first_bucket_bytes = 1 << 12, .seed = 3, .opt = tt_adamw_defaults(2e-3f) };
	double first_cpu = 0, last_cpu = 0, last_gpu = 0, worst = 0;
	uint32_t crc_gpu, crc_back;

	MUST(tt_mlp_parse(&m, "64,128,128,10", &err), &err);
	MUST(tt_dataset_synthetic(&train, &test, 64, 10, (size_t)steps * batch, 256, 11, &err), &err);
	MUST(tt_dp_init(&cpu, &m, NULL, &cfg, &err), &err);
	cfg.gpu = 1;
	MUST(tt_dp_init(&gpu, &m, NULL, &cfg, &err), &err);
	MUST(tt_dp_init(&back, &m, NULL, &cfg, &err), &err);
	for (int s = 0; s < steps; s++) {
		const float *x = train.x + (size_t)s * batch * 64;
		const int32_t *y = train.y + (size_t)s * batch;
		double lc = 0, lg = 0;
		long cc = 0, cg = 0;

		MUST(tt_dp_train_step(&cpu, s, x, y, batch, &lc, &cc, &err), &err);
		MUST(tt_dp_train_step(&gpu, s, x, y, batch, &lg, &cg, &err), &err);
		lc /= batch, lg /= batch;
		if (fabs(lg - lc) / lc > worst)
			worst = fabs(lg - lc) / lc;
		if (s < 10)
			first_cpu += lc / 10;
		if (s >= steps - 10)
			last_cpu += lc / 10, last_gpu += lg / 10;
	}
	printf("mlp_check: training 64-128-128-10: CPU loss %.4f -> %.4f, GPU -> %.4f, worst step gap %.1f%%\n",
	       first_cpu, last_cpu, last_gpu, 100 * worst);
	CHECK(last_cpu < 0.7 * first_cpu, "the CPU reference did not learn (%.4f -> %.4f)", first_cpu, last_cpu);
	CHECK(fabs(last_gpu - last_cpu) <= 0.1 * last_cpu, "GPU loss %.4f strays from CPU %.4f", last_gpu, last_cpu);
	CHECK(worst <= 0.15, "a GPU step's loss is %.1f%% off the CPU's", 100 * worst);

	size_t s = tt_shard_total(&gpu.plan);
	float *p = malloc(sizeof(float) * 3 * s);
	MUST(tt_dp_export(&gpu, p, p + s, p + 2 * s, &err), &err);
	MUST(tt_dp_import(&back, p, p + s, p + 2 * s, &err), &err);
	MUST(tt_dp_params_crc32(&gpu, &crc_gpu, &err), &err);
	MUST(tt_dp_params_crc32(&back, &crc_back, &err), &err);
	CHECK(crc_gpu == crc_back, "checkpoint round trip changed the weights (%08x vs %08x)", crc_gpu, crc_back);
	free(p);
	tt_dp_free(&cpu), tt_dp_free(&gpu), tt_dp_free(&back);
	tt_dataset_free(&train), tt_dataset_free(&test);
}

int main(int argc, char **argv)
{
	tt_err err;
	tt_gpu *g;

	if (argc != 1 && (argc != 5 || strcmp(argv[1], "--layer") != 0)) {
		fprintf(stderr, "usage: mlp_check                        every check\n"
				"       mlp_check --layer SPEC L ROWS    layer L of the MLP SPEC (e.g. 1023,3001,17) on ROWS rows\n");
		return 2;
	}
	g = tt_gpu_open(0, &err);
	if (!g) {
		fprintf(stderr, "mlp_check: %s\n", err.msg);
		return 1;
	}
	printf("mlp_check: on %s\n", tt_gpu_describe(g));
	if (argc == 5) {
		/* One shape, e.g. a large odd one under compute-sanitizer (tests/gpu/run.sh). */
		check_layer(g, argv[2], atoi(argv[3]), atoi(argv[4]));
		tt_gpu_close(g);
		printf("mlp_check: layer %s of %s on %s rows: %s\n", argv[3], argv[2], argv[4], failures ? "FAILED" : "passed");
		return failures ? 1 : 0;
	}
	check_layer(g, "37,19,5", 0, 7);
	check_layer(g, "37,19,5", 1, 7);
	check_layer(g, "784,256,10", 0, 64);
	check_layer(g, "784,256,10", 1, 64);
	check_layer(g, "784,256,10", 1, 0);
	check_xent(g, 33, 10);
	check_xent(g, 5, 1000);
	check_adamw(g);
	tt_gpu_close(g);
	check_training();
	if (failures) {
		fprintf(stderr, "mlp_check: %d check(s) FAILED\n", failures);
		return 1;
	}
	printf("mlp_check: all GPU math checks passed\n");
	return 0;
}

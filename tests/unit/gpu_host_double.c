/* SPDX-License-Identifier: MIT */
/* gpu_host_double.c — a test double of gpu_mlp.h that runs on the host: "device" memory is heap
 * memory and each operation does what gpu_mlp.h specifies, with bf16 rounding where the GPU
 * stores bf16. Linked instead of gpu_mlp.cu into make check's copy of tests/gpu/mlp_check, it lets
 * a machine without a GPU exercise everything above the kernels.
 *
 * What that run checks, and what it does not: the double's arithmetic IS the CPU reference's
 * (cblas_sgemm on the same bf16-rounded operands, mlp.c's loss, adamw.c's loop), so mlp_check's
 * per-operation comparisons (layer forward/backward, cross-entropy, AdamW) pass by construction
 * here and say nothing about the CUDA kernels, which only tests/gpu/run.sh checks on a GPU.
 * What it does check: dp_gpu.c above the kernels (parameter layout, bf16 weight copies, bucket
 * all-reduce, gradient accumulation, loss and hit statistics, checkpoint export/import), and that
 * the mixed-precision step (bf16 activations and weights, float32 master weights and moments)
 * tracks the float32 step over 60 training steps within mlp_check's tolerances. The float32 CPU
 * reference itself is checked against PyTorch by tests/trainer/torch_oracle.sh. */
#include "gpu_mlp.h"
#include "mlp.h"
#include "rt_reduce.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>

struct tt_gpu {
	int unused;
};

/* Device resources (the device, memory, events) taken and not yet given back, and how many more
 * tt_gpu_alloc calls succeed (-1: all; 0: each fails, as when device memory has run out): tests
 * check that a GPU step which cannot be created gives back everything it took. */
static long live, allocs_left = -1;

long tt_gpu_double_live(void);
long tt_gpu_double_live(void)
{
	return live;
}

void tt_gpu_double_fail_alloc_after(long n);
void tt_gpu_double_fail_alloc_after(long n)
{
	allocs_left = n;
}

int tt_gpu_count(void)
{
	return 1;
}

int tt_gpu_device_for(int local_rank)
{
	(void)local_rank;
	return 0;
}

tt_gpu *tt_gpu_open(int local_rank, tt_err *err)
{
	tt_gpu *g = calloc(1, sizeof(*g));

	(void)local_rank;
	if (!g)
		tt_err_set(err, "out of memory");
	else
		live++;
	return g;
}

void tt_gpu_close(tt_gpu *g)
{
	live -= g != NULL;
	free(g);
}

const char *tt_gpu_describe(const tt_gpu *g)
{
	(void)g;
	return "host test double (CPU arithmetic: per-operation checks pass by construction; "
	       "dp_gpu.c and the mixed-precision trajectory are what this run tests)";
}

void *tt_gpu_alloc(tt_gpu *g, size_t bytes, tt_err *err)
{
	void *p = allocs_left != 0 ? calloc(1, bytes ? bytes : 64) : NULL;

	(void)g;
	if (allocs_left > 0)
		allocs_left--;
	if (!p)
		tt_err_set(err, "cannot allocate %zu bytes", bytes);
	else
		live++;
	return p;
}

void tt_gpu_free(tt_gpu *g, void *dev)
{
	(void)g;
	live -= dev != NULL;
	free(dev);
}

int tt_gpu_put(tt_gpu *g, void *dev, const void *host, size_t bytes, tt_err *err)
{
	(void)g, (void)err;
	memcpy(dev, host, bytes);
	return 0;
}

int tt_gpu_get(tt_gpu *g, void *host, const void *dev, size_t bytes, tt_err *err)
{
	return tt_gpu_put(g, host, dev, bytes, err);
}

int tt_gpu_copy(tt_gpu *g, void *dev_dst, const void *dev_src, size_t bytes, tt_err *err)
{
	return tt_gpu_put(g, dev_dst, dev_src, bytes, err);
}

int tt_gpu_sync(tt_gpu *g, tt_err *err)
{
	(void)g, (void)err;
	return 0;
}

int tt_gpu_host_addressable(void)
{
	return 1;
}

/* Work is done when a call returns, so an event only remembers that it was recorded; the count of
 * ready calls lets tests check that every ordered collective asked for its event exactly once. */
struct tt_gpu_event {
	int recorded;
};

static long ready_calls;

long tt_gpu_double_ready_calls(void);
long tt_gpu_double_ready_calls(void)
{
	return ready_calls;
}

tt_gpu_event *tt_gpu_event_create(tt_gpu *g, tt_err *err)
{
	tt_gpu_event *e = calloc(1, sizeof(*e));

	(void)g;
	if (!e)
		tt_err_set(err, "out of memory");
	else
		live++;
	return e;
}

void tt_gpu_event_destroy(tt_gpu_event *e)
{
	live -= e != NULL;
	free(e);
}

int tt_gpu_event_record(tt_gpu *g, tt_gpu_event *e, tt_err *err)
{
	(void)g, (void)err;
	e->recorded = 1;
	return 0;
}

int tt_gpu_event_ready(void *event, void *stream)
{
	tt_gpu_event *e = event;

	ready_calls++;
	/* Host backends pass no stream; an event never recorded would be a step-ordering bug. */
	return stream || !e->recorded ? -1 : 0;
}

int tt_gpu_to_bf16(tt_gpu *g, uint16_t *dst, const float *src, size_t n, tt_err *err)
{
	(void)g, (void)err;
	for (size_t i = 0; i < n; i++)
		dst[i] = rt_f32_to_bf16(src[i]);
	return 0;
}

static float *widen(const uint16_t *h, size_t n)
{
	float *f = malloc(sizeof(float) * (n ? n : 1));

	for (size_t i = 0; f && i < n; i++)
		f[i] = rt_bf16_to_f32(h[i]);
	return f;
}

int tt_gpu_linear_forward(tt_gpu *g, int in, int out, const uint16_t *w, const float *b, const uint16_t *x, int n,
			  float *z, uint16_t *y, tt_err *err)
{
	float *wf = widen(w, (size_t)in * out), *xf = widen(x, (size_t)n * in);

	(void)g;
	if (!wf || !xf) {
		free(wf), free(xf);
		return tt_err_set(err, "out of memory");
	}
	if (n > 0)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, xf, in, wf, in, 0.0f, z, out);
	for (size_t i = 0; i < (size_t)n * out; i++) {
		float v = z[i] + b[i % (size_t)out];

		if (y)
			y[i] = rt_f32_to_bf16(v > 0.0f ? v : 0.0f);
		else
			z[i] = v;
	}
	free(wf), free(xf);
	return 0;
}

int tt_gpu_linear_backward(tt_gpu *g, int in, int out, const uint16_t *w, const uint16_t *x, const uint16_t *y,
			   uint16_t *dy, float *gw, float *gb, float beta, uint16_t *dx, int n, tt_err *err)
{
	size_t ny = (size_t)n * out;
	float *wf = widen(w, (size_t)in * out), *xf = widen(x, (size_t)n * in), *dyf, *dxf = NULL;

	(void)g;
	if (y)
		for (size_t i = 0; i < ny; i++)
			if (!(rt_bf16_to_f32(y[i]) > 0.0f))
				dy[i] = 0;
	dyf = widen(dy, ny);
	if (dx)
		dxf = malloc(sizeof(float) * ((size_t)n * in + 1));
	if (!wf || !xf || !dyf || (dx && !dxf)) {
		free(wf), free(xf), free(dyf), free(dxf);
		return tt_err_set(err, "out of memory");
	}
	if (n > 0)
		cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dyf, out, xf, in, beta, gw, in);
	else
		for (size_t i = 0; i < (size_t)in * out; i++)
			gw[i] = beta == 0.0f ? 0.0f : beta * gw[i];
	for (int c = 0; c < out; c++) {
		float s = 0.0f;

		for (int r = 0; r < n; r++)
			s += dyf[(size_t)r * out + c];
		gb[c] = beta == 0.0f ? s : beta * gb[c] + s;
	}
	if (dx && n > 0) {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dyf, out, wf, in, 0.0f, dxf, in);
		for (size_t i = 0; i < (size_t)n * in; i++)
			dx[i] = rt_f32_to_bf16(dxf[i]);
	}
	free(wf), free(xf), free(dyf), free(dxf);
	return 0;
}

int tt_gpu_softmax_xent(tt_gpu *g, const float *logits, const int32_t *labels, int n, int classes, float scale,
			uint16_t *dlogits, float *row_loss, int32_t *row_hit, tt_err *err)
{
	float *dz = malloc(sizeof(float) * (size_t)classes);

	(void)g;
	if (!dz)
		return tt_err_set(err, "out of memory");
	/* mlp.c's loss one row at a time, for the per-row results the GPU kernel gives. */
	for (int i = 0; i < n; i++) {
		double loss = 0.0;
		long hit = 0;

		if (tt_softmax_xent(logits + (size_t)i * classes, labels + i, 1, classes, scale, dz, &loss, &hit, err)) {
			free(dz);
			return -1;
		}
		for (int c = 0; c < classes; c++)
			dlogits[(size_t)i * classes + c] = rt_f32_to_bf16(dz[c]);
		row_loss[i] = (float)loss;
		row_hit[i] = (int32_t)hit;
	}
	free(dz);
	return 0;
}

int tt_gpu_adamw(tt_gpu *g, const tt_adamw_step *s, float *p, const float *grad, float *m, float *v, size_t n,
		 tt_err *err)
{
	(void)g, (void)err;
	tt_adamw_apply(s, p, grad, m, v, n);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* mlp.c — MLP shape parsing, initialisation and per-layer forward/backward on OpenBLAS sgemm.
 * Activations are row-major [batch x width]; all matrix products go through cblas_sgemm. */
#include "mlp.h"
#include "rng.h"

#include <cblas.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define TT_MLP_MAX_WIDTH 1000000

static int push_dim(tt_mlp *m, int *n_dims, long d, const char *spec, tt_err *err)
{
	if (*n_dims > TT_MLP_MAX_LAYERS)
		return tt_err_set(err, "--layers '%s': more than %d layers; use a smaller model", spec,
				  TT_MLP_MAX_LAYERS);
	m->dims[(*n_dims)++] = (int)d;
	return 0;
}

static int parse_count(const char *s, char **end, long max, const char *what, const char *spec, long *out,
		       tt_err *err)
{
	errno = 0;
	*out = strtol(s, end, 10);
	if (*end == s || errno || *out < 1 || *out > max)
		return tt_err_set(err, "--layers '%s': %s must be an integer in 1..%ld (e.g. 784,256,10 or 1000x10)",
				  spec, what, max);
	return 0;
}

int tt_mlp_parse(tt_mlp *m, const char *spec, tt_err *err)
{
	const char *p = spec;
	int n_dims = 0;

	memset(m, 0, sizeof(*m));
	if (!spec || !*spec)
		return tt_err_set(err, "--layers is empty: give widths such as 784,256,10 or 1000x10");
	for (;;) {
		char *end;
		long d, reps = 0;

		if (parse_count(p, &end, TT_MLP_MAX_WIDTH, "each width", spec, &d, err))
			return -1;
		if (*end == 'x') {
			if (parse_count(end + 1, &end, TT_MLP_MAX_LAYERS, "the layer count after 'x'", spec, &reps,
					err))
				return -1;
		}
		for (long i = 0; i <= reps; i++)
			if (push_dim(m, &n_dims, d, spec, err))
				return -1;
		if (*end == '\0')
			break;
		if (*end != ',')
			return tt_err_set(err, "--layers '%s': unexpected '%c'; separate widths with commas", spec,
					  *end);
		p = end + 1;
	}
	if (n_dims < 2)
		return tt_err_set(err, "--layers '%s': need at least an input and an output width", spec);
	m->n_layers = n_dims - 1;
	for (int l = 0; l < m->n_layers; l++)
		m->param_off[l + 1] = m->param_off[l] + (size_t)m->dims[l + 1] * m->dims[l] + m->dims[l + 1];
	m->n_params = m->param_off[m->n_layers];
	return 0;
}

int tt_mlp_max_width(const tt_mlp *m)
{
	int w = 0;

	for (int l = 0; l <= m->n_layers; l++)
		if (m->dims[l] > w)
			w = m->dims[l];
	return w;
}

double tt_mlp_train_flops(const tt_mlp *m)
{
	double flops = 0.0;

	for (int l = 0; l < m->n_layers; l++)
		flops += (l ? 6.0 : 4.0) * m->dims[l] * m->dims[l + 1];
	return flops;
}

void tt_mlp_init_layer(const tt_mlp *m, int l, uint64_t seed, float *params_l)
{
	size_t n_w = (size_t)m->dims[l + 1] * m->dims[l];
	float bound = 1.0f / sqrtf((float)m->dims[l]);

	for (size_t i = 0; i < n_w; i++)
		params_l[i] = (2.0f * tt_rng_unit(seed, 1000 + (uint64_t)l, i) - 1.0f) * bound;
	for (size_t i = 0; i < (size_t)m->dims[l + 1]; i++)
		params_l[n_w + i] = (2.0f * tt_rng_unit(seed, 2000 + (uint64_t)l, i) - 1.0f) * bound;
}

void tt_linear_forward(int in, int out, const float *params, int with_bias, int relu, const float *x, float *y,
		       int n)
{
	const float *w = params, *b = params + (size_t)in * out;

	if (with_bias)
		for (int i = 0; i < n; i++)
			memcpy(y + (size_t)i * out, b, sizeof(float) * out);
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, out, in, 1.0f, x, in, w, in, with_bias ? 1.0f : 0.0f, y,
		    out);
	if (with_bias)
		tt_bias_relu(y, NULL, out, relu, n);
}

void tt_bias_relu(float *y, const float *b, int out, int relu, int n)
{
	if (b)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < out; j++)
				y[(size_t)i * out + j] += b[j];
	if (relu)
		for (size_t i = 0; i < (size_t)n * out; i++)
			if (y[i] < 0.0f)
				y[i] = 0.0f;
}

void tt_linear_backward(int in, int out, const float *params, int relu, const float *x, const float *y, float *dy,
			float *grad, float beta, float *dx, int n)
{
	float *gw = grad, *gb = grad + (size_t)in * out;

	if (relu)
		for (size_t i = 0; i < (size_t)n * out; i++)
			if (y[i] <= 0.0f)
				dy[i] = 0.0f;
	cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, out, in, n, 1.0f, dy, out, x, in, beta, gw, in);
	for (int j = 0; j < out; j++) {
		float s = 0.0f;

		for (int i = 0; i < n; i++)
			s += dy[(size_t)i * out + j];
		gb[j] = beta == 0.0f ? s : beta * gb[j] + s; /* like sgemm, beta 0 never reads old values */
	}
	if (dx)
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, in, out, 1.0f, dy, out, params, in, 0.0f, dx, in);
}

void tt_mlp_forward_layer(const tt_mlp *m, int l, const float *params_l, const float *x, float *y, int n)
{
	tt_linear_forward(m->dims[l], m->dims[l + 1], params_l, 1, l < m->n_layers - 1, x, y, n);
}

void tt_mlp_backward_layer(const tt_mlp *m, int l, const float *params_l, const float *x, const float *y,
			   float *dy, float *grad_l, float beta, float *dx, int n)
{
	tt_linear_backward(m->dims[l], m->dims[l + 1], params_l, l < m->n_layers - 1, x, y, dy, grad_l, beta, dx, n);
}

int tt_softmax_xent(const float *logits, const int32_t *labels, int n, int classes, float scale, float *dlogits,
		    double *loss_sum, long *correct, tt_err *err)
{
	for (int i = 0; i < n; i++) {
		const float *z = logits + (size_t)i * classes;
		float *dz = dlogits + (size_t)i * classes;
		int y = labels[i], best = 0;
		float zmax = z[0];
		double sum = 0.0;

		if (y < 0 || y >= classes)
			return tt_err_set(err, "label %d of sample %d is outside the model's %d classes; check --layers "
					  "against the data set", y, i, classes);
		for (int c = 1; c < classes; c++)
			if (z[c] > zmax) {
				zmax = z[c];
				best = c;
			}
		for (int c = 0; c < classes; c++) {
			dz[c] = expf(z[c] - zmax);
			sum += dz[c];
		}
		*loss_sum += log(sum) - (double)(z[y] - zmax);
		*correct += best == y;
		for (int c = 0; c < classes; c++)
			dz[c] = (float)(dz[c] / sum) * scale;
		dz[y] -= scale;
	}
	return 0;
}

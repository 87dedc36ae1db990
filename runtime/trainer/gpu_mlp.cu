/* SPDX-License-Identifier: MIT */
/* gpu_mlp.cu — the device side of gpu_mlp.h: a stream and cuBLAS handle per context, the three
 * GEMMs of a Linear layer through cublasGemmEx (bf16 operands, float32 compute), and the
 * elementwise and per-row kernels. Row-major host matrices are column-major transposes to
 * cuBLAS, so y = x W^T is computed as y^T = W^T' x^T with W read transposed (see each call). */
/* The C headers use C99's restrict, which C++ spells __restrict__. */
#define restrict __restrict__
extern "C" {
#include "adamw.h"
#include "tt_err.h"
}
#include "gpu_mlp.h"
#include "trainrt.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>

struct tt_gpu {
	int device;
	cudaStream_t stream;
	cublasHandle_t blas;
	char describe[300];
};

typedef __nv_bfloat16 bf16;

#define CUDA_OK(call, err, what)                                                                         \
	do {                                                                                             \
		cudaError_t ce_ = (call);                                                                \
		if (ce_ != cudaSuccess)                                                                  \
			return tt_err_set(err, "%s: %s (%s:%d)", what, cudaGetErrorString(ce_), __FILE__, __LINE__); \
	} while (0)

#define BLAS_OK(call, err, what)                                                                         \
	do {                                                                                             \
		cublasStatus_t bs_ = (call);                                                             \
		if (bs_ != CUBLAS_STATUS_SUCCESS)                                                        \
			return tt_err_set(err, "%s: cuBLAS status %d (%s:%d)", what, (int)bs_, __FILE__, __LINE__); \
	} while (0)

static int launched(tt_err *err, const char *what)
{
	CUDA_OK(cudaGetLastError(), err, what);
	return 0;
}

static unsigned blocks_for(size_t n, unsigned threads)
{
	size_t b = (n + threads - 1) / threads;

	return (unsigned)(b > 65535 * 8 ? 65535 * 8 : (b ? b : 1)); /* grid-stride loops cover the rest */
}

/* ---- context -------------------------------------------------------------------------------- */

extern "C" int tt_gpu_count(void)
{
	int n = 0;

	return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
}

extern "C" int tt_gpu_probe(char *why, size_t len)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess)
		snprintf(why, len, "the CUDA runtime found no usable device (%s)", cudaGetErrorString(e));
	else if (n == 0)
		snprintf(why, len, "no CUDA device is visible (CUDA_VISIBLE_DEVICES, the job's --gres=gpu)");
	return e == cudaSuccess ? n : 0;
}

extern "C" int tt_gpu_device_for(int local_rank)
{
	return trainrt_gpu_device(local_rank);
}

extern "C" tt_gpu *tt_gpu_open(int local_rank, tt_err *err)
{
	tt_gpu *g = (tt_gpu *)calloc(1, sizeof(*g));
	cudaDeviceProp prop;
	int n = tt_gpu_count();

	if (!g) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	if (n == 0) {
		tt_err_set(err, "--device gpu: no CUDA device is visible (check CUDA_VISIBLE_DEVICES, the job's "
				"--gres=gpu and the NVIDIA driver)");
		free(g);
		return NULL;
	}
	g->device = tt_gpu_device_for(local_rank);
	if (cudaSetDevice(g->device) != cudaSuccess || cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess) {
		tt_err_set(err, "cannot use CUDA device %d: %s", g->device, cudaGetErrorString(cudaGetLastError()));
		free(g);
		return NULL;
	}
	if (cublasCreate(&g->blas) != CUBLAS_STATUS_SUCCESS || cublasSetStream(g->blas, g->stream) != CUBLAS_STATUS_SUCCESS) {
		tt_err_set(err, "cannot create a cuBLAS handle on CUDA device %d", g->device);
		cudaStreamDestroy(g->stream);
		free(g);
		return NULL;
	}
	if (cudaGetDeviceProperties(&prop, g->device) == cudaSuccess)
		snprintf(g->describe, sizeof(g->describe), "%s (device %d)", prop.name, g->device);
	else
		snprintf(g->describe, sizeof(g->describe), "CUDA device %d", g->device);
	return g;
}

extern "C" void tt_gpu_close(tt_gpu *g)
{
	if (!g)
		return;
	cudaStreamSynchronize(g->stream);
	cublasDestroy(g->blas);
	cudaStreamDestroy(g->stream);
	free(g);
}

extern "C" const char *tt_gpu_describe(const tt_gpu *g)
{
	return g->describe;
}

extern "C" void *tt_gpu_alloc(tt_gpu *g, size_t bytes, tt_err *err)
{
	void *p = NULL;

	if (cudaMalloc(&p, bytes ? bytes : 64) != cudaSuccess) {
		cudaGetLastError(); /* reset, so the next launch check reports its own error, not this one */
		tt_err_set(err, "cannot allocate %zu bytes on %s; use a smaller model or batch", bytes, g->describe);
		return NULL;
	}
	if (cudaMemsetAsync(p, 0, bytes ? bytes : 64, g->stream) != cudaSuccess ||
	    cudaStreamSynchronize(g->stream) != cudaSuccess) {
		cudaFree(p);
		tt_err_set(err, "cannot clear %zu bytes on %s", bytes, g->describe);
		return NULL;
	}
	return p;
}

extern "C" void tt_gpu_free(tt_gpu *g, void *dev)
{
	(void)g;
	if (dev)
		cudaFree(dev);
}

extern "C" int tt_gpu_put(tt_gpu *g, void *dev, const void *host, size_t bytes, tt_err *err)
{
	CUDA_OK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, g->stream), err, "copy to the GPU");
	CUDA_OK(cudaStreamSynchronize(g->stream), err, "copy to the GPU");
	return 0;
}

extern "C" int tt_gpu_get(tt_gpu *g, void *host, const void *dev, size_t bytes, tt_err *err)
{
	CUDA_OK(cudaMemcpyAsync(host, dev, bytes, cudaMemcpyDeviceToHost, g->stream), err, "copy from the GPU");
	CUDA_OK(cudaStreamSynchronize(g->stream), err, "copy from the GPU");
	return 0;
}

extern "C" int tt_gpu_copy(tt_gpu *g, void *dev_dst, const void *dev_src, size_t bytes, tt_err *err)
{
	CUDA_OK(cudaMemcpyAsync(dev_dst, dev_src, bytes, cudaMemcpyDeviceToDevice, g->stream), err, "copy on the GPU");
	return 0;
}

extern "C" int tt_gpu_sync(tt_gpu *g, tt_err *err)
{
	CUDA_OK(cudaStreamSynchronize(g->stream), err, "GPU work failed");
	return 0;
}

extern "C" int tt_gpu_host_addressable(void)
{
	return 0;
}

/* ---- events ------------------------------------------------------------------------------------ */

struct tt_gpu_event {
	cudaEvent_t ev;
};

extern "C" tt_gpu_event *tt_gpu_event_create(tt_gpu *g, tt_err *err)
{
	tt_gpu_event *e = (tt_gpu_event *)calloc(1, sizeof(*e));

	if (!e) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	if (cudaSetDevice(g->device) != cudaSuccess || cudaEventCreateWithFlags(&e->ev, cudaEventDisableTiming) != cudaSuccess) {
		tt_err_set(err, "cannot create a CUDA event on %s: %s", g->describe, cudaGetErrorString(cudaGetLastError()));
		free(e);
		return NULL;
	}
	return e;
}

extern "C" void tt_gpu_event_destroy(tt_gpu_event *e)
{
	if (!e)
		return;
	cudaEventDestroy(e->ev);
	free(e);
}

extern "C" int tt_gpu_event_record(tt_gpu *g, tt_gpu_event *e, tt_err *err)
{
	CUDA_OK(cudaEventRecord(e->ev, g->stream), err, "recording a CUDA event");
	return 0;
}

extern "C" int tt_gpu_event_ready(void *event, void *stream)
{
	tt_gpu_event *e = (tt_gpu_event *)event;

	if (stream)
		return cudaStreamWaitEvent((cudaStream_t)stream, e->ev, 0) == cudaSuccess ? 0 : -1;
	return cudaEventSynchronize(e->ev) == cudaSuccess ? 0 : -1;
}

/* ---- elementwise kernels ---------------------------------------------------------------------- */

__global__ void to_bf16_kernel(bf16 *dst, const float *src, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		dst[i] = __float2bfloat16_rn(src[i]);
}

extern "C" int tt_gpu_to_bf16(tt_gpu *g, uint16_t *dst, const float *src, size_t n, tt_err *err)
{
	if (n == 0)
		return 0;
	to_bf16_kernel<<<blocks_for(n, 256), 256, 0, g->stream>>>((bf16 *)dst, src, n);
	return launched(err, "float32 to bf16 kernel");
}

/* Hidden layer: y = bf16(relu(z + b)); last layer (y NULL): z += b. */
__global__ void bias_act_kernel(float *z, const float *b, bf16 *y, size_t rows, int cols)
{
	size_t total = rows * (size_t)cols;

	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < total; i += (size_t)gridDim.x * blockDim.x) {
		float v = z[i] + b[i % (size_t)cols];

		if (y)
			y[i] = __float2bfloat16_rn(v > 0.0f ? v : 0.0f);
		else
			z[i] = v;
	}
}

__global__ void relu_mask_kernel(bf16 *dy, const bf16 *y, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		if (!(__bfloat162float(y[i]) > 0.0f))
			dy[i] = __float2bfloat16_rn(0.0f);
}

/* gb[c] = beta*gb[c] + sum over rows of dy[r][c]. A block owns BG_COLS columns; its BG_LANES rows of
 * threads each sum every BG_LANES-th row (a warp reads 32 neighbouring columns of one row), then
 * lane 0 adds the BG_LANES partial sums in lane order: the order is fixed, so the result is the same
 * on every run, and a layer of 8192 rows costs 8192 / BG_LANES steps per thread instead of 8192. */
#define BG_COLS 32
#define BG_LANES 16
__global__ void bias_grad_kernel(float *gb, const bf16 *dy, int rows, int cols, float beta)
{
	__shared__ float part[BG_LANES][BG_COLS];
	int c = blockIdx.x * BG_COLS + threadIdx.x;
	float s = 0.0f;

	if (c < cols)
		for (int r = threadIdx.y; r < rows; r += BG_LANES)
			s += __bfloat162float(dy[(size_t)r * cols + c]);
	part[threadIdx.y][threadIdx.x] = s;
	__syncthreads();
	if (threadIdx.y != 0 || c >= cols)
		return;
	for (int k = 1; k < BG_LANES; k++)
		s += part[k][threadIdx.x];
	gb[c] = beta == 0.0f ? s : beta * gb[c] + s;
}

__global__ void scale_kernel(float *x, float a, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		x[i] = a == 0.0f ? 0.0f : a * x[i];
}

__global__ void adamw_kernel(tt_adamw_step s, float *p, const float *grad, float *m, float *v, size_t n)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float gi = grad[i];
		float mi = s.b1 * m[i] + (1.0f - s.b1) * gi;
		float vi = s.b2 * v[i] + (1.0f - s.b2) * gi * gi;

		m[i] = mi;
		v[i] = vi;
		p[i] = p[i] * s.decay - s.step_size * mi / (sqrtf(vi) / s.bc2_sqrt + s.eps);
	}
}

extern "C" int tt_gpu_adamw(tt_gpu *g, const tt_adamw_step *s, float *p, const float *grad, float *m, float *v,
			    size_t n, tt_err *err)
{
	if (n == 0)
		return 0;
	adamw_kernel<<<blocks_for(n, 256), 256, 0, g->stream>>>(*s, p, grad, m, v, n);
	return launched(err, "AdamW kernel");
}

/* ---- softmax cross-entropy: one warp per row ------------------------------------------------- */

__global__ void softmax_xent_kernel(const float *logits, const int32_t *labels, int n, int classes, float scale,
				    bf16 *dlogits, float *row_loss, int32_t *row_hit)
{
	int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
	const float *z;
	bf16 *dz;
	float zmax = -INFINITY, sum = 0.0f;
	int best = classes;

	if (row >= n)
		return;
	z = logits + (size_t)row * classes;
	dz = dlogits + (size_t)row * classes;
	for (int c = lane; c < classes; c += 32)
		if (z[c] > zmax || (z[c] == zmax && c < best)) {
			zmax = z[c];
			best = c;
		}
	/* The first maximal class wins ties, as the CPU loop's strict '>' does. */
	for (int off = 16; off > 0; off /= 2) {
		float om = __shfl_xor_sync(0xffffffffu, zmax, off);
		int ob = __shfl_xor_sync(0xffffffffu, best, off);

		if (om > zmax || (om == zmax && ob < best)) {
			zmax = om;
			best = ob;
		}
	}
	for (int c = lane; c < classes; c += 32)
		sum += expf(z[c] - zmax);
	for (int off = 16; off > 0; off /= 2)
		sum += __shfl_xor_sync(0xffffffffu, sum, off);
	for (int c = lane; c < classes; c += 32) {
		float d = expf(z[c] - zmax) / sum * scale;

		dz[c] = __float2bfloat16_rn(c == labels[row] ? d - scale : d);
	}
	if (lane == 0) {
		row_loss[row] = logf(sum) - (z[labels[row]] - zmax);
		row_hit[row] = best == labels[row];
	}
}

extern "C" int tt_gpu_softmax_xent(tt_gpu *g, const float *logits, const int32_t *labels, int n, int classes,
				   float scale, uint16_t *dlogits, float *row_loss, int32_t *row_hit, tt_err *err)
{
	const int warps = 8;

	if (n == 0)
		return 0;
	softmax_xent_kernel<<<(n + warps - 1) / warps, warps * 32, 0, g->stream>>>(logits, labels, n, classes, scale,
										 (bf16 *)dlogits, row_loss, row_hit);
	return launched(err, "softmax cross-entropy kernel");
}

/* ---- Linear layer ------------------------------------------------------------------------------ */

extern "C" int tt_gpu_linear_forward(tt_gpu *g, int in, int out, const uint16_t *w, const float *b, const uint16_t *x,
				     int n, float *z, uint16_t *y, tt_err *err)
{
	const float one = 1.0f, zero = 0.0f;
	size_t total = (size_t)n * out;

	if (n == 0)
		return 0;
	/* z^T[out x n] = W[out x in] . x^T[in x n]; row-major W is column-major W^T (ld in): op T. */
	BLAS_OK(cublasGemmEx(g->blas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one, w, CUDA_R_16BF, in, x, CUDA_R_16BF, in,
			     &zero, z, CUDA_R_32F, out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
		err, "forward GEMM");
	bias_act_kernel<<<blocks_for(total, 256), 256, 0, g->stream>>>(z, b, (bf16 *)y, (size_t)n, out);
	return launched(err, "bias and ReLU kernel");
}

extern "C" int tt_gpu_linear_backward(tt_gpu *g, int in, int out, const uint16_t *w, const uint16_t *x,
				      const uint16_t *y, uint16_t *dy, float *gw, float *gb, float beta, uint16_t *dx,
				      int n, tt_err *err)
{
	const float one = 1.0f, zero = 0.0f;
	size_t total = (size_t)n * out;

	if (n > 0 && y) {
		relu_mask_kernel<<<blocks_for(total, 256), 256, 0, g->stream>>>((bf16 *)dy, (const bf16 *)y, total);
		if (launched(err, "ReLU backward kernel"))
			return -1;
	}
	if (n > 0) {
		/* gw^T[in x out] = x^T[in x n] . dy[n x out]: x is column-major x^T (op N), dy column-major dy^T (op T). */
		BLAS_OK(cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x, CUDA_R_16BF, in, dy, CUDA_R_16BF,
				     out, &beta, gw, CUDA_R_32F, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
			err, "weight-gradient GEMM");
	} else if (beta != 1.0f) {
		/* No rows: gw = beta*gw, which cuBLAS is not asked to do with an inner dimension of 0. */
		scale_kernel<<<blocks_for((size_t)in * out, 256), 256, 0, g->stream>>>(gw, beta, (size_t)in * out);
		if (launched(err, "gradient scale kernel"))
			return -1;
	}
	bias_grad_kernel<<<(out + BG_COLS - 1) / BG_COLS, dim3(BG_COLS, BG_LANES), 0, g->stream>>>(gb, (const bf16 *)dy, n,
												out, beta);
	if (launched(err, "bias-gradient kernel"))
		return -1;
	if (!dx || n == 0)
		return 0;
	/* dx^T[in x n] = W^T[in x out] . dy^T[out x n]: both already column-major as stored (op N). */
	BLAS_OK(cublasGemmEx(g->blas, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one, w, CUDA_R_16BF, in, dy, CUDA_R_16BF, out,
			     &zero, dx, CUDA_R_16BF, in, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
		err, "input-gradient GEMM");
	return 0;
}

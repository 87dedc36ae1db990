/* SPDX-License-Identifier: MIT */
/* gpu_mlp.h — the MLP's math on one CUDA GPU in bf16 mixed precision (built when configure finds
 * CUDA): cuBLAS GEMMs on bfloat16 operands accumulating in float32, and small kernels for bias +
 * ReLU, softmax cross-entropy, bias gradients and AdamW (gpu_mlp.cu). Master weights, gradients
 * and AdamW moments stay float32; activations and a working copy of the weights are bf16, as
 * PyTorch's autocast keeps them. Layouts match mlp.h (row-major, W out x in then b), so host code
 * passes the same offsets it uses on the CPU. Pointers are device memory from tt_gpu_alloc; work
 * is queued on the context's stream and runs in order unless a function says it waits. */
#ifndef TT_GPU_MLP_H
#define TT_GPU_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "adamw.h"
#include "tt_err.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tt_gpu tt_gpu;

/* Visible CUDA devices (0 when none or no driver). */
int tt_gpu_count(void);

/* Like tt_gpu_count, and when it is 0 why: the CUDA runtime's answer, into why (--device auto's
 * one line). */
int tt_gpu_probe(char *why, size_t len);

/* The device a node-local rank uses: libtrainrt's (trainrt_gpu_device, local_rank modulo the
 * visible devices), so a rank's NCCL communicator and its trainer share one GPU (under Slurm with
 * per-task GPU binding each rank sees exactly one, device 0). */
int tt_gpu_device_for(int local_rank);

/* Selects the device for this thread and creates a stream and a cuBLAS handle. */
tt_gpu *tt_gpu_open(int local_rank, tt_err *err);
void tt_gpu_close(tt_gpu *g);
/* "NVIDIA H200 (device 0)" */
const char *tt_gpu_describe(const tt_gpu *g);

/* Zero-filled device memory; NULL and err when out of memory. */
void *tt_gpu_alloc(tt_gpu *g, size_t bytes, tt_err *err);
void tt_gpu_free(tt_gpu *g, void *dev);

/* Copies after the stream's queued work; both return when the copy is complete. */
int tt_gpu_put(tt_gpu *g, void *dev, const void *host, size_t bytes, tt_err *err);
int tt_gpu_get(tt_gpu *g, void *host, const void *dev, size_t bytes, tt_err *err);
int tt_gpu_copy(tt_gpu *g, void *dev_dst, const void *dev_src, size_t bytes, tt_err *err);
/* Waits for all queued work; reports a kernel failure that happened asynchronously. */
int tt_gpu_sync(tt_gpu *g, tt_err *err);

/* 1 when host code can read and write this module's device memory directly (only the host test
 * double of make check, where "device" memory is heap memory); 0 for real GPUs. */
int tt_gpu_host_addressable(void);

/* A point in the context's stream, for ordering work elsewhere after it without the host waiting:
 * record after queueing the kernels that produce a buffer, then pass tt_gpu_event_ready with the
 * event to trainrt_iallreduce_after, which calls it with its own stream. */
typedef struct tt_gpu_event tt_gpu_event;
tt_gpu_event *tt_gpu_event_create(tt_gpu *g, tt_err *err);
void tt_gpu_event_destroy(tt_gpu_event *ev);
/* Marks the end of all work queued on g's stream so far (re-recording moves the mark). */
int tt_gpu_event_record(tt_gpu *g, tt_gpu_event *ev, tt_err *err);
/* A trainrt_ready_fn: stream (a cudaStream_t) waits on the GPU for the event's work, or, with
 * stream NULL, the calling thread waits for it. 0 on success. */
int tt_gpu_event_ready(void *event, void *stream);

/* dst[i] = bf16(src[i]), round to nearest even. */
int tt_gpu_to_bf16(tt_gpu *g, uint16_t *dst, const float *src, size_t n, tt_err *err);

/* Forward of one Linear layer on n rows: z[n x out] = x[n x in] W^T (float32 accumulate), then
 * with y != NULL y = bf16(ReLU(z + b)) (a hidden layer), else z += b in place (the logits). */
int tt_gpu_linear_forward(tt_gpu *g, int in, int out, const uint16_t *w, const float *b, const uint16_t *x, int n,
			  float *z, uint16_t *y, tt_err *err);

/* Backward of one Linear layer. dy[n x out] is dL/d(layer output); with y != NULL (a hidden
 * layer, y its post-ReLU output) dy is masked by the ReLU in place. gw = beta*gw + dy^T x and
 * gb = beta*gb + column sums of dy, in float32 (n = 0 still scales: beta 0 clears them; the column
 * sums run in a fixed order, so they are reproducible); dx[n x in] = dy W when dx != NULL. */
int tt_gpu_linear_backward(tt_gpu *g, int in, int out, const uint16_t *w, const uint16_t *x, const uint16_t *y,
			   uint16_t *dy, float *gw, float *gb, float beta, uint16_t *dx, int n, tt_err *err);

/* Softmax cross-entropy of float32 logits[n x classes] against labels (device, already checked
 * to lie in range): dlogits = scale * (softmax - onehot) in bf16, row_loss[i] the sample's loss,
 * row_hit[i] 1 when its first maximal logit is the label. */
int tt_gpu_softmax_xent(tt_gpu *g, const float *logits, const int32_t *labels, int n, int classes, float scale,
			uint16_t *dlogits, float *row_loss, int32_t *row_hit, tt_err *err);

/* adamw.c's update (tt_adamw_step) on n float32 parameters. */
int tt_gpu_adamw(tt_gpu *g, const tt_adamw_step *s, float *p, const float *grad, float *m, float *v, size_t n,
		 tt_err *err);

#ifdef __cplusplus
}
#endif

#endif

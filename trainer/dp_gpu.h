/* SPDX-License-Identifier: MIT */
/* dp_gpu.h — tt_dp on a CUDA GPU (tt_dp_cfg.gpu): the same padded layout, buckets and step order
 * as the CPU path, with bf16 mixed-precision math from gpu_mlp.h and the gradient buckets
 * all-reduced by libtrainrt's nccl backend while backward continues. DDP only: ZeRO stages run on
 * the CPU path and are refused here with a message. dp.c calls these when dp->gpu is set; they
 * are built only with CUDA (TT_HAVE_CUDA), and tt_dp_init refuses cfg.gpu without it. */
#ifndef TT_DP_GPU_H
#define TT_DP_GPU_H

#include "dp.h"

int tt_dp_gpu_init(tt_dp *dp, tt_err *err);
void tt_dp_gpu_free(tt_dp *dp);
int tt_dp_gpu_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
			 long *correct, tt_err *err);
int tt_dp_gpu_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err);

/* Host values through the device communicator (NCCL reduces only device memory). */
int tt_dp_gpu_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err);
int tt_dp_gpu_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err);
int tt_dp_gpu_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err);

int tt_dp_gpu_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err);
int tt_dp_gpu_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err);
int tt_dp_gpu_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err);

/* The device and precision, for tt_dp_device ("NVIDIA H200 (device 0) bf16"). */
const char *tt_dp_gpu_describe(const tt_dp *dp);

#endif

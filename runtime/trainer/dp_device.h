/* SPDX-License-Identifier: MIT */
/* dp_device.h — the one interface each device's data-parallel step implements (struct tt_dp_ops:
 * the CPU's in dp_cpu.c, the GPU's in dp_gpu.c), chosen once when tt_dp_init_part creates the
 * step, and the bookkeeping both steps share (dp_device.c). dp.c only checks, plans and
 * dispatches; the steps call dp_device.c, never dp.c, so no two files call each other. */
#ifndef TT_DP_DEVICE_H
#define TT_DP_DEVICE_H

#include "dp.h"

/* Each entry does what dp.h says of the tt_dp_ function of the same name, on its device; the
 * three world exchanges (allreduce_sum, broadcast_bytes, allgather_u32) are called only when the
 * world has other ranks (dp.c answers a rank alone itself). */
struct tt_dp_ops {
	const char *(*device)(const tt_dp *dp);
	/* Frees what the constructor allocated; tt_dp_free calls it once the step's queued
	 * operations have ended. */
	void (*free)(tt_dp *dp);
	int (*train_step)(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
			  long *correct, tt_err *err);
	int (*eval)(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err);
	int (*allreduce_sum)(tt_dp *dp, float *vals, int n, tt_err *err);
	int (*broadcast_bytes)(tt_dp *dp, void *buf, size_t n, tt_err *err);
	int (*allgather_u32)(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err);
	int (*export_slices)(const tt_dp *dp, float *p, float *m, float *v, tt_err *err);
	int (*import_slices)(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err);
	int (*params_crc32)(tt_dp *dp, uint32_t *crc, tt_err *err);
};

/* The constructors, called by tt_dp_init_part once the configuration is checked and the shard
 * plan, padded offsets and buckets are set. Each sets dp->ops before anything else, so on failure
 * (-1, err set) tt_dp_free frees whatever it had allocated. */
int tt_dp_cpu_init(tt_dp *dp, tt_err *err);
#ifdef TT_HAVE_CUDA
/* bf16 mixed precision on the GPU of this rank (libtrainrt's nccl backend moves the gradients);
 * DDP only: ZeRO stages are refused with a message, they run on the CPU. */
int tt_dp_gpu_init(tt_dp *dp, tt_err *err);
#endif

/* ---- shared bookkeeping (dp_device.c) ------------------------------------------------------ */

/* Part layer l's length in the padded layout (a multiple of the data-parallel size). */
static inline size_t tt_dp_padded_len(const tt_dp *dp, int l)
{
	return dp->poff[l + 1] - dp->poff[l];
}

/* A monotonic clock in seconds, for the step's timings. */
double tt_dp_now(void);
/* Whether the data-parallel group, or the world, has other ranks to talk to. */
int tt_dp_multi(const tt_dp *dp);
int tt_dp_world_multi(const tt_dp *dp);
/* Sets err to "<what> failed: <the data-parallel communicator's last error>"; returns -1. */
int tt_dp_comm_fail(const tt_dp *dp, const char *what, tt_err *err);
/* Waits for *req of comm c (none: at once) and clears it, adding the time to *seconds; 0 when it
 * succeeded. */
int tt_dp_wait_timed(trainrt_comm *c, trainrt_req **req, double *seconds);
/* The same on the data-parallel communicator, counted in comm_wait_seconds; err names what. */
int tt_dp_wait(tt_dp *dp, trainrt_req **req, const char *what, tt_err *err);
/* The longest padded layer (floats), and layer l's initial weights in its padded length (zeros
 * past the layer): the one initialisation of every rank, world size and device. */
size_t tt_dp_widest_layer(const tt_dp *dp);
int tt_dp_initial_layer(const tt_dp *dp, int l, float *one, tt_err *err);
/* Fills the padded full vector from every rank's slices (shard layout): per-layer all-gathers of
 * buffers the communicator takes (host or device), a copy when there are no peers. Collective. */
int tt_dp_gather_layers(tt_dp *dp, const float *slices, float *full, tt_err *err);
/* The 32-bit words that carry n bytes (tt_dp_broadcast_bytes moves whole words). */
size_t tt_dp_words(size_t bytes);

#endif

/* SPDX-License-Identifier: MIT */
/* dp.h — one data-parallel training step of an MLP over libtrainrt: DDP (ZeRO-0) with reverse-
 * order gradient buckets whose all-reduces overlap the rest of backward, and ZeRO-1/2/3 (optimizer
 * state, + gradients reduce-scattered, + parameters sharded and all-gathered per layer just before
 * use). All parameter-shaped buffers use a padded layout: layer l occupies poff[l].. with its length
 * rounded up to a multiple of the world size, so every rank's ZeRO slice is contiguous. */
#ifndef TT_DP_H
#define TT_DP_H

#include <stddef.h>
#include <stdint.h>

#include "adamw.h"
#include "bucket.h"
#include "mlp.h"
#include "shard.h"
#include "trainrt.h"
#include "tt_err.h"

typedef struct tt_dp_cfg {
	int zero;		   /* 0 (DDP), 1, 2 or 3 */
	int accum;		   /* micro-batches per optimizer step */
	int micro_batch;	   /* samples per micro-batch on this rank */
	size_t bucket_bytes;	   /* DDP bucket cap (PyTorch: 25 MiB) */
	size_t first_bucket_bytes; /* first (last layers') bucket cap (PyTorch: 1 MiB) */
	uint64_t seed;		   /* weight init */
	tt_adamw_cfg opt;
	int gpu;		   /* 1: bf16 mixed precision on a CUDA GPU, DDP only (dp_gpu.h) */
} tt_dp_cfg;

typedef struct tt_dp {
	const tt_mlp *model;
	trainrt_comm *comm; /* NULL: a single process, collectives are no-ops */
	tt_dp_cfg cfg;
	int world, rank;
	tt_shard_plan plan;
	size_t poff[TT_MLP_MAX_LAYERS + 1]; /* padded layer offsets; poff[n_layers] = padded total */
	tt_bucket buckets[TT_MLP_MAX_LAYERS];
	int n_buckets;

	float *params;		     /* padded full parameters (ZeRO 0-2) */
	float *pshard;		     /* this rank's parameter slices (ZeRO 3) */
	float *grads;		     /* padded full gradients (ZeRO 0-1) */
	int grads_in_comm;	     /* grads came from trainrt_alloc */
	float *gshard, *gpart;	     /* reduced gradient slices and one micro-batch's part (ZeRO 2-3) */
	float *m, *v;		     /* AdamW moments: padded full (ZeRO 0) or slices */
	float *stage;		     /* slices staged for all-gathers */
	float *layer_p[TT_MLP_MAX_LAYERS]; /* gathered layer parameters (ZeRO 3), NULL when freed */
	float *layer_g[TT_MLP_MAX_LAYERS]; /* one layer's full gradient in flight (ZeRO 2-3) */
	trainrt_req *req_p[TT_MLP_MAX_LAYERS], *req_g[TT_MLP_MAX_LAYERS];

	int act_rows;		/* capacity of the activation buffers */
	float *act[TT_MLP_MAX_LAYERS + 1];
	float *dy, *dx;

	double compute_seconds; /* forward + backward + optimizer, for benchmarks */
	double comm_wait_seconds;
	double input_seconds;	/* GPU: copying each step's samples from (pageable) host memory */
	struct tt_dp_gpu *gpu;	/* the device state when cfg.gpu (the host buffers above stay NULL) */
} tt_dp;

/* Allocates all buffers and initialises the weights from cfg->seed (identical on every rank and
 * every world size, CPU or GPU). comm NULL or world size 1 runs without communication. With
 * cfg->gpu the communicator must take device buffers (trainrt_init_for TRAINRT_BUFFERS_DEVICE). */
int tt_dp_init(tt_dp *dp, const tt_mlp *model, trainrt_comm *comm, const tt_dp_cfg *cfg, tt_err *err);
/* Waits for operations a failed step left queued, then frees; call before trainrt_finalize. */
void tt_dp_free(tt_dp *dp);

/* One optimizer step (0-based `step` sets the learning rate and bias correction) over this rank's
 * accum * micro_batch samples x (rows of dims[0]) and labels y. The loss gradient is scaled by
 * 1/global_batch so the summed gradients equal the mean over the global batch. Adds this rank's
 * summed loss and correct predictions to *loss_sum / *correct. Collective. */
int tt_dp_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
		     long *correct, tt_err *err);

/* Forward pass only over n <= micro_batch samples (n may be 0: ZeRO-3 ranks must still join the
 * gathers); adds summed loss and hits. Collective under ZeRO-3. */
int tt_dp_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err);

/* Sum of vals[0..n) over all ranks, in place. Collective. */
int tt_dp_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err);

/* Every rank receives rank 0's n bytes (any n; they travel as tt_dp_words(n) 32-bit words).
 * Collective. */
int tt_dp_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err);
size_t tt_dp_words(size_t bytes);

/* recv[r] = rank r's 32-bit word. Collective. */
int tt_dp_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err);

/* What the step runs on: "cpu (float32)" or the GPU, e.g. "NVIDIA H200 (device 0) bf16". */
const char *tt_dp_device(const tt_dp *dp);

/* This rank's slices (tt_shard_total floats each) of parameters and moments, for a checkpoint. */
int tt_dp_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err);

/* Restores slices and rebuilds the replicated parts (all-gathers). Collective. */
int tt_dp_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err);

/* CRC32 of the unpadded float32 parameters in layer order (identical for any world size and
 * stage holding the same weights), gathered one layer at a time. Collective under ZeRO-3. */
int tt_dp_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err);

/* For dp_gpu.c, which shares the step's bookkeeping: whether there are peers to talk to; wait
 * for a request (adding to comm_wait_seconds); the communicator's error as err; a clock. */
int tt_dp_multi(const tt_dp *dp);
/* The longest padded layer (floats), and layer l's initial weights in its padded length (zeros
 * past the layer): the one initialisation of every rank, world size and device. */
size_t tt_dp_widest_layer(const tt_dp *dp);
void tt_dp_initial_layer(const tt_dp *dp, int l, float *one);
/* Fills the padded full vector from every rank's slices (shard layout): per-layer all-gathers
 * of buffers the communicator takes (host or device), a copy when there are no peers. Collective. */
int tt_dp_gather_layers(tt_dp *dp, const float *slices, float *full, tt_err *err);
int tt_dp_wait(tt_dp *dp, trainrt_req **req, const char *what, tt_err *err);
int tt_dp_comm_fail(const tt_dp *dp, const char *what, tt_err *err);
double tt_dp_now(void);

#endif

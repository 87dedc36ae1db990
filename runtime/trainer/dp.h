/* SPDX-License-Identifier: MIT */
/* dp.h — one training step of an MLP over libtrainrt, in any 3D layout (parallel.h): this rank's
 * part of the model (its pipeline stage's layers, cut for its tensor-parallel rank) trained with
 * data parallelism among the ranks holding the same part: DDP (ZeRO-0) with reverse-order gradient
 * buckets whose all-reduces overlap the rest of backward, and ZeRO-1/2/3 (optimizer state, +
 * gradients reduce-scattered, + parameters sharded and all-gathered per layer just before use).
 * Tensor parallelism adds one all-reduce per layer pair forward and one backward; pipeline
 * parallelism runs the step's micro-batches in a schedule (pipeline.h), activations and gradients
 * travelling point-to-point between stages; with recompute only every segment's input is kept per
 * micro-batch. All parameter-shaped buffers use a padded layout: part layer l occupies poff[l]..
 * with its length rounded up to a multiple of the data-parallel size, so every rank's ZeRO slice
 * is contiguous. The step runs on the CPU in float32 (dp_cpu.c) or, DDP only, on a CUDA GPU in
 * bf16 mixed precision (dp_gpu.c), chosen once at creation (dp_device.h). */
#ifndef TT_DP_H
#define TT_DP_H

#include <stddef.h>
#include <stdint.h>

#include "adamw.h"
#include "bucket.h"
#include "mlp.h"
#include "parallel.h"
#include "pipeline.h"
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
	int gpu;		   /* 1: bf16 mixed precision on a CUDA GPU, DDP only (dp_gpu.c) */
	int recompute;		   /* keep only each segment's input per micro-batch; recompute in backward */
	tt_schedule schedule;	   /* pipeline schedule when there are several stages */
} tt_dp_cfg;

/* The communicators of one rank in a 3D layout; NULL where the group is this rank alone. */
typedef struct tt_dp_groups {
	trainrt_comm *world; /* every rank: step statistics and agreements (NULL: a single process) */
	trainrt_comm *dp;    /* the ranks holding the same part: gradients, ZeRO */
	trainrt_comm *tp;    /* the stage's tensor-parallel ranks, by TP rank */
	trainrt_comm *pp;    /* one rank of each stage of this replica, by stage */
} tt_dp_groups;

typedef struct tt_dp {
	const struct tt_dp_ops *ops; /* the device's step (dp_device.h), chosen by tt_dp_init_part */
	const tt_mlp *model;
	tt_part part;	    /* this rank's layers; the whole model without TP and PP */
	trainrt_comm *comm; /* the data-parallel group (gradients, ZeRO); NULL: alone */
	trainrt_comm *world_comm, *tp_comm, *pp_comm; /* see tt_dp_groups */
	tt_dp_cfg cfg;
	int world, rank;    /* the data-parallel group's size and this rank's place in it */
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

	/* Activations: per micro-batch in flight a slot of n_layers+1 buffers (view[l] is part layer
	 * l's input); with recompute a slot keeps only the segment inputs and the stage output, and
	 * scratch holds one segment's recomputed activations (and the forward's in-between ones). */
	int act_rows;		/* capacity of the activation buffers (the micro-batch) */
	int n_slots, seg;	/* slots; layers per recompute segment (all when not recomputing) */
	float **slot_act;	/* n_slots * (n_layers + 1), NULL where a slot keeps nothing */
	float **slot_dlogits;	/* last stage: each slot's loss gradient */
	float **slot_gsend;	/* stages after the first: each slot's input gradient, sent back */
	trainrt_req **slot_req_act, **slot_req_grad; /* the sends of those buffers */
	float *scratch[TT_MLP_MAX_LAYERS + 1];
	int n_scratch;
	float *dy, *dx;

	double compute_seconds; /* forward + backward + optimizer, for benchmarks */
	double comm_wait_seconds;
	double pp_wait_seconds;	 /* blocked on the neighbouring stages (the pipeline bubble) */
	double schedule_seconds; /* running the micro-batch schedule */
	uint64_t bytes_sent;	 /* by this rank's step collectives and messages (trainrt_bytes_sent) */
	int eval_batches;	 /* numbers successive evaluation batches (their messages' tags) */
	double input_seconds;	/* GPU: copying each step's samples from (pageable) host memory */
	struct tt_dp_gpu *gpu;	/* the device state when cfg.gpu (the host buffers above stay NULL) */
} tt_dp;

/* Allocates all buffers and initialises the weights from cfg->seed (identical on every rank and
 * every world size, CPU or GPU). comm NULL or world size 1 runs without communication. With
 * cfg->gpu the communicator must take device buffers (trainrt_init_for TRAINRT_BUFFERS_DEVICE).
 * Data parallelism over all of comm (the whole model on every rank). On failure (-1, err set)
 * nothing stays allocated (tt_dp_free after it is harmless). */
int tt_dp_init(tt_dp *dp, const tt_mlp *model, trainrt_comm *comm, const tt_dp_cfg *cfg, tt_err *err);
/* The same for one rank of a 3D layout: part (tt_part_build) and its groups. CPU only. */
int tt_dp_init_part(tt_dp *dp, const tt_mlp *model, const tt_part *part, const tt_dp_groups *g, const tt_dp_cfg *cfg,
		    tt_err *err);
/* Waits for operations a failed step left queued, then frees; call before trainrt_finalize. */
void tt_dp_free(tt_dp *dp);

/* One optimizer step (0-based `step` sets the learning rate and bias correction) over this rank's
 * accum * micro_batch samples x (rows of dims[0]) and labels y (its replica's: the first stage
 * reads x, the last y). The loss gradient is scaled by 1/global_batch so the summed gradients
 * equal the mean over the global batch. Adds the summed loss and correct predictions to *loss_sum
 * / *correct on the ranks that count them (the last stage's first TP rank; others add 0), so a
 * sum over all ranks counts every sample once. Collective. */
int tt_dp_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
		     long *correct, tt_err *err);

/* Forward pass only over n <= micro_batch samples (n may be 0: ZeRO-3 ranks must still join the
 * gathers); adds summed loss and hits where tt_dp_train_step does. Collective under ZeRO-3, TP
 * and PP (every rank of the replica passes the same n). */
int tt_dp_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err);

/* Sum of vals[0..n) over all ranks (the world), in place. Collective. */
int tt_dp_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err);

/* Every rank receives rank 0's n bytes (any n; they travel as whole 32-bit words). Collective. */
int tt_dp_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err);

/* recv[r] = rank r's 32-bit word. Collective. */
int tt_dp_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err);

/* What the step runs on: "cpu (float32)" or the GPU, e.g. "NVIDIA H200 (device 0) bf16". */
const char *tt_dp_device(const tt_dp *dp);

/* This rank's slices (tt_shard_total floats each) of parameters and moments, for a checkpoint. */
int tt_dp_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err);

/* Restores slices and rebuilds the replicated parts (all-gathers). Collective. */
int tt_dp_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err);

/* CRC32 of the whole model's unpadded float32 parameters in layer order (identical for any
 * layout holding the same weights), gathered one layer at a time. Collective. */
int tt_dp_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err);

/* The measured and theoretical pipeline bubble so far (0 without stages): this rank's time
 * blocked on neighbouring stages over its time in the schedule; (p-1)/(m+p-1). */
double tt_dp_bubble(const tt_dp *dp);

#endif

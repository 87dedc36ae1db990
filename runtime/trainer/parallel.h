/* SPDX-License-Identifier: MIT */
/* parallel.h — 3D parallelism as plain data: how a world of D x T x P ranks is laid out (data,
 * tensor and pipeline parallel coordinates of each rank), which layers each pipeline stage holds,
 * how tensor parallelism cuts them (Megatron: a column-parallel layer, then a row-parallel one),
 * and where each element of a rank's part lies in the full layer. Pure functions, so the trainer,
 * the checkpoint loader (resharding between layouts) and the tests share one definition. */
#ifndef TT_PARALLEL_H
#define TT_PARALLEL_H

#include <stddef.h>

#include "mlp.h"
#include "tt_err.h"

/* The 3D parallel plan of a training run: data x tensor x pipeline (not layout/'s env contract). */
typedef struct tt_plan3d {
	int dp, tp, pp; /* data-parallel replicas, tensor-parallel ranks per stage, pipeline stages */
} tt_plan3d;

typedef struct tt_coords {
	int dp, tp, pp;
} tt_coords;

/* Rank order (Megatron's): tensor-parallel rank varies fastest, then data-parallel, then stage:
 * rank = (pp * dp_size + dp) * tp_size + tp. So a TP group is tp consecutive ranks (one node when
 * tp divides the ranks per node) and a stage is dp*tp consecutive ranks (whole nodes when that is
 * a multiple of the ranks per node): TP inside a node, PP across nodes. */
tt_coords tt_plan3d_coords(const tt_plan3d *lay, int rank);
int tt_plan3d_rank(const tt_plan3d *lay, tt_coords c);

/* Checks a layout before any rendezvous: the world is D*T*P (D = world / (T*P)), P divides the
 * layer count, T divides the width of every column-parallel layer's output, and the global batch
 * splits into D replicas x micro micro-batches. Each refusal names the numbers and what to do. */
int tt_plan3d_check(const tt_plan3d *lay, int world, const tt_mlp *m, long batch, int micro, tt_err *err);

/* Layers [*first, *first + *n) of stage s: the layer count / P each. */
void tt_plan3d_stage(const tt_plan3d *lay, const tt_mlp *m, int s, int *first, int *n);

/* Text "DxTxP" of a layout (e.g. "4x2x1"), for messages and checkpoints. */
void tt_plan3d_format(const tt_plan3d *lay, char *out, size_t len);

typedef enum tt_tp_kind {
	TT_LAYER_FULL, /* whole on every TP rank (TP 1, or a stage's last layer when its count is odd) */
	TT_LAYER_COL,  /* outputs split over the TP ranks: W rows and b in T slices */
	TT_LAYER_ROW,  /* inputs split: W columns in T slices, b whole; outputs all-reduced, then + b */
} tt_tp_kind;

typedef struct tt_part_layer {
	int global;	 /* index in the model */
	tt_tp_kind kind;
	int in, out;	 /* this rank's widths: COL out = model out / T, ROW in = model in / T */
	int relu;	 /* ReLU after the layer (every layer of the model but its last) */
} tt_part_layer;

/* What one rank holds and computes: its stage's layers, cut for its TP rank. Within a stage
 * layers pair up from the first (COL, ROW), so a stage's input and output are whole on every TP
 * rank; the pair needs one all-reduce forward (after ROW) and one backward (COL's input gradient). */
typedef struct tt_part {
	int n_layers;
	tt_part_layer layer[TT_MLP_MAX_LAYERS];
	size_t len[TT_MLP_MAX_LAYERS]; /* parameters of each part layer: W then b */
	int tp, tp_rank, stage, stages;
	int in_width, out_width; /* the stage's input and output widths (whole) */
} tt_part;

/* The part of coordinates c (c.tp, c.pp within lay). tt_plan3d_check must have passed. */
void tt_part_build(tt_part *p, const tt_mlp *m, const tt_plan3d *lay, tt_coords c);

/* Parameters of part layer i, the model's layer (whole): the W then b block tt_mlp uses. */
size_t tt_part_model_len(const tt_mlp *m, const tt_part *p, int i);

/* Element e of part layer i -> its index in the whole layer's block. */
size_t tt_part_to_model(const tt_mlp *m, const tt_part *p, int i, size_t e);
/* Index g of the whole layer's block -> element of part layer i, or -1 when another TP rank
 * holds it. (Elements replicated over TP ranks, ROW biases and FULL layers, map on every rank.) */
long tt_part_from_model(const tt_mlp *m, const tt_part *p, int i, size_t g);

/* Part layer i's initial parameters (len[i] floats), cut from the whole layer as tt_mlp_init_layer
 * makes it; whole (tt_part_model_len floats) is scratch. So every layout starts from the same model. */
void tt_part_init_layer(const tt_mlp *m, const tt_part *p, int i, uint64_t seed, float *whole, float *out);

#endif

/* SPDX-License-Identifier: MIT */
/* dp_cpu.c — the data-parallel step on the CPU, in float32 (see dp.h): forward, loss, backward
 * with gradient communication started per bucket (DDP/ZeRO-1) or per layer (ZeRO-2/3) as soon as
 * backward has produced it, then AdamW on the full vector (DDP) or on this rank's slices followed
 * by parameter all-gathers; tensor-parallel all-reduces per layer pair and the pipeline's
 * micro-batch schedule. Its ops table (cpu_ops) is what tt_dp_cpu_init installs. */
#include <config.h>

#include "dp_device.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- setup ---------------------------------------------------------------------------------- */

/* Layers per recompute segment: about the square root of the stage's layer count, which keeps the
 * fewest activations (segment inputs plus one segment's worth); all of them without recompute. */
static int segment_layers(int n, int recompute)
{
	int seg = 1;

	if (!recompute)
		return n;
	while (seg * seg < n)
		seg++;
	return seg;
}

/* Whether slots keep part layer l's input (l == n_layers: the stage's output). */
static int kept(const tt_dp *dp, int l)
{
	return l % dp->seg == 0 || l == dp->part.n_layers;
}

static float **slot_view(const tt_dp *dp, int slot)
{
	return dp->slot_act + (size_t)slot * (size_t)(dp->part.n_layers + 1);
}

static int alloc_activations(tt_dp *dp)
{
	const tt_part *p = &dp->part;
	int L = p->n_layers, widest = 0;
	size_t rows = (size_t)dp->act_rows;

	dp->seg = segment_layers(L, dp->cfg.recompute);
	dp->n_slots = p->stages > 1 ? tt_pp_in_flight(dp->cfg.schedule, p->stages, p->stage, dp->cfg.accum) : 1;
	dp->slot_act = calloc((size_t)dp->n_slots * (size_t)(L + 1), sizeof(float *));
	dp->slot_dlogits = calloc((size_t)dp->n_slots, sizeof(float *));
	dp->slot_gsend = calloc((size_t)dp->n_slots, sizeof(float *));
	dp->slot_req_act = calloc((size_t)dp->n_slots, sizeof(trainrt_req *));
	dp->slot_req_grad = calloc((size_t)dp->n_slots, sizeof(trainrt_req *));
	if (!dp->slot_act || !dp->slot_dlogits || !dp->slot_gsend || !dp->slot_req_act || !dp->slot_req_grad)
		return -1;
	for (int l = 0; l <= L; l++) {
		int w = l < L ? p->layer[l].in : p->layer[L - 1].out;

		widest = w > widest ? w : widest;
		for (int k = 0; k < dp->n_slots; k++)
			if (!dp->cfg.recompute || kept(dp, l))
				if (!(slot_view(dp, k)[l] = calloc(rows * (size_t)w, sizeof(float))))
					return -1;
	}
	for (int k = 0; k < dp->n_slots; k++) {
		if (p->stage == p->stages - 1 && !(dp->slot_dlogits[k] = calloc(rows * (size_t)p->out_width, sizeof(float))))
			return -1;
		if (p->stage > 0 && !(dp->slot_gsend[k] = calloc(rows * (size_t)p->in_width, sizeof(float))))
			return -1;
	}
	/* Forward in recompute mode alternates two buffers; backward recomputes one segment. */
	dp->n_scratch = dp->seg > 2 ? dp->seg : 2;
	for (int i = 0; i < dp->n_scratch; i++)
		if (!(dp->scratch[i] = calloc(rows * (size_t)widest, sizeof(float))))
			return -1;
	dp->dy = calloc(rows * (size_t)widest, sizeof(float));
	dp->dx = calloc(rows * (size_t)widest, sizeof(float));
	return dp->dy && dp->dx ? 0 : -1;
}

/* The float32 buffers of this rank's ZeRO stage and its activations, with every rank's initial
 * weights; on failure tt_dp_free (cpu_free) frees what was allocated. */
static int cpu_init(tt_dp *dp, tt_err *err)
{
	const tt_dp_cfg *cfg = &dp->cfg;
	int L = dp->part.n_layers;
	size_t total = dp->poff[L], s = tt_shard_total(&dp->plan);
	float *one = NULL; /* one padded layer at a time, so ZeRO-3 never holds the whole model */
	int rc = -1;

	if (cfg->zero < 3)
		dp->params = calloc(total, sizeof(float));
	else
		dp->pshard = calloc(s, sizeof(float));
	if (cfg->zero < 2) {
		/* In the communicator's own memory the bucket all-reduces skip staging copies. */
		if (tt_dp_multi(dp) && !trainrt_buffers_on_device(dp->comm) &&
		    (dp->grads = trainrt_alloc(dp->comm, total * sizeof(float)))) {
			memset(dp->grads, 0, total * sizeof(float));
			dp->grads_in_comm = 1;
		} else
			dp->grads = calloc(total, sizeof(float));
	} else {
		dp->gshard = calloc(s, sizeof(float));
		dp->gpart = calloc(s, sizeof(float));
	}
	dp->m = calloc(cfg->zero == 0 ? total : s, sizeof(float));
	dp->v = calloc(cfg->zero == 0 ? total : s, sizeof(float));
	dp->stage = calloc(s, sizeof(float));
	dp->act_rows = cfg->micro_batch;
	one = calloc(tt_dp_widest_layer(dp), sizeof(float));
	if ((cfg->zero < 3 && !dp->params) || (cfg->zero == 3 && !dp->pshard) || (cfg->zero < 2 && !dp->grads) ||
	    (cfg->zero >= 2 && (!dp->gshard || !dp->gpart)) || !dp->m || !dp->v || !dp->stage || !one ||
	    alloc_activations(dp) != 0) {
		tt_err_set(err, "cannot allocate training buffers for %zu parameters and micro-batch %d; use a "
			   "higher --zero stage, more --accum or a smaller model", dp->model->n_params,
			   cfg->micro_batch);
		goto fail;
	}
	/* Every rank initialises its part the same way, then keeps what its ZeRO stage needs. */
	for (int l = 0; l < L; l++) {
		if (tt_dp_initial_layer(dp, l, one, err))
			goto fail;
		if (cfg->zero < 3)
			memcpy(dp->params + dp->poff[l], one, sizeof(float) * dp->part.len[l]);
		else
			memcpy(dp->pshard + dp->plan.shard_off[l], one + dp->rank * dp->plan.shard_len[l],
			       sizeof(float) * dp->plan.shard_len[l]);
	}
	rc = 0;
fail:
	free(one);
	return rc;
}

static void cpu_free(tt_dp *dp)
{
	free(dp->params);
	free(dp->pshard);
	if (dp->grads_in_comm)
		trainrt_free(dp->comm, dp->grads);
	else
		free(dp->grads);
	free(dp->gshard);
	free(dp->gpart);
	free(dp->m);
	free(dp->v);
	free(dp->stage);
	for (int l = 0; l < TT_MLP_MAX_LAYERS; l++) {
		free(dp->layer_p[l]);
		free(dp->layer_g[l]);
	}
	if (dp->slot_act)
		for (size_t i = 0; i < (size_t)dp->n_slots * (size_t)(dp->part.n_layers + 1); i++)
			free(dp->slot_act[i]);
	for (int k = 0; k < dp->n_slots; k++) {
		if (dp->slot_dlogits)
			free(dp->slot_dlogits[k]);
		if (dp->slot_gsend)
			free(dp->slot_gsend[k]);
	}
	free(dp->slot_act);
	free(dp->slot_dlogits);
	free(dp->slot_gsend);
	free(dp->slot_req_act);
	free(dp->slot_req_grad);
	for (int i = 0; i < dp->n_scratch; i++)
		free(dp->scratch[i]);
	free(dp->dy);
	free(dp->dx);
}

/* ---- ZeRO-3 parameter gathers ------------------------------------------------------------------ */

static int start_gather(tt_dp *dp, int l, tt_err *err)
{
	size_t s = dp->plan.shard_len[l];
	const float *mine = dp->pshard + dp->plan.shard_off[l];

	dp->layer_p[l] = malloc(sizeof(float) * tt_dp_padded_len(dp, l));
	if (!dp->layer_p[l])
		return tt_err_set(err, "cannot allocate %zu floats to gather layer %d", tt_dp_padded_len(dp, l), l);
	if (!tt_dp_multi(dp)) {
		memcpy(dp->layer_p[l], mine, sizeof(float) * s);
		return 0;
	}
	dp->req_p[l] = trainrt_iallgather(dp->comm, mine, dp->layer_p[l], s, TRAINRT_FLOAT32);
	return dp->req_p[l] ? 0 : tt_dp_comm_fail(dp, "all-gather of layer parameters", err);
}

/* ZeRO-3: layer l gathered or on its way (a no-op when it already is). */
static int fetch(tt_dp *dp, int l, tt_err *err)
{
	return dp->cfg.zero == 3 && !dp->layer_p[l] ? start_gather(dp, l, err) : 0;
}

static void drop_layer(tt_dp *dp, int l)
{
	free(dp->layer_p[l]);
	dp->layer_p[l] = NULL;
}

static const float *layer_params(const tt_dp *dp, int l)
{
	return dp->cfg.zero == 3 ? dp->layer_p[l] : dp->params + dp->poff[l];
}

/* ---- layers: the math of one part layer, with its tensor-parallel all-reduce ------------------- */

static int tp_allreduce(tt_dp *dp, float *buf, size_t count, const char *what, tt_err *err)
{
	double t0 = tt_dp_now();
	int rc;

	if (!dp->tp_comm)
		return 0;
	rc = trainrt_allreduce(dp->tp_comm, buf, buf, count, TRAINRT_FLOAT32, TRAINRT_SUM);
	dp->comm_wait_seconds += tt_dp_now() - t0;
	return rc ? tt_err_set(err, "%s failed: %s", what, trainrt_last_error(dp->tp_comm)) : 0;
}

/* x -> y on n rows. A row-parallel layer's product is a partial sum over its input slice: the
 * TP ranks add theirs up (the pair's forward all-reduce), then the bias and ReLU follow. */
static int layer_forward(tt_dp *dp, int l, const float *x, float *y, int n, tt_err *err)
{
	const tt_part_layer *pl = &dp->part.layer[l];
	const float *params = layer_params(dp, l);
	int row = pl->kind == TT_LAYER_ROW;
	double t0 = tt_dp_now();

	if (n > 0)
		tt_linear_forward(pl->in, pl->out, params, !row, pl->relu, x, y, n);
	dp->compute_seconds += tt_dp_now() - t0;
	if (!row)
		return 0;
	if (tp_allreduce(dp, y, (size_t)n * (size_t)pl->out, "forward all-reduce of a row-parallel layer", err))
		return -1;
	t0 = tt_dp_now();
	tt_bias_relu(y, params + (size_t)pl->in * (size_t)pl->out, pl->out, pl->relu, n);
	dp->compute_seconds += tt_dp_now() - t0;
	return 0;
}

/* The backward of layer l. A column-parallel layer's input gradient is a partial sum over its
 * output slice: the TP ranks add theirs up (the pair's backward all-reduce), unless nobody needs
 * it (dx NULL: the model's first layer). */
static int layer_backward(tt_dp *dp, int l, const float *x, const float *y, float *dy, float *g, float beta,
			  float *dx, int n, tt_err *err)
{
	const tt_part_layer *pl = &dp->part.layer[l];
	double t0 = tt_dp_now();

	tt_linear_backward(pl->in, pl->out, layer_params(dp, l), pl->relu, x, y, dy, g, beta, dx, n);
	dp->compute_seconds += tt_dp_now() - t0;
	if (dx && pl->kind == TT_LAYER_COL)
		return tp_allreduce(dp, dx, (size_t)n * (size_t)pl->in, "backward all-reduce of a column-parallel layer",
				    err);
	return 0;
}

/* Forward of part layers [lo, hi) on n rows through view[lo..hi] (view[l]: layer l's input).
 * Under ZeRO-3 layer l+1 is gathered while layer l computes; each layer is freed after use unless
 * it is the last and keep_last (its backward may follow at once). */
static int forward_range(tt_dp *dp, float *const *view, int lo, int hi, int n, int keep_last, tt_err *err)
{
	if (fetch(dp, lo, err))
		return -1;
	for (int l = lo; l < hi; l++) {
		if (dp->cfg.zero == 3) {
			if (tt_dp_wait(dp, &dp->req_p[l], "all-gather of layer parameters", err))
				return -1;
			if (l + 1 < hi && fetch(dp, l + 1, err))
				return -1;
		}
		if (layer_forward(dp, l, view[l], view[l + 1], n, err))
			return -1;
		if (dp->cfg.zero == 3 && (l < hi - 1 || !keep_last))
			drop_layer(dp, l);
	}
	return 0;
}

/* ---- gradient communication ------------------------------------------------------------------ */

/* Called once backward of layer l is done on the last micro-batch (DDP / ZeRO-1). */
static int bucket_ready(tt_dp *dp, int l, tt_err *err)
{
	for (int b = 0; b < dp->n_buckets; b++) {
		tt_bucket *bk = &dp->buckets[b];

		if (bk->lo_layer != l || !tt_dp_multi(dp))
			continue;
		dp->req_g[b] = trainrt_iallreduce(dp->comm, dp->grads + bk->off, dp->grads + bk->off, bk->len,
						  TRAINRT_FLOAT32, TRAINRT_SUM);
		if (!dp->req_g[b])
			return tt_dp_comm_fail(dp, "all-reduce of a gradient bucket", err);
	}
	return 0;
}

/* ZeRO-2/3: layer l's full gradient is reduce-scattered into this rank's slice of gpart. */
static int layer_grad_ready(tt_dp *dp, int l, tt_err *err)
{
	float *dst = dp->gpart + dp->plan.shard_off[l];

	if (!tt_dp_multi(dp)) {
		memcpy(dst, dp->layer_g[l], sizeof(float) * dp->plan.shard_len[l]);
		return 0;
	}
	dp->req_g[l] = trainrt_ireducescatter(dp->comm, dp->layer_g[l], dst, dp->plan.shard_len[l], TRAINRT_FLOAT32,
					      TRAINRT_SUM);
	return dp->req_g[l] ? 0 : tt_dp_comm_fail(dp, "reduce-scatter of layer gradients", err);
}

static int finish_layer_grad(tt_dp *dp, int l, tt_err *err)
{
	if (tt_dp_wait(dp, &dp->req_g[l], "reduce-scatter of layer gradients", err))
		return -1;
	free(dp->layer_g[l]);
	dp->layer_g[l] = NULL;
	return 0;
}

/* Backward of part layers [hi-1 .. lo] on n rows through view[lo..hi]; *dy holds the gradient
 * w.r.t. view[hi] and ends holding the one w.r.t. view[lo] (the two gradient buffers alternate),
 * except that layer 0's input gradient goes to dx0 (NULL: nobody needs it). Gradients accumulate
 * over the step's micro-batches (first/last: the step's first and last backward); DDP/ZeRO-1
 * start a bucket's all-reduce when its last layer is done on the last micro-batch, ZeRO-2/3
 * reduce-scatter each layer's gradient as soon as it exists. */
static int backward_range(tt_dp *dp, float *const *view, int lo, int hi, float **dy, float *dx0, int n, int first,
			  int last, tt_err *err)
{
	int L = dp->part.n_layers;

	if (fetch(dp, hi - 1, err))
		return -1;
	for (int l = hi - 1; l >= lo; l--) {
		float *g, *dx = l ? (*dy == dp->dy ? dp->dx : dp->dy) : dx0;
		float beta = 0.0f;

		if (dp->cfg.zero == 3) {
			if (tt_dp_wait(dp, &dp->req_p[l], "all-gather of layer parameters", err))
				return -1;
			if (l > lo && fetch(dp, l - 1, err))
				return -1;
		}
		if (dp->cfg.zero < 2) {
			g = dp->grads + dp->poff[l];
			beta = first ? 0.0f : 1.0f;
		} else {
			g = dp->layer_g[l] = calloc(tt_dp_padded_len(dp, l), sizeof(float)); /* padding stays zero */
			if (!g)
				return tt_err_set(err, "cannot allocate %zu floats for layer %d gradients",
						  tt_dp_padded_len(dp, l), l);
		}
		if (layer_backward(dp, l, view[l], view[l + 1], *dy, g, beta, dx, n, err))
			return -1;
		if (dp->cfg.zero < 2 ? last && bucket_ready(dp, l, err) : layer_grad_ready(dp, l, err))
			return -1;
		/* ZeRO-2/3 keep at most two layers' full gradients: the one just started and the one before. */
		if (dp->cfg.zero >= 2 && l + 1 < L && finish_layer_grad(dp, l + 1, err))
			return -1;
		if (dp->cfg.zero == 3)
			drop_layer(dp, l);
		if (l)
			*dy = dx;
	}
	return 0;
}

/* After a micro-batch's backward through every layer: ZeRO-2/3 add its gradient slices up. */
static int backward_done(tt_dp *dp, int first, int last, tt_err *err)
{
	if (dp->cfg.zero >= 2) {
		size_t s = tt_shard_total(&dp->plan);

		if (finish_layer_grad(dp, 0, err))
			return -1;
		if (first)
			memcpy(dp->gshard, dp->gpart, sizeof(float) * s);
		else
			for (size_t i = 0; i < s; i++)
				dp->gshard[i] += dp->gpart[i];
	} else if (last && dp->cfg.zero == 1) {
		/* (DDP waits bucket by bucket in optimizer_step, updating each while later ones travel.) */
		for (int b = 0; b < dp->n_buckets; b++)
			if (tt_dp_wait(dp, &dp->req_g[b], "all-reduce of a gradient bucket", err))
				return -1;
	}
	return 0;
}

/* ---- pipeline: micro-batches, stages, recompute ------------------------------------------------ */

enum { TAG_ACT = 1 << 20, TAG_GRAD = 2 << 20, TAG_EVAL = 3 << 20 };

static int first_stage(const tt_dp *dp)
{
	return dp->part.stage == 0;
}

static int last_stage(const tt_dp *dp)
{
	return dp->part.stage == dp->part.stages - 1;
}

/* Whether this rank adds the loss up: one rank per replica (the last stage's first TP rank). */
static int counts_loss(const tt_dp *dp)
{
	return last_stage(dp) && dp->part.tp_rank == 0;
}

static int pp_fail(tt_dp *dp, const char *what, tt_err *err)
{
	return tt_err_set(err, "%s failed: %s", what, trainrt_last_error(dp->pp_comm));
}

/* Receives count floats from the neighbouring stage (the time blocked is pipeline bubble). */
static int pp_recv(tt_dp *dp, float *buf, size_t count, int stage, int tag, const char *what, tt_err *err)
{
	double t0 = tt_dp_now();
	int rc = trainrt_recv(dp->pp_comm, buf, count, TRAINRT_FLOAT32, stage, tag);

	dp->pp_wait_seconds += tt_dp_now() - t0;
	return rc ? pp_fail(dp, what, err) : 0;
}

static int pp_wait(tt_dp *dp, trainrt_req **req, const char *what, tt_err *err)
{
	return tt_dp_wait_timed(dp->pp_comm, req, &dp->pp_wait_seconds) ? pp_fail(dp, what, err) : 0;
}

/* The view of a forward pass in slot k: kept buffers where the slot has them, two alternating
 * scratch buffers for the rest (recompute). */
static void forward_view(const tt_dp *dp, int k, float **view)
{
	for (int l = 0; l <= dp->part.n_layers; l++)
		view[l] = slot_view(dp, k)[l] ? slot_view(dp, k)[l] : dp->scratch[l & 1];
}

/* Forward of micro-batch mb: its input from the data (first stage) or the previous stage, its
 * output to the next stage or, on the last, into the loss and its gradient (kept in the slot). */
static int micro_forward(tt_dp *dp, int mb, const float *x, const int32_t *y, long global_batch, double *loss_sum,
			 long *correct, tt_err *err)
{
	const tt_part *p = &dp->part;
	int n = dp->act_rows, k = mb % dp->n_slots, L = p->n_layers;
	size_t in = (size_t)n * (size_t)p->in_width, out = (size_t)n * (size_t)p->out_width;
	float *view[TT_MLP_MAX_LAYERS + 1];
	double ignored_loss = 0.0;
	long ignored_hits = 0;

	forward_view(dp, k, view);
	if (first_stage(dp))
		memcpy(view[0], x + (size_t)mb * in, sizeof(float) * in);
	else if (pp_recv(dp, view[0], in, p->stage - 1, TAG_ACT + mb, "receiving activations from the previous stage",
			 err))
		return -1;
	if (forward_range(dp, view, 0, L, n, 1, err))
		return -1;
	if (last_stage(dp)) {
		int cl = counts_loss(dp);
		double t0 = tt_dp_now();
		int rc = tt_softmax_xent(view[L], y + (size_t)mb * (size_t)n, n, p->out_width, 1.0f / (float)global_batch,
					 dp->slot_dlogits[k], cl ? loss_sum : &ignored_loss, cl ? correct : &ignored_hits, err);

		dp->compute_seconds += tt_dp_now() - t0;
		return rc;
	}
	dp->slot_req_act[k] = trainrt_isend(dp->pp_comm, view[L], out, TRAINRT_FLOAT32, p->stage + 1, TAG_ACT + mb);
	return dp->slot_req_act[k] ? 0 : pp_fail(dp, "sending activations to the next stage", err);
}

/* Backward of micro-batch mb: the gradient of its output from the loss (last stage) or the next
 * stage; the gradient of its input to the previous stage. With recompute each segment's
 * activations are recomputed from its kept input just before its backward. */
static int micro_backward(tt_dp *dp, int mb, int first, int last, tt_err *err)
{
	const tt_part *p = &dp->part;
	int n = dp->act_rows, k = mb % dp->n_slots, L = p->n_layers;
	size_t in = (size_t)n * (size_t)p->in_width, out = (size_t)n * (size_t)p->out_width;
	float *dy = dp->dy, *dx0 = first_stage(dp) ? NULL : dp->slot_gsend[k];

	if (last_stage(dp))
		memcpy(dy, dp->slot_dlogits[k], sizeof(float) * out);
	else if (pp_recv(dp, dy, out, p->stage + 1, TAG_GRAD + mb, "receiving gradients from the next stage", err))
		return -1;
	if (dx0 && pp_wait(dp, &dp->slot_req_grad[k], "sending gradients to the previous stage", err))
		return -1; /* the slot's gradient buffer is still on its way from an earlier micro-batch */
	for (int hi = L; hi > 0;) {
		int lo = (hi - 1) / dp->seg * dp->seg;
		float *view[TT_MLP_MAX_LAYERS + 1];

		if (dp->cfg.recompute) {
			view[lo] = slot_view(dp, k)[lo];
			for (int l = lo + 1; l <= hi; l++)
				view[l] = dp->scratch[l - lo - 1];
			if (forward_range(dp, view, lo, hi, n, 1, err))
				return -1;
		} else {
			memcpy(view, slot_view(dp, k), sizeof(float *) * (size_t)(L + 1));
		}
		if (backward_range(dp, view, lo, hi, &dy, dx0, n, first, last, err))
			return -1;
		hi = lo;
	}
	if (backward_done(dp, first, last, err))
		return -1;
	if (dx0 && !(dp->slot_req_grad[k] = trainrt_isend(dp->pp_comm, dx0, in, TRAINRT_FLOAT32, p->stage - 1,
							   TAG_GRAD + mb)))
		return pp_fail(dp, "sending gradients to the previous stage", err);
	/* The next stage took this micro-batch's activations before it sent their gradient back. */
	return pp_wait(dp, &dp->slot_req_act[k], "sending activations to the next stage", err);
}

/* ---- optimizer ------------------------------------------------------------------------------ */

/* This rank's slices of a padded full vector, in shard layout. */
static void take_slices(const tt_dp *dp, const float *full, float *slices)
{
	for (int l = 0; l < dp->part.n_layers; l++)
		memcpy(slices + dp->plan.shard_off[l], full + dp->poff[l] + dp->rank * dp->plan.shard_len[l],
		       sizeof(float) * dp->plan.shard_len[l]);
}

static int optimizer_step(tt_dp *dp, long step, tt_err *err)
{
	const tt_adamw_cfg *c = &dp->cfg.opt;
	float lr = tt_adamw_lr(c, step);
	double t0 = tt_dp_now();
	int L = dp->part.n_layers;

	switch (dp->cfg.zero) {
	case 0:
		/* Buckets complete in the order they started; AdamW of one overlaps the next's all-reduce. */
		for (int b = 0; b < dp->n_buckets; b++) {
			const tt_bucket *bk = &dp->buckets[b];

			if (tt_dp_wait(dp, &dp->req_g[b], "all-reduce of a gradient bucket", err))
				return -1;
			t0 = tt_dp_now();
			tt_adamw_update(c, step, lr, dp->params + bk->off, dp->grads + bk->off, dp->m + bk->off,
					dp->v + bk->off, bk->len);
			dp->compute_seconds += tt_dp_now() - t0;
		}
		return 0;
	case 3:
		tt_adamw_update(c, step, lr, dp->pshard, dp->gshard, dp->m, dp->v, tt_shard_total(&dp->plan));
		dp->compute_seconds += tt_dp_now() - t0;
		return 0;
	default:
		for (int l = 0; l < L; l++) {
			size_t so = dp->plan.shard_off[l], mine = dp->poff[l] + dp->rank * dp->plan.shard_len[l];
			const float *g = dp->cfg.zero == 1 ? dp->grads + mine : dp->gshard + so;

			tt_adamw_update(c, step, lr, dp->params + mine, g, dp->m + so, dp->v + so,
					dp->plan.shard_len[l]);
		}
		dp->compute_seconds += tt_dp_now() - t0;
		take_slices(dp, dp->params, dp->stage);
		return tt_dp_gather_layers(dp, dp->stage, dp->params, err);
	}
}

/* ---- the step and evaluation ---------------------------------------------------------------- */

static int cpu_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch,
			  double *loss_sum, long *correct, tt_err *err)
{
	const tt_part *p = &dp->part;
	int M = dp->cfg.accum, n_actions;
	tt_pp_action *actions;
	double t0 = tt_dp_now();
	int rc = 0;

	/* One stage: forward and backward of each micro-batch in turn (1F1B with no warm-up). */
	actions = malloc(sizeof(*actions) * 2 * (size_t)M);
	if (!actions)
		return tt_err_set(err, "out of memory for the schedule of %d micro-batches", M);
	n_actions = tt_pp_schedule(p->stages > 1 ? dp->cfg.schedule : TT_SCHED_1F1B, p->stages, p->stage, M, actions);
	for (int i = 0; i < n_actions && rc == 0; i++) {
		int mb = actions[i].micro;

		rc = actions[i].backward ? micro_backward(dp, mb, mb == 0, mb == M - 1, err)
					 : micro_forward(dp, mb, x, y, global_batch, loss_sum, correct, err);
	}
	free(actions);
	/* The gradients last sent to the previous stage: nothing of a step stays in flight after it. */
	for (int k = 0; k < dp->n_slots && rc == 0; k++)
		rc = pp_wait(dp, &dp->slot_req_grad[k], "sending gradients to the previous stage", err);
	dp->schedule_seconds += tt_dp_now() - t0;
	if (rc || optimizer_step(dp, step, err))
		return -1;
	return 0;
}

static int cpu_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct,
		    tt_err *err)
{
	const tt_part *p = &dp->part;
	int L = p->n_layers;
	float *view[TT_MLP_MAX_LAYERS + 1];
	double ignored_loss = 0.0;
	long ignored_hits = 0;

	if (n > dp->act_rows)
		return tt_err_set(err, "evaluation batch of %d exceeds the micro-batch %d", n, dp->act_rows);
	dp->eval_batches = (dp->eval_batches + 1) % (1 << 20);
	for (int l = 0; l <= L; l++)
		view[l] = dp->scratch[l & 1];
	if (first_stage(dp) && n > 0)
		memcpy(view[0], x, sizeof(float) * (size_t)n * (size_t)p->in_width);
	else if (!first_stage(dp) && pp_recv(dp, view[0], (size_t)n * (size_t)p->in_width, p->stage - 1,
					     TAG_EVAL + dp->eval_batches, "receiving evaluation activations", err))
		return -1;
	if (forward_range(dp, view, 0, L, n, 0, err))
		return -1;
	if (!last_stage(dp))
		return trainrt_send(dp->pp_comm, view[L], (size_t)n * (size_t)p->out_width, TRAINRT_FLOAT32, p->stage + 1,
				    TAG_EVAL + dp->eval_batches) ? pp_fail(dp, "sending evaluation activations", err) : 0;
	return tt_softmax_xent(view[L], y, n, p->out_width, 1.0f, dp->dy, counts_loss(dp) ? loss_sum : &ignored_loss,
			       counts_loss(dp) ? correct : &ignored_hits, err);
}

/* ---- the world's collectives, checkpoints and checksums --------------------------------------- */

static int world_fail(const tt_dp *dp, const char *what, tt_err *err)
{
	return tt_err_set(err, "%s failed: %s", what, trainrt_last_error(dp->world_comm));
}

static int cpu_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err)
{
	if (trainrt_allreduce(dp->world_comm, vals, vals, (size_t)n, TRAINRT_FLOAT32, TRAINRT_SUM))
		return world_fail(dp, "all-reduce of step statistics", err);
	return 0;
}

static int cpu_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err)
{
	size_t words = tt_dp_words(n);
	float *staged = NULL;
	int rc = 0;

	/* float32 only moves the bytes here: a broadcast does no arithmetic. */
	/* A length that is not whole words goes through a padded copy, so no byte is dropped. */
	if (n % sizeof(float)) {
		staged = calloc(words, sizeof(float));
		if (!staged)
			return tt_err_set(err, "out of memory for a broadcast of %zu bytes", n);
		memcpy(staged, buf, n);
	}
	if (trainrt_broadcast(dp->world_comm, staged ? (void *)staged : buf, words, TRAINRT_FLOAT32, 0))
		rc = world_fail(dp, "broadcast from rank 0", err);
	else if (staged)
		memcpy(buf, staged, n);
	free(staged);
	return rc;
}

static int cpu_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err)
{
	if (trainrt_allgather(dp->world_comm, &mine, recv, 1, TRAINRT_FLOAT32))
		return world_fail(dp, "all-gather of one word per rank", err);
	return 0;
}

static const char *cpu_device(const tt_dp *dp)
{
	(void)dp;
	return "cpu (float32)";
}

static int cpu_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err)
{
	size_t s = tt_shard_total(&dp->plan);

	(void)err; /* copies only: nothing here fails */
	if (dp->cfg.zero == 3)
		memcpy(p, dp->pshard, sizeof(float) * s);
	else
		take_slices(dp, dp->params, p);
	if (dp->cfg.zero == 0) {
		take_slices(dp, dp->m, m);
		take_slices(dp, dp->v, v);
	} else {
		memcpy(m, dp->m, sizeof(float) * s);
		memcpy(v, dp->v, sizeof(float) * s);
	}
	return 0;
}

static int cpu_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err)
{
	size_t s = tt_shard_total(&dp->plan);

	if (dp->cfg.zero == 3)
		memcpy(dp->pshard, p, sizeof(float) * s);
	else if (tt_dp_gather_layers(dp, p, dp->params, err))
		return -1;
	if (dp->cfg.zero == 0)
		return tt_dp_gather_layers(dp, m, dp->m, err) || tt_dp_gather_layers(dp, v, dp->v, err) ? -1 : 0;
	memcpy(dp->m, m, sizeof(float) * s);
	memcpy(dp->v, v, sizeof(float) * s);
	return 0;
}

/* Part layer l as the whole model layer (its unpadded W then b) into whole: this rank's part
 * (ZeRO-3: gathered), and with tensor parallelism every TP rank's part gathered into `gathered`
 * (tp x the part's length) and put in place. Collective over the data- and tensor-parallel groups. */
static int whole_layer(tt_dp *dp, int l, float *whole, float *gathered, tt_err *err)
{
	const tt_part *p = &dp->part;
	size_t len = p->len[l];
	int rc = 0;

	if (fetch(dp, l, err) || (dp->cfg.zero == 3 && tt_dp_wait(dp, &dp->req_p[l], "all-gather of parameters", err)))
		return -1;
	if (!dp->tp_comm || p->layer[l].kind == TT_LAYER_FULL) {
		memcpy(whole, layer_params(dp, l), sizeof(float) * len);
	} else if (trainrt_allgather(dp->tp_comm, layer_params(dp, l), gathered, len, TRAINRT_FLOAT32)) {
		rc = tt_err_set(err, "all-gather of a tensor-parallel layer failed: %s", trainrt_last_error(dp->tp_comm));
	} else {
		for (int t = 0; t < p->tp; t++) {
			tt_part other = *p;

			other.tp_rank = t;
			for (size_t e = 0; e < len; e++)
				whole[tt_part_to_model(dp->model, &other, l, e)] = gathered[(size_t)t * len + e];
		}
	}
	if (dp->cfg.zero == 3)
		drop_layer(dp, l);
	return rc;
}

/* Each stage's CRC and byte count, then the whole model's: zlib combines CRCs of consecutive
 * pieces, so the stages' are chained in stage order as one CRC over every layer. */
static int cpu_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err)
{
	const tt_part *p = &dp->part;
	uLong c = crc32(0L, Z_NULL, 0);
	uint64_t bytes = 0;
	size_t widest = 0;
	float *whole = NULL, *gathered = NULL;
	uint32_t *all = NULL;
	int rc = -1, world = tt_dp_world_multi(dp) ? trainrt_world_size(dp->world_comm) : 1;

	for (int l = 0; l < p->n_layers; l++)
		if (tt_part_model_len(dp->model, p, l) > widest)
			widest = tt_part_model_len(dp->model, p, l);
	whole = malloc(sizeof(float) * widest);
	gathered = malloc(sizeof(float) * tt_dp_widest_layer(dp) * (size_t)p->tp);
	all = malloc(sizeof(uint32_t) * 3 * (size_t)world);
	if (!whole || !gathered || !all) {
		tt_err_set(err, "out of memory to checksum the model");
		goto out;
	}
	for (int l = 0; l < p->n_layers; l++) {
		size_t n = tt_part_model_len(dp->model, p, l);

		if (whole_layer(dp, l, whole, gathered, err))
			goto out;
		c = crc32(c, (const Bytef *)whole, (uInt)(sizeof(float) * n));
		bytes += sizeof(float) * n;
	}
	all[0] = (uint32_t)c; /* a rank alone: its checksum is the model's, nothing to gather */
	if (world > 1 && (cpu_allgather_u32(dp, (uint32_t)c, all, err) ||
			  cpu_allgather_u32(dp, (uint32_t)bytes, all + world, err) ||
			  cpu_allgather_u32(dp, (uint32_t)(bytes >> 32), all + 2 * world, err)))
		goto out;
	/* Stage s's first rank is s * (world / stages) (rank order of parallel.h). */
	c = all[0];
	for (int s = 1; s < p->stages; s++) {
		int r = s * (world / p->stages);

		c = crc32_combine(c, all[r], (z_off_t)((uint64_t)all[world + r] | (uint64_t)all[2 * world + r] << 32));
	}
	*crc = (uint32_t)c;
	rc = 0;
out:
	free(whole);
	free(gathered);
	free(all);
	return rc;
}

static const struct tt_dp_ops cpu_ops = {
	.device = cpu_device,
	.free = cpu_free,
	.train_step = cpu_train_step,
	.eval = cpu_eval,
	.allreduce_sum = cpu_allreduce_sum,
	.broadcast_bytes = cpu_broadcast_bytes,
	.allgather_u32 = cpu_allgather_u32,
	.export_slices = cpu_export,
	.import_slices = cpu_import,
	.params_crc32 = cpu_params_crc32,
};

int tt_dp_cpu_init(tt_dp *dp, tt_err *err)
{
	dp->ops = &cpu_ops;
	return cpu_init(dp, err);
}

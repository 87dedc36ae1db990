/* SPDX-License-Identifier: MIT */
/* dp_gpu.c — the data-parallel step on a CUDA GPU (tt_dp_cfg.gpu), its ops table installed by
 * tt_dp_gpu_init (dp_device.h): the same padded layout, buckets and step order as the CPU step,
 * with float32 master weights, gradients and moments, a bf16 copy of the weights refreshed after
 * each update, bf16 activations and math from gpu_mlp.h. Once backward has queued a bucket's last
 * layer, an event is recorded on the compute stream and the bucket's all-reduce is queued ordered
 * after it (trainrt_iallreduce_after): NCCL's stream waits for the event on the GPU, so the host
 * never waits and goes on queueing backward kernels while the bucket travels. AdamW of each bucket
 * is queued as soon as its all-reduce is done. DDP only: ZeRO stages run on the CPU. Built only
 * with CUDA (TT_HAVE_CUDA); without it tt_dp_init_part refuses cfg.gpu. */
#include <config.h>

#include "dp_device.h"
#include "gpu_mlp.h"

#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

struct tt_dp_gpu {
	tt_gpu *g;
	float *params, *grads, *m, *v; /* padded float32 (device) */
	uint16_t *wbf;		       /* padded bf16 working weights */
	float *xf;		       /* the step's inputs as uploaded (float32, all micro-batches) */
	uint16_t *act[TT_MLP_MAX_LAYERS + 1];
	float *z;		       /* pre-activations of one layer; the logits for the last */
	uint16_t *dy, *dx;
	int32_t *labels, *row_hit;     /* a whole local batch, so statistics come back once per step */
	float *row_loss;
	float *host_loss;
	int32_t *host_hit;
	tt_gpu_event *bucket_done[TT_MLP_MAX_LAYERS]; /* bucket b's gradients are complete on the stream */
	float *stage;		       /* this rank's slices, for all-gathers after a checkpoint load */
	float *scratch;		       /* host values on their way through NCCL */
	size_t scratch_floats;
	char describe[320];
};

static size_t padded_total(const tt_dp *dp)
{
	return dp->poff[dp->model->n_layers];
}

static int rows_per_step(const tt_dp *dp)
{
	return dp->cfg.micro_batch * dp->cfg.accum;
}

static void gpu_free(tt_dp *dp)
{
	struct tt_dp_gpu *d = dp->gpu;
	tt_gpu *g;

	if (!d)
		return;
	g = d->g;
	if (g) {
		void *bufs[] = { d->params, d->grads, d->m, d->v, d->wbf, d->xf, d->z, d->dy, d->dx,
				 d->labels, d->row_hit, d->row_loss, d->stage, d->scratch };

		for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
			tt_gpu_free(g, bufs[i]);
		for (int l = 0; l <= TT_MLP_MAX_LAYERS; l++)
			tt_gpu_free(g, d->act[l]);
		for (int b = 0; b < TT_MLP_MAX_LAYERS; b++)
			tt_gpu_event_destroy(d->bucket_done[b]);
		tt_gpu_close(g);
	}
	free(d->host_loss);
	free(d->host_hit);
	free(d);
	dp->gpu = NULL;
}

/* The device buffers and events, with every rank's initial weights; on failure tt_dp_free
 * (gpu_free) frees what was allocated. */
static int gpu_init(tt_dp *dp, tt_err *err)
{
	const tt_mlp *model = dp->model;
	int L = model->n_layers, rows = rows_per_step(dp), mb = dp->cfg.micro_batch;
	size_t total = padded_total(dp), widest = (size_t)tt_mlp_max_width(model);
	struct tt_dp_gpu *d;
	float *one = NULL;
	int rc = -1;

	if (dp->cfg.zero != 0)
		return tt_err_set(err, "--zero %d with --device gpu: the GPU path is DDP only (--zero 0); ZeRO stages run "
				  "with --device cpu", dp->cfg.zero);
	if (tt_dp_multi(dp) && !trainrt_buffers_on_device(dp->comm) && !tt_gpu_host_addressable())
		return tt_err_set(err, "--device gpu needs the nccl backend, but the communicator uses %s; unset "
				  "TRAINRT_BACKEND or set it to nccl", trainrt_backend_name(dp->comm));
	d = dp->gpu = calloc(1, sizeof(*d));
	if (!d)
		return tt_err_set(err, "out of memory");
	d->g = tt_gpu_open(dp->comm ? trainrt_local_rank(dp->comm) : 0, err);
	if (!d->g)
		goto fail;
	snprintf(d->describe, sizeof(d->describe), "%s bf16", tt_gpu_describe(d->g));
	d->scratch_floats = 1024 + (size_t)dp->world;
#define DEV(ptr, bytes) \
	do { if (!((ptr) = tt_gpu_alloc(d->g, (bytes), err))) goto fail; } while (0)
	DEV(d->params, total * sizeof(float));
	DEV(d->grads, total * sizeof(float));
	DEV(d->m, total * sizeof(float));
	DEV(d->v, total * sizeof(float));
	DEV(d->wbf, total * sizeof(uint16_t));
	DEV(d->xf, (size_t)rows * model->dims[0] * sizeof(float));
	for (int l = 0; l <= L; l++)
		DEV(d->act[l], (size_t)mb * model->dims[l] * sizeof(uint16_t));
	DEV(d->z, (size_t)mb * widest * sizeof(float));
	DEV(d->dy, (size_t)mb * widest * sizeof(uint16_t));
	DEV(d->dx, (size_t)mb * widest * sizeof(uint16_t));
	DEV(d->labels, (size_t)rows * sizeof(int32_t));
	DEV(d->row_hit, (size_t)rows * sizeof(int32_t));
	DEV(d->row_loss, (size_t)rows * sizeof(float));
	DEV(d->stage, tt_shard_total(&dp->plan) * sizeof(float));
	DEV(d->scratch, d->scratch_floats * sizeof(float));
#undef DEV
	for (int b = 0; b < dp->n_buckets; b++)
		if (!(d->bucket_done[b] = tt_gpu_event_create(d->g, err)))
			goto fail;
	d->host_loss = malloc((size_t)rows * sizeof(float));
	d->host_hit = malloc((size_t)rows * sizeof(int32_t));
	one = calloc(tt_dp_widest_layer(dp), sizeof(float));
	if (!d->host_loss || !d->host_hit || !one) {
		tt_err_set(err, "out of memory for the GPU step's host buffers");
		goto fail;
	}
	/* The same initial weights as the CPU path: generated on the host, layer by layer. */
	for (int l = 0; l < L; l++) {
		if (tt_dp_initial_layer(dp, l, one, err) ||
		    tt_gpu_put(d->g, d->params + dp->poff[l], one, sizeof(float) * (dp->poff[l + 1] - dp->poff[l]), err))
			goto fail;
	}
	if (tt_gpu_to_bf16(d->g, d->wbf, d->params, total, err) || tt_gpu_sync(d->g, err))
		goto fail;
	rc = 0;
fail:
	free(one);
	return rc;
}

static const char *gpu_device(const tt_dp *dp)
{
	return dp->gpu->describe;
}

/* ---- step ----------------------------------------------------------------------------------- */

static int check_labels(const tt_dp *dp, const int32_t *y, int n, tt_err *err)
{
	int classes = dp->model->dims[dp->model->n_layers];

	for (int i = 0; i < n; i++)
		if (y[i] < 0 || y[i] >= classes)
			return tt_err_set(err, "label %d of sample %d is outside the model's %d classes; check --layers "
					  "against the data set", y[i], i, classes);
	return 0;
}

/* Copies n samples and their labels to the device (a whole step's at once, so the time spent
 * reading pageable host memory is one number: dp->input_seconds). */
static int upload(tt_dp *dp, const float *x, const int32_t *y, int n, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	double t0 = tt_dp_now();

	if (check_labels(dp, y, n, err) || tt_gpu_put(d->g, d->labels, y, sizeof(int32_t) * (size_t)n, err) ||
	    tt_gpu_put(d->g, d->xf, x, sizeof(float) * (size_t)n * dp->model->dims[0], err))
		return -1;
	dp->input_seconds += tt_dp_now() - t0;
	return 0;
}

/* Runs every layer on n uploaded rows starting at xd; the logits end in d->z. */
static int forward(tt_dp *dp, const float *xd, int n, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	const tt_mlp *m = dp->model;
	int L = m->n_layers;

	if (tt_gpu_to_bf16(d->g, d->act[0], xd, (size_t)n * m->dims[0], err))
		return -1;
	for (int l = 0; l < L; l++) {
		int in = m->dims[l], out = m->dims[l + 1];

		if (tt_gpu_linear_forward(d->g, in, out, d->wbf + dp->poff[l], d->params + dp->poff[l] + (size_t)out * in,
					  d->act[l], n, d->z, l < L - 1 ? d->act[l + 1] : NULL, err))
			return -1;
	}
	return 0;
}

/* Queues the all-reduce of every bucket whose lowest layer is l, ordered after the kernels queued
 * so far (which complete the bucket's gradients) by an event: the host does not wait for them. */
static int bucket_ready(tt_dp *dp, int l, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;

	for (int b = 0; b < dp->n_buckets; b++) {
		const tt_bucket *bk = &dp->buckets[b];

		if (bk->lo_layer != l || !tt_dp_multi(dp))
			continue;
		if (tt_gpu_event_record(d->g, d->bucket_done[b], err))
			return -1;
		dp->req_g[b] = trainrt_iallreduce_after(dp->comm, d->grads + bk->off, d->grads + bk->off, bk->len,
							TRAINRT_FLOAT32, TRAINRT_SUM, tt_gpu_event_ready, d->bucket_done[b]);
		if (!dp->req_g[b])
			return tt_dp_comm_fail(dp, "all-reduce of a gradient bucket", err);
	}
	return 0;
}

static int backward(tt_dp *dp, int n, int first_micro, int last_micro, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	const tt_mlp *m = dp->model;
	int L = m->n_layers;
	uint16_t *dy = d->dy, *dx = d->dx;

	for (int l = L - 1; l >= 0; l--) {
		int in = m->dims[l], out = m->dims[l + 1];
		float *gw = d->grads + dp->poff[l];

		if (tt_gpu_linear_backward(d->g, in, out, d->wbf + dp->poff[l], d->act[l], l < L - 1 ? d->act[l + 1] : NULL,
					   dy, gw, gw + (size_t)out * in, first_micro ? 0.0f : 1.0f, l ? dx : NULL, n,
					   err))
			return -1;
		if (last_micro && bucket_ready(dp, l, err))
			return -1;
		uint16_t *t = dy;
		dy = dx;
		dx = t;
	}
	return 0;
}

static int optimizer_step(tt_dp *dp, long step, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	tt_adamw_step f = tt_adamw_step_factors(&dp->cfg.opt, step, tt_adamw_lr(&dp->cfg.opt, step));

	for (int b = 0; b < dp->n_buckets; b++) {
		const tt_bucket *bk = &dp->buckets[b];

		if (tt_dp_wait(dp, &dp->req_g[b], "all-reduce of a gradient bucket", err) ||
		    tt_gpu_adamw(d->g, &f, d->params + bk->off, d->grads + bk->off, d->m + bk->off, d->v + bk->off, bk->len,
				 err) ||
		    tt_gpu_to_bf16(d->g, d->wbf + bk->off, d->params + bk->off, bk->len, err))
			return -1;
	}
	return 0;
}

/* Adds the per-row losses and hits of n rows, in row order so the sum is reproducible. */
static int collect_stats(tt_dp *dp, int n, double *loss_sum, long *correct, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;

	if (n == 0)
		return 0;
	if (tt_gpu_get(d->g, d->host_loss, d->row_loss, sizeof(float) * (size_t)n, err) ||
	    tt_gpu_get(d->g, d->host_hit, d->row_hit, sizeof(int32_t) * (size_t)n, err))
		return -1;
	for (int i = 0; i < n; i++) {
		*loss_sum += d->host_loss[i];
		*correct += d->host_hit[i];
	}
	return 0;
}

static int gpu_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch,
			  double *loss_sum, long *correct, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	const tt_mlp *m = dp->model;
	int mb = dp->cfg.micro_batch, rows = rows_per_step(dp), L = m->n_layers;
	double t0 = tt_dp_now(), waited0 = dp->comm_wait_seconds, input0 = dp->input_seconds;

	if (upload(dp, x, y, rows, err))
		return -1;
	for (int k = 0; k < dp->cfg.accum; k++) {
		size_t r0 = (size_t)k * mb;

		if (forward(dp, d->xf + r0 * m->dims[0], mb, err) ||
		    tt_gpu_softmax_xent(d->g, d->z, d->labels + r0, mb, m->dims[L], 1.0f / (float)global_batch, d->dy,
					d->row_loss + r0, d->row_hit + r0, err) ||
		    backward(dp, mb, k == 0, k == dp->cfg.accum - 1, err))
			return -1;
	}
	if (optimizer_step(dp, step, err) || collect_stats(dp, rows, loss_sum, correct, err))
		return -1;
	/* The step's time less its input copy and its waits for all-reduces: GPU work is asynchronous,
	 * so the host cannot split forward, backward and update more finely than that. */
	dp->compute_seconds += tt_dp_now() - t0 - (dp->comm_wait_seconds - waited0) - (dp->input_seconds - input0);
	return 0;
}

static int gpu_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct,
		    tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	const tt_mlp *m = dp->model;

	if (n > dp->cfg.micro_batch)
		return tt_err_set(err, "evaluation batch of %d exceeds the micro-batch %d", n, dp->cfg.micro_batch);
	if (n == 0)
		return 0;
	if (upload(dp, x, y, n, err) || forward(dp, d->xf, n, err) ||
	    tt_gpu_softmax_xent(d->g, d->z, d->labels, n, m->dims[m->n_layers], 1.0f, d->dy, d->row_loss, d->row_hit,
				err))
		return -1;
	return collect_stats(dp, n, loss_sum, correct, err);
}

/* ---- host values through NCCL ---------------------------------------------------------------- */

static int scratch_fits(const tt_dp *dp, size_t floats, tt_err *err)
{
	if (floats > dp->gpu->scratch_floats)
		return tt_err_set(err, "%zu values exceed the GPU step's %zu-value exchange buffer", floats,
				  dp->gpu->scratch_floats);
	return 0;
}

static int gpu_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;

	if (scratch_fits(dp, (size_t)n, err) || tt_gpu_put(d->g, d->scratch, vals, sizeof(float) * (size_t)n, err))
		return -1;
	if (trainrt_allreduce(dp->comm, d->scratch, d->scratch, (size_t)n, TRAINRT_FLOAT32, TRAINRT_SUM))
		return tt_dp_comm_fail(dp, "all-reduce of step statistics", err);
	return tt_gpu_get(d->g, vals, d->scratch, sizeof(float) * (size_t)n, err);
}

static int gpu_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	size_t words = tt_dp_words(n);

	if (scratch_fits(dp, words, err) || tt_gpu_put(d->g, d->scratch, buf, n, err))
		return -1;
	if (trainrt_broadcast(dp->comm, d->scratch, words, TRAINRT_FLOAT32, 0))
		return tt_dp_comm_fail(dp, "broadcast from rank 0", err);
	return tt_gpu_get(d->g, buf, d->scratch, n, err);
}

static int gpu_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	float *gathered = d->scratch + 1;

	if (scratch_fits(dp, 1 + (size_t)dp->world, err) || tt_gpu_put(d->g, d->scratch, &mine, sizeof(mine), err))
		return -1;
	if (trainrt_allgather(dp->comm, d->scratch, gathered, 1, TRAINRT_FLOAT32))
		return tt_dp_comm_fail(dp, "all-gather of one word per rank", err);
	return tt_gpu_get(d->g, recv, gathered, sizeof(uint32_t) * (size_t)dp->world, err);
}

/* ---- checkpoints and checksums --------------------------------------------------------------- */

static int gpu_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err)
{
	const struct tt_dp_gpu *d = dp->gpu;
	const float *full[3] = { d->params, d->m, d->v };
	float *slices[3] = { p, m, v };

	for (int k = 0; k < 3; k++)
		for (int l = 0; l < dp->model->n_layers; l++) {
			size_t len = dp->plan.shard_len[l];

			if (tt_gpu_get(d->g, slices[k] + dp->plan.shard_off[l], full[k] + dp->poff[l] + dp->rank * len,
				       sizeof(float) * len, err))
				return -1;
		}
	return 0;
}

/* Fills the padded device vector full from every rank's host slices. Collective. */
static int gather_slices(tt_dp *dp, const float *slices, float *full, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;

	if (!tt_dp_multi(dp)) {
		/* Alone, this rank's slices are the whole padded layers. */
		for (int l = 0; l < dp->model->n_layers; l++)
			if (tt_gpu_put(d->g, full + dp->poff[l], slices + dp->plan.shard_off[l],
				       sizeof(float) * dp->plan.shard_len[l], err))
				return -1;
		return 0;
	}
	if (tt_gpu_put(d->g, d->stage, slices, sizeof(float) * tt_shard_total(&dp->plan), err))
		return -1;
	return tt_dp_gather_layers(dp, d->stage, full, err);
}

static int gpu_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;

	if (gather_slices(dp, p, d->params, err) || gather_slices(dp, m, d->m, err) || gather_slices(dp, v, d->v, err))
		return -1;
	return tt_gpu_to_bf16(d->g, d->wbf, d->params, padded_total(dp), err) || tt_gpu_sync(d->g, err) ? -1 : 0;
}

static int gpu_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err)
{
	struct tt_dp_gpu *d = dp->gpu;
	const tt_mlp *m = dp->model;
	uLong c = crc32(0L, Z_NULL, 0);
	float *host = malloc(sizeof(float) * tt_dp_widest_layer(dp));

	if (!host)
		return tt_err_set(err, "out of memory for the weights checksum");
	for (int l = 0; l < m->n_layers; l++) {
		size_t len = tt_mlp_layer_params(m, l);

		if (tt_gpu_get(d->g, host, d->params + dp->poff[l], sizeof(float) * len, err)) {
			free(host);
			return -1;
		}
		c = crc32(c, (const Bytef *)host, (uInt)(sizeof(float) * len));
	}
	free(host);
	*crc = (uint32_t)c;
	return 0;
}

static const struct tt_dp_ops gpu_ops = {
	.device = gpu_device,
	.free = gpu_free,
	.train_step = gpu_train_step,
	.eval = gpu_eval,
	.allreduce_sum = gpu_allreduce_sum,
	.broadcast_bytes = gpu_broadcast_bytes,
	.allgather_u32 = gpu_allgather_u32,
	.export_slices = gpu_export,
	.import_slices = gpu_import,
	.params_crc32 = gpu_params_crc32,
};

int tt_dp_gpu_init(tt_dp *dp, tt_err *err)
{
	dp->ops = &gpu_ops;
	return gpu_init(dp, err);
}

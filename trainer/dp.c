/* SPDX-License-Identifier: MIT */
/* dp.c — the data-parallel step: forward, loss, backward with gradient communication started
 * per bucket (DDP/ZeRO-1) or per layer (ZeRO-2/3) as soon as backward has produced it, then AdamW
 * on the full vector (DDP) or on this rank's slices followed by parameter all-gathers (see dp.h). */
#include <config.h>

#include "dp.h"
#include "dp_gpu.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* The GPU step is built only with CUDA; without it tt_dp_init refuses cfg.gpu and this is 0. */
#ifdef TT_HAVE_CUDA
#define ON_GPU(dp) ((dp)->gpu != NULL)
#else
#define ON_GPU(dp) 0
#endif

double tt_dp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int tt_dp_multi(const tt_dp *dp)
{
	return dp->comm && dp->world > 1;
}

static size_t plen(const tt_dp *dp, int l)
{
	return dp->poff[l + 1] - dp->poff[l];
}

int tt_dp_comm_fail(const tt_dp *dp, const char *what, tt_err *err)
{
	return tt_err_set(err, "%s failed: %s", what, trainrt_last_error(dp->comm));
}

int tt_dp_wait(tt_dp *dp, trainrt_req **req, const char *what, tt_err *err)
{
	double t0;
	int rc;

	if (!*req)
		return 0;
	t0 = tt_dp_now();
	rc = trainrt_wait(dp->comm, *req);
	*req = NULL;
	dp->comm_wait_seconds += tt_dp_now() - t0;
	return rc ? tt_dp_comm_fail(dp, what, err) : 0;
}

/* ---- setup ---------------------------------------------------------------------------------- */

size_t tt_dp_widest_layer(const tt_dp *dp)
{
	size_t widest = 0;

	for (int l = 0; l < dp->model->n_layers; l++)
		if (plen(dp, l) > widest)
			widest = plen(dp, l);
	return widest;
}

void tt_dp_initial_layer(const tt_dp *dp, int l, float *one)
{
	memset(one, 0, sizeof(float) * plen(dp, l)); /* padding must be zero */
	tt_mlp_init_layer(dp->model, l, dp->cfg.seed, one);
}

int tt_dp_init(tt_dp *dp, const tt_mlp *model, trainrt_comm *comm, const tt_dp_cfg *cfg, tt_err *err)
{
	size_t blocks[TT_MLP_MAX_LAYERS], total, s, widest;
	int L = model->n_layers;
	float *one = NULL; /* one padded layer at a time, so ZeRO-3 never holds the whole model */

	memset(dp, 0, sizeof(*dp));
	dp->model = model;
	dp->comm = comm;
	dp->cfg = *cfg;
	dp->world = comm ? trainrt_world_size(comm) : 1;
	dp->rank = comm ? trainrt_rank(comm) : 0;
	if (cfg->zero < 0 || cfg->zero > 3)
		return tt_err_set(err, "--zero %d: the ZeRO stage must be 0, 1, 2 or 3", cfg->zero);
	if (cfg->accum < 1 || cfg->micro_batch < 1)
		return tt_err_set(err, "micro-batch of %d samples x %d accumulation steps: both must be >= 1",
				  cfg->micro_batch, cfg->accum);
	for (int l = 0; l < L; l++)
		blocks[l] = tt_mlp_layer_params(model, l);
	if (tt_shard_plan_init(&dp->plan, blocks, L, dp->world, dp->rank, err))
		return -1;
	for (int l = 0; l < L; l++)
		dp->poff[l + 1] = dp->poff[l] + dp->plan.shard_len[l] * (size_t)dp->world;
	dp->n_buckets = tt_bucket_plan(dp->poff, L, sizeof(float), cfg->first_bucket_bytes, cfg->bucket_bytes,
				       dp->buckets, TT_MLP_MAX_LAYERS);
	if (cfg->gpu) {
#ifdef TT_HAVE_CUDA
		return tt_dp_gpu_init(dp, err);
#else
		return tt_err_set(err, "--device gpu: this build has no GPU path (configure found no CUDA toolkit; "
				  "see its summary, or pass --with-cuda=DIR)");
#endif
	}
	total = dp->poff[L];
	s = tt_shard_total(&dp->plan);

	if (cfg->zero < 3)
		dp->params = calloc(total, sizeof(float));
	else
		dp->pshard = calloc(s, sizeof(float));
	if (cfg->zero < 2) {
		/* In the communicator's own memory the bucket all-reduces skip staging copies. */
		if (tt_dp_multi(dp) && !trainrt_buffers_on_device(comm) &&
		    (dp->grads = trainrt_alloc(comm, total * sizeof(float)))) {
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
	widest = (size_t)tt_mlp_max_width(model);
	dp->act_rows = cfg->micro_batch;
	for (int l = 0; l <= L; l++)
		dp->act[l] = calloc((size_t)dp->act_rows * model->dims[l], sizeof(float));
	dp->dy = calloc((size_t)dp->act_rows * widest, sizeof(float));
	dp->dx = calloc((size_t)dp->act_rows * widest, sizeof(float));
	one = calloc(tt_dp_widest_layer(dp), sizeof(float));
	if ((cfg->zero < 3 && !dp->params) || (cfg->zero == 3 && !dp->pshard) || (cfg->zero < 2 && !dp->grads) ||
	    (cfg->zero >= 2 && (!dp->gshard || !dp->gpart)) || !dp->m || !dp->v || !dp->stage || !dp->dy ||
	    !dp->dx || !one)
		goto oom;
	for (int l = 0; l <= L; l++)
		if (!dp->act[l])
			goto oom;
	/* Every rank initialises the whole model the same way, then keeps what its stage needs. */
	for (int l = 0; l < L; l++) {
		tt_dp_initial_layer(dp, l, one);
		if (cfg->zero < 3)
			memcpy(dp->params + dp->poff[l], one, sizeof(float) * tt_mlp_layer_params(model, l));
		else
			memcpy(dp->pshard + dp->plan.shard_off[l], one + dp->rank * dp->plan.shard_len[l],
			       sizeof(float) * dp->plan.shard_len[l]);
	}
	free(one);
	return 0;
oom:
	free(one);
	tt_dp_free(dp);
	return tt_err_set(err, "cannot allocate training buffers for %zu parameters and micro-batch %d; use a "
			  "higher --zero stage, more --accum or a smaller model", model->n_params, cfg->micro_batch);
}

void tt_dp_free(tt_dp *dp)
{
	/* After a failed step operations may still be queued on these buffers: let them end first. */
	for (int l = 0; l < TT_MLP_MAX_LAYERS; l++) {
		if (dp->req_p[l])
			trainrt_wait(dp->comm, dp->req_p[l]);
		if (dp->req_g[l])
			trainrt_wait(dp->comm, dp->req_g[l]);
	}
	if (ON_GPU(dp))
		tt_dp_gpu_free(dp);
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
	for (int l = 0; l <= TT_MLP_MAX_LAYERS; l++)
		free(dp->act[l]);
	free(dp->dy);
	free(dp->dx);
	memset(dp, 0, sizeof(*dp));
}

/* ---- ZeRO-3 parameter gathers ------------------------------------------------------------------ */

static int start_gather(tt_dp *dp, int l, tt_err *err)
{
	size_t s = dp->plan.shard_len[l];
	const float *mine = dp->pshard + dp->plan.shard_off[l];

	dp->layer_p[l] = malloc(sizeof(float) * plen(dp, l));
	if (!dp->layer_p[l])
		return tt_err_set(err, "cannot allocate %zu floats to gather layer %d", plen(dp, l), l);
	if (!tt_dp_multi(dp)) {
		memcpy(dp->layer_p[l], mine, sizeof(float) * s);
		return 0;
	}
	dp->req_p[l] = trainrt_iallgather(dp->comm, mine, dp->layer_p[l], s, TRAINRT_FLOAT32);
	return dp->req_p[l] ? 0 : tt_dp_comm_fail(dp, "all-gather of layer parameters", err);
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

/* Forward of every layer on n rows of act[0]. Under ZeRO-3 layer l+1 is gathered while layer l
 * computes; every layer but the last is freed after use (backward gathers it again). */
static int forward(tt_dp *dp, int n, int keep_last, tt_err *err)
{
	int L = dp->model->n_layers;

	if (dp->cfg.zero == 3 && start_gather(dp, 0, err))
		return -1;
	for (int l = 0; l < L; l++) {
		double t0;

		if (dp->cfg.zero == 3) {
			if (tt_dp_wait(dp, &dp->req_p[l], "all-gather of layer parameters", err))
				return -1;
			if (l + 1 < L && start_gather(dp, l + 1, err))
				return -1;
		}
		t0 = tt_dp_now();
		if (n > 0)
			tt_mlp_forward_layer(dp->model, l, layer_params(dp, l), dp->act[l], dp->act[l + 1], n);
		dp->compute_seconds += tt_dp_now() - t0;
		if (dp->cfg.zero == 3 && (l < L - 1 || !keep_last))
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

static int backward(tt_dp *dp, int n, int first_micro, int last_micro, tt_err *err)
{
	int L = dp->model->n_layers;
	float *dy = dp->dy, *dx = dp->dx;

	for (int l = L - 1; l >= 0; l--) {
		float *g;
		float beta = 0.0f;
		double t0;

		if (dp->cfg.zero == 3) {
			if (tt_dp_wait(dp, &dp->req_p[l], "all-gather of layer parameters", err))
				return -1;
			if (l > 0 && start_gather(dp, l - 1, err))
				return -1;
		}
		if (dp->cfg.zero < 2) {
			g = dp->grads + dp->poff[l];
			beta = first_micro ? 0.0f : 1.0f;
		} else {
			g = dp->layer_g[l] = calloc(plen(dp, l), sizeof(float)); /* padding stays zero */
			if (!g)
				return tt_err_set(err, "cannot allocate %zu floats for layer %d gradients", plen(dp, l),
						  l);
		}
		t0 = tt_dp_now();
		tt_mlp_backward_layer(dp->model, l, layer_params(dp, l), dp->act[l], dp->act[l + 1], dy, g, beta,
				      l ? dx : NULL, n);
		dp->compute_seconds += tt_dp_now() - t0;
		if (dp->cfg.zero < 2 ? last_micro && bucket_ready(dp, l, err) : layer_grad_ready(dp, l, err))
			return -1;
		/* ZeRO-2/3 keep at most two layers' full gradients: the one just started and the one before. */
		if (dp->cfg.zero >= 2 && l + 1 < L && finish_layer_grad(dp, l + 1, err))
			return -1;
		if (dp->cfg.zero == 3)
			drop_layer(dp, l);
		float *t = dy;
		dy = dx;
		dx = t;
	}
	if (dp->cfg.zero >= 2) {
		size_t s = tt_shard_total(&dp->plan);

		if (finish_layer_grad(dp, 0, err))
			return -1;
		if (first_micro)
			memcpy(dp->gshard, dp->gpart, sizeof(float) * s);
		else
			for (size_t i = 0; i < s; i++)
				dp->gshard[i] += dp->gpart[i];
	} else if (last_micro && dp->cfg.zero == 1) {
		/* (DDP waits bucket by bucket in optimizer_step, updating each while later ones travel.) */
		for (int b = 0; b < dp->n_buckets; b++)
			if (tt_dp_wait(dp, &dp->req_g[b], "all-reduce of a gradient bucket", err))
				return -1;
	}
	return 0;
}

/* ---- optimizer ------------------------------------------------------------------------------ */

/* Fills the padded full `full` from every rank's slices (`slices` in shard layout). Collective. */
int tt_dp_gather_layers(tt_dp *dp, const float *slices, float *full, tt_err *err)
{
	int L = dp->model->n_layers;

	for (int l = 0; l < L; l++) {
		const float *mine = slices + dp->plan.shard_off[l];

		if (!tt_dp_multi(dp)) {
			memcpy(full + dp->poff[l], mine, sizeof(float) * dp->plan.shard_len[l]);
			continue;
		}
		dp->req_p[l] = trainrt_iallgather(dp->comm, mine, full + dp->poff[l], dp->plan.shard_len[l],
						  TRAINRT_FLOAT32);
		if (!dp->req_p[l])
			return tt_dp_comm_fail(dp, "all-gather of updated parameters", err);
	}
	for (int l = 0; l < L; l++)
		if (tt_dp_wait(dp, &dp->req_p[l], "all-gather of updated parameters", err))
			return -1;
	return 0;
}

/* This rank's slices of a padded full vector, in shard layout. */
static void take_slices(const tt_dp *dp, const float *full, float *slices)
{
	for (int l = 0; l < dp->model->n_layers; l++)
		memcpy(slices + dp->plan.shard_off[l], full + dp->poff[l] + dp->rank * dp->plan.shard_len[l],
		       sizeof(float) * dp->plan.shard_len[l]);
}

static int optimizer_step(tt_dp *dp, long step, tt_err *err)
{
	const tt_adamw_cfg *c = &dp->cfg.opt;
	float lr = tt_adamw_lr(c, step);
	double t0 = tt_dp_now();
	int L = dp->model->n_layers;

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

/* ---- public step ------------------------------------------------------------------------------ */

int tt_dp_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
		     long *correct, tt_err *err)
{
	const tt_mlp *m = dp->model;
	int mb = dp->cfg.micro_batch, L = m->n_layers;

	if (ON_GPU(dp))
		return tt_dp_gpu_train_step(dp, step, x, y, global_batch, loss_sum, correct, err);
	for (int k = 0; k < dp->cfg.accum; k++) {
		memcpy(dp->act[0], x + (size_t)k * mb * m->dims[0], sizeof(float) * mb * m->dims[0]);
		if (forward(dp, mb, 1, err))
			return -1;
		if (tt_softmax_xent(dp->act[L], y + (size_t)k * mb, mb, m->dims[L], 1.0f / (float)global_batch, dp->dy,
				    loss_sum, correct, err))
			return -1;
		if (backward(dp, mb, k == 0, k == dp->cfg.accum - 1, err))
			return -1;
	}
	return optimizer_step(dp, step, err);
}

int tt_dp_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err)
{
	const tt_mlp *m = dp->model;
	int L = m->n_layers;

	if (ON_GPU(dp))
		return tt_dp_gpu_eval(dp, x, y, n, loss_sum, correct, err);
	if (n > dp->act_rows)
		return tt_err_set(err, "evaluation batch of %d exceeds the micro-batch %d", n, dp->act_rows);
	if (n > 0)
		memcpy(dp->act[0], x, sizeof(float) * (size_t)n * m->dims[0]);
	if (forward(dp, n, 0, err))
		return -1;
	return tt_softmax_xent(dp->act[L], y, n, m->dims[L], 1.0f, dp->dy, loss_sum, correct, err);
}

int tt_dp_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err)
{
	if (!tt_dp_multi(dp))
		return 0;
	if (ON_GPU(dp))
		return tt_dp_gpu_allreduce_sum(dp, vals, n, err);
	if (trainrt_allreduce(dp->comm, vals, vals, (size_t)n, TRAINRT_FLOAT32, TRAINRT_SUM))
		return tt_dp_comm_fail(dp, "all-reduce of step statistics", err);
	return 0;
}

size_t tt_dp_words(size_t bytes)
{
	return (bytes + sizeof(float) - 1) / sizeof(float);
}

int tt_dp_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err)
{
	size_t words = tt_dp_words(n);
	float *staged = NULL;
	int rc = 0;

	/* float32 only moves the bytes here: a broadcast does no arithmetic. */
	if (!tt_dp_multi(dp))
		return 0;
	if (ON_GPU(dp))
		return tt_dp_gpu_broadcast_bytes(dp, buf, n, err);
	/* A length that is not whole words goes through a padded copy, so no byte is dropped. */
	if (n % sizeof(float)) {
		staged = calloc(words, sizeof(float));
		if (!staged)
			return tt_err_set(err, "out of memory for a broadcast of %zu bytes", n);
		memcpy(staged, buf, n);
	}
	if (trainrt_broadcast(dp->comm, staged ? (void *)staged : buf, words, TRAINRT_FLOAT32, 0))
		rc = tt_dp_comm_fail(dp, "broadcast from rank 0", err);
	else if (staged)
		memcpy(buf, staged, n);
	free(staged);
	return rc;
}

int tt_dp_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err)
{
	if (!tt_dp_multi(dp)) {
		recv[0] = mine;
		return 0;
	}
	if (ON_GPU(dp))
		return tt_dp_gpu_allgather_u32(dp, mine, recv, err);
	if (trainrt_allgather(dp->comm, &mine, recv, 1, TRAINRT_FLOAT32))
		return tt_dp_comm_fail(dp, "all-gather of one word per rank", err);
	return 0;
}

const char *tt_dp_device(const tt_dp *dp)
{
	if (ON_GPU(dp))
		return tt_dp_gpu_describe(dp);
	return "cpu (float32)";
}

int tt_dp_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err)
{
	size_t s = tt_shard_total(&dp->plan);

	if (ON_GPU(dp))
		return tt_dp_gpu_export(dp, p, m, v, err);
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

int tt_dp_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err)
{
	size_t s = tt_shard_total(&dp->plan);

	if (ON_GPU(dp))
		return tt_dp_gpu_import(dp, p, m, v, err);
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

int tt_dp_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err)
{
	const tt_mlp *m = dp->model;
	uLong c = crc32(0L, Z_NULL, 0);

	if (ON_GPU(dp))
		return tt_dp_gpu_params_crc32(dp, crc, err);
	for (int l = 0; l < m->n_layers; l++) {
		if (dp->cfg.zero == 3 &&
		    (start_gather(dp, l, err) || tt_dp_wait(dp, &dp->req_p[l], "all-gather of parameters", err)))
			return -1;
		c = crc32(c, (const Bytef *)layer_params(dp, l), (uInt)(sizeof(float) * tt_mlp_layer_params(m, l)));
		if (dp->cfg.zero == 3)
			drop_layer(dp, l);
	}
	*crc = (uint32_t)c;
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* dp.c — the data-parallel step's front (see dp.h): checks the configuration, plans the ZeRO
 * shards, the padded layout and the gradient buckets, creates the device's step once (dp_cpu.c,
 * or dp_gpu.c with CUDA) and hands every later call to its ops table (dp_device.h). */
#include <config.h>

#include "dp.h"
#include "dp_device.h"

#include <string.h>

int tt_dp_init_part(tt_dp *dp, const tt_mlp *model, const tt_part *part, const tt_dp_groups *g, const tt_dp_cfg *cfg,
		    tt_err *err)
{
	size_t blocks[TT_MLP_MAX_LAYERS];
	int L = part->n_layers, rc;

	memset(dp, 0, sizeof(*dp));
	dp->model = model;
	dp->part = *part;
	dp->comm = g->dp;
	dp->world_comm = g->world;
	dp->tp_comm = g->tp;
	dp->pp_comm = g->pp;
	dp->cfg = *cfg;
	dp->world = g->dp ? trainrt_world_size(g->dp) : 1;
	dp->rank = g->dp ? trainrt_rank(g->dp) : 0;
	if (cfg->zero < 0 || cfg->zero > 3)
		return tt_err_set(err, "--zero %d: the ZeRO stage must be 0, 1, 2 or 3", cfg->zero);
	if (cfg->accum < 1 || cfg->micro_batch < 1)
		return tt_err_set(err, "micro-batch of %d samples x %d accumulation steps: both must be >= 1",
				  cfg->micro_batch, cfg->accum);
	if (cfg->gpu && (part->tp > 1 || part->stages > 1 || cfg->recompute))
		return tt_err_set(err, "--device gpu runs data parallelism only; --tp, --pp and --recompute need --device cpu");
	for (int l = 0; l < L; l++)
		blocks[l] = part->len[l];
	if (tt_shard_plan_init(&dp->plan, blocks, L, dp->world, dp->rank, err))
		return -1;
	for (int l = 0; l < L; l++)
		dp->poff[l + 1] = dp->poff[l] + dp->plan.shard_len[l] * (size_t)dp->world;
	dp->n_buckets = tt_bucket_plan(dp->poff, L, sizeof(float), cfg->first_bucket_bytes, cfg->bucket_bytes,
				       dp->buckets, TT_MLP_MAX_LAYERS);
	if (cfg->gpu) {
#ifdef TT_HAVE_CUDA
		rc = tt_dp_gpu_init(dp, err);
#else
		return tt_err_set(err, "--device gpu: this build has no GPU path (configure found no CUDA toolkit; "
				  "see its summary, or pass --with-cuda=DIR)");
#endif
	} else {
		rc = tt_dp_cpu_init(dp, err);
	}
	if (rc)
		tt_dp_free(dp);
	return rc;
}

int tt_dp_init(tt_dp *dp, const tt_mlp *model, trainrt_comm *comm, const tt_dp_cfg *cfg, tt_err *err)
{
	tt_plan3d one = { 1, 1, 1 };
	tt_dp_groups g = { comm, comm, NULL, NULL };
	tt_part whole;

	tt_part_build(&whole, model, &one, (tt_coords){ 0, 0, 0 });
	return tt_dp_init_part(dp, model, &whole, &g, cfg, err);
}

void tt_dp_free(tt_dp *dp)
{
	/* After a failed step operations may still be queued on the device's buffers: let them end
	 * before it frees them. */
	for (int l = 0; l < TT_MLP_MAX_LAYERS; l++) {
		if (dp->req_p[l])
			trainrt_wait(dp->comm, dp->req_p[l]);
		if (dp->req_g[l])
			trainrt_wait(dp->comm, dp->req_g[l]);
	}
	for (int k = 0; k < dp->n_slots; k++) {
		if (dp->slot_req_act && dp->slot_req_act[k])
			trainrt_wait(dp->pp_comm, dp->slot_req_act[k]);
		if (dp->slot_req_grad && dp->slot_req_grad[k])
			trainrt_wait(dp->pp_comm, dp->slot_req_grad[k]);
	}
	if (dp->ops) /* NULL when tt_dp_init_part refused the configuration */
		dp->ops->free(dp);
	memset(dp, 0, sizeof(*dp));
}

/* Bytes this rank's communicators have sent so far (trainrt_bytes_sent of a NULL one is 0). */
static uint64_t comms_bytes_sent(const tt_dp *dp)
{
	return trainrt_bytes_sent(dp->comm) + trainrt_bytes_sent(dp->tp_comm) + trainrt_bytes_sent(dp->pp_comm);
}

/* The step's traffic is counted here, for every device's step alike. */
int tt_dp_train_step(tt_dp *dp, long step, const float *x, const int32_t *y, long global_batch, double *loss_sum,
		     long *correct, tt_err *err)
{
	uint64_t sent0 = comms_bytes_sent(dp);

	if (dp->ops->train_step(dp, step, x, y, global_batch, loss_sum, correct, err))
		return -1;
	dp->bytes_sent += comms_bytes_sent(dp) - sent0;
	return 0;
}

int tt_dp_eval(tt_dp *dp, const float *x, const int32_t *y, int n, double *loss_sum, long *correct, tt_err *err)
{
	return dp->ops->eval(dp, x, y, n, loss_sum, correct, err);
}

double tt_dp_bubble(const tt_dp *dp)
{
	return dp->schedule_seconds > 0 && dp->part.stages > 1 ? dp->pp_wait_seconds / dp->schedule_seconds : 0.0;
}

/* The world's agreements: a rank alone has nothing to exchange, whatever its device. */
int tt_dp_allreduce_sum(tt_dp *dp, float *vals, int n, tt_err *err)
{
	return tt_dp_world_multi(dp) ? dp->ops->allreduce_sum(dp, vals, n, err) : 0;
}

int tt_dp_broadcast_bytes(tt_dp *dp, void *buf, size_t n, tt_err *err)
{
	return tt_dp_world_multi(dp) ? dp->ops->broadcast_bytes(dp, buf, n, err) : 0;
}

int tt_dp_allgather_u32(tt_dp *dp, uint32_t mine, uint32_t *recv, tt_err *err)
{
	if (!tt_dp_world_multi(dp)) {
		recv[0] = mine;
		return 0;
	}
	return dp->ops->allgather_u32(dp, mine, recv, err);
}

const char *tt_dp_device(const tt_dp *dp)
{
	return dp->ops->device(dp);
}

int tt_dp_export(const tt_dp *dp, float *p, float *m, float *v, tt_err *err)
{
	return dp->ops->export_slices(dp, p, m, v, err);
}

int tt_dp_import(tt_dp *dp, const float *p, const float *m, const float *v, tt_err *err)
{
	return dp->ops->import_slices(dp, p, m, v, err);
}

int tt_dp_params_crc32(tt_dp *dp, uint32_t *crc, tt_err *err)
{
	return dp->ops->params_crc32(dp, crc, err);
}

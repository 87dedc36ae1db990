/* SPDX-License-Identifier: MIT */
/* dp_device.c — the bookkeeping the CPU and GPU data-parallel steps share (see dp_device.h): the
 * clock, waits that count their time, communicator errors, every rank's initial weights and the
 * per-layer all-gathers of the padded layout. It calls neither step. */
#include <config.h>

#include "dp_device.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* The step statistics and agreements span the world. */
int tt_dp_world_multi(const tt_dp *dp)
{
	return dp->world_comm && trainrt_world_size(dp->world_comm) > 1;
}

int tt_dp_comm_fail(const tt_dp *dp, const char *what, tt_err *err)
{
	return tt_err_set(err, "%s failed: %s", what, trainrt_last_error(dp->comm));
}

int tt_dp_wait_timed(trainrt_comm *c, trainrt_req **req, double *seconds)
{
	double t0 = tt_dp_now();
	int rc;

	if (!*req)
		return 0;
	rc = trainrt_wait(c, *req);
	*req = NULL;
	*seconds += tt_dp_now() - t0;
	return rc;
}

int tt_dp_wait(tt_dp *dp, trainrt_req **req, const char *what, tt_err *err)
{
	return tt_dp_wait_timed(dp->comm, req, &dp->comm_wait_seconds) ? tt_dp_comm_fail(dp, what, err) : 0;
}

size_t tt_dp_widest_layer(const tt_dp *dp)
{
	size_t widest = 0;

	for (int l = 0; l < dp->part.n_layers; l++)
		if (tt_dp_padded_len(dp, l) > widest)
			widest = tt_dp_padded_len(dp, l);
	return widest;
}

int tt_dp_initial_layer(const tt_dp *dp, int l, float *one, tt_err *err)
{
	size_t n = tt_part_model_len(dp->model, &dp->part, l);
	float *whole = malloc(sizeof(float) * n);

	if (!whole)
		return tt_err_set(err, "out of memory for the %zu initial weights of layer %d", n, dp->part.layer[l].global);
	memset(one, 0, sizeof(float) * tt_dp_padded_len(dp, l)); /* padding must be zero */
	tt_part_init_layer(dp->model, &dp->part, l, dp->cfg.seed, whole, one);
	free(whole);
	return 0;
}

int tt_dp_gather_layers(tt_dp *dp, const float *slices, float *full, tt_err *err)
{
	int L = dp->part.n_layers;

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

size_t tt_dp_words(size_t bytes)
{
	return (bytes + sizeof(float) - 1) / sizeof(float);
}

/* SPDX-License-Identifier: MIT */
/* comm_group.c — trainrt_comm_split: groups of a communicator. The ranks agree through the store
 * (each publishes color, key, world rank and node), every rank computes the same groups, and each
 * group builds its own backend on the best path for where its ranks are (trainrt.h). A group is
 * a trainrt_comm of its own, whose store keys live under a namespace no other group shares. */
#include "comm_priv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct split_rec {
	int32_t color, key, world_rank, world_node;
} split_rec;
_Static_assert(sizeof(split_rec) % sizeof(float) == 0 && sizeof(split_rec) <= RT_HOST_ALLGATHER_MAX,
	       "a split record travels as whole float32 elements of a host all-gather");

/* Every rank's record of this split, in rank order: an all-gather over the communicator itself
 * (c is held: nothing else runs on it), so each rank moves n records once. (Through the store it
 * took n gets per rank, n^2 requests for one server thread: 1.87 s at 256 ranks on 2 cores, 0.21 s now;
 * BENCHMARKS.md, "Communicator split".) */
static int exchange(trainrt_comm *c, const split_rec *mine, split_rec *all, tt_err *err)
{
	rt_op op = { .hdr = { .kind = RT_ALLGATHER, .dtype = TRAINRT_FLOAT32, .redop = TRAINRT_SUM,
			      .count = sizeof(*mine) / sizeof(float), .seq = ++c->seq },
		     .send = mine, .recv = all };

	int rc = c->be->ops->host_allgather ? c->be->ops->host_allgather(c->be, &op, err) : rt_backend_run(c->be, &op, err);

	return rc != 0 ? tt_err_wrap(err, "agreeing on the groups") : 0;
}

/* Orders members[0..n) by key, then by rank in the parent (insertion sort: groups are small). */
static void sort_members(int *members, int n, const split_rec *all)
{
	for (int i = 1; i < n; i++) {
		int m = members[i], j = i;

		while (j > 0 && (all[members[j - 1]].key > all[m].key ||
				 (all[members[j - 1]].key == all[m].key && members[j - 1] > m))) {
			members[j] = members[j - 1];
			j--;
		}
		members[j] = m;
	}
}

/* The group's world: ranks, and the node structure its backend needs. Every node holding the
 * same number of its ranks in consecutive group ranks is "regular" (what shm + TCP needs). */
static int group_world(trainrt_comm *c, trainrt_comm *g, const split_rec *all, const int *members, int n,
		       int *regular, tt_err *err)
{
	rt_world *w = &g->w;
	int run = 0, runs = 0, first_run = -1, me = -1;

	g->world_ranks = malloc(sizeof(int) * (size_t)n);
	if (!g->world_ranks)
		return tt_err_set(err, "out of memory");
	*regular = 1;
	w->local_rank = w->local_size = 0;
	for (int i = 0; i < n; i++) {
		int node = all[members[i]].world_node;

		g->world_ranks[i] = all[members[i]].world_rank;
		if (members[i] == c->w.rank)
			me = i;
		if (node == c->world_node)
			w->local_size++;
		if (i > 0 && node == all[members[i - 1]].world_node) {
			run++;
			continue;
		}
		/* A new run of one node: it must not have been met before, and runs must be equal. */
		for (int j = 0; j < i; j++)
			if (all[members[j]].world_node == node)
				*regular = 0;
		if (i > 0 && first_run < 0)
			first_run = run;
		else if (i > 0 && run != first_run)
			*regular = 0;
		runs++;
		run = 1;
	}
	if (first_run >= 0 && run != first_run)
		*regular = 0;
	for (int i = 0; i < me; i++)
		if (all[members[i]].world_node == c->world_node)
			w->local_rank++;
	w->rank = me;
	w->size = n;
	w->world_ranks = g->world_ranks;
	w->store = c->w.store;
	memcpy(g->key, c->key, sizeof(g->key));
	w->key = g->key;
	w->key_label = c->w.key_label;
	w->timeout = c->w.timeout;
	w->arena_bytes = c->w.arena_bytes;
	w->tcp_ring_only = c->w.tcp_ring_only;
	w->master_is_name = c->w.master_is_name;
	w->nnodes = runs;
	w->node = 0;
	for (int i = 1; i <= me; i++)
		if (all[members[i]].world_node != all[members[i - 1]].world_node)
			w->node++;
	g->world_rank = c->world_rank;
	g->world_node = c->world_node;
	return 0;
}

static rt_backend *host_backend(trainrt_comm *c, rt_world *w, int regular, tt_err *err)
{
	if (strcmp(c->be->ops->name, "tcp") == 0 || !regular)
		return rt_tcp_world_create(w, err);
	if (w->nnodes == 1)
		return rt_shm_create(w, err);
	return rt_hier_create(w, err);
}

/* Builds this rank's group (members[] in group order); NULL and err on failure. */
static trainrt_comm *build(trainrt_comm *c, int color, int key, const split_rec *all, const int *members, int n,
			   tt_err *err)
{
	trainrt_comm *g = rt_comm_new_group();
	int regular = 0;

	if (!g) {
		tt_err_set(err, "out of memory");
		return NULL;
	}
	if (snprintf(g->ns, sizeof(g->ns), "%sg%llu.%d/", c->ns, (unsigned long long)c->nsplit, color) >=
	    (int)sizeof(g->ns)) {
		tt_err_set(err, "groups nested too deeply (their store namespace exceeds %zu bytes)", sizeof(g->ns));
		goto fail;
	}
	if (group_world(c, g, all, members, n, &regular, err) != 0)
		goto fail;
	if (c->be->ops->split) {
		if (c->be->ops->split(c->be, &g->w, color, key, &g->be, err) != 0)
			g->be = NULL;
	} else
		g->be = host_backend(c, &g->w, regular, err);
	if (!g->be || rt_comm_start(g, err) != 0)
		goto fail;
	return g;
fail:
	g->failed = 1;
	trainrt_finalize(g);
	return NULL;
}

int trainrt_comm_split(trainrt_comm *c, int color, int key, trainrt_comm **group)
{
	tt_err err = { "" };
	split_rec mine, *all = NULL;
	int *members = NULL, n = 0;

	if (!c || !group)
		return -1;
	*group = NULL;
	if (color < TRAINRT_UNDEFINED) {
		rt_comm_error(c, "split color %d: use a color >= 0, or TRAINRT_UNDEFINED to join no group", color);
		return -1;
	}
	if (rt_comm_hold(c) != 0)
		return -1;
	c->nsplit++;
	mine = (split_rec){ color, key, c->world_rank, c->world_node };
	all = calloc((size_t)c->w.size, sizeof(*all));
	members = calloc((size_t)c->w.size, sizeof(int));
	if (!all || !members) {
		tt_err_set(&err, "out of memory");
		goto fail;
	}
	if (exchange(c, &mine, all, &err) != 0)
		goto fail;
	for (int r = 0; r < c->w.size; r++)
		if (color >= 0 && all[r].color == color)
			members[n++] = r;
	sort_members(members, n, all);
	if (color >= 0) {
		*group = build(c, color, key, all, members, n, &err);
		if (!*group)
			goto fail;
	} else if (c->be->ops->split) {
		rt_backend *none = NULL;

		/* NCCL's split is collective over the parent: a rank in no group still takes part. */
		if (c->be->ops->split(c->be, NULL, color, key, &none, &err) != 0)
			goto fail;
	}
	rt_comm_release(c);
	free(all);
	free(members);
	return 0;
fail:
	rt_comm_release(c);
	tt_err_wrap(&err, "split #%llu", (unsigned long long)c->nsplit);
	rt_comm_error(c, "%s", err.msg);
	free(all);
	free(members);
	return -1;
}

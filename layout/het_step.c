/* SPDX-License-Identifier: MIT */
/* het_step.c — a heterogeneous step's nodes in rank order (het_step.h): the step's sorted
 * nodelist put in the order of the components' own nodelists. Pure: the strings come from the
 * caller (tt_step_facts_from_env reads them from the task's environment). */
#include "het_step.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "hostlist.h"

struct named_index {
	const char *name;
	size_t index;
};

struct sorted_hosts {
	char **hosts;
	struct named_index *by_name;	/* hosts with their indices, sorted by name */
	size_t n;
};

static int by_name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct named_index *)a)->name, ((const struct named_index *)b)->name);
}

/* The index of host in s->hosts, or -1. */
static long find_host(const struct sorted_hosts *s, const char *host)
{
	size_t lo = 0, hi = s->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->by_name[mid].name, host);

		if (c == 0)
			return (long)s->by_name[mid].index;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* How many of the n hosts are in the step. */
static size_t nodes_in_step(const struct sorted_hosts *step, char *const *hosts, size_t n)
{
	size_t in_step = 0;

	for (size_t i = 0; i < n; i++)
		in_step += find_host(step, hosts[i]) >= 0;
	return in_step;
}

/* Appends the nodes of component k (list, expanded: its n hosts; it has nodes in a step of
 * several components) to order[*placed..] and list to nodelist; -1 with err when the step runs on
 * part of them only, or one of them is another component's too. */
static int place_component(const struct sorted_hosts *step, const char *list, char *const *hosts,
			   size_t n, size_t k, long *owner, size_t *order, size_t *placed,
			   char *nodelist, size_t nodelist_len, tt_err *err)
{
	size_t used;

	for (size_t i = 0; i < n; i++) {
		long idx = find_host(step, hosts[i]);

		if (idx < 0)
			return tt_err_set(err, "heterogeneous step: it runs on part of the nodes of "
					  "component %zu (%s: not on %s), so the order of its ranks across "
					  "components cannot be told: run each component of the step on all "
					  "of its nodes", k, list, hosts[i]);
		if (owner[idx] >= 0)
			return tt_err_set(err, "heterogeneous step: node %s is in components %ld and "
					  "%zu, whose GPUs and tasks on it cannot be told apart: give each "
					  "component nodes of its own", hosts[i], owner[idx], k);
		owner[idx] = (long)k;
		order[(*placed)++] = (size_t)idx;
	}
	used = strlen(nodelist);
	if (used + 1 + strlen(list) >= nodelist_len)
		return tt_err_set(err, "heterogeneous step: the components' nodelists are longer than "
				  "%zu characters", nodelist_len - 1);
	strcpy(nodelist + used, used ? "," : "");
	strcat(nodelist, list);
	return 0;
}

int tt_het_step_order(const char *step_nodelist, const char *const *components,
		      size_t ncomponents, const char *host, uint32_t node_id, char *nodelist,
		      size_t nodelist_len, size_t **order, size_t *nnodes, tt_err *err)
{
	struct sorted_hosts step = {0};
	size_t *placed_order = NULL, placed = 0, ncomp = 0;
	bool in_step_of[TT_HET_COMPONENTS_MAX] = {false};
	char **hosts[TT_HET_COMPONENTS_MAX] = {NULL};	/* each component's, expanded once */
	size_t nhosts[TT_HET_COMPONENTS_MAX] = {0};
	long *owner = NULL, here;
	char *joined = NULL;
	int rc = -1;

	*order = NULL;
	*nnodes = 0;
	if (ncomponents > TT_HET_COMPONENTS_MAX)
		return tt_err_set(err, "heterogeneous job of %zu components: Slurm allows %d",
				  ncomponents, TT_HET_COMPONENTS_MAX);
	if (tt_hostlist_expand(step_nodelist, &step.hosts, &step.n, err) != 0)
		return tt_err_wrap(err, "SLURM_STEP_NODELIST");
	/* One more than needed: calloc(0) may return NULL. */
	step.by_name = calloc(step.n + 1, sizeof(*step.by_name));
	placed_order = calloc(step.n + 1, sizeof(*placed_order));
	owner = calloc(step.n + 1, sizeof(*owner));
	joined = calloc(1, nodelist_len);
	if (!step.by_name || !placed_order || !owner || !joined) {
		tt_err_set(err, "out of memory for a step of %zu nodes", step.n);
		goto out;
	}
	for (size_t i = 0; i < step.n; i++) {
		step.by_name[i] = (struct named_index){step.hosts[i], i};
		owner[i] = -1;
	}
	qsort(step.by_name, step.n, sizeof(*step.by_name), by_name_cmp);
	/* The step's components: those with nodes in it. */
	for (size_t k = 0; k < ncomponents; k++) {
		if (!components[k])
			continue;
		if (tt_hostlist_expand(components[k], &hosts[k], &nhosts[k], err) != 0) {
			tt_err_wrap(err, "SLURM_JOB_NODELIST_HET_GROUP_%zu", k);
			goto out;
		}
		in_step_of[k] = nodes_in_step(&step, hosts[k], nhosts[k]) > 0;
		ncomp += in_step_of[k];
	}
	if (ncomp < 2) {
		rc = 0;
		goto out;
	}
	for (size_t k = 0; k < ncomponents; k++)
		if (in_step_of[k] && place_component(&step, components[k], hosts[k], nhosts[k], k, owner,
						     placed_order, &placed, joined, nodelist_len, err) != 0)
			goto out;
	if (placed != step.n) {
		tt_err_set(err, "heterogeneous step: its components' nodelists (%s) cover %zu of the "
			   "%zu nodes of SLURM_STEP_NODELIST=%s", joined, placed, step.n,
			   step_nodelist);
		goto out;
	}
	here = find_host(&step, host);
	if (here < 0) {
		tt_err_set(err, "heterogeneous step: this node (SLURMD_NODENAME=%s) is not in "
			   "SLURM_STEP_NODELIST=%s", host, step_nodelist);
		goto out;
	}
	for (size_t i = 0; i < placed; i++) {
		if ((long)placed_order[i] == here && i != node_id) {
			tt_err_set(err, "heterogeneous step: this node %s is node %zu of its "
				   "components' nodelists in order (%s), but SLURM_NODEID is %u",
				   host, i, joined, node_id);
			goto out;
		}
	}
	strcpy(nodelist, joined);
	*order = placed_order;
	*nnodes = placed;
	placed_order = NULL;
	rc = 1;
out:
	for (size_t k = 0; k < ncomponents; k++)
		tt_hostlist_free(hosts[k], nhosts[k]);
	tt_hostlist_free(step.hosts, step.n);
	free(step.by_name);
	free(placed_order);
	free(owner);
	free(joined);
	return rc;
}

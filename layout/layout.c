/* SPDX-License-Identifier: MIT */
/* layout.c — the env contract: step facts -> one process's RANK/LOCAL_RANK/.../GPU variables.
 * The GPU split is documented in layout.h (MASTER_PORT in rendezvous.h); this file keeps it in
 * one place for the plugin's per-task case and train-run's per-worker case. */
#include "layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "het_step.h"
#include "hostlist.h"
#include "tt_parse.h"

/* All of s[0..len) as a decimal number <= max (the shared strict parser over a field). */
static int parse_u32(const char *s, size_t len, uint32_t max, uint32_t *v)
{
	long long x;

	if (tt_parse_int_span(s, len, 0, max, &x) != 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* Walks a tasks-per-node value: the task count of node index node (when below the node count),
 * the node count, the task total, and with counts (ncounts entries) each node's count. */
static int tpn_parse(const char *spec, uint32_t node, uint32_t *on_node, uint32_t *nnodes,
		     uint32_t *ntasks, uint32_t *counts, uint32_t ncounts, tt_err *err)
{
	uint64_t nodes = 0, tasks = 0;
	uint32_t here = 0;

	for (const char *p = spec;;) {
		size_t len = strcspn(p, ",");
		const char *paren = memchr(p, '(', len);
		uint32_t count, reps = 1;

		if (parse_u32(p, paren ? (size_t)(paren - p) : len, UINT32_MAX, &count) != 0 ||
		    count == 0 ||
		    (paren && (len - (size_t)(paren - p) < 4 || strncmp(paren, "(x", 2) != 0 ||
			       p[len - 1] != ')' ||
			       parse_u32(paren + 2, len - (size_t)(paren - p) - 3, UINT32_MAX,
					 &reps) != 0 || reps == 0)))
			return tt_err_set(err, "tasks per node '%s': element '%.*s' is not N or N(xR) "
					  "with N, R >= 1 (Slurm writes e.g. 2(x3),1)", spec,
					  (int)len, p);
		if (node >= nodes && node < nodes + reps)
			here = count;
		for (uint64_t k = nodes; counts && k < nodes + reps && k < ncounts; k++)
			counts[k] = count;
		nodes += reps;
		tasks += (uint64_t)count * reps;
		if (nodes > UINT32_MAX || tasks > UINT32_MAX)
			return tt_err_set(err, "tasks per node '%s' describes more than %u tasks or "
					  "nodes", spec, UINT32_MAX);
		if (!p[len])
			break;
		p += len + 1;
	}
	*on_node = here;
	*nnodes = (uint32_t)nodes;
	*ntasks = (uint32_t)tasks;
	return 0;
}

int tt_tasks_per_node(const char *spec, uint32_t node, uint32_t *on_node, uint32_t *nnodes,
		      uint32_t *ntasks, tt_err *err)
{
	if (tpn_parse(spec, node, on_node, nnodes, ntasks, NULL, 0, err) != 0)
		return -1;
	if (node >= *nnodes)
		return tt_err_set(err, "tasks per node '%s' describes %u nodes: node index %u is "
				  "not among them", spec, *nnodes, node);
	return 0;
}

int tt_gpu_split(size_t ngpus, uint32_t ntasks, uint32_t local, size_t *first, size_t *count)
{
	if (ntasks == 0 || local >= ntasks)
		return -1;
	if (ngpus == 0) {
		*first = 0;
		*count = 0;
		return 0;
	}
	if (ngpus >= ntasks) {
		*count = ngpus / ntasks;
		*first = local * *count;
		return ngpus % ntasks ? 1 : 0;
	}
	*first = (size_t)local * ngpus / ntasks;
	*count = 1;
	return 1;
}

static void add_warning(struct tt_task_env *out, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void add_warning(struct tt_task_env *out, const char *fmt, ...)
{
	va_list ap;

	if (out->nwarnings == TT_WARN_MAX)
		return;
	va_start(ap, fmt);
	vsnprintf(out->warnings[out->nwarnings++], TT_WARN_LEN, fmt, ap);
	va_end(ap);
}

/* What tasks and workers share: node count, MASTER_ADDR, MASTER_PORT (rendezvous.h: the
 * launcher's when it resolved them, else the step's own). */
static int fill_step(const struct tt_step_facts *f, struct tt_task_env *out, tt_err *err)
{
	struct tt_rendezvous step;
	char first[TT_HOSTNAME_LEN];
	size_t nnodes;

	memset(out, 0, sizeof(*out));
	if (tt_hostlist_first(f->nodelist, first, sizeof(first), &nnodes, err) != 0)
		return tt_err_wrap(err, "step nodelist");
	if (f->nactive > nnodes)
		return tt_err_set(err, "%u nodes of the program's world, but nodelist '%s' has %zu",
				  f->nactive, f->nodelist, nnodes);
	if (f->nactive)
		nnodes = f->nactive;
	if (f->node_index >= nnodes)
		return tt_err_set(err, "node index %u (SLURM_NODEID) is outside the %zu nodes of "
				  "nodelist '%s'", f->node_index, nnodes, f->nodelist);
	out->nnodes = (uint32_t)nnodes;
	out->node_rank = f->node_index;
	if (!f->rdzv.port) {
		struct tt_rdzv_sources s = {
			.slurm = true, .step_host = first, .resv_ports = f->resv_ports,
			.job_id = f->job_id, .step_id = f->step_id, .ports = f->ports,
		};

		if (tt_rendezvous_resolve(&s, &step, err) != 0)
			return -1;
	}
	memcpy(out->master_addr, f->rdzv.port ? f->rdzv.addr : step.addr, sizeof(out->master_addr));
	out->master_port = f->rdzv.port ? f->rdzv.port : step.port;
	return 0;
}

/* GPUs of process `local` of `nlocal` on this node, by the one split rule. */
static int fill_gpus(const struct tt_gpu_list *gpus, uint32_t nlocal, uint32_t local,
		     const char *what, struct tt_task_env *out, tt_err *err)
{
	size_t first, count;
	int uneven = tt_gpu_split(gpus->n, nlocal, local, &first, &count);

	if (gpus->n == 0)
		return 0;
	if (uneven == 1 && gpus->n < nlocal)
		add_warning(out, "%zu GPUs for %u %s on this node: %s share GPUs", gpus->n, nlocal,
			    what, what);
	else if (uneven == 1)
		add_warning(out, "%zu GPUs for %u %s on this node: %zu GPUs stay unused", gpus->n,
			    nlocal, what, gpus->n % nlocal);
	return tt_gpu_list_join(gpus, first, count, out->cuda_visible_devices,
				sizeof(out->cuda_visible_devices), err);
}

int tt_layout_compute(const struct tt_step_facts *f, struct tt_task_env *out, tt_err *err)
{
	uint32_t on_node, tpn_nodes, tpn_tasks;

	if (fill_step(f, out, err) != 0)
		return -1;
	if (!f->tasks_per_node[0])
		return tt_err_set(err, "tasks per node unknown: neither SLURM_STEP_TASKS_PER_NODE nor "
				  "SLURM_TASKS_PER_NODE is set");
	if (tt_tasks_per_node(f->tasks_per_node, f->node_index, &on_node, &tpn_nodes, &tpn_tasks,
			      err) != 0)
		return -1;
	if (tpn_nodes != out->nnodes)
		return tt_err_set(err, "tasks per node '%s' describes %u nodes but nodelist '%s' has "
				  "%u: both must come from the same step", f->tasks_per_node,
				  tpn_nodes, f->nodelist, out->nnodes);
	if (f->ntasks && f->ntasks != tpn_tasks)
		return tt_err_set(err, "step has %u tasks but tasks per node '%s' adds up to %u",
				  f->ntasks, f->tasks_per_node, tpn_tasks);
	if (f->task_id >= tpn_tasks || f->local_id >= on_node)
		return tt_err_set(err, "task %u (SLURM_PROCID), local %u (SLURM_LOCALID) is outside "
				  "the step's %u tasks, %u on node %u", f->task_id, f->local_id,
				  tpn_tasks, on_node, f->node_index);
	out->rank = f->task_id;
	out->world_size = tpn_tasks;
	out->local_rank = f->local_id;
	out->local_world_size = on_node;
	if (!f->slurm_bound_gpus &&
	    fill_gpus(&f->gpus, on_node, f->local_id, "tasks", out, err) != 0)
		return -1;
	if (!f->omp_set)
		out->omp_num_threads = f->cpus;
	return 0;
}

/* Slurm's compressed form of per-node counts: "8(x2)", "8,4", "8(x2),4". */
static int format_tasks_per_node(const uint32_t *per_node, uint32_t nproc, uint32_t nnodes,
				 char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (uint32_t k = 0; k < nnodes;) {
		uint32_t c = per_node ? per_node[k] : nproc, reps = 1;
		int n;

		while (k + reps < nnodes && (per_node ? per_node[k + reps] : nproc) == c)
			reps++;
		n = reps > 1 ? snprintf(buf + used, len - used, "%s%u(x%u)", used ? "," : "", c, reps)
			     : snprintf(buf + used, len - used, "%s%u", used ? "," : "", c);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
		k += reps;
	}
	return 0;
}

int tt_layout_compute_worker(const struct tt_step_facts *f, uint32_t nproc,
			     const uint32_t *per_node, uint32_t local_rank, struct tt_task_env *out,
			     tt_err *err)
{
	uint64_t world = 0, before = 0;

	if (nproc == 0 || local_rank >= nproc)
		return tt_err_set(err, "worker %u of %u: the worker index must be below the worker "
				  "count, which must be at least 1", local_rank, nproc);
	if (fill_step(f, out, err) != 0)
		return -1;
	if (per_node && per_node[f->node_index] != nproc)
		return tt_err_set(err, "node %u runs %u workers, not the %u its entry in the node "
				  "counts says", f->node_index, nproc, per_node[f->node_index]);
	for (uint32_t k = 0; k < out->nnodes; k++) {
		uint32_t c = per_node ? per_node[k] : nproc;

		if (c == 0)
			return tt_err_set(err, "node %u runs no worker: every node of the step must "
					  "run at least one", k);
		world += c;
		if (k < f->node_index)
			before += c;
	}
	if (world > UINT32_MAX)
		return tt_err_set(err, "%u nodes x %u workers is more than %u processes",
				  out->nnodes, nproc, UINT32_MAX);
	out->rank = (uint32_t)before + local_rank;
	out->world_size = (uint32_t)world;
	out->local_rank = local_rank;
	out->local_world_size = nproc;
	if (fill_gpus(&f->gpus, nproc, local_rank, "workers", out, err) != 0)
		return -1;
	if (!f->omp_set && f->cpus)
		out->omp_num_threads = f->cpus / nproc ? f->cpus / nproc : 1;
	if (f->from_slurm &&
	    format_tasks_per_node(per_node, nproc, out->nnodes, out->slurm_tasks_per_node,
				  sizeof(out->slurm_tasks_per_node)) != 0)
		return tt_err_set(err, "the workers per node of %u nodes do not fit in %zu "
				  "characters", out->nnodes, sizeof(out->slurm_tasks_per_node) - 1);
	return 0;
}

typedef int (*env_fn)(void *ctx, const char *name, const char *value);

/* SLURM_GTIDS of a worker: the ranks of its node, "8,9,...,15". */
static int emit_gtids(const struct tt_task_env *e, env_fn fn, void *ctx)
{
	uint32_t first = e->rank - e->local_rank;
	size_t len = (size_t)e->local_world_size * 11 + 1, used = 0;
	char *buf = malloc(len);
	int rc;

	if (!buf)
		return -1;
	buf[0] = '\0';
	for (uint32_t i = 0; i < e->local_world_size; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%u", i ? "," : "", first + i);
	rc = fn(ctx, "SLURM_GTIDS", buf);
	free(buf);
	return rc;
}

struct named_number {
	const char *name;
	uint32_t value;
};

/* fn for each of n numbers, formatted; the first non-zero fn result, else 0. */
static int emit_numbers(const struct named_number *numbers, size_t n, env_fn fn, void *ctx)
{
	char buf[16];
	int rc;

	for (size_t i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%u", numbers[i].value);
		if ((rc = fn(ctx, numbers[i].name, buf)) != 0)
			return rc;
	}
	return 0;
}

/* A worker's SLURM_* (see tt_task_env_foreach). */
static int emit_slurm_view(const struct tt_task_env *e, env_fn fn, void *ctx)
{
	const struct named_number numbers[] = {
		{"SLURM_PROCID", e->rank},
		{"SLURM_LOCALID", e->local_rank},
		{"SLURM_NTASKS", e->world_size},
		{"SLURM_NPROCS", e->world_size},
		{"SLURM_STEP_NUM_TASKS", e->world_size},
		{"SLURM_NTASKS_PER_NODE", e->local_world_size},
	};
	char buf[16];
	int rc;

	if ((rc = emit_numbers(numbers, sizeof(numbers) / sizeof(numbers[0]), fn, ctx)) != 0 ||
	    (rc = fn(ctx, "SLURM_TASKS_PER_NODE", e->slurm_tasks_per_node)) != 0 ||
	    (rc = fn(ctx, "SLURM_STEP_TASKS_PER_NODE", e->slurm_tasks_per_node)) != 0 ||
	    (rc = emit_gtids(e, fn, ctx)) != 0)
		return rc;
	/* Slurm's own but for a spare that took a lost node's rank (train-run --spares). */
	snprintf(buf, sizeof(buf), "%u", e->node_rank);
	return fn(ctx, "SLURM_NODEID", buf);
}

int tt_task_env_foreach(const struct tt_task_env *e,
			int (*fn)(void *ctx, const char *name, const char *value), void *ctx)
{
	const struct named_number numbers[] = {
		{TT_ENV_RANK, e->rank},
		{TT_ENV_WORLD_SIZE, e->world_size},
		{TT_ENV_LOCAL_RANK, e->local_rank},
		{TT_ENV_LOCAL_WORLD_SIZE, e->local_world_size},
		{TT_ENV_NODE_RANK, e->node_rank},
		{TT_ENV_GROUP_RANK, e->node_rank},
		{TT_ENV_NNODES, e->nnodes},
	};
	char buf[16];
	int rc;

	if ((rc = emit_numbers(numbers, sizeof(numbers) / sizeof(numbers[0]), fn, ctx)) != 0 ||
	    (rc = fn(ctx, TT_ENV_MASTER_ADDR, e->master_addr)) != 0)
		return rc;
	snprintf(buf, sizeof(buf), "%u", e->master_port);
	if ((rc = fn(ctx, TT_ENV_MASTER_PORT, buf)) != 0)
		return rc;
	if (e->cuda_visible_devices[0] &&
	    (rc = fn(ctx, TT_ENV_CUDA_VISIBLE_DEVICES, e->cuda_visible_devices)) != 0)
		return rc;
	if (e->omp_num_threads) {
		snprintf(buf, sizeof(buf), "%u", e->omp_num_threads);
		if ((rc = fn(ctx, "OMP_NUM_THREADS", buf)) != 0)
			return rc;
	}
	if (e->cpu_list[0] && (rc = fn(ctx, TT_ENV_CPU_LIST, e->cpu_list)) != 0)
		return rc;
	if (e->slurm_tasks_per_node[0])
		return emit_slurm_view(e, fn, ctx);
	return 0;
}

/* Whether the comma-separated list names name. */
static bool list_has(const char *list, const char *name)
{
	size_t nlen = strlen(name);

	for (const char *p = list; *p;) {
		size_t item = strcspn(p, ",");

		if (item == nlen && strncmp(p, name, nlen) == 0)
			return true;
		p += item + (p[item] == ',');
	}
	return false;
}

int tt_env_set_list_add(char *list, size_t len, const char *name)
{
	size_t used = strlen(list), nlen = strlen(name);

	if (list_has(list, name))
		return 0;
	if (used + (used ? 1 : 0) + nlen + 1 > len)
		return -1;
	snprintf(list + used, len - used, "%s%s", used ? "," : "", name);
	return 0;
}

bool tt_env_user_set(tt_getenv_fn get, void *ctx, const char *name)
{
	char listed[TT_SET_LIST_LEN * 4];
	const char *set = get(ctx, TT_ENV_SET);

	/* Copied: the reader's string need only last until its next call. */
	snprintf(listed, sizeof(listed), "%s", set ? set : "");
	return get(ctx, name) && !list_has(listed, name);
}

/* ---- gathering the facts ------------------------------------------------------------------ */

/* The value of the first of names that is set, and which one it was. */
static const char *first_set(tt_getenv_fn get, void *ctx, const char *const *names,
			     const char **which)
{
	for (; *names; names++) {
		const char *v = get(ctx, *names);

		if (v) {
			*which = *names;
			return v;
		}
	}
	return NULL;
}

static int env_u32(tt_getenv_fn get, void *ctx, const char *const *names, uint32_t *v,
		   int required, uint32_t fallback, tt_err *err)
{
	const char *which = names[0];
	const char *s = first_set(get, ctx, names, &which);
	long long x;

	if (!s) {
		if (required)
			return tt_err_set(err, "%s is not set: run inside a Slurm job step (srun, "
					  "sbatch)", names[0]);
		*v = fallback;
		return 0;
	}
	if (tt_parse_int(s, 0, UINT32_MAX, which, &x, err) != 0)
		return -1;
	*v = (uint32_t)x;
	return 0;
}

/* SLURM_STEP_ID: a step number, or one of Slurm's own steps (extern, batch, interactive), which
 * 26.05 prints with "%d" (the batch script's 0xfffffffb is "-5"); unset means the batch script. */
static int env_step_id(tt_getenv_fn get, void *ctx, const char *const *names, uint32_t *v,
		       tt_err *err)
{
	const char *which = names[0];
	const char *s = first_set(get, ctx, names, &which);
	uint32_t minus;

	if (s && s[0] == '-' && parse_u32(s + 1, strlen(s + 1), UINT32_MAX, &minus) == 0 &&
	    0u - minus >= TT_STEP_INTERACTIVE && 0u - minus <= TT_STEP_EXTERN) {
		*v = 0u - minus;
		return 0;
	}
	if (s && s[0] == '-')
		return tt_err_set(err, "%s='%s' is neither a step number nor one of Slurm's own "
				  "steps (-4 extern, -5 batch, -6 interactive)", which, s);
	return env_u32(get, ctx, names, v, 0, TT_STEP_BATCH, err);
}

static int env_copy(tt_getenv_fn get, void *ctx, const char *const *names, char *buf,
		    size_t len, int required, tt_err *err)
{
	const char *which = names[0];
	const char *s = first_set(get, ctx, names, &which);

	buf[0] = '\0';
	if (!s)
		return required ? tt_err_set(err, "%s is not set: run inside a Slurm job step "
					     "(srun, sbatch)", names[0]) : 0;
	if (strlen(s) >= len)
		return tt_err_set(err, "%s is %zu characters long, more than the %zu supported",
				  which, strlen(s), len - 1);
	strcpy(buf, s);
	return 0;
}

/* The batch script is one process on the batch host, whatever the job's task layout says;
 * taking the job's nodelist would make a launcher in the script wait for ranks on nodes where
 * nothing runs. */
static int batch_step_is_one_task(struct tt_step_facts *f, tt_getenv_fn get, void *ctx,
				  tt_err *err)
{
	const char *host = get(ctx, "SLURMD_NODENAME");
	char first[TT_HOSTNAME_LEN];

	if (!host || !*host) {
		if (tt_hostlist_first(f->nodelist, first, sizeof(first), NULL, err) != 0)
			return tt_err_wrap(err, "batch step without SLURMD_NODENAME");
		host = first;
	}
	if (strlen(host) >= sizeof(f->nodelist))
		return tt_err_set(err, "SLURMD_NODENAME is longer than %zu characters",
				  sizeof(f->nodelist) - 1);
	strcpy(f->nodelist, host);
	f->node_index = 0;
	strcpy(f->tasks_per_node, "1");
	f->ntasks = 1;
	f->task_id = 0;
	f->local_id = 0;
	return 0;
}

/* f->tasks_per_node (the step's, in SLURM_STEP_NODELIST's order) put in rank order: node i of
 * the result is node order[i] of the step's list (tt_het_step_order). */
static int tasks_per_node_in_order(struct tt_step_facts *f, const size_t *order, size_t n,
				   tt_err *err)
{
	uint32_t *counts = calloc(n + 1, sizeof(*counts)), *ordered = calloc(n + 1, sizeof(*ordered));
	uint32_t here, nnodes, ntasks;
	int rc = -1;

	if (!counts || !ordered) {
		tt_err_set(err, "out of memory for a step of %zu nodes", n);
		goto out;
	}
	if (tpn_parse(f->tasks_per_node, 0, &here, &nnodes, &ntasks, counts, (uint32_t)n, err) != 0)
		goto out;
	if (nnodes != n) {
		tt_err_set(err, "SLURM_STEP_TASKS_PER_NODE='%s' describes %u nodes, the step's "
			   "nodelist %zu: both must come from the same step", f->tasks_per_node,
			   nnodes, n);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		ordered[i] = counts[order[i]];
	if (format_tasks_per_node(ordered, 0, (uint32_t)n, f->tasks_per_node,
				  sizeof(f->tasks_per_node)) != 0) {
		tt_err_set(err, "the tasks per node of %zu nodes in rank order do not fit in %zu "
			   "characters", n, sizeof(f->tasks_per_node) - 1);
		goto out;
	}
	rc = 0;
out:
	free(counts);
	free(ordered);
	return rc;
}

/* A heterogeneous step (SLURM_HET_SIZE >= 2 components in the job, nodes of several in the
 * step): the nodelist and tasks per node in rank order, so that SLURM_NODEID indexes them
 * (het_step.h). A step within one component is left as it is. */
static int het_step_facts(struct tt_step_facts *f, tt_getenv_fn get, void *ctx, tt_err *err)
{
	static const char *const size[] = {"SLURM_HET_SIZE", NULL};
	static const char *const nodename[] = {"SLURMD_NODENAME", NULL};
	const char *lists[TT_HET_COMPONENTS_MAX] = {0};
	char host[TT_HOSTNAME_LEN], *nodelist = NULL;
	size_t *order = NULL, nnodes = 0;
	uint32_t n;
	int rc = -1;

	if (env_u32(get, ctx, size, &n, 0, 0, err) != 0)
		return -1;
	if (n < 2)
		return 0;
	if (n > TT_HET_COMPONENTS_MAX)
		return tt_err_set(err, "SLURM_HET_SIZE=%u is more than Slurm's %d components", n,
				  TT_HET_COMPONENTS_MAX);
	if (env_copy(get, ctx, nodename, host, sizeof(host), 0, err) != 0)
		return -1;
	if (!(nodelist = malloc(TT_NODELIST_LEN)))
		return tt_err_set(err, "out of memory for the nodelist of a heterogeneous step");
	for (uint32_t k = 0; k < n; k++) {
		char job_name[64], name[64];
		const char *const names[] = {job_name, name, NULL};
		const char *which, *v;

		snprintf(job_name, sizeof(job_name), "SLURM_JOB_NODELIST_HET_GROUP_%u", k);
		snprintf(name, sizeof(name), "SLURM_NODELIST_HET_GROUP_%u", k);
		/* Copied: the reader's string need only last until its next call. */
		if ((v = first_set(get, ctx, names, &which)) && !(lists[k] = strdup(v))) {
			tt_err_set(err, "out of memory reading %s", which);
			goto out;
		}
	}
	rc = tt_het_step_order(f->nodelist, lists, n, host, f->node_index, nodelist,
			       TT_NODELIST_LEN, &order, &nnodes, err);
	if (rc == 1) {
		rc = tasks_per_node_in_order(f, order, nnodes, err);
		if (rc == 0)
			strcpy(f->nodelist, nodelist);
	}
out:
	for (uint32_t k = 0; k < n; k++)
		free((char *)lists[k]);
	free(order);
	free(nodelist);
	return rc;
}

int tt_job_rendezvous_from_env(tt_getenv_fn get, void *ctx, struct tt_port_range ports,
			       struct tt_rendezvous *rdzv, uint32_t *nnodes, tt_err *err)
{
	static const char *const job[] = {"SLURM_JOB_ID", "SLURM_JOBID", NULL};
	static const char *const nodelist[] = {"SLURM_JOB_NODELIST", "SLURM_NODELIST", NULL};
	struct tt_rdzv_sources s = { .slurm = true, .step_id = TT_STEP_BATCH, .ports = ports };
	char *list = malloc(TT_NODELIST_LEN), first[TT_HOSTNAME_LEN];
	size_t n;
	int rc = -1;

	if (!list)
		return tt_err_set(err, "out of memory for the job's nodelist");
	if (env_u32(get, ctx, job, &s.job_id, 1, 0, err) != 0 ||
	    env_copy(get, ctx, nodelist, list, TT_NODELIST_LEN, 1, err) != 0)
		goto out;
	if (tt_hostlist_first(list, first, sizeof(first), &n, err) != 0) {
		tt_err_wrap(err, "the job's nodelist");
		goto out;
	}
	s.step_host = first;
	if (tt_rendezvous_resolve(&s, rdzv, err) != 0)
		goto out;
	*nnodes = (uint32_t)n;
	rc = 0;
out:
	free(list);
	return rc;
}

int tt_step_facts_from_env(struct tt_step_facts *f, tt_getenv_fn get, void *ctx, tt_err *err)
{
	static const char *const job[] = {"SLURM_JOB_ID", "SLURM_JOBID", NULL};
	static const char *const step[] = {"SLURM_STEP_ID", "SLURM_STEPID", NULL};
	static const char *const nodelist[] = {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST",
					       "SLURM_NODELIST", NULL};
	static const char *const nodeid[] = {"SLURM_NODEID", NULL};
	static const char *const tpn[] = {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE",
					  NULL};
	static const char *const ntasks[] = {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS",
					     "SLURM_NPROCS", NULL};
	static const char *const procid[] = {"SLURM_PROCID", NULL};
	static const char *const localid[] = {"SLURM_LOCALID", NULL};
	static const char *const resv[] = {"SLURM_STEP_RESV_PORTS", NULL};

	memset(f, 0, sizeof(*f));
	f->ports.lo = TT_PORT_LO_DEFAULT;
	f->ports.hi = TT_PORT_HI_DEFAULT;
	if (env_u32(get, ctx, job, &f->job_id, 1, 0, err) != 0 ||
	    env_step_id(get, ctx, step, &f->step_id, err) != 0 ||
	    env_copy(get, ctx, nodelist, f->nodelist, sizeof(f->nodelist), 1, err) != 0 ||
	    env_u32(get, ctx, nodeid, &f->node_index, 1, 0, err) != 0 ||
	    env_copy(get, ctx, tpn, f->tasks_per_node, sizeof(f->tasks_per_node), 0, err) != 0 ||
	    env_u32(get, ctx, ntasks, &f->ntasks, 0, 0, err) != 0 ||
	    env_u32(get, ctx, procid, &f->task_id, 0, 0, err) != 0 ||
	    env_u32(get, ctx, localid, &f->local_id, 0, 0, err) != 0 ||
	    env_copy(get, ctx, resv, f->resv_ports, sizeof(f->resv_ports), 0, err) != 0)
		return -1;
	if (f->step_id == TT_STEP_BATCH ? batch_step_is_one_task(f, get, ctx, err) != 0
					 : het_step_facts(f, get, ctx, err) != 0)
		return -1;
	if (tt_gres_node_gpus(get, ctx, &f->gpus, f->gpus_checked, sizeof(f->gpus_checked),
			      err) != 0)
		return -1;
	if (tt_gres_bound_per_task(get, ctx, &f->gpus, &f->slurm_bound_gpus, err) != 0)
		return -1;
	f->omp_set = tt_env_user_set(get, ctx, "OMP_NUM_THREADS");
	f->from_slurm = true;
	return 0;
}

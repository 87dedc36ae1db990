/* SPDX-License-Identifier: MIT */
/* gres.c — GPU device lists from Slurm's GRES variables (precedence documented in gres.h). */
#include "gres.h"
#include "tt_envnames.h"
#include "tt_parse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Larger indices are typos: no node has a million GPUs. */
#define INDEX_MAX 1000000ul

static int list_add(const char *var, const char *value, struct tt_gpu_list *out, const char *id,
		    size_t len, tt_err *err)
{
	if (out->n == TT_GPU_MAX)
		return tt_err_set(err, "%s='%s': more than %d GPUs on one node", var, value,
				  TT_GPU_MAX);
	if (len >= TT_GPU_ID_LEN)
		return tt_err_set(err, "%s='%s': device '%.*s' is longer than %d characters", var,
				  value, (int)len, id, TT_GPU_ID_LEN - 1);
	for (size_t i = 0; i < out->n; i++)
		if (strlen(out->id[i]) == len && strncmp(out->id[i], id, len) == 0)
			return tt_err_set(err, "%s='%s': device '%.*s' is listed twice", var, value,
					  (int)len, id);
	memcpy(out->id[out->n], id, len);
	out->id[out->n][len] = '\0';
	out->n++;
	return 0;
}

static int parse_index(const char *var, const char *value, const char *s, size_t len,
		       unsigned long *v, tt_err *err)
{
	long long x;

	if (tt_parse_int_span(s, len, 0, INDEX_MAX, &x) != 0)
		return tt_err_set(err, "%s='%s': '%.*s' is not a GPU index (0..%lu), a range like "
				  "0-3, or a GPU-/MIG- UUID", var, value, (int)len, s, INDEX_MAX);
	*v = (unsigned long)x;
	return 0;
}

/* One comma-separated entry: an index, a range of indices, or a UUID kept verbatim. */
static int parse_entry(const char *var, const char *value, const char *s, size_t len,
		       struct tt_gpu_list *out, tt_err *err)
{
	const char *dash = memchr(s, '-', len);
	unsigned long lo = 0, hi;

	if (len == 0)
		return tt_err_set(err, "%s='%s': empty entry: separate devices by one comma", var,
				  value);
	if (len > 4 && (strncmp(s, "GPU-", 4) == 0 || strncmp(s, "MIG-", 4) == 0))
		return list_add(var, value, out, s, len, err);
	if (parse_index(var, value, s, dash ? (size_t)(dash - s) : len, &lo, err) != 0)
		return -1;
	hi = lo;
	if (dash && parse_index(var, value, dash + 1, len - (size_t)(dash - s) - 1, &hi, err))
		return -1;
	if (hi < lo)
		return tt_err_set(err, "%s='%s': reversed range '%.*s': write the low index first",
				  var, value, (int)len, s);
	for (unsigned long i = lo; i <= hi; i++) {
		char id[16];
		int n = snprintf(id, sizeof(id), "%lu", i);

		if (list_add(var, value, out, id, (size_t)n, err) != 0)
			return -1;
	}
	return 0;
}

int tt_gpu_list_parse(const char *var, const char *value, struct tt_gpu_list *out, tt_err *err)
{
	out->n = 0;
	/* Slurm writes NoDevFiles when the GRES has no device files; "" hides every device. */
	if (strcmp(value, "NoDevFiles") == 0 || value[0] == '\0')
		return 0;
	for (const char *p = value;;) {
		size_t len = strcspn(p, ",");

		if (parse_entry(var, value, p, len, out, err) != 0) {
			out->n = 0;
			return -1;
		}
		if (!p[len])
			return 0;
		p += len + 1;
	}
}

int tt_gpu_list_join(const struct tt_gpu_list *l, size_t first, size_t count, char *buf,
		     size_t len, tt_err *err)
{
	size_t used = 0;

	if (first > l->n || count > l->n - first)
		return tt_err_set(err, "GPUs %zu..%zu asked of a list of %zu", first,
				  first + count, l->n);
	if (len == 0)
		return tt_err_set(err, "no room for a GPU list");
	buf[0] = '\0';
	for (size_t i = first; i < first + count; i++) {
		int n = snprintf(buf + used, len - used, "%s%s", i > first ? "," : "", l->id[i]);

		if (n < 0 || (size_t)n >= len - used)
			return tt_err_set(err, "GPU list does not fit in %zu bytes", len);
		used += (size_t)n;
	}
	return 0;
}

static void note_checked(char *checked, size_t len, const char *var)
{
	size_t used;

	if (!checked || len == 0)
		return;
	used = strlen(checked);
	snprintf(checked + used, len - used, "%s%s", used ? ", " : "", var);
}

/* SLURM_GPUS_ON_NODE as a count; *set = 0 when the variable is unset. */
static int gpus_on_node(tt_getenv_fn get, void *ctx, unsigned long *count, int *set, tt_err *err)
{
	const char *value = get(ctx, "SLURM_GPUS_ON_NODE");
	long long x = 0;

	*set = value != NULL;
	*count = 0;
	if (value && tt_parse_int_span(value, strlen(value), 0, TT_GPU_MAX, &x) != 0)
		return tt_err_set(err, "SLURM_GPUS_ON_NODE='%s' is not a GPU count (0..%d)", value,
				  TT_GPU_MAX);
	*count = (unsigned long)x;
	return 0;
}

int tt_gres_node_gpus(tt_getenv_fn get, void *ctx, struct tt_gpu_list *out, char *checked,
		      size_t checked_len, tt_err *err)
{
	static const char *const lists[] = {TT_ENV_CUDA_VISIBLE_DEVICES, "GPU_DEVICE_ORDINAL",
					    "SLURM_STEP_GPUS", "SLURM_JOB_GPUS"};
	const char *value;
	unsigned long count;
	int set;

	out->n = 0;
	if (checked && checked_len)
		checked[0] = '\0';
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		note_checked(checked, checked_len, lists[i]);
		value = get(ctx, lists[i]);
		if (value)
			return tt_gpu_list_parse(lists[i], value, out, err);
	}
	note_checked(checked, checked_len, "SLURM_GPUS_ON_NODE");
	if (gpus_on_node(get, ctx, &count, &set, err) != 0)
		return -1;
	for (unsigned long i = 0; i < count; i++)
		snprintf(out->id[out->n++], TT_GPU_ID_LEN, "%lu", i);
	return 0;
}

/* Set, non-empty and not "none" (--gpu-bind=none leaves every GPU to every task). */
static bool set_not_none(tt_getenv_fn get, void *ctx, const char *name)
{
	const char *v = get(ctx, name);

	return v && *v && strcmp(v, "none") != 0;
}

int tt_gres_bound_per_task(tt_getenv_fn get, void *ctx, const struct tt_gpu_list *visible,
			   bool *bound, tt_err *err)
{
	const char *tres = get(ctx, "SLURM_TRES_PER_TASK");
	bool tres_gpu = tres && strstr(tres, "gpu");
	unsigned long on_node;
	int set;

	if (gpus_on_node(get, ctx, &on_node, &set, err) != 0)
		return -1;
	*bound = tres_gpu || set_not_none(get, ctx, "SLURM_GPUS_PER_TASK") ||
		 set_not_none(get, ctx, "SLURM_NTASKS_PER_GPU") ||
		 set_not_none(get, ctx, "SLURM_GPU_BIND") || (set && visible->n < on_node);
	return 0;
}

int tt_gres_node_index(tt_getenv_fn get, void *ctx, const struct tt_gpu_list *visible,
		       const char *cvd)
{
	const char *var = "SLURM_STEP_GPUS";
	const char *global = get(ctx, var);
	struct tt_gpu_list node;
	size_t len = strcspn(cvd, ","), p;
	const char *id;
	long long v;

	if (!global) {
		var = "SLURM_JOB_GPUS";
		global = get(ctx, var);
	}
	for (p = 0; p < visible->n; p++)
		if (strlen(visible->id[p]) == len && !strncmp(visible->id[p], cvd, len))
			break;
	if (len == 0 || p == visible->n)
		return -1;
	id = visible->id[p];
	if (global && tt_gpu_list_parse(var, global, &node, NULL) == 0 && node.n == visible->n)
		id = node.id[p];
	return tt_parse_int_span(id, strlen(id), 0, TT_GPU_MAX - 1, &v) != 0 ? -1 : (int)v;
}

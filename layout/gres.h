/* SPDX-License-Identifier: MIT */
/* gres.h — the GPUs of this node as a step sees them, read from the variables Slurm's GRES
 * plugin sets. Used by the SPANK plugin and train-run alike so both split the same list.
 *
 * Precedence of tt_gres_node_gpus (the first variable that is set decides; later ones are not
 * read): what a process can use is what CUDA enumerates for it, so
 *   1. CUDA_VISIBLE_DEVICES — as Slurm sets it: local indices under cgroup device constraint
 *      ("0,1"), global indices without it, or UUIDs ("GPU-…", "MIG-…") kept verbatim;
 *      "NoDevFiles" (Slurm's value for a GRES without device files) and "" mean no GPU;
 *   2. GPU_DEVICE_ORDINAL — Slurm's copy of the same list (set alongside for ROCm/OpenCL);
 *   3. SLURM_STEP_GPUS, then SLURM_JOB_GPUS — global indices, comma lists with ranges ("0-3,6"),
 *      which equal CUDA's indices when no cgroup hides devices;
 *   4. SLURM_GPUS_ON_NODE — a count n, meaning devices 0..n-1.
 * Every entry of the result can be put back into CUDA_VISIBLE_DEVICES as is. */
#ifndef TT_GRES_H
#define TT_GRES_H

#include <stdbool.h>
#include <stddef.h>

#include "tt_env.h"
#include "tt_err.h"

#define TT_GPU_MAX 64      /* devices per node; more is an error naming the variable */
#define TT_GPU_ID_LEN 96   /* "MIG-GPU-<uuid>/<gi>/<ci>" is 58 characters */

struct tt_gpu_list {
	size_t n;
	char id[TT_GPU_MAX][TT_GPU_ID_LEN];   /* "3", "GPU-8f2c…", "MIG-…" in CUDA order */
};

/* Parses a device list value (the forms above: indices, ranges "lo-hi" of indices, UUIDs;
 * comma-separated) of the variable named var into out. Duplicates, empty entries, reversed
 * ranges and more than TT_GPU_MAX devices are errors naming var and the bad entry. */
int tt_gpu_list_parse(const char *var, const char *value, struct tt_gpu_list *out, tt_err *err);

/* Writes count entries of l starting at first as "a,b,c" into buf (a CUDA_VISIBLE_DEVICES value).
 * -1 with err when the range is outside l or buf is too small. */
int tt_gpu_list_join(const struct tt_gpu_list *l, size_t first, size_t count, char *buf,
		     size_t len, tt_err *err);

/* Fills out with the node's GPUs following the precedence above. Returns 0 with out->n == 0 when
 * none of the variables is set (a CPU-only step is not an error here; a caller that needs GPUs
 * reports "no GPUs found, checked: <checked>"). checked receives the comma-separated names of the
 * variables read, in order, when checked is not NULL. -1 with err naming the variable when a
 * value is malformed. */
int tt_gres_node_gpus(tt_getenv_fn get, void *ctx, struct tt_gpu_list *out, char *checked,
		      size_t checked_len, tt_err *err);

/* Whether Slurm already gave this task its own GPUs (--gpus-per-task, --ntasks-per-gpu,
 * --gpu-bind other than none), so CUDA_VISIBLE_DEVICES must be left as it is. srun does not
 * export those options to the tasks it starts, so besides SLURM_GPUS_PER_TASK,
 * SLURM_TRES_PER_TASK (with a gpu), SLURM_NTASKS_PER_GPU and SLURM_GPU_BIND (inherited from
 * sbatch/salloc), the telling sign is that the task sees fewer GPUs (visible, from
 * tt_gres_node_gpus) than the step has on the node (SLURM_GPUS_ON_NODE): verified on Slurm 22.05,
 * where srun --gpus-per-task=2 -n2 gives the tasks CUDA_VISIBLE_DEVICES=0,1 and 2,3 with
 * SLURM_GPUS_ON_NODE=4. -1 with err when SLURM_GPUS_ON_NODE is malformed. */
int tt_gres_bound_per_task(tt_getenv_fn get, void *ctx, const struct tt_gpu_list *visible,
			   bool *bound, tt_err *err);

/* The node-wide index (PCI bus order, as the topology policy counts GPUs) of the first GPU of
 * cvd, a CUDA_VISIBLE_DEVICES value taken from visible (tt_gres_node_gpus), or -1 when it cannot
 * be told (a UUID, an id not in visible). CUDA_VISIBLE_DEVICES may hold indices local to a
 * device cgroup; SLURM_STEP_GPUS, else SLURM_JOB_GPUS, read through get, then hold the
 * node-wide ones at the same positions. */
int tt_gres_node_index(tt_getenv_fn get, void *ctx, const struct tt_gpu_list *visible,
		       const char *cvd);

#endif

/* SPDX-License-Identifier: MIT */
/* het_step.h — the layout of a heterogeneous step (srun --het-group=0,1, or srun A : B) in the
 * order its ranks run, from what Slurm gives each task, so the env contract (layout.h) holds
 * across components: one WORLD_SIZE, NODE_RANK = SLURM_NODEID, MASTER_ADDR = rank 0's host.
 *
 * What Slurm gives a het step's task (22.05 and 26.05.3 alike): SLURM_PROCID and SLURM_NODEID
 * count across the step's components in component order (component 0's nodes are nodes 0..,
 * its tasks ranks 0..), SLURM_STEP_NUM_TASKS is the total, but SLURM_STEP_NODELIST and
 * SLURM_STEP_TASKS_PER_NODE describe the union of the components' nodes sorted by name (srun
 * sorts them for MPI), so SLURM_NODEID does not index them. Each component's nodes are in
 * SLURM_JOB_NODELIST_HET_GROUP_<k> (SLURM_NODELIST_HET_GROUP_<k>), k < SLURM_HET_SIZE.
 * spank_get_item's S_JOB_NODEID, S_TASK_GLOBAL_ID and S_JOB_TOTAL_TASK_COUNT are the
 * component's own, so the environment is the only place the whole step is described. */
#ifndef TT_HET_STEP_H
#define TT_HET_STEP_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

/* Slurm's limit on het job components (MAX_HET_JOB_COMPONENTS). */
#define TT_HET_COMPONENTS_MAX 128

/* The step's nodes in rank order. step_nodelist is the step's SLURM_STEP_NODELIST;
 * components[k] is component k's nodelist (NULL when not known); host is this node's name
 * (SLURMD_NODENAME), node_id its SLURM_NODEID. The step's components are those with nodes in
 * the step; each must run on all of its nodes and no node may be in two of them (then a node's
 * GPUs would belong to two components). Returns 1 with nodelist = those components' nodelists
 * joined in component order, so SLURM_NODEID indexes it and its first host runs rank 0, and
 * *order = a malloc'd array of *nnodes indices into step_nodelist, the node at each position
 * (to put SLURM_STEP_TASKS_PER_NODE in the same order); 0 when the step lies within one
 * component (a plain step: nodelist untouched, *order NULL); -1 with err naming the variable
 * and what to do when the order cannot be told. */
int tt_het_step_order(const char *step_nodelist, const char *const *components,
		      size_t ncomponents, const char *host, uint32_t node_id, char *nodelist,
		      size_t nodelist_len, size_t **order, size_t *nnodes, tt_err *err);

#endif

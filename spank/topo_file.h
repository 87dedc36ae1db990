/* SPDX-License-Identifier: MIT */
/* topo_file.h — the step's NCCL_TOPO_FILE on this node: created once per node per step before the
 * tasks start (slurm_spank_user_init), removed when the step ends (slurm_spank_exit).
 * Discovery runs in a program of its own, `train-topo probe` (plugstack probe=, default the
 * configured BINDIR/train-topo), started with a deadline, so a slow or crashing probe can neither
 * hang nor crash slurmstepd, and the plugin itself never loads hwloc or libibverbs (srun, sbatch
 * and salloc load the plugin too, on login nodes). The program writes the file (complete, temp +
 * rename, or not at all) and reports the node's policy on a pipe (node_policy.h). When the file
 * cannot be made, the program is missing included, the step runs without it (NCCL then detects
 * the node itself).
 * The job's directory TOPO_DIR/traintopo.<job> is made and checked as the job's user and removed
 * by root only through the directory it checked (see topo_file.c). */
#ifndef TT_TOPO_FILE_H
#define TT_TOPO_FILE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "node_policy.h"
#include "plugin_config.h"
#include "tt_err.h"

/* Seconds the probe may take before it is killed and the step runs without the file. */
#define TT_TOPO_PROBE_TIMEOUT_S 30

/* The job's directory as it was made and checked: all that removal may touch. */
struct tt_topo_dir {
	char name[64];	/* its entry in topo_dir: traintopo.<job>, or traintopo.<job>.XXXXXX */
	dev_t dev;
	ino_t ino;
	int fd;		/* open on it (close-on-exec), -1 when none */
};

/* The probe's exit status on a node with no NVIDIA GPU and no RDMA NIC (train-topo(1)): no file. */
#define TT_TOPO_PROBE_NOTHING 3

/* Writes the step's file into the job's directory (made if needed), puts its path into path,
 * the directory into dir and the node's policy (what the probe learnt besides the file, and notes
 * for the node's first task to print as warnings) into policy. Runs as the job's user. 0 when
 * written; -1 with err on failure; 1 when the node has nothing the file describes (no NVIDIA GPU,
 * no RDMA NIC): no file, err holds the probe's one line saying what the node has. */
int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, struct tt_topo_dir *dir, struct tt_node_policy *policy,
			tt_err *err);

/* In each task (task_init: the job's user, in the task's mount namespace), before it is told
 * path: makes path readable where the task looks. Nothing to do when the task sees the directory
 * user_init checked (no private /tmp, or SlurmdParameters=contain_spank ran user_init in it).
 * Else (job_container/tmpfs, namespace/tmpfs: a /tmp of the job's own) copies the file through
 * the directory descriptor the task inherited from slurmstepd to the same path in the task's
 * view, the job's private /tmp, which Slurm removes with the job: the directory made and checked
 * as in user_init, the file written under a temporary name and renamed, so the node's other
 * tasks, copying too, never read half a file. -1 with err when the file cannot be shown. */
int tt_topo_file_task_view(const struct tt_plugin_config *cfg, const struct tt_topo_dir *dir,
			   const char *path, tt_err *err);

/* Removes the file and, when it was the last one, the job's directory; runs as root. Touches
 * nothing when the directory is no longer the one made (replaced, moved, a link). */
int tt_topo_file_remove(const struct tt_plugin_config *cfg, struct tt_topo_dir *dir, const char *path,
			tt_err *err);

#endif

/* SPDX-License-Identifier: MIT */
/* plugin.h — state of the train_topo SPANK plugin inside one Slurm process, and the per-context
 * entry points plugin.c dispatches to (local.c: srun/sbatch/salloc; remote.c: slurmstepd).
 * Slurm loads the plugin once per process, so one context struct holds all of its state. */
#ifndef TT_PLUGIN_H
#define TT_PLUGIN_H

#include <limits.h>
#include <stdbool.h>
#include <slurm/spank.h>

#include "plugin_config.h"
#include "topo_file.h"

#define TT_PLUGIN "train_topo"
/* Carries the job's mode from sbatch/salloc (and the batch step) to the job's srun steps, since
 * Slurm removes SPANK option variables inside steps. Users may set it too. */
#define TT_MODE_ENV "TRAIN_TOPO_MODE"

struct tt_plugin {
	struct tt_plugin_config cfg;
	bool option_given;	/* --train-topo was on this command line / step */
	enum tt_mode option_mode;
	enum tt_mode mode;	/* resolved for this step (remote) or command (local) */
	uint32_t job_id, step_id;
	char topo_file[PATH_MAX];	/* NCCL_TOPO_FILE of this step on this node, "" when none */
	struct tt_topo_dir topo_dir;	/* the job's directory holding it, for removal */
	tt_err topo_problem;	/* why there is none, for the task's warning */
	bool topo_nothing;	/* none because the node has nothing it describes: never strict's failure */
	struct tt_node_policy policy;	/* NCCL_IB_HCA, NCCL_SOCKET_IFNAME, GPUs' CPUs, notes for the node */
	/* In slurmstepd, an error found before the tasks exist (a bad TRAIN_TOPO_MODE, plugstack
	 * arguments): returned from init, Slurm 22.05 would report "launch failed" and srun would
	 * exit 0, so each task fails with it instead (non-zero status on every Slurm). "" = none. */
	tt_err problem;
	char topo_set[TT_SET_LIST_LEN];	/* TRAIN_TOPO_SET of the task being set up */
};

extern struct tt_plugin tt_plugin;

int tt_local_init_post_opt(spank_t sp);
int tt_remote_init_post_opt(spank_t sp);
int tt_remote_user_init(spank_t sp);
int tt_remote_task_init(spank_t sp);
int tt_remote_exit(spank_t sp);

#endif

/* SPDX-License-Identifier: MIT */
/* local.c — srun, sbatch and salloc: the --train-topo option was validated by its callback
 * (an invalid mode already failed the command, before any allocation); a TRAIN_TOPO_MODE in the
 * environment is checked here just as strictly, still before anything is allocated; then the
 * job's mode is exported so that srun steps started inside the allocation inherit it. */
#include "plugin.h"

#include <stdlib.h>

int tt_local_init_post_opt(spank_t sp)
{
	const char *inherited = getenv(TT_MODE_ENV);
	enum tt_mode mode;
	tt_err err;

	(void)sp;
	/* A bad value would otherwise only surface in slurmstepd, where Slurm 22.05 turns a plugin
	 * error into "launch failed" with srun's exit status 0. */
	if (!tt_plugin.option_given && inherited && tt_mode_from_env(inherited, &mode, &err) != 0) {
		slurm_error(TT_PLUGIN ": %s", err.msg);
		return -1;
	}
	if (!tt_plugin.option_given)
		return 0;
	tt_plugin.mode = tt_plugin.option_mode;
	/* sbatch exports its environment to the batch script (and remote.c sets it again in the
	 * batch step for --export=NONE); salloc's shell inherits it from salloc; srun's tasks see it
	 * and a nested srun keeps the mode. */
	if (setenv(TT_MODE_ENV, tt_mode_name(tt_plugin.mode), 1) != 0) {
		slurm_error(TT_PLUGIN ": cannot set %s for the job's steps", TT_MODE_ENV);
		return -1;
	}
	return 0;
}

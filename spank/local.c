/* local.c — srun, sbatch and salloc: the --train-topo option was validated by its callback
 * (an invalid mode already failed the command, before any allocation); here the job's mode is
 * exported so that srun steps started inside the allocation inherit it. */
#include "plugin.h"

#include <stdlib.h>

int tt_local_init_post_opt(spank_t sp)
{
	(void)sp;
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

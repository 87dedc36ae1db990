/* SPDX-License-Identifier: MIT */
/* plugin.c — the entry points of the SPANK plugin train_topo.so: option table, plugstack.conf
 * arguments, and dispatch to the code of each Slurm context. Every hook returns 0 when the plugin
 * has nothing to do and -1 (never a positive value, which Slurm 22.05 ignores) on error, after
 * one slurm_error line prefixed "train_topo:". In slurmstepd an error found before the tasks exist fails each
 * task in task_init instead, the one place where a failure gives srun a non-zero status on
 * Slurm 22.05 as on later releases (see plugin.h); the task exits there itself, so an
 * "optional" plugstack line, whose errors Slurm ignores, fails it too (remote.c). */
#include "plugin.h"

#include <string.h>

SPANK_PLUGIN(train_topo, 1);

struct tt_plugin tt_plugin;

static int option_cb(int val, const char *optarg, int remote);

static struct spank_option train_topo_option = {
	.name = "train-topo",
	.arginfo = "[MODE]",
	.usage = "Set up distributed training: MODE full (default: rank env, GPU binding, NCCL "
		 "topology file, checkpoint signal relay), env (no topology file) or off.",
	.has_arg = 2,
	.val = 0,
	.cb = option_cb,
};

static int option_cb(int val, const char *optarg, int remote)
{
	tt_err err;

	(void)val;
	(void)remote;
	/* sbatch passes an option given without a value on to the job's srun steps as the text
	 * "(null)" (Slurm 22.05), which means the same as no value. */
	if (optarg && strcmp(optarg, "(null)") == 0)
		optarg = NULL;
	if (tt_mode_parse(optarg, &tt_plugin.option_mode, &err) != 0) {
		slurm_error(TT_PLUGIN ": --train-topo: %s", err.msg);
		return -1;
	}
	tt_plugin.option_given = true;
	return 0;
}

int slurm_spank_init(spank_t sp, int ac, char **av)
{
	spank_context_t ctx = spank_context();
	tt_err err;
	spank_err_t rc;

	memset(&tt_plugin, 0, sizeof(tt_plugin));
	tt_plugin_config_defaults(&tt_plugin.cfg);
	if (tt_plugin_config_parse(ac, av, &tt_plugin.cfg, &err) != 0) {
		slurm_error(TT_PLUGIN ": plugstack.conf arguments: %s", err.msg);
		if (ctx != S_CTX_REMOTE)
			return -1;
		/* slurmstepd: fail the tasks instead (see plugin.h), with the defaults meanwhile. */
		tt_err_set(&tt_plugin.problem, "plugstack.conf arguments: %s", err.msg);
		tt_plugin_config_defaults(&tt_plugin.cfg);
	}
	if (ctx == S_CTX_SLURMD || ctx == S_CTX_JOB_SCRIPT)
		return 0;
	rc = spank_option_register(sp, &train_topo_option);
	if (rc != ESPANK_SUCCESS) {
		slurm_error(TT_PLUGIN ": cannot register --train-topo: %s", spank_strerror(rc));
		return -1;
	}
	return 0;
}

int slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	switch (spank_context()) {
	case S_CTX_LOCAL:
	case S_CTX_ALLOCATOR:
		return tt_local_init_post_opt(sp);
	case S_CTX_REMOTE:
		return tt_remote_init_post_opt(sp);
	default:
		return 0;
	}
}

int slurm_spank_user_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? tt_remote_user_init(sp) : 0;
}

int slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? tt_remote_task_init(sp) : 0;
}

int slurm_spank_exit(spank_t sp, int ac, char **av)
{
	(void)ac;
	(void)av;
	return spank_context() == S_CTX_REMOTE ? tt_remote_exit(sp) : 0;
}

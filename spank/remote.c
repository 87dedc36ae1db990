/* remote.c — slurmstepd: resolve the step's mode, and per task apply the env contract and start
 * the checkpoint-signal relay. The batch step only passes the mode on to its srun steps and relays
 * signals to them; the extern and interactive steps are left alone. */
#include "plugin.h"
#include "layout.h"
#include "relay.h"
#include "topo_file.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

static bool is_special_step(uint32_t step_id)
{
	return step_id == TT_STEP_EXTERN || step_id == TT_STEP_INTERACTIVE;
}

int tt_remote_init_post_opt(spank_t sp)
{
	char value[64];
	tt_err err;

	if (spank_get_item(sp, S_JOB_ID, &tt_plugin.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &tt_plugin.step_id) != ESPANK_SUCCESS) {
		slurm_error(TT_PLUGIN ": cannot read the job and step id of this step");
		return -1;
	}
	if (tt_plugin.option_given) {
		tt_plugin.mode = tt_plugin.option_mode;
	} else if (spank_getenv(sp, TT_MODE_ENV, value, sizeof(value)) == ESPANK_SUCCESS) {
		if (tt_mode_parse(value, &tt_plugin.mode, &err) != 0) {
			slurm_error(TT_PLUGIN ": %s in the job's environment: %s", TT_MODE_ENV, err.msg);
			return -1;
		}
	} else {
		tt_plugin.mode = tt_plugin.cfg.default_mode;
	}
	return 0;
}

int tt_remote_user_init(spank_t sp)
{
	(void)sp;
	if (tt_plugin.mode != TT_MODE_FULL || is_special_step(tt_plugin.step_id) ||
	    tt_plugin.step_id == TT_STEP_BATCH)
		return 0;
	if (tt_topo_file_create(&tt_plugin.cfg, tt_plugin.job_id, tt_plugin.step_id,
				tt_plugin.topo_file, sizeof(tt_plugin.topo_file), &tt_plugin.topo_dir,
				&tt_plugin.policy, &tt_plugin.topo_problem) != 0) {
		/* A failure here would end the step with exit code 0 ("could not execve"): each
		 * task reports it instead (see apply_topology). */
		tt_plugin.topo_file[0] = '\0';
	}
	return 0;
}

static int apply_var(void *ctx, const char *name, const char *value)
{
	spank_t sp = ctx;
	spank_err_t rc = spank_setenv(sp, name, value, 1);

	if (rc != ESPANK_SUCCESS) {
		slurm_error(TT_PLUGIN ": cannot set %s=%s: %s", name, value, spank_strerror(rc));
		return -1;
	}
	return 0;
}

static unsigned task_cpu_count(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) != 0)
		return 0;
	return (unsigned)CPU_COUNT(&set);
}

/* Like apply_var, but a value the user set already wins (NCCL's own variables). */
static int apply_default(spank_t sp, const char *name, const char *value)
{
	char current[8];
	spank_err_t rc;

	if (!value[0])
		return 0;
	rc = spank_getenv(sp, name, current, sizeof(current));
	if (rc == ESPANK_SUCCESS || rc == ESPANK_NOSPACE)
		return 0;
	return apply_var(sp, name, value);
}

/* Mode full: the step's topology file and the node's NCCL_IB_HCA / NCCL_SOCKET_IFNAME. Without a
 * complete file NCCL_TOPO_FILE stays unset (NCCL then reads the node itself): the job is never
 * worse off for the plugin, only warned, once per node, or stopped with strict=yes. */
static int apply_topology(spank_t sp, const struct tt_step_facts *facts)
{
	if (tt_plugin.mode != TT_MODE_FULL)
		return 0;
	if (!tt_plugin.topo_file[0]) {
		if (tt_plugin.cfg.strict) {
			slurm_error(TT_PLUGIN ": NCCL topology file (strict=yes): %s",
				    tt_plugin.topo_problem.msg);
			fprintf(stderr, TT_PLUGIN ": error: NCCL topology file (strict=yes): %s\n",
				tt_plugin.topo_problem.msg);
			return -1;
		}
		if (facts->local_id == 0)
			fprintf(stderr, TT_PLUGIN ": warning: running without NCCL_TOPO_FILE: %s\n",
				tt_plugin.topo_problem.msg);
		return 0;
	}
	for (int i = 0; i < tt_plugin.policy.nnotes && facts->local_id == 0; i++)
		fprintf(stderr, TT_PLUGIN ": warning: %s\n", tt_plugin.policy.notes[i]);
	if (apply_default(sp, "NCCL_TOPO_FILE", tt_plugin.topo_file) != 0 ||
	    apply_default(sp, "NCCL_SOCKET_IFNAME", tt_plugin.policy.socket_ifname) != 0 ||
	    apply_default(sp, "NCCL_IB_HCA", tt_plugin.policy.ib_hca) != 0)
		return -1;
	return 0;
}

/* The env contract for this task, then its topology settings. */
static int apply_task_env(spank_t sp)
{
	struct tt_step_facts facts;
	struct tt_task_env env;
	char **job_env = NULL;
	tt_err err;
	size_t i;

	if (spank_get_item(sp, S_JOB_ENV, &job_env) != ESPANK_SUCCESS || !job_env) {
		slurm_error(TT_PLUGIN ": cannot read the task's environment");
		return -1;
	}
	if (tt_step_facts_from_env(&facts, tt_env_array, job_env, &err) != 0) {
		slurm_error(TT_PLUGIN ": reading the step's layout: %s", err.msg);
		return -1;
	}
	facts.cpus = task_cpu_count();
	facts.ports = tt_plugin.cfg.ports;
	if (tt_layout_compute(&facts, &env, &err) != 0) {
		slurm_error(TT_PLUGIN ": computing the rank environment: %s", err.msg);
		return -1;
	}
	if (tt_task_env_foreach(&env, apply_var, sp) != 0)
		return -1;
	/* The node's first task speaks for all of them, so a warning appears once per node. */
	for (i = 0; i < env.nwarnings && facts.local_id == 0; i++)
		fprintf(stderr, TT_PLUGIN ": warning: %s\n", env.warnings[i]);
	return apply_topology(sp, &facts);
}

static int start_relay(void)
{
	struct tt_relay_config relay = { .checkpoint_signal = tt_plugin.cfg.signal };
	tt_err err;

	if (tt_relay_start(&relay, &err) != 0)
		fprintf(stderr, TT_PLUGIN ": warning: %s\n", err.msg);
	return 0;
}

int tt_remote_task_init(spank_t sp)
{
	if (tt_plugin.mode == TT_MODE_OFF || is_special_step(tt_plugin.step_id))
		return 0;
	/* Every task carries the mode, so srun steps started from it (the batch script's, or a
	 * nested srun's) inherit it even with --export=NONE. */
	if (apply_var(sp, TT_MODE_ENV, tt_mode_name(tt_plugin.mode)) != 0)
		return -1;
	/* The batch script gets no rank env: it is not a rank. */
	if (tt_plugin.step_id != TT_STEP_BATCH && apply_task_env(sp) != 0)
		return -1;
	return start_relay();
}

int tt_remote_exit(spank_t sp)
{
	tt_err err;

	(void)sp;
	if (tt_plugin.topo_file[0] &&
	    tt_topo_file_remove(&tt_plugin.cfg, &tt_plugin.topo_dir, tt_plugin.topo_file, &err) != 0) {
		slurm_error(TT_PLUGIN ": %s", err.msg);
		return -1;
	}
	return 0;
}

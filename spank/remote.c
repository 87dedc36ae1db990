/* SPDX-License-Identifier: MIT */
/* remote.c — slurmstepd: resolve the step's mode, and per task apply the env contract, bind the
 * task's CPUs when Slurm did not, publish what a launcher below needs (TRAIN_TOPO_SET, the
 * relay), and start the checkpoint-signal relay. The batch step only passes the mode on to its
 * srun steps and relays signals to them; the extern and interactive steps are left alone. */
#include "plugin.h"
#include "cpu_bind.h"
#include "tt_cpuset.h"
#include "layout.h"
#include "oci_spool.h"
#include "relay.h"
#include "topo_file.h"
#include "tt_ckpt_exit.h"
#include "tt_signal.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_special_step(uint32_t step_id)
{
	return step_id == TT_STEP_EXTERN || step_id == TT_STEP_INTERACTIVE;
}

/* Errors here are kept in tt_plugin.problem and fail each task in task_init (see plugin.h). */
int tt_remote_init_post_opt(spank_t sp)
{
	char value[64];
	spank_err_t rc;

	tt_plugin.mode = tt_plugin.cfg.default_mode;
	if (spank_get_item(sp, S_JOB_ID, &tt_plugin.job_id) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &tt_plugin.step_id) != ESPANK_SUCCESS) {
		tt_err_set(&tt_plugin.problem, "cannot read the job and step id of this step");
		return 0;
	}
	if (tt_plugin.option_given) {
		tt_plugin.mode = tt_plugin.option_mode;
		return 0;
	}
	rc = spank_getenv(sp, TT_MODE_ENV, value, sizeof(value));
	if (rc == ESPANK_NOSPACE)
		tt_err_set(&tt_plugin.problem, "%s in the environment is longer than any mode: use "
			   "full, env or off, or unset it", TT_MODE_ENV);
	else if (rc == ESPANK_SUCCESS)
		tt_mode_from_env(value, &tt_plugin.mode, &tt_plugin.problem);
	return 0;
}

/* A step in an OCI container (srun --container, which leaves SLURM_CONTAINER in the step's
 * environment) sees the node's topo_dir only if its bundle binds it: its file goes into the
 * step's spool directory, which Slurm binds into the container at the same path (oci_spool.h). */
static int container_topo_dir(spank_t sp)
{
	char bundle[PATH_MAX];
	spank_err_t rc = spank_getenv(sp, "SLURM_CONTAINER", bundle, sizeof(bundle));

	if ((rc != ESPANK_SUCCESS && rc != ESPANK_NOSPACE) || (rc == ESPANK_SUCCESS && !bundle[0]))
		return 0;
	bundle[sizeof(bundle) - 1] = '\0';
#if SLURM_VERSION_NUMBER < SLURM_VERSION_NUM(25, 5, 0)
	/* Before 25.05 Slurm binds only each task's spool directory, at /var/run/slurm/ (25.05's
	 * CHANGELOG: MountSpoolDir's default became ContainerPath, and the step's directory). */
	return tt_err_set(&tt_plugin.topo_problem, "the step runs in the OCI container %.200s%s, which "
			  "cannot see the node's topo_dir, and Slurm %02d.%02d binds only each task's spool "
			  "directory into it (25.05 and later bind the step's, where the plugin puts the "
			  "file)", bundle, rc == ESPANK_NOSPACE ? "..." : "",
			  SLURM_VERSION_MAJOR(SLURM_VERSION_NUMBER), SLURM_VERSION_MINOR(SLURM_VERSION_NUMBER));
#else
	if (tt_oci_step_dir("/proc/self", tt_plugin.job_id, tt_plugin.step_id, tt_plugin.cfg.topo_dir,
			    sizeof(tt_plugin.cfg.topo_dir), &tt_plugin.topo_problem) != 0)
		return tt_err_wrap(&tt_plugin.topo_problem, "the step runs in the OCI container %.200s%s, "
				   "which cannot see the node's topo_dir", bundle,
				   rc == ESPANK_NOSPACE ? "..." : "");
	return 0;
#endif
}

int tt_remote_user_init(spank_t sp)
{
	int rc;

	if (tt_plugin.mode != TT_MODE_FULL || is_special_step(tt_plugin.step_id) ||
	    tt_plugin.step_id == TT_STEP_BATCH)
		return 0;
	if (container_topo_dir(sp) != 0) {
		tt_plugin.topo_file[0] = '\0';
		return 0;
	}
	rc = tt_topo_file_create(&tt_plugin.cfg, tt_plugin.job_id, tt_plugin.step_id, tt_plugin.topo_file,
				 sizeof(tt_plugin.topo_file), &tt_plugin.topo_dir, &tt_plugin.policy,
				 &tt_plugin.topo_problem);
	if (rc != 0) {
		/* A failure here would end the step with exit code 0 ("could not execve"): each
		 * task reports it instead (see apply_topology). */
		tt_plugin.topo_file[0] = '\0';
		tt_plugin.topo_nothing = rc == 1;
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

/* tt_getenv_fn over the task's environment as it is now (spank_setenv may move the array, so
 * it is looked up on every call). */
static const char *task_getenv(void *ctx, const char *name)
{
	char **env = NULL;

	if (spank_get_item((spank_t)ctx, S_JOB_ENV, &env) != ESPANK_SUCCESS)
		return NULL;
	return tt_env_array(env, name);
}

/* Remembers that the plugin set name for this task as a default (TRAIN_TOPO_SET). */
static int note_default(const char *name)
{
	if (tt_env_set_list_add(tt_plugin.topo_set, sizeof(tt_plugin.topo_set), name) != 0) {
		slurm_error(TT_PLUGIN ": internal: %s does not fit in %s", name, TT_ENV_SET);
		return -1;
	}
	return 0;
}

/* Like apply_var, but a value the user set already wins (NCCL's own variables); one the plugin
 * set for an enclosing task (listed in its TRAIN_TOPO_SET) does not. */
static int apply_default(spank_t sp, const char *name, const char *value)
{
	if (!value[0] || tt_env_user_set(task_getenv, sp, name))
		return 0;
	if (apply_var(sp, name, value) != 0)
		return -1;
	return note_default(name);
}

/* The checkpoint stop's status (tt_ckpt_exit.h) in every task, so a program started by srun
 * itself reads the same protocol as train-run's workers. Set only where unset and not listed in
 * TRAIN_TOPO_SET: a value the batch script got is then what its steps keep, and one the user
 * gives a step (TRAIN_TOPO_CKPT_EXIT=42 srun ...) wins. */
static int apply_ckpt_exit(spank_t sp)
{
	char status[8];

	if (task_getenv(sp, TT_ENV_CKPT_EXIT))
		return 0;
	snprintf(status, sizeof(status), "%d", TT_CKPT_EXIT_DEFAULT);
	return apply_var(sp, TT_ENV_CKPT_EXIT, status);
}

/* Whether Slurm chose this task's CPUs: srun --cpu-bind (none included: the user's choice) or
 * task/affinity's automatic binding, which both leave SLURM_CPU_BIND_TYPE. */
static bool slurm_chose_cpus(spank_t sp)
{
	const char *type = task_getenv(sp, "SLURM_CPU_BIND_TYPE");

	return type && *type;
}

/* The task's CPUs: Slurm's when it chose them; else train-run's rule for local rank
 * facts->local_id among the tasks of this node (cpu_bind.h), which the task is bound to here,
 * with the NUMA locality the topology probe found (mode full). */
static int bind_task(spank_t sp, const struct tt_step_facts *f, uint32_t on_node, cpu_set_t *mine)
{
	const struct tt_gpu_list *gpus = f->slurm_bound_gpus ? NULL : &f->gpus;
	const cpu_set_t *numa = tt_plugin.topo_file[0] ? tt_plugin.policy.cpus : NULL;
	cpu_set_t allowed, *all;
	int rc = -1;

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
		slurm_error(TT_PLUGIN ": cannot read the task's CPUs: %m");
		return -1;
	}
	*mine = allowed;
	if (slurm_chose_cpus(sp))
		return 0;
	all = calloc(on_node, sizeof(*all));
	if (!all) {
		slurm_error(TT_PLUGIN ": out of memory binding %u tasks", on_node);
		return -1;
	}
	if (tt_bind_node_processes(&allowed, gpus, task_getenv, sp, numa, tt_plugin.policy.ngpus,
				   on_node, all) != 0) {
		slurm_error(TT_PLUGIN ": cannot share %d CPUs among %u tasks", CPU_COUNT(&allowed),
			    on_node);
		goto out;
	}
	*mine = all[f->local_id];
	if (sched_setaffinity(0, sizeof(*mine), mine) != 0) {
		fprintf(stderr, TT_PLUGIN ": warning: cannot bind task %u to its CPUs: %m\n", f->task_id);
		*mine = allowed;
	}
	rc = 0;
out:
	free(all);
	return rc;
}

/* Mode full: the step's topology file, where the task sees it (tt_topo_file_task_view), and the
 * node's NCCL_IB_HCA / NCCL_SOCKET_IFNAME. Without a complete file NCCL_TOPO_FILE stays unset
 * (NCCL then reads the node itself): the job is never worse off for the plugin, only warned,
 * once per node, or stopped with strict=yes. */
static int apply_topology(spank_t sp, const struct tt_step_facts *facts)
{
	if (tt_plugin.mode != TT_MODE_FULL)
		return 0;
	/* This task's copy of the plugin state (forked from slurmstepd): clearing it here leaves
	 * slurmstepd's, which removes the file when the step ends. */
	if (tt_plugin.topo_file[0] &&
	    tt_topo_file_task_view(&tt_plugin.cfg, &tt_plugin.topo_dir, tt_plugin.topo_file,
				   &tt_plugin.topo_problem) != 0)
		tt_plugin.topo_file[0] = '\0';
	if (!tt_plugin.topo_file[0]) {
		if (tt_plugin.cfg.strict && !tt_plugin.topo_nothing) {
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

/* Publishes TRAIN_TOPO_SET: the defaults the plugin set for this task, which a launcher below
 * computes again per worker. An inherited list that no longer applies is removed. */
static int publish_defaults(spank_t sp)
{
	if (tt_plugin.topo_set[0])
		return apply_var(sp, TT_ENV_SET, tt_plugin.topo_set);
	spank_unsetenv(sp, TT_ENV_SET);
	return 0;
}

/* The env contract for this task, its CPUs, then its topology settings. The facts live on the
 * heap: they hold a nodelist and the tasks per node, each of up to TT_NODELIST_LEN characters. */
static int apply_task_env(spank_t sp)
{
	struct tt_step_facts *facts = malloc(sizeof(*facts));
	struct tt_task_env env;
	cpu_set_t cpus;
	tt_err err;
	size_t i;
	int rc = -1;

	tt_plugin.topo_set[0] = '\0';
	if (!facts) {
		slurm_error(TT_PLUGIN ": out of memory for the step's layout");
		return -1;
	}
	if (tt_step_facts_from_env(facts, task_getenv, sp, &err) != 0) {
		slurm_error(TT_PLUGIN ": reading the step's layout: %s", err.msg);
		goto out;
	}
	facts->ports = tt_plugin.cfg.ports;
	/* Twice: the layout says how many tasks share the node, the binding then gives this
	 * task's CPU count, which OMP_NUM_THREADS follows. */
	if (tt_layout_compute(facts, &env, &err) != 0) {
		slurm_error(TT_PLUGIN ": computing the rank environment: %s", err.msg);
		goto out;
	}
	if (bind_task(sp, facts, env.local_world_size, &cpus) != 0)
		goto out;
	facts->cpus = (unsigned)CPU_COUNT(&cpus);
	if (tt_layout_compute(facts, &env, &err) != 0)
		goto out;
	if (tt_cpuset_to_list(&cpus, env.cpu_list, sizeof(env.cpu_list)) != 0)
		env.cpu_list[0] = '\0';
	if (tt_task_env_foreach(&env, apply_var, sp) != 0 || apply_ckpt_exit(sp) != 0 ||
	    (env.omp_num_threads && note_default("OMP_NUM_THREADS") != 0) ||
	    (env.cuda_visible_devices[0] && note_default(TT_ENV_CUDA_VISIBLE_DEVICES) != 0))
		goto out;
	/* The node's first task speaks for all of them, so a warning appears once per node. */
	for (i = 0; i < env.nwarnings && facts->local_id == 0; i++)
		fprintf(stderr, TT_PLUGIN ": warning: %s\n", env.warnings[i]);
	if (tt_plugin.mode == TT_MODE_FULL && tt_plugin.cfg.hwloc_xml[0] &&
	    apply_var(sp, TT_ENV_HWLOC_XML, tt_plugin.cfg.hwloc_xml) != 0)
		goto out;
	if (apply_topology(sp, facts) != 0)
		goto out;
	rc = publish_defaults(sp);
out:
	free(facts);
	return rc;
}

/* The batch script is not a rank, but a launcher the user starts from it by hand needs the job's
 * rendezvous point: MASTER_ADDR, MASTER_PORT, NNODES and NODE_RANK as defaults (the user's own
 * values win), listed in TRAIN_TOPO_SET so that a launcher below knows them for the job's, not
 * its step's. Each srun step sets its own. A failure costs the script only these variables. */
static int apply_batch_env(spank_t sp)
{
	struct tt_rendezvous rdzv;
	uint32_t nnodes;
	char port[8], count[16];
	tt_err err;

	tt_plugin.topo_set[0] = '\0';
	if (tt_job_rendezvous_from_env(task_getenv, sp, tt_plugin.cfg.ports, &rdzv, &nnodes, &err) != 0) {
		fprintf(stderr, TT_PLUGIN ": warning: the batch script gets no MASTER_ADDR/MASTER_PORT: %s\n",
			err.msg);
		return 0;
	}
	snprintf(port, sizeof(port), "%u", rdzv.port);
	snprintf(count, sizeof(count), "%u", nnodes);
	if (apply_default(sp, TT_ENV_MASTER_ADDR, rdzv.addr) != 0 ||
	    apply_default(sp, TT_ENV_MASTER_PORT, port) != 0 ||
	    apply_default(sp, TT_ENV_NNODES, count) != 0 || apply_default(sp, TT_ENV_NODE_RANK, "0") != 0 ||
	    apply_ckpt_exit(sp) != 0)
		return -1;
	return publish_defaults(sp);
}

/* Starts the relay and tells the task about it: this process stays the relay (its pid is the
 * task's TRAIN_TOPO_RELAY_PID), the child goes on to exec the program. A launcher that finds
 * the relay among its ancestors leaves the checkpoint signal to it (one owner per subtree). */
static int start_relay(spank_t sp)
{
	struct tt_relay_config relay = { .checkpoint_signal = tt_plugin.cfg.signal };
	char pid[16], mnt_ns[24];
	struct stat ns;
	tt_err err;

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	/* This process's own namespace is always readable; a launcher in a container cannot read
	 * the relay's (no CAP_SYS_PTRACE there), so it is told. */
	snprintf(mnt_ns, sizeof(mnt_ns), "%llu",
		 stat("/proc/self/ns/mnt", &ns) == 0 ? (unsigned long long)ns.st_ino : 0ULL);
	if (apply_var(sp, TT_ENV_RELAY_PID, pid) != 0 ||
	    apply_var(sp, TT_ENV_RELAY_SIGNAL, tt_signal_name(relay.checkpoint_signal)) != 0 ||
	    apply_var(sp, TT_ENV_RELAY_MNT_NS, mnt_ns) != 0)
		return -1;
	if (tt_relay_start(&relay, &err) != 0) {
		fprintf(stderr, TT_PLUGIN ": warning: %s\n", err.msg);
		spank_unsetenv(sp, TT_ENV_RELAY_PID);
		spank_unsetenv(sp, TT_ENV_RELAY_SIGNAL);
		spank_unsetenv(sp, TT_ENV_RELAY_MNT_NS);
	}
	return 0;
}

static int set_up_task(spank_t sp)
{
	if (tt_plugin.problem.msg[0]) {
		slurm_error(TT_PLUGIN ": %s", tt_plugin.problem.msg);
		fprintf(stderr, TT_PLUGIN ": error: %s\n", tt_plugin.problem.msg);
		return -1;
	}
	if (tt_plugin.mode == TT_MODE_OFF)
		return 0;
	/* Every task carries the mode, so srun steps started from it (the batch script's, or a
	 * nested srun's) inherit it even with --export=NONE. */
	if (apply_var(sp, TT_MODE_ENV, tt_mode_name(tt_plugin.mode)) != 0)
		return -1;
	/* The batch script gets no rank env (it is not a rank), only the job's rendezvous point. */
	if (tt_plugin.step_id == TT_STEP_BATCH ? apply_batch_env(sp) != 0 : apply_task_env(sp) != 0)
		return -1;
	return start_relay(sp);
}

/* A task that cannot get what the user asked for does not run. Slurm honours a hook's error
 * only for a "required" plugstack line (slurmstepd then _exit(1)s the task, 26.05.3's
 * src/slurmd/slurmstepd/task.c); for an "optional" line it drops the error and would start the
 * program without its ranks or with a topology failure strict=yes forbids. So the task exits
 * here, as slurmstepd would, whichever the line says. */
int tt_remote_task_init(spank_t sp)
{
	if (is_special_step(tt_plugin.step_id) || set_up_task(sp) == 0)
		return 0;
	_exit(1);
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

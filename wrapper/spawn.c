/* SPDX-License-Identifier: MIT */
/* spawn.c — fork/exec of one worker (see spawn.h). Everything that can fail for a reason the
 * user can fix (program, env values) is checked in the parent before any worker starts; the
 * child only applies and execs, and reports an exec failure on its own stderr pipe. */
#include "spawn.h"
#include "tt_envnames.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "signals.h"
#include "tt_ckpt_exit.h"

static int setenv_pair(void *ctx, const char *name, const char *value)
{
	(void)ctx;
	return setenv(name, value, 1);
}

/* A site's or user's own value wins over what traintopo suggests. */
static int setenv_default(const char *name, const char *value)
{
	return value && *value ? setenv(name, value, 0) : 0;
}

/* A value train-run owns for this worker (the user did not set it): train-run's, or none,
 * whatever the plugin chose for the launcher task. */
static int setenv_owned(int users, const char *name, const char *value)
{
	if (users)
		return 0;
	return value && *value ? setenv(name, value, 1) : unsetenv(name);
}

static int setenv_u(const char *name, unsigned value)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", value);
	return setenv(name, buf, 1);
}

/* What torchrun's agent sets besides the contract (torch/distributed/elastic/agent/server/
 * local_elastic_agent.py). train-run hosts no store: TORCHELASTIC_USE_AGENT_STORE=False makes
 * init_method env:// start its own at MASTER_ADDR:MASTER_PORT, as under torchrun's c10d. */
static int set_torchrun_env(const struct tt_spawn_req *req)
{
	const struct tt_task_env *e = req->env;
	const struct tt_group_env *g = req->group;

	return setenv_u("TRAIN_RESTART_COUNT", req->restart_count) ||
	       setenv_u("TORCHELASTIC_RESTART_COUNT", req->restart_count) ||
	       setenv_u("TORCHELASTIC_MAX_RESTARTS", (unsigned)g->max_restarts) ||
	       setenv("TORCHELASTIC_RUN_ID", g->run_id, 1) ||
	       setenv("TORCHELASTIC_USE_AGENT_STORE", "False", 1) ||
	       setenv(TT_ENV_ROLE_NAME, g->role, 1) || setenv_u(TT_ENV_ROLE_RANK, e->rank) ||
	       setenv_u("ROLE_WORLD_SIZE", e->world_size) ||
	       setenv_u("GROUP_WORLD_SIZE", e->nnodes) ? -1 : 0;
}

/* The worker's TRAIN_TOPO_SET: the group's, and every default train-run set for this worker. */
static int set_topo_set(const struct tt_spawn_req *req)
{
	const struct tt_group_env *g = req->group;
	char list[TT_SET_LIST_LEN];

	snprintf(list, sizeof(list), "%s", g->topo_set);
	if ((req->env->omp_num_threads && tt_env_set_list_add(list, sizeof(list), "OMP_NUM_THREADS")) ||
	    (req->env->cuda_visible_devices[0] &&
	     tt_env_set_list_add(list, sizeof(list), TT_ENV_CUDA_VISIBLE_DEVICES)) ||
	    (!g->user_nccl_ib_hca && req->nccl_ib_hca && req->nccl_ib_hca[0] &&
	     tt_env_set_list_add(list, sizeof(list), "NCCL_IB_HCA")) ||
	    (!g->user_nccl_socket_ifname && req->nccl_socket_ifname && req->nccl_socket_ifname[0] &&
	     tt_env_set_list_add(list, sizeof(list), "NCCL_SOCKET_IFNAME")))
		return -1;
	return list[0] ? setenv(TT_ENV_SET, list, 1) : unsetenv(TT_ENV_SET);
}

/* The heartbeat channel: its fd survives exec, its number is in the environment; without one a
 * TRAIN_HEARTBEAT_FD inherited from above (a train-run under train-run) must not leak through. */
static int set_heartbeat(const struct tt_spawn_req *req)
{
	char buf[16];

	if (req->heartbeat_fd < 3)
		return unsetenv(TT_ENV_HEARTBEAT_FD);
	if (fcntl(req->heartbeat_fd, F_SETFD, 0) != 0)
		return -1;
	snprintf(buf, sizeof(buf), "%d", req->heartbeat_fd);
	return setenv(TT_ENV_HEARTBEAT_FD, buf, 1);
}

/* Runs in the child; never returns. */
static void worker_exec(const struct tt_spawn_req *req, pid_t parent)
{
	const struct tt_group_env *g = req->group;

	setpgid(0, 0);
	/* A worker must not outlive a train-run that was SIGKILLed (no orphaned GPU holders). */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(126);
	if (dup2(req->out_fd, STDOUT_FILENO) < 0 || dup2(req->err_fd, STDERR_FILENO) < 0)
		_exit(126);
	tt_sig_child_reset(req->sigmask);
	if (tt_task_env_foreach(req->env, setenv_pair, NULL) != 0 || set_torchrun_env(req) != 0 ||
	    setenv_owned(g->user_nccl_ib_hca, "NCCL_IB_HCA", req->nccl_ib_hca) != 0 ||
	    setenv_owned(g->user_nccl_socket_ifname, "NCCL_SOCKET_IFNAME", req->nccl_socket_ifname) != 0 ||
	    set_topo_set(req) != 0 || set_heartbeat(req) != 0 ||
	    /* Every worker learns the status that makes its checkpoint stop a clean one. */
	    setenv(TT_ENV_CKPT_EXIT, req->ckpt_exit, 1) != 0 ||
	    setenv_default("PYTHONUNBUFFERED", "1") != 0 ||
	    /* GPU indices here (Slurm's, the topology model's) count in PCI bus order. */
	    setenv_default("CUDA_DEVICE_ORDER", "PCI_BUS_ID") != 0) {
		dprintf(STDERR_FILENO, "train-run: cannot set the worker's environment: %s\n", strerror(errno));
		_exit(126);
	}
	if (req->cpus && sched_setaffinity(0, sizeof(*req->cpus), req->cpus) != 0)
		dprintf(STDERR_FILENO, "train-run: cannot bind rank %u to its CPUs: %s (running unbound)\n",
			req->env->rank, strerror(errno));
	execv(req->path, req->argv);
	dprintf(STDERR_FILENO, "train-run: cannot run %s: %s\n", req->path, strerror(errno));
	_exit(errno == ENOENT ? 127 : 126);
}

pid_t tt_spawn_worker(const struct tt_spawn_req *req, tt_err *err)
{
	pid_t parent = getpid();
	pid_t pid = fork();

	if (pid < 0)
		return tt_err_errno(err, "starting worker rank %u (fork)", req->env->rank);
	if (pid == 0)
		worker_exec(req, parent);
	/* Also set from this side so signals sent right after fork already reach the group. */
	setpgid(pid, pid);
	return pid;
}

/* 0 when path is an executable regular file, else 126 (exists) or 127 (does not). */
static int check_executable(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 127;
	if (!S_ISREG(st.st_mode) || access(path, X_OK) != 0)
		return 126;
	return 0;
}

int tt_resolve_program(const char *name, const char *path_env, char *out, size_t len, tt_err *err)
{
	const char *dir, *end;
	int found_rc = 127;

	if (!*name) {
		tt_err_set(err, "PROGRAM is empty; usage: train-run [OPTIONS] -- PROGRAM [ARGS...]");
		return 127;
	}
	if (strchr(name, '/')) {
		int rc = check_executable(name);

		if (rc == 127)
			tt_err_set(err, "PROGRAM '%s' not found", name);
		else if (rc == 126)
			tt_err_set(err, "PROGRAM '%s' is not an executable file", name);
		else if ((size_t)snprintf(out, len, "%s", name) >= len) {
			tt_err_set(err, "PROGRAM '%s': path too long", name);
			rc = 126;
		}
		return rc;
	}
	if (!path_env || !*path_env)
		path_env = "/usr/local/bin:/usr/bin:/bin";
	for (dir = path_env; ; dir = end + 1) {
		size_t dlen;
		int rc;

		end = strchrnul(dir, ':');
		dlen = (size_t)(end - dir);
		/* An empty PATH entry means the current directory, as in execvp. */
		if ((size_t)snprintf(out, len, "%.*s/%s", dlen ? (int)dlen : 1, dlen ? dir : ".", name) < len) {
			rc = check_executable(out);
			if (rc == 0)
				return 0;
			if (rc == 126)
				found_rc = 126;
		}
		if (!*end)
			break;
	}
	if (found_rc == 126)
		tt_err_set(err, "PROGRAM '%s' found in PATH but not executable (PATH=%s)", name, path_env);
	else
		tt_err_set(err, "PROGRAM '%s' not found in PATH=%s", name, path_env);
	return found_rc;
}

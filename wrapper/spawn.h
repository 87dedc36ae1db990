/* SPDX-License-Identifier: MIT */
/* spawn.h — starting one worker process: its own process group, its CPUs, its environment (the
 * env contract), its output pipes, default signals, and death with train-run. */
#ifndef TT_SPAWN_H
#define TT_SPAWN_H

#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/types.h>

#include "layout.h"
#include "tt_err.h"

/* What every worker of the group shares beyond its own contract: torchrun's variables and who
 * owns the NCCL defaults. */
struct tt_group_env {
	const char *run_id;		/* TORCHELASTIC_RUN_ID */
	const char *role;		/* ROLE_NAME */
	int max_restarts;		/* TORCHELASTIC_MAX_RESTARTS */
	int user_nccl_ib_hca;		/* the user set NCCL_IB_HCA (tt_env_user_set): keep it */
	int user_nccl_socket_ifname;	/* likewise NCCL_SOCKET_IFNAME */
	char topo_set[TT_SET_LIST_LEN];	/* traintopo's defaults every worker keeps (NCCL_TOPO_FILE
					 * of the plugin); each worker's TRAIN_TOPO_SET adds those
					 * train-run set for it */
};

struct tt_spawn_req {
	const char *path;		/* PROGRAM resolved by tt_resolve_program */
	char *const *argv;
	const struct tt_task_env *env;	/* the worker's env contract */
	const struct tt_group_env *group;
	unsigned restart_count;		/* TRAIN_RESTART_COUNT, TORCHELASTIC_RESTART_COUNT */
	const cpu_set_t *cpus;		/* NULL: inherit train-run's */
	const char *nccl_ib_hca;	/* the GPU's nearest HCAs; NULL or "": none (then unset
					 * unless the user's) */
	const char *nccl_socket_ifname;	/* likewise */
	const char *ckpt_exit;		/* TRAIN_TOPO_CKPT_EXIT the worker gets (tt_ckpt_exit.h),
					 * validated; required */
	int out_fd, err_fd;		/* become the worker's stdout and stderr */
	int heartbeat_fd;		/* the write end of its heartbeat pipe (heartbeat.h), kept
					 * open across exec and named in TRAIN_HEARTBEAT_FD; a value
					 * below 3 means none (the variable is then unset) */
	const sigset_t *sigmask;	/* the mask to restore in the worker */
};

/* Forks and execs the worker. Returns its pid (the id of its new process group), or -1 with err. */
pid_t tt_spawn_worker(const struct tt_spawn_req *req, tt_err *err);

/* Finds PROGRAM the way execvp would (a name with '/' as is, else each PATH entry) and writes
 * the path into out. Returns 0, 127 when not found, 126 when found but not executable, with err
 * naming the program and what was searched. */
int tt_resolve_program(const char *name, const char *path_env, char *out, size_t len, tt_err *err);

#endif

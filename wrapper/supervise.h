/* SPDX-License-Identifier: MIT */
/* supervise.h — train-run's event loop: starts the worker group, re-emits its output line by
 * line, forwards signals, applies the exit policy of proctable.h and restarts or returns.
 * One context struct holds all of train-run's mutable state. */
#ifndef TT_SUPERVISE_H
#define TT_SUPERVISE_H

#include <sched.h>
#include <signal.h>
#include <stdint.h>

#include "ctl.h"
#include "heartbeat.h"
#include "layout.h"
#include "output.h"
#include "proctable.h"
#include "tt_err.h"

#include "spawn.h"

/* What train-run computed for one worker before starting any. */
struct tt_worker_setup {
	struct tt_task_env env;		/* the env contract */
	cpu_set_t cpus;			/* its CPU binding (cpu_bind.h) */
	char nccl_ib_hca[512];		/* from the topology policy, "" when none */
	char nccl_socket_ifname[34];
};

/* One worker output stream: the read end of its pipe and where its bytes go. */
struct tt_stream {
	int fd;			/* -1 when closed */
	int dest;		/* STDOUT_FILENO or STDERR_FILENO */
	int log_fd;		/* --tee: its log file, written too; -1 when none */
	struct tt_linesplit lines;
};

struct tt_supervisor {
	/* set by the caller */
	const char *host;		/* for the failure line */
	int grace_s;
	int tag_output;
	int rank0_only;
	int user_signals_to_group;	/* application signals to the worker's process group, not
					 * just the worker (tt_signal_to_whole_group for the rest) */
	int relay_signal;		/* delivered by the plugin's relay above train-run to every
					 * process that handles it: not forwarded again; 0 = none */
	const char *console_filter;	/* --local-ranks-filter, NULL: every local rank */
	const char *redirects, *tee;	/* torchrun's std specs (options.h), NULL: none */
	const char *log_dir;		/* where attempt_N/LOCAL_RANK/std{out,err}.log go */
	const struct tt_group_env *group;
	const char *path;		/* resolved PROGRAM */
	char *const *argv;
	int nworkers;
	int max_restarts;
	const struct tt_worker_setup *setup;	/* [nworkers] */
	int sigfd;			/* from tt_sig_open, opened first thing in main() */
	sigset_t oldmask;		/* the mask before tt_sig_open, restored in workers */
	const struct tt_hb_config *hang;	/* --hang-timeout (heartbeat.h); NULL: the defaults */
	struct tt_ctl *ctl;		/* the control plane (ctl.h), connected; NULL: one node */
	const char *exclude_file;	/* a lost node's host is appended here; NULL: nowhere */
	const struct tt_census_swap *start_aside;	/* the nodes the census set aside
							 * (census.h): their hosts appended
							 * there at the start; NULL: none */
	const char *report_file;	/* --report: node 0 writes the step times as JSON; NULL */
	int standby;			/* a spare standing by (ctl.h): no worker until node 0 gives
					 * it a lost node's NODE_RANK */
	/* This node's workers take NODE_RANK node_rank of the current world (a spare its lost
	 * node's, a node of a shrink its renumbered one): fills setup[] for it as for an original
	 * node of that rank. 0, or -1 with err. */
	int (*take_role)(void *arg, uint32_t node_rank, tt_err *err);
	/* A shrink (ctl.h): NODE_RANK lost leaves this node's view of the world, which must then
	 * have nnodes nodes; their workers in *world. 0, or -1 with err when the views disagree. */
	int (*shrink)(void *arg, uint32_t lost, uint32_t nnodes, uint32_t *world, tt_err *err);
	void *role_arg;
	/* With ctl->health: this node's preflight checks (preflight.h; the network probe too) into
	 * pf, before each restart round (role_arg). */
	void (*check)(void *arg, struct tt_preflight *pf);
	/* owned by the loop */
	struct tt_proctable pt;
	struct tt_stream *streams;	/* [2 * nworkers]: stdout, stderr of worker i at 2i, 2i+1 */
	int timerfd, devnull;
	struct tt_hb hb;		/* the workers' heartbeats (heartbeat.h) */
	int *hb_fds;			/* [nworkers]: read end of worker i's heartbeat pipe, -1 closed */
	int hang_timerfd;		/* armed at the next hang deadline (CLOCK_MONOTONIC, absolute) */
	int hung;			/* a hang ended this round: the others may be stopped too */
	int64_t hang_defer_us;		/* a weak hang here waits until then for a node that knows better */
	char hang_what[128];		/* the hang, for the control plane's fault */
	char ckpt_exit[12];		/* TRAIN_TOPO_CKPT_EXIT for the workers, validated */
	int output_broken;		/* our stdout/stderr is gone: keep draining, stop writing */
	struct tt_steps steps;		/* node 0: every rank's step times (steps.h) */
	struct tt_faults faults;	/* node 0: the control plane's decisions (ctl.h), for --report */
	long steps_due_ms;		/* when this node's step times are shared next */
	uint32_t go_round;		/* the last round node 0 let go after the preflight (ctl.h) */
	int remap;			/* a shrink renumbered this node: its workers take NODE_RANK
					 * node_rank before the next round starts */
	uint32_t node_rank;
	int late_failure;		/* node 0: another node failed or was lost after this node's
					 * workers ended (tt_ctl_drain): the launch failed */
};

/* Runs the group to the end. Returns the exit status for train-run (the failing worker's, 0
 * when all succeeded; on node 0 of more than one, 1 when another node failed or was lost after
 * its own workers ended, so that node 0's status is the launch's), or -1 with err when the
 * loop itself could not be set up. */
int tt_supervise(struct tt_supervisor *s, tt_err *err);

#endif

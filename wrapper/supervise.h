/* supervise.h — train-run's event loop: starts the worker group, re-emits its output line by
 * line, forwards signals, applies the exit policy of proctable.h and restarts or returns.
 * One context struct holds all of train-run's mutable state. */
#ifndef TT_SUPERVISE_H
#define TT_SUPERVISE_H

#include <sched.h>
#include <signal.h>

#include "layout.h"
#include "output.h"
#include "proctable.h"
#include "tt_err.h"

/* What train-run computed for one worker before starting any. */
struct tt_worker_setup {
	struct tt_task_env env;		/* the env contract */
	cpu_set_t cpus;			/* its CPU binding (bind.h) */
	char nccl_ib_hca[512];		/* from the topology policy, "" when none */
	char nccl_socket_ifname[34];
};

/* One worker output stream: the read end of its pipe and where its lines go. */
struct tt_stream {
	int fd;			/* -1 when closed */
	int dest;		/* STDOUT_FILENO or STDERR_FILENO */
	struct tt_linesplit lines;
};

struct tt_supervisor {
	/* set by the caller */
	const char *host;		/* for the failure line */
	int grace_s;
	int tag_output;
	int rank0_only;
	int user_signals_to_group;	/* SIGUSR1/2 to the worker's process group, not just the worker */
	const char *path;		/* resolved PROGRAM */
	char *const *argv;
	int nworkers;
	int max_restarts;
	const struct tt_worker_setup *setup;	/* [nworkers] */
	int sigfd;			/* from tt_sig_open, opened first thing in main() */
	sigset_t oldmask;		/* the mask before tt_sig_open, restored in workers */
	/* owned by the loop */
	struct tt_proctable pt;
	struct tt_stream *streams;	/* [2 * nworkers]: stdout, stderr of worker i at 2i, 2i+1 */
	int timerfd, devnull;
	int output_broken;		/* our stdout/stderr is gone: keep draining, stop writing */
};

/* Runs the group to the end. Returns the exit status for train-run (the failing worker's, 0
 * when all succeeded), or -1 with err when the loop itself could not be set up. */
int tt_supervise(struct tt_supervisor *s, tt_err *err);

#endif

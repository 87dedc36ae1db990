/* SPDX-License-Identifier: MIT */
/* proctable.h — train-run's table of workers and its exit policy, as pure state transitions.
 * The event loop reports what happened (a worker started, exited, a stop was requested) and the
 * table answers what to do next; no system calls here, so every policy decision is unit-tested. */
#ifndef TT_PROCTABLE_H
#define TT_PROCTABLE_H

#include <sys/types.h>

#include "tt_err.h"

enum tt_worker_state {
	TT_WORKER_NEW,		/* not started in this round */
	TT_WORKER_RUNNING,
	TT_WORKER_EXITED,
};

struct tt_worker {
	int local_rank;
	int rank;		/* global rank, filled by the caller from the env contract */
	pid_t pid;
	enum tt_worker_state state;
	int code;		/* exit status as a shell reports it: 128+signal when killed */
	int signo;		/* the signal that killed it, 0 when it exited */
};

enum tt_pt_phase {
	TT_PHASE_RUNNING,	/* no failure yet in this round */
	TT_PHASE_STOPPING,	/* a worker failed or a stop was requested: the rest are ending */
};

/* What the event loop must do after an event. */
enum tt_pt_action {
	TT_ACT_NONE,		/* keep waiting */
	TT_ACT_STOP_GROUP,	/* send SIGTERM to every running worker and arm the grace timer */
	TT_ACT_RESTART,		/* every worker is gone: start the group again */
	TT_ACT_EXIT,		/* every worker is gone: exit with tt_pt_exit_code() */
	TT_ACT_WAIT,		/* every worker is gone after a failure: wait for the
				 * coordinator's decision (tt_pt_decided) */
};

struct tt_proctable {
	struct tt_worker *workers;
	int nworkers;
	int max_restarts;
	int restarts;		/* restarts done = TRAIN_RESTART_COUNT of the current round */
	enum tt_pt_phase phase;
	int stop_signal;	/* the termination signal train-run received, 0 if none */
	int failed;		/* index of the first worker that failed this round, -1 if none */
	int exit_code;		/* first non-zero worker status of the last round */
	int ckpt_code;		/* the checkpoint stop's status (tt_ckpt_exit.h), 0: none */
	int checkpointed;	/* workers that exited with ckpt_code this round */
	int coordinated;	/* restarts are the control plane's decisions (ctl.h) */
	int decided;		/* this round's decision: 1 restart into decided_round, -1 stop */
	int decided_round;
};

int tt_pt_init(struct tt_proctable *pt, int nworkers, int max_restarts, tt_err *err);
void tt_pt_free(struct tt_proctable *pt);

/* Resets every worker to NEW for a (re)start of the group. */
void tt_pt_round_begin(struct tt_proctable *pt);

void tt_pt_started(struct tt_proctable *pt, int local_rank, pid_t pid);

/* Index of the worker with this pid among the running ones, or -1. */
int tt_pt_find(const struct tt_proctable *pt, pid_t pid);

int tt_pt_running(const struct tt_proctable *pt);

/* Shell-style status of a waitpid() status: the exit code, or 128+signal (signal in *signo). */
int tt_pt_status_code(int wait_status, int *signo);

/* A worker exiting with code (1..125) checkpointed and stopped: not a failure, it stops no
 * other worker, and a round that ends with checkpoints and no failure exits 0, never restarts. */
void tt_pt_set_ckpt_code(struct tt_proctable *pt, int code);

/* Whether the last round ended as a checkpoint stop: some worker exited with the checkpoint
 * status, the rest with 0 or the same, and none failed. */
int tt_pt_checkpointed(const struct tt_proctable *pt);

/* A child was reaped. *reported is set to the worker's index when this exit is the failure that
 * ends the round and deserves the one-line report, else to -1. */
enum tt_pt_action tt_pt_exited(struct tt_proctable *pt, pid_t pid, int wait_status, int *reported);

/* train-run itself received a termination signal (already forwarded to the workers): no more
 * restarts. Returns 1 when this is the first such request and the grace timer must be armed. */
int tt_pt_stop_requested(struct tt_proctable *pt, int signo);

/* Restarts are decided for every node at once (ctl.h), not by this table: a round that ends
 * with a failure waits for tt_pt_decided instead of restarting. */
void tt_pt_set_coordinated(struct tt_proctable *pt);

/* The coordinator decided: restart into round (TRAIN_RESTART_COUNT) or, for -1, stop. The
 * workers still running are stopped; once none is, the round restarts or the loop exits. A
 * restart into a round not after this one changes nothing. */
enum tt_pt_action tt_pt_decided(struct tt_proctable *pt, int round);

/* Starting the group failed (fork, pipe): end the round without restart, exiting with code. */
void tt_pt_abort(struct tt_proctable *pt, int code);

int tt_pt_exit_code(const struct tt_proctable *pt);

#endif

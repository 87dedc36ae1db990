/* SPDX-License-Identifier: MIT */
/* proctable.c — worker states and the exit policy of train-run (see proctable.h).
 * Policy: the first failure of a round (non-zero exit or death by signal) stops the others; when
 * all are gone the group restarts while restarts remain and nobody asked train-run to stop. A
 * worker exiting with the checkpoint status saved its state on request: the others are expected
 * to do the same (they got the same signal), so it stops nobody and the round ends cleanly.
 * Coordinated (a launch of several nodes), the restart is the coordinator's decision for every
 * node: a failed round waits for it, and a decision stops a round that had no failure here. */
#include "proctable.h"

#include <stdlib.h>
#include <sys/wait.h>

int tt_pt_init(struct tt_proctable *pt, int nworkers, int max_restarts, tt_err *err)
{
	int i;

	if (nworkers < 1)
		return tt_err_set(err, "worker count %d: need at least one worker per node", nworkers);
	if (max_restarts < 0)
		return tt_err_set(err, "--max-restarts %d: must be 0 or more", max_restarts);
	pt->workers = calloc((size_t)nworkers, sizeof(*pt->workers));
	if (!pt->workers)
		return tt_err_errno(err, "allocating the table of %d workers", nworkers);
	pt->nworkers = nworkers;
	pt->max_restarts = max_restarts;
	pt->restarts = 0;
	pt->stop_signal = 0;
	pt->exit_code = 0;
	pt->ckpt_code = 0;
	pt->coordinated = 0;
	for (i = 0; i < nworkers; i++) {
		pt->workers[i].local_rank = i;
		pt->workers[i].rank = i;
	}
	tt_pt_round_begin(pt);
	return 0;
}

void tt_pt_free(struct tt_proctable *pt)
{
	free(pt->workers);
	pt->workers = NULL;
	pt->nworkers = 0;
}

void tt_pt_round_begin(struct tt_proctable *pt)
{
	int i;

	for (i = 0; i < pt->nworkers; i++) {
		pt->workers[i].pid = 0;
		pt->workers[i].state = TT_WORKER_NEW;
		pt->workers[i].code = 0;
		pt->workers[i].signo = 0;
	}
	pt->phase = TT_PHASE_RUNNING;
	pt->failed = -1;
	pt->exit_code = 0;
	pt->checkpointed = 0;
	pt->decided = 0;
}

void tt_pt_set_ckpt_code(struct tt_proctable *pt, int code)
{
	pt->ckpt_code = code;
}

int tt_pt_checkpointed(const struct tt_proctable *pt)
{
	return pt->checkpointed > 0 && pt->failed < 0 && pt->exit_code == 0;
}

void tt_pt_started(struct tt_proctable *pt, int local_rank, pid_t pid)
{
	pt->workers[local_rank].pid = pid;
	pt->workers[local_rank].state = TT_WORKER_RUNNING;
}

int tt_pt_find(const struct tt_proctable *pt, pid_t pid)
{
	int i;

	for (i = 0; i < pt->nworkers; i++)
		if (pt->workers[i].state == TT_WORKER_RUNNING && pt->workers[i].pid == pid)
			return i;
	return -1;
}

int tt_pt_running(const struct tt_proctable *pt)
{
	int i, n = 0;

	for (i = 0; i < pt->nworkers; i++)
		n += pt->workers[i].state == TT_WORKER_RUNNING;
	return n;
}

int tt_pt_status_code(int wait_status, int *signo)
{
	*signo = 0;
	if (WIFSIGNALED(wait_status)) {
		*signo = WTERMSIG(wait_status);
		return 128 + *signo;
	}
	return WEXITSTATUS(wait_status);
}

/* Every worker of the round is gone: restart or exit. */
static enum tt_pt_action round_over(struct tt_proctable *pt)
{
	if (pt->coordinated && !pt->stop_signal) {
		if (pt->decided > 0) {
			pt->restarts = pt->decided_round;
			return TT_ACT_RESTART;
		}
		if (pt->decided == 0 && pt->failed >= 0)
			return TT_ACT_WAIT;
		/* Stopped for another node's failure: still a failed launch. */
		if (pt->decided < 0 && pt->exit_code == 0)
			pt->exit_code = 1;
		return TT_ACT_EXIT;
	}
	if (pt->failed >= 0 && !pt->stop_signal && pt->restarts < pt->max_restarts) {
		pt->restarts++;
		return TT_ACT_RESTART;
	}
	return TT_ACT_EXIT;
}

enum tt_pt_action tt_pt_exited(struct tt_proctable *pt, pid_t pid, int wait_status, int *reported)
{
	int i = tt_pt_find(pt, pid);
	struct tt_worker *w;

	*reported = -1;
	if (i < 0)
		return TT_ACT_NONE;	/* not ours: an adopted orphan (train-run may be a subreaper) */
	w = &pt->workers[i];
	w->state = TT_WORKER_EXITED;
	w->code = tt_pt_status_code(wait_status, &w->signo);
	if (!w->signo && pt->ckpt_code && w->code == pt->ckpt_code) {
		pt->checkpointed++;
		return tt_pt_running(pt) ? TT_ACT_NONE : round_over(pt);
	}
	if (w->code != 0 && pt->exit_code == 0)
		pt->exit_code = w->code;
	if (w->code != 0 && pt->phase == TT_PHASE_RUNNING) {
		pt->failed = i;
		pt->phase = TT_PHASE_STOPPING;
		*reported = i;
		return tt_pt_running(pt) ? TT_ACT_STOP_GROUP : round_over(pt);
	}
	return tt_pt_running(pt) ? TT_ACT_NONE : round_over(pt);
}

int tt_pt_stop_requested(struct tt_proctable *pt, int signo)
{
	int first = !pt->stop_signal;

	pt->stop_signal = signo;
	pt->phase = TT_PHASE_STOPPING;
	return first;
}

void tt_pt_set_coordinated(struct tt_proctable *pt)
{
	pt->coordinated = 1;
}

enum tt_pt_action tt_pt_decided(struct tt_proctable *pt, int round)
{
	if (round >= 0 && round <= pt->restarts)
		return TT_ACT_NONE;
	pt->decided = round < 0 ? -1 : 1;
	pt->decided_round = round;
	if (!tt_pt_running(pt))
		return round_over(pt);
	if (pt->phase == TT_PHASE_STOPPING)
		return TT_ACT_NONE;
	pt->phase = TT_PHASE_STOPPING;
	return TT_ACT_STOP_GROUP;
}

void tt_pt_abort(struct tt_proctable *pt, int code)
{
	pt->phase = TT_PHASE_STOPPING;
	pt->max_restarts = pt->restarts;
	if (pt->exit_code == 0)
		pt->exit_code = code;
}

int tt_pt_exit_code(const struct tt_proctable *pt)
{
	return pt->exit_code;
}

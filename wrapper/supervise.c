/* SPDX-License-Identifier: MIT */
/* supervise.c — the event loop of train-run (see supervise.h). Everything arrives as a file
 * descriptor — signals and child exits (signalfd), the grace deadline (timerfd), worker output
 * (pipes) — and one poll() waits for all of them: no sleeps, no polling intervals. */
#include "supervise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hang.h"
#include "options.h"
#include "signals.h"
#include "spawn.h"
#include "tt_io.h"
#include "tt_ckpt_exit.h"
#include "tt_file.h"
#include "tt_parse.h"
#include "tt_signal.h"

#define READ_CHUNK 65536
/* Reads per stream per wake-up: a worker that never stops writing cannot starve the signals. */
#define READS_PER_WAKEUP 4
/* Reads when a worker has exited: what its pipe still holds (a helper may keep writing). */
#define READS_AT_EXIT 64

struct emit_ctx {
	struct tt_supervisor *s;
	int dest;
};

static int emit_line(void *ctx, const char *line, size_t len)
{
	struct emit_ctx *e = ctx;

	/* A vanished reader of our output must not stop the training: drop lines from then on. */
	if (!e->s->output_broken && tt_write_all(e->dest, line, len, false) != 0)
		e->s->output_broken = 1;
	return 0;
}

static void stream_close(struct tt_supervisor *s, struct tt_stream *st)
{
	struct emit_ctx e = { s, st->dest };

	if (st->fd < 0)
		return;
	tt_out_flush(&st->lines, emit_line, &e);
	close(st->fd);
	st->fd = -1;
	if (st->log_fd >= 0)
		close(st->log_fd);
	st->log_fd = -1;
}

/* Reads what the pipe holds now, at most max_reads chunks; closes the stream at end of file. */
static void stream_read(struct tt_supervisor *s, struct tt_stream *st, int max_reads)
{
	char buf[READ_CHUNK];
	struct emit_ctx e = { s, st->dest };

	while (st->fd >= 0 && max_reads-- > 0) {
		ssize_t n = read(st->fd, buf, sizeof(buf));

		if (n > 0) {
			/* A log file that fails (disk full) is dropped; the console goes on. */
			if (st->log_fd >= 0 && tt_write_all(st->log_fd, buf, (size_t)n, false) != 0) {
				close(st->log_fd);
				st->log_fd = -1;
			}
			tt_out_feed(&st->lines, buf, (size_t)n, emit_line, &e);
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		stream_close(s, st);	/* EOF, or an error that will not go away */
	}
}

/* Reads every stream of worker i that has data now (its last lines come before any report). */
static void drain_worker(struct tt_supervisor *s, int i)
{
	stream_read(s, &s->streams[2 * i], READS_AT_EXIT);
	stream_read(s, &s->streams[2 * i + 1], READS_AT_EXIT);
}

static void drain_all_and_close(struct tt_supervisor *s)
{
	int i;

	for (i = 0; i < 2 * s->nworkers; i++) {
		stream_read(s, &s->streams[i], READS_AT_EXIT);
		/* A helper the worker left behind may hold the pipe open: do not wait for it. */
		stream_close(s, &s->streams[i]);
	}
}

static int arm_grace(struct tt_supervisor *s)
{
	struct itimerspec t = { .it_value = { .tv_sec = s->grace_s, .tv_nsec = s->grace_s ? 0 : 1 } };

	return timerfd_settime(s->timerfd, 0, &t, NULL);
}

static void disarm_grace(struct tt_supervisor *s)
{
	struct itimerspec t = { 0 };

	timerfd_settime(s->timerfd, 0, &t, NULL);
}

static int signal_running(struct tt_supervisor *s, int signo)
{
	int group = tt_signal_to_whole_group(signo) || s->user_signals_to_group;
	int i, n = 0;

	for (i = 0; i < s->nworkers; i++)
		if (s->pt.workers[i].state == TT_WORKER_RUNNING &&
		    tt_sig_send_worker(s->pt.workers[i].pid, signo, group) == 0)
			n++;
	return n;
}

/* ---- heartbeats and hangs (heartbeat.h: the rules; hang.h: /proc and the clock) ---------------- */

static void hb_close(struct tt_supervisor *s, int i)
{
	if (s->hb_fds[i] >= 0)
		close(s->hb_fds[i]);
	s->hb_fds[i] = -1;
	tt_hb_closed(&s->hb, i);
}

/* Reads what worker i's heartbeat pipe holds now; a closed channel is no longer watched. */
static void hb_read(struct tt_supervisor *s, int i)
{
	char buf[4096];
	int k;

	for (k = 0; k < READS_PER_WAKEUP && s->hb_fds[i] >= 0; k++) {
		ssize_t n = read(s->hb_fds[i], buf, sizeof(buf));

		if (n > 0) {
			tt_hb_feed(&s->hb, i, buf, (size_t)n, tt_now_us());
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		hb_close(s, i);
	}
}

/* On a multi-node step a rank stopped elsewhere stalls every rank in the collectives, and every
 * node's hang timer runs out at about the same moment; the first fault to reach node 0 names the
 * culprit for every node. A node whose pick is only the longest silent (no rank of it stopped or in
 * uninterruptible sleep: likely a victim waiting in a collective) waits this long before it tells,
 * so that the node whose rank is stopped tells first (measured by bench-ft-cluster: without it, a
 * victim on the other node was named in 2 of 4 runs). */
#define HANG_VICTIM_DEFER_US 1500000

/* The hang timer at the earliest deadline of a running worker; disarmed when none has one, a
 * hang was declared (one per round: its kill ends the round) or the round is already ending. */
static void arm_hang_timer(struct tt_supervisor *s)
{
	struct itimerspec t = { 0 };
	int64_t next = INT64_MAX;
	int i;

	for (i = 0; !s->hung && s->pt.phase == TT_PHASE_RUNNING && i < s->nworkers; i++) {
		int64_t d = s->pt.workers[i].state == TT_WORKER_RUNNING ? tt_hb_deadline(&s->hb, i) : INT64_MAX;

		if (d < next)
			next = d;
	}
	if (next != INT64_MAX && s->hang_defer_us > next)
		next = s->hang_defer_us;
	if (next != INT64_MAX) {
		/* 0 would disarm: a deadline at the epoch of the clock is never in the future anyway. */
		t.it_value.tv_sec = (time_t)(next / 1000000);
		t.it_value.tv_nsec = (long)(next % 1000000) * 1000 + (next ? 0 : 1);
	}
	timerfd_settime(s->hang_timerfd, TFD_TIMER_ABSTIME, &t, NULL);
}

/* A hang deadline passed: the one line naming the culprit (heartbeat.h's pick), its kernel stack
 * when readable, then SIGKILL to its process group, since a stopped or deadlocked worker would
 * sit out a SIGTERM. Its exit is the round's failure: the others are stopped and, under
 * --max-restarts, the group restarts (a program that checkpoints resumes from there). */
static void on_hang_timer(struct tt_supervisor *s)
{
	int64_t now = tt_now_us(), t;
	char *states = NULL, stack[1024], others[64] = "";
	uint64_t ticks;
	int i, c, nhung = 0, trigger = -1;
	const struct tt_worker *w;
	char st;

	if (read(s->hang_timerfd, &ticks, sizeof(ticks)) != (ssize_t)sizeof(ticks) ||
	    s->hung || s->pt.phase != TT_PHASE_RUNNING)
		return;
	for (i = 0; i < s->nworkers; i++)
		if (s->pt.workers[i].state == TT_WORKER_RUNNING && tt_hb_hung(&s->hb, i, now)) {
			nhung++;
			if (trigger < 0)
				trigger = i;
		}
	if (!nhung) {
		s->hang_defer_us = 0;	/* progress again: a later hang is judged afresh */
		return;
	}
	states = calloc((size_t)s->nworkers + 1, 1);
	for (i = 0; states && i < s->nworkers; i++)
		states[i] = s->pt.workers[i].state == TT_WORKER_RUNNING ? tt_hang_proc_state(s->pt.workers[i].pid) : '?';
	c = tt_hb_culprit(&s->hb, now, states);
	st = states && c >= 0 ? states[c] : '?';
	free(states);
	if (s->ctl && st != 'T' && st != 't' && st != 'D' && (!s->hang_defer_us || now < s->hang_defer_us)) {
		if (!s->hang_defer_us)
			s->hang_defer_us = now + HANG_VICTIM_DEFER_US;
		return;
	}
	if (c < 0)
		c = trigger;
	w = &s->pt.workers[c];
	/* A stopped culprit in a section without a timeout: the timeout that ran out is the other's. */
	t = tt_hb_timeout(&s->hb, c) ? tt_hb_timeout(&s->hb, c) : tt_hb_timeout(&s->hb, trigger);
	nhung -= tt_hb_hung(&s->hb, c, now);
	if (nhung > 0)
		snprintf(others, sizeof(others), "; %d other rank%s here without progress too", nhung,
			 nhung == 1 ? "" : "s");
	snprintf(s->hang_what, sizeof(s->hang_what), TT_FAULT_HANG_WHAT "%s: no progress for %.1f s (timeout %.1f s)",
		 s->hb.w[c].section, (double)(now - s->hb.w[c].last_us) / 1e6, (double)t / 1e6);
	fprintf(stderr, "train-run: host %s: rank %d %s%s\n", s->host, w->rank, s->hang_what, others);
	tt_hang_kernel_stack(w->pid, stack, sizeof(stack));
	if (stack[0])
		fprintf(stderr, "train-run: host %s: rank %d kernel stack: %s\n", s->host, w->rank, stack);
	s->hung = 1;
	tt_sig_send_worker(w->pid, SIGKILL, 1);
}

/* The one line that names the failed worker; what it did into what (size TT_CTL_WHAT). */
static void report_failure(struct tt_supervisor *s, int i, char *what)
{
	const struct tt_worker *w = &s->pt.workers[i];
	int others = tt_pt_running(&s->pt);

	if (w->signo)
		snprintf(what, TT_CTL_WHAT, "was killed by SIG%s (status %d)", sigabbrev_np(w->signo) ? sigabbrev_np(w->signo) : "?", w->code);
	else
		snprintf(what, TT_CTL_WHAT, "exited with code %d", w->code);
	fprintf(stderr, "train-run: host %s: rank %d (local rank %d, pid %d) %s; stopping %d other worker%s\n",
		s->host, w->rank, w->local_rank, (int)w->pid, what, others, others == 1 ? "" : "s");
}

/* Opens log file NAME.log of worker i in this round's LOG_DIR/attempt_N/LOCAL_RANK/. */
static int open_log(struct tt_supervisor *s, int i, const char *name, tt_err *err)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/attempt_%d", s->log_dir, s->pt.restarts);
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return tt_err_errno(err, "creating the log directory %s", path);
	snprintf(path, sizeof(path), "%s/attempt_%d/%d", s->log_dir, s->pt.restarts, i);
	if (mkdir(path, 0777) != 0 && errno != EEXIST)
		return tt_err_errno(err, "creating the log directory %s", path);
	snprintf(path, sizeof(path), "%s/attempt_%d/%d/%s.log", s->log_dir, s->pt.restarts, i, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0)
		return tt_err_errno(err, "creating the log file %s", path);
	return fd;
}

/* Where worker i's stdout (k 0) and stderr (k 1) go, as torchrun decides it: --tee to its log
 * file and the console, --redirects to the log file only, else the console; --rank0-only and
 * --local-ranks-filter keep it off the console. The worker writes straight into the log file or
 * /dev/null when nothing reaches the console; otherwise into a pipe train-run reads. */
static int open_streams(struct tt_supervisor *s, int i, int child_fds[2], tt_err *err)
{
	int rank = (int)s->setup[i].env.rank, k;
	int console = !(s->rank0_only && rank != 0) && tt_run_console_shows(s->console_filter, i);

	for (k = 0; k < 2; k++) {
		struct tt_stream *st = &s->streams[2 * i + k];
		int bit = k ? 2 : 1;
		int tee = tt_run_std_for(s->tee, i) & bit;
		int logged = tee || (tt_run_std_for(s->redirects, i) & bit);
		int log_fd = logged ? open_log(s, i, k ? "stderr" : "stdout", err) : -1;
		int p[2];

		if (logged && log_fd < 0)
			return -1;
		if (!(console && (tee || !logged))) {
			child_fds[k] = logged ? log_fd : s->devnull;
			continue;
		}
		if (pipe2(p, O_CLOEXEC) != 0) {
			if (log_fd >= 0)
				close(log_fd);
			return tt_err_errno(err, "creating the output pipe of rank %d", rank);
		}
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		st->fd = p[0];
		st->log_fd = log_fd;
		child_fds[k] = p[1];
	}
	return 0;
}

static int rank_of(const struct tt_supervisor *s, int i)
{
	return (int)s->setup[i].env.rank;
}

/* Worker i's heartbeat pipe: both ends non-blocking (a worker's write never waits for
 * train-run: a full pipe drops the line), the write end at 3 or above so it can be passed on. */
static int open_heartbeat(int p[2], int rank, tt_err *err)
{
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return tt_err_errno(err, "creating the heartbeat pipe of rank %d", rank);
	if (p[1] < 3) {
		int fd = fcntl(p[1], F_DUPFD_CLOEXEC, 3);

		close(p[1]);
		p[1] = fd;
		if (fd < 0) {
			close(p[0]);
			p[0] = -1;
			return tt_err_errno(err, "creating the heartbeat pipe of rank %d", rank);
		}
	}
	return 0;
}

/* Starts every worker of a round. On failure the ones started are stopped by the caller. */
static int start_round(struct tt_supervisor *s, tt_err *err)
{
	int i, k;

	tt_pt_round_begin(&s->pt);
	tt_hb_round_begin(&s->hb);
	s->hung = 0;
	s->hang_defer_us = 0;
	s->hang_what[0] = '\0';
	for (i = 0; i < s->nworkers; i++) {
		int child_fds[2] = { -1, -1 }, hb[2] = { -1, -1 };
		const struct tt_worker_setup *w = &s->setup[i];
		struct tt_spawn_req req = {
			.path = s->path, .argv = s->argv, .env = &w->env, .group = s->group,
			.restart_count = (unsigned)s->pt.restarts, .cpus = &w->cpus,
			.nccl_ib_hca = w->nccl_ib_hca, .nccl_socket_ifname = w->nccl_socket_ifname,
			.sigmask = &s->oldmask, .ckpt_exit = s->ckpt_exit,
		};
		pid_t pid;

		pid = -1;
		hb_close(s, i);
		if (open_streams(s, i, child_fds, err) == 0 && open_heartbeat(hb, rank_of(s, i), err) == 0) {
			req.out_fd = child_fds[0];
			req.err_fd = child_fds[1];
			req.heartbeat_fd = hb[1];
			s->hb_fds[i] = hb[0];
			pid = tt_spawn_worker(&req, err);
		}
		for (k = 0; k < 2; k++)
			if (child_fds[k] >= 0 && child_fds[k] != s->devnull)
				close(child_fds[k]);
		if (hb[1] >= 0)
			close(hb[1]);
		if (pid < 0)
			return -1;
		tt_pt_started(&s->pt, i, pid);
	}
	return 0;
}

static int take_role(struct tt_supervisor *s, uint32_t node_rank, tt_err *err);

/* Applies the policy's answer. Returns 1 when the loop is over (exit), else 0. */
static int apply(struct tt_supervisor *s, enum tt_pt_action act, tt_err *err)
{
	switch (act) {
	case TT_ACT_NONE:
		return 0;
	case TT_ACT_STOP_GROUP:
		signal_running(s, SIGTERM);
		/* After a hang the others may be stopped as well: let them see the SIGTERM. */
		if (s->hung)
			signal_running(s, SIGCONT);
		arm_grace(s);
		return 0;
	case TT_ACT_RESTART:
		drain_all_and_close(s);
		disarm_grace(s);
		/* A shrink's new NODE_RANK, once the old round's workers are all gone. */
		if (s->remap) {
			s->remap = 0;
			if (take_role(s, s->node_rank, err))
				return 1;
		}
		/* Preflight before the round (ctl.h): it starts on node 0's go (on_verdict). */
		if (s->ctl && s->ctl->health && s->go_round != (uint32_t)s->pt.restarts) {
			struct tt_preflight pf;

			s->check(s->role_arg, &pf);
			tt_ctl_health(s->ctl, (uint32_t)s->pt.restarts, &pf);
			return 0;
		}
		/* A round a spare's replacement added needs no restart left (ctl.h). */
		if (s->pt.restarts <= s->pt.max_restarts)
			fprintf(stderr, "train-run: restarting the %d workers (restart %d of %d)\n",
				s->nworkers, s->pt.restarts, s->pt.max_restarts);
		else
			fprintf(stderr, "train-run: starting the %d workers of round %d\n", s->nworkers,
				s->pt.restarts);
		if (start_round(s, err) != 0) {
			fprintf(stderr, "train-run: %s\n", err->msg);
			tt_pt_abort(&s->pt, 1);
			return apply(s, tt_pt_running(&s->pt) ? TT_ACT_STOP_GROUP : TT_ACT_EXIT, err);
		}
		return 0;
	case TT_ACT_WAIT:
		disarm_grace(s);	/* nothing left to kill: the decision comes through the loop */
		return 0;
	case TT_ACT_EXIT:
		drain_all_and_close(s);
		disarm_grace(s);
		/* The one line of a checkpoint stop: it is not a failure, so nothing else is said. */
		if (tt_pt_checkpointed(&s->pt))
			fprintf(stderr, "train-run: host %s: checkpointed; requeue or resubmit to resume (%d worker%s "
				"exited with %s=%d)\n", s->host, s->pt.checkpointed, s->pt.checkpointed == 1 ? "" : "s",
				TT_ENV_CKPT_EXIT, s->pt.ckpt_code);
		return 1;
	}
	return 1;
}

/* Every worker's global rank from its contract, into the table and the --tag-output prefixes. */
static int assign_ranks(struct tt_supervisor *s, tt_err *err)
{
	int i;

	for (i = 0; i < s->nworkers; i++)
		s->pt.workers[i].rank = (int)s->setup[i].env.rank;
	for (i = 0; i < 2 * s->nworkers; i++) {
		char prefix[32] = "";

		if (s->tag_output)
			tt_out_rank_prefix(prefix, sizeof(prefix), (int)s->setup[i / 2].env.rank);
		tt_out_free(&s->streams[i].lines);
		if (tt_out_init(&s->streams[i].lines, prefix, err) != 0)
			return -1;
	}
	return 0;
}

/* This node's workers take NODE_RANK node_rank: their contracts and ranks anew. Returns 1 when
 * the loop is over (the contracts could not be made: this node ends, and node 0 takes that for
 * its loss). */
static int take_role(struct tt_supervisor *s, uint32_t node_rank, tt_err *err)
{
	if (s->take_role(s->role_arg, node_rank, err) == 0 && assign_ranks(s, err) == 0)
		return 0;
	fprintf(stderr, "train-run: %snode %u cannot take node rank %u: %s\n", s->standby ? "spare " : "",
		s->ctl->node, node_rank, err->msg);
	tt_pt_abort(&s->pt, 1);
	return apply(s, TT_ACT_EXIT, err);
}

/* Appends a lost node's host to the exclude file, for the requeue template (one host a line). */
static void note_exclusion(struct tt_supervisor *s, const char *host)
{
	FILE *f;
	int ok;

	if (!s->exclude_file)
		return;
	f = fopen(s->exclude_file, "ae");
	ok = f && fprintf(f, "%s\n", host) >= 0;
	if (f && fclose(f) != 0)
		ok = 0;
	if (!ok)
		fprintf(stderr, "train-run: cannot append the lost host to %s (%s): %s\n", s->exclude_file,
			TT_ENV_EXCLUDE_FILE, strerror(errno));
}

/* A replace's or a shrink's new round (v) on this node: none for a spare standing by; this node
 * stops when it is the one lost (it failed its preflight). Returns 1 when the loop is over. */
static int new_round(struct tt_supervisor *s, const struct tt_ctl_msg *v, tt_err *err)
{
	if (v->node == s->ctl->node) {
		tt_pt_abort(&s->pt, 1);
		return apply(s, tt_pt_decided(&s->pt, -1), err);
	}
	return s->standby ? 0 : apply(s, tt_pt_decided(&s->pt, (int)v->round), err);
}

/* The control plane's verdict for every node: its one line, then the policy's answer. Returns
 * 1 when the loop is over. */
static int on_verdict(struct tt_supervisor *s, const struct tt_ctl_msg *v, tt_err *err)
{
	char line[512];
	int here = tt_pt_running(&s->pt);

	switch (v->kind) {
	case TT_CTL_RESTART:
		if (s->standby)
			return 0;	/* another node's fault: a spare has no worker to restart */
		fprintf(stderr, "train-run: host %s: rank %d on host %s %s: every node restarts its workers "
			"(restart %u of %d; stopping %d here)\n", s->host, v->rank, v->host, v->what, v->round,
			s->pt.max_restarts, here);
		return apply(s, tt_pt_decided(&s->pt, (int)v->round), err);
	case TT_CTL_STOP:
		fprintf(stderr, "train-run: host %s: rank %d on host %s %s: no restart left (%d used): every "
			"node stops (stopping %d here)\n", s->host, v->rank, v->host, v->what,
			s->pt.max_restarts, here);
		return apply(s, tt_pt_decided(&s->pt, -1), err);
	case TT_CTL_REPLACE:
		fprintf(stderr, "train-run: host %s: node %s lost (%s); spare node %u (%s) takes its node rank "
			"%d: every node restarts its workers (round %u; stopping %d here)\n", s->host, v->host,
			v->what, v->spare, v->spare_host, v->rank, v->round, here);
		note_exclusion(s, v->host);
		if (v->spare == s->ctl->node) {
			if (take_role(s, (uint32_t)v->rank, err))
				return 1;
			s->standby = 0;
		}
		return new_round(s, v, err);
	case TT_CTL_SHRINK: {
		uint32_t world = 0;

		if (s->shrink(s->role_arg, (uint32_t)v->rank, v->nnodes, &world, err) != 0) {
			fprintf(stderr, "train-run: host %s: node %s lost, but %s; stopping %d worker%s here\n",
				s->host, v->host, err->msg, here, here == 1 ? "" : "s");
			note_exclusion(s, v->host);
			tt_pt_abort(&s->pt, 1);
			return apply(s, tt_pt_decided(&s->pt, -1), err);
		}
		fprintf(stderr, "train-run: host %s: node %s lost (%s); no spare: every node restarts its "
			"workers on %u nodes (round %u; world %u; stopping %d here)\n", s->host, v->host,
			v->what, v->nnodes, v->round, world, here);
		note_exclusion(s, v->host);
		if (v->node != s->ctl->node && !s->standby) {
			s->node_rank = tt_ctl_renumber(s->remap ? s->node_rank : s->setup[0].env.node_rank,
						       (uint32_t)v->rank);
			s->remap = 1;
		}
		return new_round(s, v, err);
	}
	case TT_CTL_GO:
		if (s->standby || v->round != (uint32_t)s->pt.restarts || tt_pt_running(&s->pt))
			return 0;
		s->go_round = v->round;
		return apply(s, TT_ACT_RESTART, err);
	case TT_CTL_SPARE_LOST:
		fprintf(stderr, "train-run: host %s: spare node %u (%s) lost while standing by (%s); the job "
			"goes on with one spare fewer\n", s->host, v->node, v->host, v->what);
		note_exclusion(s, v->host);
		return 0;
	default:
		tt_ctl_lost_line(v, line, sizeof(line));
		fprintf(stderr, "train-run: %s; stopping %d worker%s here\n", line, here, here == 1 ? "" : "s");
		note_exclusion(s, v->host);
		return apply(s, tt_pt_decided(&s->pt, -1), err);
	}
}

/* Worker i failed and ended the round here: the coordinator hears of it (node 0 decides at once).
 * Returns 1 when the loop is over. */
static int tell_fault(struct tt_supervisor *s, int i, const char *what, tt_err *err)
{
	struct tt_ctl_msg m = { .kind = TT_CTL_FAULT, .round = (uint32_t)s->pt.restarts,
				.rank = s->pt.workers[i].rank }, v;

	snprintf(m.host, sizeof(m.host), "%s", s->ctl->host ? s->ctl->host : "?");	/* as the others know it */
	snprintf(m.what, sizeof(m.what), "%s", s->hung && s->hang_what[0] ? s->hang_what : what);
	return tt_ctl_fault(s->ctl, &m, &v) ? on_verdict(s, &v, err) : 0;
}

/* Reaps every exited child. Returns 1 when the loop is over. */
static int on_child(struct tt_supervisor *s, tt_err *err)
{
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		int i = tt_pt_find(&s->pt, pid), reported, saved = s->pt.checkpointed;
		enum tt_pt_action act;
		char what[TT_CTL_WHAT];

		if (i >= 0) {
			drain_worker(s, i);
			/* What it left behind may keep the pipe open: not this worker's progress. */
			hb_close(s, i);
		}
		act = tt_pt_exited(&s->pt, pid, status, &reported);
		if (reported >= 0)
			report_failure(s, reported, what);
		/* The first checkpoint stop: the others got the same signal and follow within the grace
		 * period; one that does not is killed then and counts as a failure (no silent hang). */
		if (!saved && s->pt.checkpointed && act == TT_ACT_NONE && s->pt.phase == TT_PHASE_RUNNING)
			arm_grace(s);
		if (apply(s, act, err))
			return 1;
		if (reported >= 0 && s->ctl && tell_fault(s, reported, what, err))
			return 1;
	}
	return 0;
}

/* Handles the signals that arrived. Returns 1 when the loop is over. */
static int on_signals(struct tt_supervisor *s, tt_err *err)
{
	struct signalfd_siginfo si;

	while (read(s->sigfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int signo = (int)si.ssi_signo;

		if (signo == SIGCHLD) {
			if (on_child(s, err))
				return 1;
			continue;
		}
		if (!tt_signal_is_forwarded(signo))
			continue;
		/* Continued after a stop (a suspend stops the workers and train-run alike): the
		 * workers' silence while stopped is no hang. */
		if (signo == SIGCONT) {
			tt_hb_resumed(&s->hb, tt_now_us());
			if (s->ctl)
				tt_ctl_resumed(s->ctl);
		}
		/* One owner per subtree: the relay already reached every worker that handles it. */
		if (signo != s->relay_signal)
			signal_running(s, signo);
		if (tt_signal_is_termination(signo) && tt_pt_stop_requested(&s->pt, signo)) {
			fprintf(stderr, "train-run: got SIG%s, passed it to %d workers; SIGKILL in %d s\n",
				sigabbrev_np(signo), tt_pt_running(&s->pt), s->grace_s);
			arm_grace(s);
			/* Waiting for the coordinator with no worker left: nothing to wait for now. */
			if (!tt_pt_running(&s->pt))
				return apply(s, TT_ACT_EXIT, err);
		}
	}
	return 0;
}

static void on_grace_over(struct tt_supervisor *s)
{
	uint64_t ticks;

	if (read(s->timerfd, &ticks, sizeof(ticks)) != (ssize_t)sizeof(ticks))
		return;
	fprintf(stderr, "train-run: grace period of %d s is over, killing %d workers\n",
		s->grace_s, signal_running(s, SIGKILL));
}

static int is_node0(const struct tt_supervisor *s)
{
	return !s->ctl || s->ctl->node == 0;
}

/* How often the step times are shared: TT_CTL_STEPS_MS, or for tests TRAINRT_STEPS_TEST_MS (100
 * to TT_CTL_STEPS_MS; another value counts as none). */
static long steps_every_ms(void)
{
	const char *v = getenv("TRAINRT_STEPS_TEST_MS");
	long long ms;

	return v && tt_parse_int(v, 100, TT_CTL_STEPS_MS, "TRAINRT_STEPS_TEST_MS", &ms, NULL) == 0 ?
		(long)ms : TT_CTL_STEPS_MS;
}

/* This node's ranks' step times to node 0 (with the control plane) or into s->steps; node 0
 * names the job's stragglers (final: the whole report, else only when it finds one). */
static void share_steps(struct tt_supervisor *s, int final)
{
	struct tt_step_row *rows = calloc((size_t)s->nworkers, sizeof(*rows));
	struct tt_ctl_msg late;
	char *out = NULL;
	int i, n = 0;
	size_t len;

	s->steps_due_ms = tt_now_ms() + steps_every_ms();
	if (!rows)
		return;
	/* After a shrink, until the next round: the ranks are about to change (none is sent). */
	for (i = 0; !s->remap && i < s->nworkers; i++) {
		struct tt_step_row *r = &rows[n];

		r->p50_us = tt_hb_step_percentile(&s->hb, i, 50.0);
		if (r->p50_us < 0)
			continue;
		r->p99_us = tt_hb_step_percentile(&s->hb, i, 99.0);
		r->samples = (uint64_t)s->hb.w[i].nsamples;
		r->busy_p50_us = tt_hb_busy_percentile(&s->hb, i, 50.0);
		r->busy_p99_us = tt_hb_busy_percentile(&s->hb, i, 99.0);
		r->busy_samples = (uint64_t)s->hb.w[i].nbusy;
		r->rank = rank_of(s, i);
		snprintf(r->host, sizeof(r->host), "%s", s->host ? s->host : "?");
		n++;
	}
	if (s->ctl)
		tt_ctl_steps(s->ctl, rows, n);
	for (i = 0; !s->ctl && i < n; i++)
		if (tt_steps_put(&s->steps, &rows[i]) != 0)
			fprintf(stderr, "train-run: out of memory for the step times of rank %d\n", rows[i].rank);
	free(rows);
	/* The job's lines on node 0 of more than one; one node's own report says it all. */
	if (!s->ctl || !is_node0(s))
		return;
	/* The others' last step times; not when a signal stopped this node (they may run on). */
	if (final && !s->pt.stop_signal && tt_ctl_drain(s->ctl, s->sigfd, &late)) {
		char line[512];

		if (late.kind == TT_CTL_LOST) {
			tt_ctl_lost_line(&late, line, sizeof(line));
			note_exclusion(s, late.host);
		} else {
			snprintf(line, sizeof(line), "rank %d on host %s %s", late.rank, late.host, late.what);
		}
		fprintf(stderr, "train-run: host %s: %s after this node's workers ended: the launch failed\n",
			s->host, line);
		s->late_failure = 1;
	}
	len = TT_STEPS_ROW_MAX * ((size_t)s->steps.n + 2);
	out = malloc(len);
	if (out && (tt_steps_report(&s->steps, TT_HB_STRAGGLER, final, out, len) > 0 || final))
		fputs(out, stderr);
	free(out);
}

/* --report: the step times and faults as JSON into s->report_file, whole or not at all
 * (tt_file.h: a temporary file beside it, synced, renamed over it). */
static void write_report(struct tt_supervisor *s)
{
	size_t len = TT_STEPS_ROW_MAX * ((size_t)s->steps.n + 2) + TT_STEPS_FAULT_MAX * (size_t)s->faults.n;
	char *out = malloc(len);
	tt_err err;

	if (!out || tt_steps_json(&s->steps, &s->faults, TT_HB_STRAGGLER, s->pt.restarts, out, len) != 0)
		tt_err_set(&err, "out of memory for the report of %d ranks", s->steps.n);
	else if (tt_file_write_atomic(s->report_file, out, strlen(out), &err) == 0)
		err.msg[0] = '\0';
	if (err.msg[0])
		fprintf(stderr, "train-run: cannot write the step-time report (--report): %s\n", err.msg);
	free(out);
}

static int loop(struct tt_supervisor *s, tt_err *err)
{
	int nfds = 3 + 3 * s->nworkers + (s->ctl ? tt_ctl_nfds(s->ctl) : 0);
	struct pollfd *p = calloc((size_t)nfds, sizeof(*p));
	int *which = calloc((size_t)nfds, sizeof(*which));
	int rc = -1;

	if (!p || !which) {
		tt_err_errno(err, "allocating the poll set");
		goto out;
	}
	for (;;) {
		int n = 3, i, nw, ctl_ready = 0;
		struct tt_ctl_msg v;

		p[0] = (struct pollfd){ .fd = s->sigfd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = s->timerfd, .events = POLLIN };
		p[2] = (struct pollfd){ .fd = s->hang_timerfd, .events = POLLIN };
		for (i = 0; i < 2 * s->nworkers; i++) {
			if (s->streams[i].fd < 0)
				continue;
			p[n] = (struct pollfd){ .fd = s->streams[i].fd, .events = POLLIN };
			which[n++] = i;
		}
		/* Heartbeats after the output streams: which[] >= 2 * nworkers is worker which - 2n's. */
		for (i = 0; i < s->nworkers; i++) {
			if (s->hb_fds[i] < 0)
				continue;
			p[n] = (struct pollfd){ .fd = s->hb_fds[i], .events = POLLIN };
			which[n++] = 2 * s->nworkers + i;
		}
		/* The control plane's last: p[nw..n). */
		nw = n;
		if (s->ctl)
			n += tt_ctl_pollfds(s->ctl, p + n);
		arm_hang_timer(s);
		if (poll(p, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			tt_err_errno(err, "waiting for the workers (poll)");
			goto out;
		}
		/* Output first, so lines written before an exit come before its report. */
		for (i = nw; i < n; i++)
			ctl_ready |= p[i].revents != 0;
		for (i = 3; i < nw; i++) {
			if (!p[i].revents)
				continue;
			if (which[i] < 2 * s->nworkers)
				stream_read(s, &s->streams[which[i]], READS_PER_WAKEUP);
			else
				hb_read(s, which[i] - 2 * s->nworkers);
		}
		/* Signals before the hang timer: after a suspend both are ready at once, and the
		 * SIGCONT must restart the workers' silence before the timer judges it. */
		if (p[0].revents && on_signals(s, err))
			break;
		if (p[1].revents)
			on_grace_over(s);
		if (p[2].revents)
			on_hang_timer(s);
		if (ctl_ready && tt_ctl_service(s->ctl, &v) && on_verdict(s, &v, err))
			break;
		/* A spare still standing by when node 0 ended in order: the job is done. */
		if (s->standby && tt_ctl_coordinator_done(s->ctl))
			break;
		if (tt_now_ms() >= s->steps_due_ms)
			share_steps(s, 0);
	}
	rc = tt_pt_exit_code(&s->pt);
out:
	free(p);
	free(which);
	return rc;
}

/* The straggler report of the final summary (heartbeat.h), when any worker wrote steps. */
static void report_step_times(struct tt_supervisor *s)
{
	int *ranks = calloc((size_t)s->nworkers, sizeof(*ranks)), i;
	char *out = malloc(65536);

	for (i = 0; ranks && out && i < s->nworkers; i++)
		ranks[i] = rank_of(s, i);
	if (ranks && out) {
		tt_hb_report(&s->hb, ranks, s->host, out, 65536);
		fputs(out, stderr);
	}
	free(ranks);
	free(out);
}

static void teardown(struct tt_supervisor *s)
{
	int i;

	if (s->streams) {
		for (i = 0; i < 2 * s->nworkers; i++) {
			if (s->streams[i].fd >= 0)
				close(s->streams[i].fd);
			if (s->streams[i].log_fd >= 0)
				close(s->streams[i].log_fd);
			tt_out_free(&s->streams[i].lines);
		}
		free(s->streams);
		s->streams = NULL;
	}
	if (s->timerfd >= 0)
		close(s->timerfd);
	if (s->hang_timerfd >= 0)
		close(s->hang_timerfd);
	for (i = 0; s->hb_fds && i < s->nworkers; i++)
		if (s->hb_fds[i] >= 0)
			close(s->hb_fds[i]);
	free(s->hb_fds);
	s->hb_fds = NULL;
	tt_hb_free(&s->hb);
	tt_steps_free(&s->steps);
	tt_faults_free(&s->faults);
	if (s->ctl) {
		s->ctl->steps = NULL;
		s->ctl->faults = NULL;
	}
	if (s->devnull >= 0)
		close(s->devnull);
	tt_pt_free(&s->pt);
}

int tt_supervise(struct tt_supervisor *s, tt_err *err)
{
	int rc = -1, i, ckpt;

	s->timerfd = s->devnull = s->hang_timerfd = -1;
	s->output_broken = 0;
	s->streams = NULL;
	s->hb_fds = NULL;
	memset(&s->hb, 0, sizeof(s->hb));
	s->steps = (struct tt_steps){ 0 };
	s->faults = (struct tt_faults){ 0 };
	s->steps_due_ms = tt_now_ms() + steps_every_ms();
	if (s->ctl) {
		s->ctl->steps = &s->steps;
		s->ctl->faults = &s->faults;
	}
	ckpt = tt_ckpt_exit_parse(getenv(TT_ENV_CKPT_EXIT), err);
	if (ckpt < 0 || tt_pt_init(&s->pt, s->nworkers, s->max_restarts, err) != 0)
		return -1;
	if (s->ctl)
		tt_pt_set_coordinated(&s->pt);
	s->streams = calloc((size_t)(2 * s->nworkers), sizeof(*s->streams));
	s->hb_fds = calloc((size_t)s->nworkers, sizeof(*s->hb_fds));
	if (!s->streams || !s->hb_fds) {
		tt_err_errno(err, "allocating %d output streams", 2 * s->nworkers);
		goto out;
	}
	for (i = 0; i < s->nworkers; i++)
		s->hb_fds[i] = -1;
	if (tt_hb_init(&s->hb, s->nworkers, s->hang, err) != 0)
		goto out;
	for (i = 0; i < 2 * s->nworkers; i++) {
		s->streams[i].fd = -1;
		s->streams[i].log_fd = -1;
		s->streams[i].dest = i % 2 ? STDERR_FILENO : STDOUT_FILENO;
	}
	/* A spare's ranks come with the NODE_RANK it takes (take_role). */
	if (!s->standby && assign_ranks(s, err) != 0)
		goto out;
	s->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (s->devnull < 0) {
		tt_err_errno(err, "opening /dev/null");
		goto out;
	}
	s->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->timerfd < 0) {
		tt_err_errno(err, "creating the grace-period timer");
		goto out;
	}
	s->hang_timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->hang_timerfd < 0) {
		tt_err_errno(err, "creating the hang timer");
		goto out;
	}
	tt_pt_set_ckpt_code(&s->pt, ckpt);
	snprintf(s->ckpt_exit, sizeof(s->ckpt_exit), "%d", ckpt);
	for (const struct tt_census_swap *w = s->start_aside; w && w->node; w++)
		note_exclusion(s, w->host);
	if (!s->standby && start_round(s, err) != 0) {
		fprintf(stderr, "train-run: %s\n", err->msg);
		tt_pt_abort(&s->pt, 1);
		if (apply(s, tt_pt_running(&s->pt) ? TT_ACT_STOP_GROUP : TT_ACT_EXIT, err)) {
			rc = tt_pt_exit_code(&s->pt);
			goto out;
		}
	}
	rc = loop(s, err);
	if (rc >= 0) {
		report_step_times(s);
		share_steps(s, 1);
		if (s->late_failure && rc == 0)
			rc = 1;
		if (s->report_file && is_node0(s))
			write_report(s);
	}
out:
	teardown(s);
	return rc;
}

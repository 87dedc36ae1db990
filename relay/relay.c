/* SPDX-License-Identifier: MIT */
/* relay.c — fork-and-forward signal relay for tasks under proctrack/cgroup (see relay.h). */
#include "relay.h"
#include "proctree.h"
#include "tt_signal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TARGETS 4096

static void send_checkpoint_signal(pid_t child, int sig)
{
	static pid_t targets[MAX_TARGETS];
	struct tt_proc *procs = NULL;
	size_t nprocs = 0, n, i;

	n = 0;
	if (tt_proc_snapshot("/proc", &procs, &nprocs, NULL) == 0) {
		n = tt_relay_targets(procs, nprocs, getpid(), sig, targets, MAX_TARGETS);
		free(procs);
	}
	if (n == 0) {
		kill(child, sig);
		return;
	}
	for (i = 0; i < n && i < MAX_TARGETS; i++)
		kill(targets[i], sig);
}

static void exit_like(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		sigset_t set;

		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		prctl(PR_SET_DUMPABLE, 0);	/* the program already dumped core if it was going to */
		raise(sig);
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static void __attribute__((noreturn)) relay_loop(const struct tt_relay_config *cfg, pid_t child, int fd)
{
	struct signalfd_siginfo si;

	for (;;) {
		ssize_t got = read(fd, &si, sizeof(si));
		int sig, status;
		pid_t pid;

		if (got != (ssize_t)sizeof(si)) {
			if (got < 0 && errno == EINTR)
				continue;
			/* Cannot read signals any more: stop relaying but keep the task's status right. */
			while (waitpid(child, &status, 0) < 0 && errno == EINTR)
				;
			exit_like(status);
		}
		sig = (int)si.ssi_signo;
		if (sig == SIGCHLD) {
			/* Subreaper: orphaned descendants are reaped here too. */
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
				if (pid == child)
					exit_like(status);
			}
			continue;
		}
		if (sig == cfg->checkpoint_signal) {
			send_checkpoint_signal(child, sig);
		} else {
			kill(child, sig);
		}
	}
}

int tt_relay_start(const struct tt_relay_config *cfg, tt_err *err)
{
	sigset_t relayed, old;
	pid_t child;
	int fd;

	/* What slurmstepd, srun or scancel may send that the program must still see (tt_signal.h). */
	sigemptyset(&relayed);
	tt_signal_forwarded_set(&relayed);
	sigaddset(&relayed, cfg->checkpoint_signal);
	sigaddset(&relayed, SIGCHLD);
	/* Blocked before the fork so no signal can arrive between fork and signalfd. */
	if (sigprocmask(SIG_BLOCK, &relayed, &old) != 0)
		return tt_err_errno(err, "relay: cannot block signals");
	child = fork();
	if (child < 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return tt_err_errno(err, "relay: fork failed; the task runs without the signal relay");
	}
	if (child == 0) {
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 0;
	}
	fd = signalfd(-1, &relayed, SFD_CLOEXEC);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (fd < 0) {
		int status = 255 << 8;

		fprintf(stderr, "train_topo: relay: signalfd failed (%s); signals go to the program only\n",
			strerror(errno));
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
		exit_like(status);
	}
	relay_loop(cfg, child, fd);
}

/* SPDX-License-Identifier: MIT */
/* signals.c — signal plumbing of train-run (see signals.h). Each worker leads its own process
 * group, so a signal also reaches the helpers it started (data loaders, shells), which is what
 * Slurm's proctrack/cgroup does not do for descendants (see shared notes on signals). */
#include "signals.h"
#include "tt_signal.h"

#include <errno.h>
#include <sys/signalfd.h>
#include <unistd.h>

int tt_sig_open(sigset_t *old, tt_err *err)
{
	sigset_t set;
	int fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	tt_signal_forwarded_set(&set);
	if (sigprocmask(SIG_BLOCK, &set, old) != 0)
		return tt_err_errno(err, "blocking the forwarded signals");
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		return tt_err_errno(err, "ignoring SIGPIPE");
	fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (fd < 0)
		return tt_err_errno(err, "creating the signalfd for the forwarded signals");
	return fd;
}

void tt_sig_child_reset(const sigset_t *old)
{
	/* An ignored signal stays ignored across exec: give the worker the defaults back. */
	signal(SIGPIPE, SIG_DFL);
	sigprocmask(SIG_SETMASK, old, NULL);
}

int tt_sig_send_worker(pid_t pid, int signo, int group)
{
	int leads_group, group_rc;

	if (!group)
		return kill(pid, signo);
	leads_group = getpgid(pid) == pid;
	group_rc = kill(-pid, signo);

	if (leads_group)
		return group_rc;
	/* The worker left its group (setsid): it is signalled directly too, once. */
	return kill(pid, signo) == 0 || group_rc == 0 ? 0 : -1;
}

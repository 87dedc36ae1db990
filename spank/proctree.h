/* proctree.h — which processes a relayed signal should reach.
 * Under proctrack/cgroup Slurm signals only a task's direct child; the relay uses this to find the
 * task's descendants that actually handle the signal, so training processes see a checkpoint signal
 * without killing helpers (shells, sleep, launchers) that would die from its default action. */
#ifndef TT_PROCTREE_H
#define TT_PROCTREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "tt_err.h"

struct tt_proc {
	pid_t pid;
	pid_t ppid;
	uint64_t handled;	/* SigCgt | SigBlk: bit N-1 set when signal N has a handler or is
				 * blocked (taken with sigwait/signalfd, as srun and train-run do) */
};

/* Reads pid, ppid, SigCgt and SigBlk of every process under proc_root ("/proc"). Processes that vanish
 * while reading are skipped. *procs is malloc'd; free it. */
int tt_proc_snapshot(const char *proc_root, struct tt_proc **procs, size_t *n, tt_err *err);

/* The relay rule: every descendant of root (not root itself) that handles sig (see handled). Writes up to cap
 * pids to out and returns how many there are (may exceed cap: then only cap were written).
 * 0 means nobody handles it: the relay then signals its direct child, as Slurm would have. */
size_t tt_relay_targets(const struct tt_proc *procs, size_t n, pid_t root, int sig,
			pid_t *out, size_t cap);

#endif

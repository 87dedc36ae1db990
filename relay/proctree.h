/* SPDX-License-Identifier: MIT */
/* proctree.h — which processes a relayed signal should reach, and whether a relay is above us.
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
	uint64_t mnt_ns;	/* inode of /proc/PID/ns/mnt, 0 when unknown (not readable) */
};

/* Reads pid, ppid, SigCgt and SigBlk of every process under proc_root ("/proc"). Processes that vanish
 * while reading are skipped. *procs is malloc'd; free it. */
int tt_proc_snapshot(const char *proc_root, struct tt_proc **procs, size_t *n, tt_err *err);

/* Whether ancestor is a strict ancestor of pid: walks PPid: lines under proc_root ("/proc") from
 * pid up to pid 1. 0 when it is not, or when the chain cannot be read. A launcher uses it to
 * trust a relay pid it found in its environment only when that relay really is above it (the
 * value may have been inherited across a step boundary, where the relay is someone else's). */
int tt_proc_is_ancestor(const char *proc_root, pid_t pid, pid_t ancestor);

/* Whether the relay rule (below) reaches pid, a process that handles sig (or will: a launcher
 * asks before it blocks it), from the relay ancestor: relay is one of pid's ancestors under
 * proc_root and no container runtime between them keeps pid to itself (see tt_relay_targets).
 * A launcher leaves sig to the relay only then; else (train-run in an Apptainer container, or in
 * an OCI container that shares the relay's PID namespace) it passes sig on itself. Inside a
 * container the namespaces of the processes above are not readable (no CAP_SYS_PTRACE there):
 * then pid's own namespace is compared with relay_mnt_ns (TRAIN_TOPO_RELAY_MNT_NS, 0 unknown),
 * and a process between them that handles sig, in another namespace than pid, is taken for the
 * runtime. 0 also when the processes cannot be read. */
int tt_relay_reaches(const char *proc_root, pid_t pid, pid_t relay, int sig, uint64_t relay_mnt_ns);

/* The relay rule: every descendant of root (not root itself) that handles sig (see handled). Writes up to cap
 * pids to out and returns how many there are (may exceed cap: then only cap were written).
 * 0 means nobody handles it: the relay then signals its direct child, as Slurm would have.
 * A container is reached through its runtime: below a descendant that handles sig, a child in
 * another mount namespace that handles sig too (the first process of crun's, runc's or
 * Apptainer's container, to which the runtime passes every signal on) and all below it are left
 * out, else a trainer there would see the signal twice (from the relay and from the runtime, or
 * from a train-run there). */
size_t tt_relay_targets(const struct tt_proc *procs, size_t n, pid_t root, int sig,
			pid_t *out, size_t cap);

#endif

/* SPDX-License-Identifier: MIT */
/* relay.h — the signal relay the plugin puts between slurmstepd and the user's program.
 * Under proctrack/cgroup, Slurm delivers a non-KILL signal only to a task's direct child, so a
 * checkpoint signal never reaches a trainer started by a shell or a launcher. In task_init the task
 * forks: the child goes on to exec the program, the parent stays as the task Slurm knows about,
 * forwards signals (the checkpoint signal to every descendant that handles it) and exits with the
 * program's status. In the batch step the same rule makes `--signal=B:USR1@T` and
 * `scancel --batch --signal=USR1` reach the running steps: srun catches the signal and forwards it
 * to its step, whose tasks' relays pass it on. Slurm 23.11's spank_prepend_task_argv is not used:
 * an exec'd relay program would still have to fork the user's program to stay its parent, so it
 * removes no fork, adds an exec and a binary every compute node must carry, and 22.05 lacks it. */
#ifndef TT_RELAY_H
#define TT_RELAY_H

#include "tt_err.h"

/* What the relay tells its task, so a launcher below leaves the checkpoint signal to it:
 *   TRAIN_TOPO_RELAY_PID    the relay's pid (a launcher trusts it only when that process is
 *                           one of its ancestors: tt_proc_is_ancestor, proctree.h), and
 *   TRAIN_TOPO_RELAY_SIGNAL the checkpoint signal it delivers to every descendant that
 *                           handles it (tt_signal_name's spelling), and
 *   TRAIN_TOPO_RELAY_MNT_NS the relay's mount namespace (inode of /proc/PID/ns/mnt), which a
 *                           launcher in a container, unable to read its ancestors' namespaces,
 *                           compares with its own (tt_relay_reaches) */
#define TT_ENV_RELAY_PID "TRAIN_TOPO_RELAY_PID"
#define TT_ENV_RELAY_SIGNAL "TRAIN_TOPO_RELAY_SIGNAL"
#define TT_ENV_RELAY_MNT_NS "TRAIN_TOPO_RELAY_MNT_NS"

struct tt_relay_config {
	int checkpoint_signal;	/* reaches every descendant that catches it */
};

/* Forks. Returns 0 in the child, which continues as the user's program with the signal mask it
 * had. The parent never returns: it relays until the child exits, then exits the same way.
 * Returns -1 (nothing changed) when the fork fails. */
int tt_relay_start(const struct tt_relay_config *cfg, tt_err *err);

#endif

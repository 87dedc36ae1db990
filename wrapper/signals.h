/* SPDX-License-Identifier: MIT */
/* signals.h — how signals reach train-run and its workers: every signal of tt_signal.h's table
 * is blocked and read from one signalfd in the event loop, so there are no async handlers and
 * no races. Which signals those are, and which end the group, is tt_signal.h's table. */
#ifndef TT_SIGNALS_H
#define TT_SIGNALS_H

#include <signal.h>
#include <sys/types.h>

#include "tt_err.h"

/* Blocks SIGCHLD and the forwarded signals (tt_signal_forwarded_set), ignores SIGPIPE (a closed stdout must not kill the
 * training), and returns a non-blocking signalfd for them; the previous mask goes to *old. */
int tt_sig_open(sigset_t *old, tt_err *err);

/* In a forked worker before exec: default dispositions and the mask train-run started with. */
void tt_sig_child_reset(const sigset_t *old);

/* Sends signo to the worker and, with group set, its process group. Returns 0, or -1 (with
 * errno) when neither exists any more. */
int tt_sig_send_worker(pid_t pid, int signo, int group);

#endif

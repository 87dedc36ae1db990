/* signals.h — which signals train-run forwards and how they reach it: all of them are blocked
 * and read from one signalfd in the event loop, so there are no async handlers and no races. */
#ifndef TT_SIGNALS_H
#define TT_SIGNALS_H

#include <signal.h>
#include <sys/types.h>

#include "tt_err.h"

/* Blocks SIGCHLD and the forwarded signals, ignores SIGPIPE (a closed stdout must not kill the
 * training), and returns a non-blocking signalfd for them; the previous mask goes to *old. */
int tt_sig_open(sigset_t *old, tt_err *err);

/* In a forked worker before exec: default dispositions and the mask train-run started with. */
void tt_sig_child_reset(const sigset_t *old);

/* SIGTERM, SIGINT, SIGHUP: forwarded, and train-run stops its workers. */
int tt_sig_is_termination(int signo);

/* Every signal train-run passes on to its workers (SIGUSR1/2, SIGCONT and the terminations). */
int tt_sig_is_forwarded(int signo);

/* SIGUSR1/SIGUSR2: the application's own signals (checkpoint, requeue), which a process that
 * does not catch them dies of; --signal-scope decides whether the worker's helpers get them. */
int tt_sig_is_user(int signo);

/* Sends signo to the worker and, with group set, its process group. Returns 0, or -1 (with
 * errno) when neither exists any more. */
int tt_sig_send_worker(pid_t pid, int signo, int group);

#endif

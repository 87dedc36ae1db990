/* SPDX-License-Identifier: MIT */
/* tt_signal.h — the one table of signals traintopo passes on: which a user may name as the
 * checkpoint signal (plugstack signal=, train-mlp --signal), which the plugin's relay and
 * train-run forward to the program, and which of those end the program's group. The relay,
 * train-run and the parsers all read it, so no list of signal names exists twice. */
#ifndef TT_SIGNAL_H
#define TT_SIGNAL_H

#include <signal.h>
#include <stddef.h>

/* The signal number for name (USR1, USR2, HUP, INT, TERM, URG; with or without "SIG", any
 * case), or -1 when it is not one a user may choose as the checkpoint signal. */
int tt_signal_by_name(const char *name);

/* "USR1", ... for a signal of the table, NULL for any other. */
const char *tt_signal_name(int signo);

/* The checkpoint names for messages, "USR1, USR2, HUP, INT, TERM or URG", into buf (64 bytes
 * are enough; a shorter buf gets a cut list). */
void tt_signal_checkpoint_names(char *buf, size_t len);

/* Adds every forwarded signal to set: the checkpoint signals above, QUIT, CONT, ALRM and XCPU,
 * i.e. what slurmstepd, srun or scancel may send that a program must still see (KILL and STOP
 * cannot be caught and reach every process anyway). */
void tt_signal_forwarded_set(sigset_t *set);

/* Whether signo is in the forwarded set. */
int tt_signal_is_forwarded(int signo);

/* TERM, INT, HUP, QUIT: a launcher receiving one stops its workers. */
int tt_signal_is_termination(int signo);

/* Signals a launcher always sends to each worker's whole process group (the terminations and
 * CONT); the others are the application's (checkpoint, ALRM, XCPU) and go to the group or the
 * worker alone as the launcher is told. */
int tt_signal_to_whole_group(int signo);

#endif

/* SPDX-License-Identifier: MIT */
/* tt_ckpt_exit.h — the checkpoint stop's exit status, traintopo's one protocol for any program:
 * on the checkpoint signal a program saves its state and exits with TRAIN_TOPO_CKPT_EXIT (99
 * unless the environment says otherwise). train-run puts the variable into every worker's
 * environment and treats that status as a clean stop; train-mlp exits with it; the templates
 * requeue on it. Any other non-zero status, or a death by signal, stays a failure. */
#ifndef TT_CKPT_EXIT_H
#define TT_CKPT_EXIT_H

#include "tt_err.h"

#define TT_ENV_CKPT_EXIT "TRAIN_TOPO_CKPT_EXIT"
#define TT_CKPT_EXIT_DEFAULT 99

/* The status that value (the variable's text; NULL or "" when unset) stands for: 1..125 (0 is
 * success, 126 and 127 are the shell's cannot-run statuses, 128 and up deaths by signal).
 * Returns it, or -1 with err naming the variable, the value and the valid range. */
int tt_ckpt_exit_parse(const char *value, tt_err *err);

#endif

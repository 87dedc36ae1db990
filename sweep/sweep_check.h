/* SPDX-License-Identifier: MIT */
/* sweep_check.h — a grid checked against the program it is for, before any array task runs: for
 * train-mlp every key must be one of its options and every value one it accepts (a typo fails
 * `train-sweep size` at once, not every task of the array); other programs' options are theirs,
 * so their grids are checked for syntax only (sweep_grid_parse). */
#ifndef SWEEP_CHECK_H
#define SWEEP_CHECK_H

#include "sweep_grid.h"
#include "tt_err.h"

/* Whether PROGRAM (a name or path; NULL: the default, train-mlp) is train-mlp. */
int sweep_program_is_train_mlp(const char *program);

/* Checks every key and every value of grid (read from file name) with train-mlp's own parser.
 * Returns 0, or -1 with err naming the file, the key, the value and what is valid. */
int sweep_grid_check_train_mlp(const struct sweep_grid *grid, const char *name, tt_err *err);

#endif

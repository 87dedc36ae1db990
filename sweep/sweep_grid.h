/* SPDX-License-Identifier: MIT */
/* sweep_grid.h — a hyperparameter grid ("lr = 1e-3, 3e-3" per line) and its points.
 * One parser serves both sides of a sweep: sbatch-templates/sweep.sh asks `train-sweep point` for
 * the options of its array task, and `train-sweep report` uses it to know every point's values. */
#ifndef SWEEP_GRID_H
#define SWEEP_GRID_H

#include "tt_err.h"

#include <stddef.h>

/* Grids larger than this are almost certainly a typo (and beyond Slurm's MaxArraySize). */
#define SWEEP_MAX_POINTS 1000000L

struct sweep_axis {
	char *key;     /* the program's option without the dashes, e.g. "lr", "max-steps", "weight_decay" */
	char **values; /* in file order */
	size_t nvalues;
};

struct sweep_grid {
	struct sweep_axis *axes; /* in file order; the last axis varies fastest */
	size_t naxes;
	long npoints;
};

/* Parses the text of a sweep file; name (the file name) starts every error message. */
int sweep_grid_parse(const char *text, const char *name, struct sweep_grid *grid, tt_err *err);
/* Reads and parses the file at path. */
int sweep_grid_load(const char *path, struct sweep_grid *grid, tt_err *err);
void sweep_grid_free(struct sweep_grid *grid);

/* The value of axis `axis` at point `index` (0 <= index < npoints; the last axis varies fastest,
 * like nested loops written in file order). */
const char *sweep_grid_value(const struct sweep_grid *grid, long index, size_t axis);
/* Parses a point index (an array task id) and checks it lies in the grid. */
int sweep_grid_index(const struct sweep_grid *grid, const char *text, long *index, tt_err *err);

#endif

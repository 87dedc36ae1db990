/* SPDX-License-Identifier: MIT */
/* sweep_check.c — checking a grid against train-mlp's options (see sweep_check.h). The values go
 * through train-mlp's own parser (train_opts.c), so the check and the trainer never disagree. */
#include "sweep_check.h"

#include "train_opts.h"

#include <stdio.h>
#include <string.h>

int sweep_program_is_train_mlp(const char *program)
{
	const char *base;

	if (!program)
		return 1;
	base = strrchr(program, '/');
	return !strcmp(base ? base + 1 : program, "train-mlp");
}

int sweep_grid_check_train_mlp(const struct sweep_grid *grid, const char *name, tt_err *err)
{
	for (size_t a = 0; a < grid->naxes; a++) {
		const struct sweep_axis *ax = &grid->axes[a];
		char names[1024], opt[128];
		int kind = tt_train_opt_takes_value(ax->key);

		if (kind < 0) {
			tt_train_opt_names(names, sizeof(names));
			return tt_err_set(err, "%s: '%s' is not a train-mlp option; valid keys: %s (a grid for another "
					  "program: --program PROG)", name, ax->key, names);
		}
		if (kind == 0)
			return tt_err_set(err, "%s: '%s' is a train-mlp flag without a value: a grid key must take one "
					  "(set the flag in the job's train-mlp options instead)", name, ax->key);
		snprintf(opt, sizeof(opt), "--%s", ax->key);
		for (size_t v = 0; v < ax->nvalues; v++) {
			/* The options sweep.sh always gives, then this value alone (a later one wins). */
			char *argv[] = { "train-mlp", "--layers", "784,10", "--data", "synthetic", "--ckpt-dir", "ckpt",
					 opt, ax->values[v], NULL };
			tt_train_opts o;
			tt_err why;

			if (tt_train_opts_parse(&o, 9, argv, &why) != 0)
				return tt_err_set(err, "%s: %s = %s: %s", name, ax->key, ax->values[v], why.msg);
		}
	}
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* sweep_summary.h — the parts of a train-mlp JSON summary (--summary FILE) a sweep report uses.
 * The reader knows train-mlp's flat layout only: top-level numbers plus the "history" array. */
#ifndef SWEEP_SUMMARY_H
#define SWEEP_SUMMARY_H

#include "tt_err.h"

#include <stddef.h>

struct sweep_history {
	long step;
	double loss;
	double test_acc; /* NaN where the summary has null (no evaluation at that step) */
};

struct sweep_summary {
	double test_accuracy, test_loss, samples_per_sec, wall_seconds;
	long steps, world_size;
	char weights_crc32[16];
	struct sweep_history *history;
	size_t nhistory;
};

/* A point's result, any program's: the one-line JSON object
 *     {"metric": "val_loss", "value": 0.31, "goal": "min"}
 * that the program wrote to $TRAIN_TOPO_RESULT_FILE or printed as a line "TRAIN_RESULT {...}"
 * (sweep.sh keeps the last one as point-N.result). Other fields are allowed and ignored. */
struct sweep_result {
	char metric[64];
	double value;
	int maximize;	/* goal "max": higher is better; "min": lower */
};

/* Parses a result; an incomplete object, a missing or bad field is an error naming it. */
int sweep_result_parse(const char *text, struct sweep_result *res, tt_err *err);

/* Parses the text of a summary; a truncated or incomplete one is an error naming the field. */
int sweep_summary_parse(const char *text, struct sweep_summary *sum, tt_err *err);
void sweep_summary_free(struct sweep_summary *sum);

#endif

/* SPDX-License-Identifier: MIT */
/* train_opts.h — the command line of train-mlp as a plain struct, parsed and validated without
 * side effects so every bad value gets one clear message (and a unit test). */
#ifndef TT_TRAIN_OPTS_H
#define TT_TRAIN_OPTS_H

#include <stddef.h>
#include <stdint.h>

#include "pipeline.h"
#include "tt_err.h"

enum tt_on_signal { TT_ON_SIGNAL_CHECKPOINT, TT_ON_SIGNAL_CHECKPOINT_EXIT };
/* AUTO is resolved to CPU or GPU by train-mlp before it joins the job (train_mlp.c). */
enum tt_device { TT_DEVICE_CPU, TT_DEVICE_GPU, TT_DEVICE_AUTO };

typedef struct tt_train_opts {
	const char *layers, *data, *ckpt_dir, *summary;
	long epochs, batch, log_every, eval_every, ckpt_every, max_steps, warmup;
	double ckpt_minutes, bucket_mb;
	float lr, beta1, beta2, weight_decay;
	uint64_t seed;
	int zero, accum, keep, signal;
	int tp, pp, recompute; /* tensor- and pipeline-parallel sizes; activation recomputation */
	tt_schedule schedule;
	enum tt_on_signal on_signal;
	enum tt_device device;
	long synthetic_train, synthetic_test;
	int ckpt_exit; /* exit status after --on-signal checkpoint-exit: TRAIN_TOPO_CKPT_EXIT, 99 unset */
} tt_train_opts;

/* Fills defaults, then parses argv (and TRAIN_TOPO_CKPT_EXIT from the environment, tt_ckpt_exit.h). Returns 0, 1 when -h/--help was asked (usage printed by the
 * caller with tt_train_usage), 2 for -V/--version, or -1 with err naming the bad option. */
int tt_train_opts_parse(tt_train_opts *o, int argc, char **argv, tt_err *err);

/* Whether --summary PATH can be written, checked before training so a run never ends with its
 * summary lost: "-" (standard output), or a name that is not a directory, in an existing
 * directory the user may write. */
int tt_train_summary_check(const char *path, tt_err *err);

/* For checking a sweep grid against train-mlp (train-sweep): 1 when NAME (no dashes) is an
 * option taking a value, 0 for a flag (--recompute), -1 when train-mlp has no such option. */
int tt_train_opt_takes_value(const char *name);
/* "layers, data, epochs, ...": every option taking a value, into buf (cut to len). */
void tt_train_opt_names(char *buf, size_t len);

/* The --help text. */
const char *tt_train_usage(void);

#endif

/* SPDX-License-Identifier: MIT */
/* ckpt.h — crash-safe training checkpoints: ROOT/step-NNNNNNNN/ holds one file per rank (that
 * rank's data-parallel slice of each of its layers' parameters and AdamW moments, in the ZeRO shard
 * layout of shard.h; its layers are its part of the model, parallel.h) and meta.txt, written last,
 * naming the 3D layout and every rank file's CRC32. A step directory counts only when meta.txt and
 * all rank files check out, so a crash mid-write leaves the previous one in charge. Rank files are
 * native-endian float32; on load every element is put where the loading layout keeps it, so the
 * world size and the layout (data, tensor and pipeline parallel sizes) may change. */
#ifndef TT_CKPT_H
#define TT_CKPT_H

#include <stddef.h>
#include <stdint.h>

#include "mlp.h"
#include "parallel.h"
#include "shard.h"
#include "tt_err.h"

typedef struct tt_ckpt_meta {
	long step;	  /* optimizer steps completed */
	int world;	  /* ranks that wrote it */
	int zero;	  /* ZeRO stage it was written under (informational) */
	uint64_t seed;	  /* data order and init */
	long batch;	  /* global batch */
	char layers[256]; /* --layers spec */
	tt_plan3d layout; /* that wrote it (data x tensor x pipeline parallel = world) */
	uint32_t *crc;	  /* world entries: CRC32 of each rank file */
} tt_ckpt_meta;

void tt_ckpt_meta_free(tt_ckpt_meta *m);

/* ROOT/step-NNNNNNNN. */
void tt_ckpt_step_dir(char *out, size_t len, const char *root, long step);

/* Trust: ROOT and every step directory must be owned by this user and not writable by group or
 * others; ROOT must not be a symbolic link, and a link on the way to it is followed only when root
 * or this user owns it; step directories and their files are opened without following links,
 * through the root's descriptor. Every function below refuses anything else with one line naming
 * the path, its owner and what to do, and never removes anything outside ROOT. */

/* Creates ROOT when missing and checks it can be trusted: run before any work, so a checkpoint
 * directory that cannot be used is refused before training, not at the first checkpoint. */
int tt_ckpt_check_root(const char *root, tt_err *err);

/* Creates ROOT and the step directory (mode 0755 less the umask) when missing. */
int tt_ckpt_prepare(const char *root, long step, tt_err *err);

/* Writes rank `rank`'s file (p, m, v: tt_shard_total(plan) floats each; plan cuts its part over
 * its data-parallel group) into the step directory, temp -> fsync -> rename -> fsync(dir). *crc
 * receives the file's CRC32 for the metadata. */
int tt_ckpt_write_rank(const char *root, long step, int rank, const tt_shard_plan *plan, const float *p,
		       const float *m, const float *v, uint32_t *crc, tt_err *err);

/* Writes meta.txt (carries its own CRC) the same way; call after every rank file is in place. */
int tt_ckpt_write_meta(const char *root, const tt_ckpt_meta *meta, tt_err *err);

/* Reads and checks ROOT's step directory of `step`: meta.txt parses and matches its CRC, every
 * rank file exists and matches the CRC meta.txt names. Fills *meta (free with tt_ckpt_meta_free). */
int tt_ckpt_validate(const char *root, long step, tt_ckpt_meta *meta, tt_err *err);

/* The newest valid step directory under root: returns 1 and fills *meta, 0 when there is none
 * (or root does not exist), -1 on an unreadable or untrusted root or an untrusted step directory
 * (a link, another user's, writable by others). Each skipped directory adds one line
 * "skipping DIR: reason" to warn (may be NULL). */
int tt_ckpt_find_latest(const char *root, tt_ckpt_meta *meta, char *warn, size_t warn_len, tt_err *err);

/* Loads this rank's slices of part (its layers under the current layout, cut by plan over its
 * data-parallel group) from a validated checkpoint of model written under any layout: each saved
 * rank file holding some of part's layers is read once, and each element goes where the whole-
 * layer maps of parallel.h put it (resharding). p, m, v: tt_shard_total(plan) floats. */
int tt_ckpt_load_part(const char *root, const tt_ckpt_meta *meta, const tt_mlp *model, const tt_part *part,
		      const tt_shard_plan *plan, float *p, float *m, float *v, tt_err *err);

/* Deletes all but the newest `keep` valid checkpoints, and any directory (torn or not) older than
 * the oldest kept one. keep <= 0 keeps everything. Symbolic links are never followed: a step-*
 * link is removed as a link, its target untouched. */
int tt_ckpt_prune(const char *root, int keep, tt_err *err);

/* Deletes every step directory from from_step on that does not validate (a write that failed, or
 * a run killed while writing), the same way as pruning; each adds a line "removed torn checkpoint
 * DIR: reason" to note (may be NULL). Call only when no rank is writing under root. */
int tt_ckpt_remove_torn(const char *root, long from_step, char *note, size_t note_len, tt_err *err);

#endif

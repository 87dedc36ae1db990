/* SPDX-License-Identifier: MIT */
/* train_mlp.c — train-mlp: MLP training on libtrainrt in any 3D layout (data parallelism with DDP or ZeRO-1/2/3,
 * tensor and pipeline parallelism, activation recomputation), with IDX or synthetic data,
 * evaluation, checkpoint/resume (also into another layout), a checkpoint-on-signal protocol and a
 * JSON summary. The step math lives behind dp.h (dp_cpu.c, dp_gpu.c), the layout in parallel.c;
 * this file is the loop, the I/O, the groups and the agreements between ranks (which step to
 * checkpoint, where to resume). */
#include "config.h"

#include "tt_file.h"
#include "ckpt.h"
#include "dataset.h"
#include "dp.h"
#include "mlp.h"
#include "parallel.h"
#include "throughput.h"
#include "train_opts.h"
#include "trainrt.h"
#include "tt_envnames.h"
#include "tt_parse.h"
#ifdef TT_HAVE_CUDA
#include "gpu_mlp.h"
#endif

#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define PROG "train-mlp"

/* The only state a signal handler may touch; the loop reads and clears it at step boundaries. */
static volatile sig_atomic_t signal_seen;

static void on_signal(int sig)
{
	(void)sig;
	signal_seen = 1;
}

typedef struct history_point {
	long step;
	float loss, test_acc; /* test_acc < 0: not evaluated at this step */
} history_point;

typedef struct train {
	tt_train_opts o;
	tt_mlp model;
	tt_dataset data, test;
	trainrt_comm *comm;
	tt_plan3d lay;	/* data x tensor x pipeline parallel */
	tt_coords at;	/* this rank's place in it */
	trainrt_comm *g_dp, *g_tp, *g_pp; /* its groups (NULL: alone; g_dp is comm in a 1D layout) */
	tt_dp dp;
	int rank, world, local;	 /* local: samples per data-parallel replica per step */
	long steps_per_epoch, total_steps, step;
	uint32_t *perm;
	long perm_epoch;
	float *xb;
	int32_t *yb;
	float *ck_p, *ck_m, *ck_v; /* checkpoint staging, shard-sized */
	history_point *hist;
	size_t n_hist, cap_hist;
	long start_step; /* step this run began at (after a resume) */
	double last_ckpt_time, train_seconds;
	tt_rate_log rates; /* per logging interval, compute only, for the steady rate (MFU) */
	float test_loss, test_acc;
} train;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Progress and warnings: rank 0 only unless `all`. */
static void say(const train *t, int all, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void say(const train *t, int all, const char *fmt, ...)
{
	va_list ap;

	if (!all && t->rank != 0)
		return;
	va_start(ap, fmt);
	if (t->world > 1)
		fprintf(stderr, PROG ": [rank %d] ", t->rank);
	else
		fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static int load_data(train *t, tt_err *err)
{
	int L = t->model.n_layers, in = t->model.dims[0], out = t->model.dims[L];

	if (!strcmp(t->o.data, "synthetic")) {
		if (tt_dataset_synthetic(&t->data, &t->test, in, out, (size_t)t->o.synthetic_train,
					 (size_t)t->o.synthetic_test, t->o.seed ^ 0xda7a, err))
			return -1;
	} else if (tt_dataset_load_dir(&t->data, &t->test, t->o.data, err))
		return -1;
	if (t->data.dim != in)
		return tt_err_set(err, "--layers %s expects %d input features but --data %s has %d; make the first "
				  "width %d", t->o.layers, in, t->o.data, t->data.dim, t->data.dim);
	if (t->data.classes > out)
		return tt_err_set(err, "--layers %s has %d outputs but --data %s has %d classes; make the last width "
				  "at least %d", t->o.layers, out, t->o.data, t->data.classes, t->data.classes);
	return 0;
}

/* Every rank agrees whether any rank failed (so nobody proceeds alone). *agreed (may be NULL) is
 * 1 when the agreement itself went through, so every rank is past what it reported on. */
static int agree_ok(train *t, int failed, const char *what, tt_err *err, int *agreed)
{
	float f = (float)failed;

	if (agreed)
		*agreed = 0;
	if (tt_dp_allreduce_sum(&t->dp, &f, 1, err))
		return -1;
	if (agreed)
		*agreed = 1;
	if (f > 0 && !failed)
		return tt_err_set(err, "%s failed on another rank (see its message)", what);
	return f > 0 ? -1 : 0;
}

/* The model and the layout for a world of `world` ranks, checked: run before joining the job, so
 * a layout that cannot work is refused before any rendezvous (and again with the joined world). */
static int plan_layout(train *t, int world, tt_err *err)
{
	if (!t->model.n_layers && tt_mlp_parse(&t->model, t->o.layers, err))
		return -1;
	t->lay = (tt_plan3d){ world / (t->o.tp * t->o.pp) ? world / (t->o.tp * t->o.pp) : 1, t->o.tp, t->o.pp };
	return tt_plan3d_check(&t->lay, world, &t->model, t->o.batch, t->o.accum, err);
}

/* The world size the launcher announces (before joining) into *world: the env contract, else
 * Slurm's task count under PMIx, else 0 (unknown: checked after joining). A value that is not a
 * whole number from 1 to INT_MAX is refused, not truncated (atoi made 99999999999 a negative
 * world and 12abc 12). */
static int announced_world(int *world, tt_err *err)
{
	const char *name = TT_ENV_WORLD_SIZE, *v = getenv(name);
	long long n;

	*world = 0;
	if ((!v || !*v) && getenv("PMIX_RANK")) {
		name = getenv("SLURM_STEP_NUM_TASKS") ? "SLURM_STEP_NUM_TASKS" : "SLURM_NTASKS";
		v = getenv(name);
	}
	if (!v || !*v)
		return 0;
	if (tt_parse_int(v, 1, INT_MAX, name, &n, NULL) != 0)
		return tt_err_set(err, "%s='%s' is not a world size (a whole number of ranks from 1 to %d): check the "
				  "launcher", name, v, INT_MAX);
	*world = (int)n;
	return 0;
}

/* One group of this rank: the ranks passing the same color, ranked by key. */
static int split(train *t, int color, int key, trainrt_comm **group, const char *what, tt_err *err)
{
	if (trainrt_comm_split(t->comm, color, key, group) != 0)
		return tt_err_set(err, "forming the %s groups failed: %s", what, trainrt_last_error(t->comm));
	return 0;
}

/* The data-, tensor- and pipeline-parallel groups (parallel.h's rank order). Every rank takes part
 * in the same splits; a group of one is left out (NULL). A 1D layout keeps the world as its
 * data-parallel group. */
static int make_groups(train *t, tt_err *err)
{
	const tt_plan3d *L = &t->lay;
	tt_coords c = t->at;

	if (!t->comm)
		return 0;
	if (L->dp == t->world)
		t->g_dp = t->comm;
	else if (L->dp > 1 && split(t, c.pp * L->tp + c.tp, c.dp, &t->g_dp, "data-parallel", err))
		return -1;
	if (L->tp > 1 && split(t, c.pp * L->dp + c.dp, c.tp, &t->g_tp, "tensor-parallel", err))
		return -1;
	if (L->pp > 1 && split(t, c.dp * L->tp + c.tp, c.pp, &t->g_pp, "pipeline", err))
		return -1;
	if (L->tp > 1 && trainrt_local_world_size(t->comm) % L->tp)
		say(t, 0, "warning: --tp %d does not divide the %d ranks per node, so tensor-parallel groups span nodes "
		    "(their all-reduces go over the network)", L->tp, trainrt_local_world_size(t->comm));
	return 0;
}

/* How a group talks (its backend), "alone" for none. */
static const char *group_path(trainrt_comm *g)
{
	return g ? trainrt_backend_name(g) : "alone";
}

static int setup(train *t, tt_err *err)
{
	tt_dp_cfg cfg = { 0 };
	tt_dp_groups groups;
	tt_part part;

	t->world = t->comm ? trainrt_world_size(t->comm) : 1;
	t->rank = t->comm ? trainrt_rank(t->comm) : 0;
	if (plan_layout(t, t->world, err) || load_data(t, err))
		return -1;
	t->at = tt_plan3d_coords(&t->lay, t->rank);
	t->local = (int)(t->o.batch / t->lay.dp);
	t->steps_per_epoch = (long)(t->data.n / (size_t)t->o.batch);
	if (t->steps_per_epoch < 1)
		return tt_err_set(err, "--batch %ld is larger than the %zu training samples of --data %s", t->o.batch,
				  t->data.n, t->o.data);
	t->total_steps = t->o.epochs * t->steps_per_epoch;
	if (t->o.max_steps && t->o.max_steps < t->total_steps)
		t->total_steps = t->o.max_steps;

	cfg.zero = t->o.zero;
	cfg.accum = t->o.accum;
	cfg.micro_batch = t->local / t->o.accum;
	cfg.bucket_bytes = (size_t)(t->o.bucket_mb * 1048576.0);
	cfg.first_bucket_bytes = cfg.bucket_bytes < 1048576 ? cfg.bucket_bytes : 1048576;
	cfg.seed = t->o.seed;
	cfg.gpu = t->o.device == TT_DEVICE_GPU;
	cfg.opt = tt_adamw_defaults(t->o.lr);
	cfg.opt.beta1 = t->o.beta1;
	cfg.opt.beta2 = t->o.beta2;
	cfg.opt.weight_decay = t->o.weight_decay;
	cfg.opt.warmup_steps = t->o.warmup;
	cfg.opt.total_steps = t->total_steps;
	cfg.recompute = t->o.recompute;
	cfg.schedule = t->o.schedule;
	if (make_groups(t, err))
		return -1;
	groups = (tt_dp_groups){ t->comm, t->g_dp, t->g_tp, t->g_pp };
	tt_part_build(&part, &t->model, &t->lay, t->at);
	if (tt_dp_init_part(&t->dp, &t->model, &part, &groups, &cfg, err))
		return -1;
	t->perm = malloc(sizeof(uint32_t) * t->data.n);
	t->xb = malloc(sizeof(float) * (size_t)t->local * t->data.dim);
	t->yb = malloc(sizeof(int32_t) * (size_t)t->local);
	if (!t->perm || !t->xb || !t->yb)
		return tt_err_set(err, "cannot allocate the batch buffers (%d samples of %d features)", t->local,
				  t->data.dim);
	t->perm_epoch = -1;
	/* A summary that cannot be written is found now, not after the whole run. */
	if (agree_ok(t, t->rank == 0 && t->o.summary && tt_train_summary_check(t->o.summary, err),
		     "checking --summary", err, NULL))
		return -1;
	return 0;
}

/* ---- checkpoints ----------------------------------------------------------------------------- */

static int alloc_ckpt_staging(train *t, tt_err *err)
{
	size_t s = tt_shard_total(&t->dp.plan);

	if (t->ck_p)
		return 0;
	t->ck_p = malloc(sizeof(float) * s);
	t->ck_m = malloc(sizeof(float) * s);
	t->ck_v = malloc(sizeof(float) * s);
	if (!t->ck_p || !t->ck_m || !t->ck_v)
		return tt_err_set(err, "cannot allocate %zu floats to stage a checkpoint", 3 * s);
	return 0;
}

/* Rank 0 prints each line of a note from the checkpoint module. */
static void say_lines(train *t, const char *prefix, char *note)
{
	char *save = NULL;

	for (char *line = strtok_r(note, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		say(t, 0, "%s%s", prefix, line);
}

/* A checkpoint failed on some rank. Once every rank has stopped writing (agreed), rank 0 removes
 * the torn step directory, so only whole checkpoints remain and a full disk gets its space back. */
static int checkpoint_failed(train *t, int agreed, tt_err *err)
{
	char note[2048];
	tt_err rm;

	if (t->rank == 0 && agreed) {
		if (tt_ckpt_remove_torn(t->o.ckpt_dir, t->step, note, sizeof(note), &rm) == 0)
			say_lines(t, "", note);
		else
			say(t, 0, "warning: %s", rm.msg);
	}
	return tt_err_wrap(err, "checkpoint of step %ld under %s failed (the previous checkpoint is kept)", t->step,
			   t->o.ckpt_dir);
}

static int save_checkpoint(train *t, tt_err *err)
{
	tt_ckpt_meta meta = { .step = t->step, .world = t->world, .zero = t->o.zero, .seed = t->o.seed,
			      .batch = t->o.batch, .layout = t->lay };
	uint32_t crc = 0;
	int failed, agreed;
	double t0 = now();

	trainrt_heartbeat_section("checkpoint");
	failed = alloc_ckpt_staging(t, err) || tt_ckpt_prepare(t->o.ckpt_dir, t->step, err);
	if (!failed) {
		failed = tt_dp_export(&t->dp, t->ck_p, t->ck_m, t->ck_v, err) ||
			 tt_ckpt_write_rank(t->o.ckpt_dir, t->step, t->rank, &t->dp.plan, t->ck_p, t->ck_m, t->ck_v, &crc,
					    err);
	}
	if (agree_ok(t, failed, "writing the checkpoint shard", err, &agreed))
		return checkpoint_failed(t, agreed, err);
	meta.crc = calloc((size_t)t->world, sizeof(uint32_t));
	if (!meta.crc)
		return tt_err_set(err, "out of memory for checkpoint metadata");
	snprintf(meta.layers, sizeof(meta.layers), "%s", t->o.layers);
	failed = tt_dp_allgather_u32(&t->dp, crc, meta.crc, err) != 0;
	if (!failed && t->rank == 0)
		failed = tt_ckpt_write_meta(t->o.ckpt_dir, &meta, err) || tt_ckpt_prune(t->o.ckpt_dir, t->o.keep, err);
	tt_ckpt_meta_free(&meta);
	if (agree_ok(t, failed, "writing the checkpoint metadata", err, &agreed))
		return checkpoint_failed(t, agreed, err);
	t->last_ckpt_time = now();
	say(t, 0, "checkpoint of step %ld written to %s/step-%08ld in %.2f s", t->step, t->o.ckpt_dir, t->step,
	    t->last_ckpt_time - t0);
	return 0;
}

static int resume(train *t, tt_err *err)
{
	char warn[8192], dir[4096];
	int64_t step = -1;
	tt_ckpt_meta meta;
	int failed = 0;

	if (t->rank == 0) {
		/* Made (and checked: ours, not writable by others, no foreign link) before any work, so
		 * an unusable --ckpt-dir fails now, not at the first checkpoint after training. */
		int found = tt_ckpt_check_root(t->o.ckpt_dir, err) ? -1
			    : tt_ckpt_find_latest(t->o.ckpt_dir, &meta, warn, sizeof(warn), err);
		char note[8192];
		tt_err rm;

		failed = found < 0;
		if (found == 1) {
			step = meta.step;
			tt_ckpt_meta_free(&meta);
		}
		/* What is newer than the checkpoint resumed is torn (a run killed while writing it): gone,
		 * so later checkpoints of those steps start clean. */
		if (!failed && tt_ckpt_remove_torn(t->o.ckpt_dir, step + 1, note, sizeof(note), &rm) == 0) {
			say_lines(t, "", note);
		} else if (!failed) {
			say_lines(t, "warning: ", warn);
			say(t, 0, "warning: %s", rm.msg);
		}
	}
	if (agree_ok(t, failed, "looking for a checkpoint", err, NULL) ||
	    tt_dp_broadcast_bytes(&t->dp, &step, sizeof(step), err))
		return -1;
	if (step < 0)
		return 0;
	tt_ckpt_step_dir(dir, sizeof(dir), t->o.ckpt_dir, (long)step);
	failed = tt_ckpt_validate(t->o.ckpt_dir, (long)step, &meta, err) != 0;
	if (!failed && (strcmp(meta.layers, t->o.layers) || meta.batch != t->o.batch || meta.seed != t->o.seed)) {
		tt_err_set(err, "%s was written with --layers %s --batch %ld --seed %llu; resume with the same values or "
			   "use another --ckpt-dir", dir, meta.layers, meta.batch, (unsigned long long)meta.seed);
		failed = 1;
	}
	if (!failed && meta.step > t->total_steps) {
		tt_err_set(err, "%s is at step %ld, past this run's last step %ld; raise --epochs/--max-steps", dir,
			   meta.step, t->total_steps);
		failed = 1;
	}
	if (!failed)
		failed = alloc_ckpt_staging(t, err) ||
			 tt_ckpt_load_part(t->o.ckpt_dir, &meta, &t->model, &t->dp.part, &t->dp.plan, t->ck_p, t->ck_m,
					   t->ck_v, err);
	if (agree_ok(t, failed, "loading the checkpoint", err, NULL)) {
		tt_ckpt_meta_free(&meta);
		return -1;
	}
	if (tt_dp_import(&t->dp, t->ck_p, t->ck_m, t->ck_v, err)) {
		tt_ckpt_meta_free(&meta);
		return -1;
	}
	if (meta.layout.dp != t->lay.dp || meta.layout.tp != t->lay.tp || meta.layout.pp != t->lay.pp) {
		char was[64], now_[64];

		tt_plan3d_format(&meta.layout, was, sizeof(was));
		tt_plan3d_format(&t->lay, now_, sizeof(now_));
		say(t, 0, "note: checkpoint was written under layout %s (DPxTPxPP, %d ranks), resuming under %s (%d ranks): "
		    "resharded; the run continues exactly but float sums may differ in the last bits from an "
		    "uninterrupted %s run", was, meta.world, now_, t->world, was);
	}
	t->step = meta.step;
	say(t, 0, "resumed from %s (step %ld, epoch %ld)", dir, t->step, t->step / t->steps_per_epoch);
	tt_ckpt_meta_free(&meta);
	return 0;
}

/* ---- evaluation and the loop ------------------------------------------------------------------- */

/* The test set in one chunk per data-parallel replica; every rank of a replica passes the same
 * batches through its part (the pipeline carries them from stage to stage). */
static int evaluate(train *t, tt_err *err)
{
	size_t chunk = (t->test.n + (size_t)t->lay.dp - 1) / (size_t)t->lay.dp;
	size_t lo = (size_t)t->at.dp * chunk, hi = lo + chunk > t->test.n ? t->test.n : lo + chunk;
	size_t mb = (size_t)t->dp.cfg.micro_batch;
	size_t batches = (chunk + mb - 1) / mb; /* equal on every rank: ZeRO-3 gathers are collective */
	double loss = 0.0;
	long correct = 0;
	float sums[2];

	trainrt_heartbeat_section("eval");
	for (size_t b = 0; b < batches; b++) {
		size_t first = lo + b * mb;
		int n = first >= hi ? 0 : (int)(hi - first < mb ? hi - first : mb);

		if (tt_dp_eval(&t->dp, n ? t->test.x + first * (size_t)t->test.dim : NULL, n ? t->test.y + first : NULL,
			       n, &loss, &correct, err))
			return -1;
	}
	sums[0] = (float)loss;
	sums[1] = (float)correct;
	if (tt_dp_allreduce_sum(&t->dp, sums, 2, err))
		return -1;
	t->test_loss = sums[0] / (float)t->test.n;
	t->test_acc = sums[1] / (float)t->test.n;
	return 0;
}

static int add_history(train *t, long step, float loss, float test_acc)
{
	if (t->n_hist == t->cap_hist) {
		size_t cap = t->cap_hist ? 2 * t->cap_hist : 256;
		history_point *h = realloc(t->hist, cap * sizeof(*h));

		if (!h)
			return -1;
		t->hist = h;
		t->cap_hist = cap;
	}
	t->hist[t->n_hist++] = (history_point){ step, loss, test_acc };
	return 0;
}

/* This rank's replica's samples of global step t->step, in the epoch's seeded order. */
static void load_batch(train *t)
{
	long epoch = t->step / t->steps_per_epoch, pos = t->step % t->steps_per_epoch;

	if (epoch != t->perm_epoch) {
		tt_dataset_shuffle(t->perm, t->data.n, t->o.seed, epoch);
		t->perm_epoch = epoch;
	}
	tt_dataset_gather(&t->data, t->perm + (size_t)pos * t->o.batch + (size_t)t->at.dp * t->local, t->local, t->xb,
			  t->yb);
}

static void fmt_eta(char *out, size_t len, double s)
{
	long x = (long)(s + 0.5);

	snprintf(out, len, "%ld:%02ld:%02ld", x / 3600, x / 60 % 60, x % 60);
}

/* Returns 0 when training ended, the checkpoint status (o.ckpt_exit) after a checkpoint-exit, -1 on error. */
static int run(train *t, tt_err *err)
{
	double iv_loss = 0.0, iv_correct = 0.0, iv_t0 = now(), ckpt_period = t->o.ckpt_minutes * 60.0;
	double iv_busy = 0.0; /* the interval's step time without loading and copying the samples */
	long iv_steps = 0;

	t->last_ckpt_time = now();
	while (t->step < t->total_steps) {
		double loss = 0.0, t0 = now(), busy0, input0, wait0;
		double waited0 = t->dp.comm_wait_seconds + t->dp.pp_wait_seconds;
		long correct = 0;
		float stats[4];
		int got_signal, timed;

		load_batch(t);
		busy0 = now();
		input0 = t->dp.input_seconds;
		if (tt_dp_train_step(&t->dp, t->step, t->xb, t->yb, t->o.batch, &loss, &correct, err))
			return -1;
		/* One small all-reduce per step: loss, hits, whether any rank got the signal (so every rank
		 * checkpoints the same step) and whether rank 0's clock says a timed checkpoint is due. */
		stats[0] = (float)loss;
		stats[1] = (float)correct;
		stats[2] = signal_seen ? 1.0f : 0.0f;
		stats[3] = t->rank == 0 && ckpt_period > 0 && now() - t->last_ckpt_time >= ckpt_period;
		wait0 = now();
		if (tt_dp_allreduce_sum(&t->dp, stats, 4, err))
			return -1;
		/* Counted as waiting: it is where a rank waits for a slower one at the end of a step. */
		t->dp.comm_wait_seconds += now() - wait0;
		got_signal = stats[2] > 0;
		timed = stats[3] > 0;
		if (got_signal)
			signal_seen = 0;
		t->step++;
		/* Progress for train-run's hang detection, and the step's time without the waits for
		 * other ranks (collectives, pipeline stages) for its straggler report (a no-op
		 * elsewhere). */
		trainrt_heartbeat_step_busy(t->step, now() - t0 -
					    (t->dp.comm_wait_seconds + t->dp.pp_wait_seconds - waited0));
		t->train_seconds += now() - t0;
		iv_busy += now() - busy0 - (t->dp.input_seconds - input0);
		iv_loss += stats[0] / (double)t->o.batch;
		iv_correct += stats[1];
		iv_steps++;
		if (t->step % t->o.log_every == 0 || t->step == t->total_steps) {
			double dt = now() - iv_t0, sps = (double)iv_steps * t->o.batch / dt;
			char eta[32];

			fmt_eta(eta, sizeof(eta), (double)(t->total_steps - t->step) * dt / (double)iv_steps);
			say(t, 0, "step %ld/%ld epoch %ld loss %.4f acc %.4f samples/s %.0f eta %s", t->step,
			    t->total_steps, (t->step - 1) / t->steps_per_epoch, iv_loss / iv_steps,
			    iv_correct / ((double)iv_steps * t->o.batch), sps, eta);
			if (add_history(t, t->step, (float)(iv_loss / iv_steps), -1.0f) ||
			    tt_rate_add(&t->rates, (double)iv_steps * t->o.batch, iv_busy))
				return tt_err_set(err, "out of memory for the loss history");
			iv_loss = iv_correct = iv_busy = 0.0;
			iv_steps = 0;
			iv_t0 = now();
		}
		if (t->o.eval_every && t->step % t->o.eval_every == 0 && t->step < t->total_steps) {
			if (evaluate(t, err))
				return -1;
			say(t, 0, "step %ld test loss %.4f test acc %.4f", t->step, t->test_loss, t->test_acc);
			if (t->n_hist && t->hist[t->n_hist - 1].step == t->step)
				t->hist[t->n_hist - 1].test_acc = t->test_acc;
			else if (add_history(t, t->step, (float)(iv_loss / iv_steps), t->test_acc))
				return tt_err_set(err, "out of memory for the loss history");
		}
		if (t->o.ckpt_dir && ((t->o.ckpt_every && t->step % t->o.ckpt_every == 0) || timed || got_signal) &&
		    save_checkpoint(t, err))
			return -1;
		if (got_signal && t->o.on_signal == TT_ON_SIGNAL_CHECKPOINT_EXIT) {
			say(t, 0, "signal: %s at step %ld, exiting with status %d",
			    t->o.ckpt_dir ? "checkpointed" : "no --ckpt-dir, nothing saved,", t->step,
			    t->o.ckpt_exit);
			return t->o.ckpt_exit;
		}
	}
	return 0;
}

/* ---- summary ------------------------------------------------------------------------------------ */

static long peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : 0;
}

/* What the layout cost, over all ranks: communication per step and the pipeline bubble. */
typedef struct par_stats {
	double bytes_per_step; /* sent by all ranks' step collectives and messages, per step */
	double bubble;	       /* mean over ranks of the time blocked on neighbouring stages */
} par_stats;

static int gather_par_stats(train *t, par_stats *ps, tt_err *err)
{
	uint32_t *lo = calloc((size_t)t->world, sizeof(uint32_t)), *hi = calloc((size_t)t->world, sizeof(uint32_t));
	float bubble = (float)tt_dp_bubble(&t->dp);
	uint64_t total = 0;
	long steps = t->step - t->start_step;
	int rc = -1;

	if (!lo || !hi) {
		tt_err_set(err, "out of memory for the per-rank statistics");
		goto out;
	}
	if (tt_dp_allgather_u32(&t->dp, (uint32_t)t->dp.bytes_sent, lo, err) ||
	    tt_dp_allgather_u32(&t->dp, (uint32_t)(t->dp.bytes_sent >> 32), hi, err) ||
	    tt_dp_allreduce_sum(&t->dp, &bubble, 1, err))
		goto out;
	for (int r = 0; r < t->world; r++)
		total += (uint64_t)lo[r] | (uint64_t)hi[r] << 32;
	ps->bytes_per_step = steps > 0 ? (double)total / (double)steps : 0.0;
	ps->bubble = bubble / (float)t->world;
	rc = 0;
out:
	free(lo);
	free(hi);
	return rc;
}

static int write_summary(train *t, uint32_t weights_crc, const uint32_t *peak_kib, const par_stats *ps, double wall,
			 tt_err *err)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return tt_err_errno(err, "cannot format the summary");
	fprintf(f, "{\n  \"layers\": \"%s\",\n  \"parameters\": %zu,\n  \"zero\": %d,\n  \"world_size\": %d,\n",
		t->o.layers, t->model.n_params, t->o.zero, t->world);
	fprintf(f, "  \"dp\": %d,\n  \"tp\": %d,\n  \"pp\": %d,\n  \"micro_batches\": %d,\n  \"schedule\": \"%s\",\n",
		t->lay.dp, t->lay.tp, t->lay.pp, t->o.accum, tt_schedule_name(t->o.schedule));
	fprintf(f, "  \"recompute\": %s,\n  \"bubble_measured\": %.4f,\n  \"bubble_theory\": %.4f,\n",
		t->o.recompute ? "true" : "false", ps->bubble, t->lay.pp > 1 ? tt_pp_bubble_theory(t->lay.pp, t->o.accum) : 0.0);
	fprintf(f, "  \"bytes_sent_per_step\": %.0f,\n", ps->bytes_per_step);
	fprintf(f, "  \"global_batch\": %ld,\n  \"steps\": %ld,\n  \"test_accuracy\": %.6f,\n  \"test_loss\": %.6f,\n",
		t->o.batch, t->step, t->test_acc, t->test_loss);
	fprintf(f, "  \"device\": \"%s\",\n  \"train_flops_per_sample\": %.0f,\n", tt_dp_device(&t->dp),
		tt_mlp_train_flops(&t->model));
	fprintf(f, "  \"samples_per_sec\": %.1f,\n  \"train_seconds\": %.3f,\n  \"wall_seconds\": %.3f,\n",
		t->train_seconds > 0 ? (double)t->o.batch * (double)(t->step - t->start_step) / t->train_seconds : 0.0,
		t->train_seconds, wall);
	fprintf(f, "  \"steady_samples_per_sec\": %.1f,\n  \"rate_intervals\": %zu,\n", tt_rate_steady(&t->rates),
		t->rates.n);
	fprintf(f, "  \"compute_seconds_rank0\": %.3f,\n  \"comm_wait_seconds_rank0\": %.3f,\n",
		t->dp.compute_seconds, t->dp.comm_wait_seconds);
	fprintf(f, "  \"input_seconds_rank0\": %.3f,\n", t->dp.input_seconds);
	fprintf(f, "  \"weights_crc32\": \"%08x\",\n  \"peak_rss_bytes\": [", weights_crc);
	for (int r = 0; r < t->world; r++)
		fprintf(f, "%s%llu", r ? ", " : "", (unsigned long long)peak_kib[r] * 1024ULL);
	fprintf(f, "],\n  \"history\": [");
	for (size_t i = 0; i < t->n_hist; i++) {
		fprintf(f, "%s\n    {\"step\": %ld, \"loss\": %.7g, \"test_acc\": ", i ? "," : "", t->hist[i].step,
			t->hist[i].loss);
		if (t->hist[i].test_acc < 0)
			fprintf(f, "null}");
		else
			fprintf(f, "%.6f}", t->hist[i].test_acc);
	}
	fprintf(f, "\n  ]\n}\n");
	fclose(f);
	if (!strcmp(t->o.summary, "-"))
		rc = fwrite(text, 1, len, stdout) == len && fflush(stdout) == 0
			     ? 0
			     : tt_err_errno(err, "cannot write the summary to standard output");
	else
		rc = tt_file_write_atomic(t->o.summary, text, len, err);
	free(text);
	return rc;
}

/* Final evaluation, weights checksum, per-rank peak memory and the summary. */
static int finish(train *t, double wall_t0, tt_err *err)
{
	uint32_t *peak = calloc((size_t)t->world, sizeof(uint32_t));
	uint32_t crc;
	par_stats ps;
	int rc = -1;

	if (!peak) {
		tt_err_set(err, "out of memory for the per-rank memory report");
		goto out;
	}
	if (evaluate(t, err) || tt_dp_params_crc32(&t->dp, &crc, err) ||
	    tt_dp_allgather_u32(&t->dp, (uint32_t)peak_rss_kib(), peak, err) || gather_par_stats(t, &ps, err))
		goto out;
	if (t->n_hist && t->hist[t->n_hist - 1].step == t->step && t->hist[t->n_hist - 1].test_acc < 0)
		t->hist[t->n_hist - 1].test_acc = t->test_acc;
	say(t, 0, "done: %ld steps, test loss %.4f, test accuracy %.4f, weights crc32 %08x", t->step, t->test_loss,
	    t->test_acc, crc);
	if (t->rank == 0 && t->o.summary && write_summary(t, crc, peak, &ps, now() - wall_t0, err))
		goto out;
	rc = 0;
out:
	free(peak);
	return rc;
}

/* Every rank leaves only after all ranks finished their last collective: libtrainrt's shm backend
 * reports a peer that exits while another rank is still inside the final collective as dead. */
static void leave_together(train *t)
{
	int64_t n = 0;
	char flag;
	size_t len;

	if (!t->comm || t->world == 1)
		return;
	if (trainrt_store_add(t->comm, "train-mlp/finished", 1, &n) != 0)
		return;
	if (n == t->world)
		trainrt_store_set(t->comm, "train-mlp/all-finished", "1", 1);
	trainrt_store_get(t->comm, "train-mlp/all-finished", &flag, 1, &len);
}

static void cleanup(train *t)
{
	tt_dp_free(&t->dp);
	if (t->g_dp != t->comm)
		trainrt_finalize(t->g_dp);
	trainrt_finalize(t->g_tp);
	trainrt_finalize(t->g_pp);
	tt_dataset_free(&t->data);
	tt_dataset_free(&t->test);
	free(t->perm);
	free(t->xb);
	free(t->yb);
	free(t->ck_p);
	free(t->ck_m);
	free(t->ck_v);
	free(t->hist);
	tt_rate_free(&t->rates);
	trainrt_finalize(t->comm);
}

static int install_signal(int sig, tt_err *err)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(sig, &sa, NULL) != 0)
		return tt_err_errno(err, "cannot install the handler for signal %d", sig);
	return 0;
}

/* --device auto: the GPU when this build has the GPU path, a CUDA device is usable and the options
 * are ones it runs (DDP); else the CPU, and rank 0 says why in one line. Decided before joining
 * the job, since the communicator's buffers follow the device. */
static void resolve_device(tt_train_opts *o)
{
	const char *rank = getenv("RANK");
	char why[256] = "";

	if (o->device != TT_DEVICE_AUTO)
		return;
	o->device = TT_DEVICE_CPU;
	if (o->zero || o->tp > 1 || o->pp > 1 || o->recompute)
		snprintf(why, sizeof(why), "the GPU path is DDP only and --zero/--tp/--pp/--recompute ask for more");
	else {
#ifdef TT_HAVE_CUDA
		if (tt_gpu_probe(why, sizeof(why)) > 0)
			o->device = TT_DEVICE_GPU;
#else
		snprintf(why, sizeof(why), "this build has no GPU path (configure found no CUDA toolkit)");
#endif
	}
	if (o->device == TT_DEVICE_CPU && (!rank || !strcmp(rank, "0")))
		fprintf(stderr, PROG ": --device auto: using the CPU: %s\n", why);
}

int main(int argc, char **argv)
{
	train t;
	tt_err err = { { 0 } };
	double wall_t0 = now();
	int rc, world;

	memset(&t, 0, sizeof(t));
	rc = tt_train_opts_parse(&t.o, argc, argv, &err);
	if (rc == 1) {
		fputs(tt_train_usage(), stdout);
		return 0;
	}
	if (rc == 2) {
		printf(PROG " (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return 0;
	}
	if (rc) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	resolve_device(&t.o);
	if (install_signal(t.o.signal, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 1;
	}
	/* A layout that cannot work is refused before joining the job (with the world it will have). */
	if (announced_world(&world, &err) || plan_layout(&t, world ? world : 1, &err)) {
		fprintf(stderr, PROG ": %s\n", err.msg);
		return 2;
	}
	/* Joining, loading and resuming take their own time, not a step's: a section of its own. */
	trainrt_heartbeat_section("setup");
	/* Launched by torchrun, train-run, the SPANK plugin or srun --mpi=pmix: join the job. */
	if (getenv(TT_ENV_WORLD_SIZE) || getenv("PMIX_RANK")) {
		char errbuf[1024];

		t.comm = trainrt_init_for(t.o.device == TT_DEVICE_GPU ? TRAINRT_BUFFERS_DEVICE : TRAINRT_BUFFERS_HOST,
					  errbuf, sizeof(errbuf));
		if (!t.comm) {
			fprintf(stderr, PROG ": %s\n", errbuf);
			return 1;
		}
	}
	rc = setup(&t, &err);
	if (!rc && t.o.ckpt_dir)
		rc = resume(&t, &err);
	if (!rc) {
		char lay[64];

		tt_plan3d_format(&t.lay, lay, sizeof(lay));
		say(&t, 0, "%s: %zu parameters, %d rank(s) (%s), layout %s (DPxTPxPP), %s, zero %d, global batch %ld, "
		    "%ld steps/epoch, %ld steps", t.o.layers, t.model.n_params, t.world,
		    t.comm ? trainrt_backend_name(t.comm) : "single process", lay, tt_dp_device(&t.dp), t.o.zero, t.o.batch,
		    t.steps_per_epoch, t.total_steps);
		if (t.lay.tp > 1 || t.lay.pp > 1)
			say(&t, 0, "rank 0's groups: data-parallel %s, tensor-parallel %s, pipeline %s; %d micro-batches, "
			    "schedule %s%s", group_path(t.g_dp), group_path(t.g_tp), group_path(t.g_pp), t.o.accum,
			    tt_schedule_name(t.o.schedule), t.o.recompute ? ", recompute" : "");
		t.start_step = t.step;
		rc = run(&t, &err);
	}
	if (rc == 0)
		rc = finish(&t, wall_t0, &err);
	if (rc < 0)
		say(&t, 1, "%s", err.msg);
	else
		leave_together(&t);
	cleanup(&t);
	return rc < 0 ? 1 : rc;
}

/* SPDX-License-Identifier: MIT */
/* train_opts.c — train-mlp option parsing and validation (see train_opts.h). */
#include "train_opts.h"
#include "tt_ckpt_exit.h"
#include "tt_file.h"
#include "tt_parse.h"
#include "tt_signal.h"

#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tt_train_summary_check(const char *path, tt_err *err)
{
	char dir[PATH_MAX];
	struct stat st;

	if (!strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return tt_err_set(err, "--summary %s is a directory: give a file name such as %s/summary.json", path, path);
	/* The atomic write refuses to replace anything but a regular file; found now, not after the
	 * run (a FIFO would also block an open here, so only its type is looked at). */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return tt_err_set(err, "--summary %s is %s, not a regular file: it would not be replaced; give a file path",
				  path, S_ISLNK(st.st_mode) ? "a symbolic link" : S_ISFIFO(st.st_mode) ? "a FIFO"
				  : "a device or socket");
	tt_file_dir_of(path, dir, sizeof(dir));
	if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
		return tt_err_set(err, "--summary %s: directory %s does not exist; create it or pick another place", path,
				  dir);
	if (access(dir, W_OK | X_OK) != 0)
		return tt_err_set(err, "--summary %s: directory %s is not writable by you", path, dir);
	return 0;
}

const char *tt_train_usage(void)
{
	return "usage: train-mlp --layers SPEC --data DIR|synthetic [options]\n"
	       "Data-parallel MLP training on CPUs or GPUs with libtrainrt (one process per rank; rank and peers\n"
	       "come from RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT or PMIx; alone it runs as one rank).\n"
	       "\n"
	       "model and data\n"
	       "  --layers SPEC        widths, e.g. 784,256,10; DxN = N Linear(D,D) (1000x10: 1000 inputs, 1000 classes)\n"
	       "  --data DIR|synthetic MNIST-style IDX directory (train-/t10k- files, .gz or plain) or synthetic data\n"
	       "  --synthetic-samples N[,T]  synthetic training (and test) samples (default 8192,1024)\n"
	       "optimisation\n"
	       "  --epochs N           passes over the training set (default 1)\n"
	       "  --max-steps N        stop after N optimizer steps (0: no limit; also ends the cosine schedule)\n"
	       "  --batch B            global batch per optimizer step, split evenly over ranks (default 64)\n"
	       "  --accum K            micro-batches per step on each rank; B/world/K samples each (default 1)\n"
	       "  --lr LR              peak AdamW learning rate (default 0.001)\n"
	       "  --betas B1,B2        AdamW betas (default 0.9,0.999)\n"
	       "  --weight-decay W     decoupled weight decay (default 0.01)\n"
	       "  --warmup N           linear warmup steps, then cosine decay to 0 (default 0)\n"
	       "  --seed S             weight init and data order (default 0)\n"
	       "parallelism (world = DP x TP x PP ranks)\n"
	       "  --device cpu|gpu|auto  cpu: float32 with OpenBLAS (default); gpu: bf16 mixed precision with cuBLAS,\n"
	       "                       gradients all-reduced by NCCL, one GPU per rank (DDP only: --zero 0); auto: gpu\n"
	       "                       when a CUDA device is usable and the options allow it, else cpu with one line why\n"
	       "  --tp T               tensor parallelism: layer pairs split over T ranks of a node (default 1)\n"
	       "  --pp P               pipeline parallelism: the layers in P stages; --accum micro-batches (default 1)\n"
	       "  --schedule S         pipeline schedule: 1f1b (default) or gpipe\n"
	       "  --recompute          keep only every segment's input; recompute activations in backward\n"
	       "  --zero 0|1|2|3       within each data-parallel group: 0 DDP; 1 shard optimizer state;\n"
	       "                       2 + gradients; 3 + parameters (default 0)\n"
	       "  --bucket-mb MB       DDP gradient bucket size; the first is min(1, MB) (default 25)\n"
	       "checkpoints and signals\n"
	       "  --ckpt-dir DIR       checkpoint root; the newest valid checkpoint there is resumed\n"
	       "  --ckpt-every N       checkpoint every N steps (0: off)\n"
	       "  --ckpt-minutes M     checkpoint when M minutes passed since the last (0: off)\n"
	       "  --keep K             keep the newest K checkpoints (default 3; 0 keeps all)\n"
	       "  --signal SIG         signal that requests a checkpoint (default USR1)\n"
	       "  --on-signal ACTION   checkpoint | checkpoint-exit (default): save, then exit with $TRAIN_TOPO_CKPT_EXIT (99)\n"
	       "output\n"
	       "  --log-every N        rank 0 prints a progress line every N steps (default 100)\n"
	       "  --eval-every N       evaluate on the test set every N steps (0: only at the end)\n"
	       "  --summary FILE       write a JSON summary (accuracy, throughput, memory, loss history); - for stdout\n"
	       "  -h, --help           this text; -V, --version: the version\n";
}

/* A whole number option in [lo, hi] (the shared strict parser names the option and the range). */
static int parse_long(const char *opt, const char *s, long lo, long hi, long *out, tt_err *err)
{
	long long v;

	if (tt_parse_int(s, lo, hi, opt, &v, err) != 0)
		return -1;
	*out = (long)v;
	return 0;
}

static int parse_double(const char *opt, const char *s, double lo, double *out, tt_err *err)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (end == s || *end || errno || !isfinite(*out) || *out < lo)
		return tt_err_set(err, "%s '%s': want a number >= %g", opt, s, lo);
	return 0;
}

/* A float option: a number >= 0 that a float holds (a larger one would become inf). */
static int parse_float(const char *opt, const char *s, float *out, tt_err *err)
{
	double d;

	if (parse_double(opt, s, 0, &d, err))
		return -1;
	if (d > FLT_MAX)
		return tt_err_set(err, "%s '%s': want a number from 0 to %g", opt, s, FLT_MAX);
	*out = (float)d;
	return 0;
}

static int parse_signal(const char *s, int *sig, tt_err *err)
{
	int named = tt_signal_by_name(s);
	long num;

	if (named > 0) {
		*sig = named;
		return 0;
	}
	if (parse_long("--signal", s, 1, NSIG - 1, &num, NULL) == 0 && num != SIGKILL && num != SIGSTOP) {
		*sig = (int)num;
		return 0;
	}
	return tt_err_set(err, "--signal '%s': want USR1, USR2, TERM, INT, HUP, URG or a catchable signal number", s);
}

enum { O_LAYERS = 256, O_DATA, O_EPOCHS, O_BATCH, O_LR, O_SEED, O_ZERO, O_BUCKET, O_CKPT_DIR, O_CKPT_EVERY,
       O_CKPT_MIN, O_KEEP, O_ON_SIGNAL, O_SIGNAL, O_SUMMARY, O_LOG_EVERY, O_EVAL_EVERY, O_ACCUM, O_WARMUP,
       O_WD, O_MAX_STEPS, O_BETAS, O_SYNTH, O_DEVICE, O_TP, O_PP, O_SCHEDULE, O_RECOMPUTE, O_HELP = 'h',
       O_VERSION = 'V' };

static int apply(tt_train_opts *o, int c, const char *a, tt_err *err)
{
	long n;
	char *end;

	switch (c) {
	case O_LAYERS: o->layers = a; return 0;
	case O_DATA: o->data = a; return 0;
	case O_CKPT_DIR: o->ckpt_dir = a; return 0;
	case O_SUMMARY:
		if (!*a)
			return tt_err_set(err, "--summary '': want a file name, or - for standard output");
		o->summary = a;
		return 0;
	case O_EPOCHS: return parse_long("--epochs", a, 1, LONG_MAX, &o->epochs, err);
	case O_BATCH: return parse_long("--batch", a, 1, LONG_MAX, &o->batch, err);
	case O_LOG_EVERY: return parse_long("--log-every", a, 1, LONG_MAX, &o->log_every, err);
	case O_EVAL_EVERY: return parse_long("--eval-every", a, 0, LONG_MAX, &o->eval_every, err);
	case O_CKPT_EVERY: return parse_long("--ckpt-every", a, 0, LONG_MAX, &o->ckpt_every, err);
	case O_MAX_STEPS: return parse_long("--max-steps", a, 0, LONG_MAX, &o->max_steps, err);
	case O_WARMUP: return parse_long("--warmup", a, 0, LONG_MAX, &o->warmup, err);
	case O_CKPT_MIN: return parse_double("--ckpt-minutes", a, 0, &o->ckpt_minutes, err);
	case O_BUCKET:
		if (parse_double("--bucket-mb", a, 0, &o->bucket_mb, err))
			return -1;
		return o->bucket_mb > 0 ? 0 : tt_err_set(err, "--bucket-mb '%s': want a size above 0", a);
	case O_LR: return parse_float("--lr", a, &o->lr, err);
	case O_WD: return parse_float("--weight-decay", a, &o->weight_decay, err);
	case O_SEED:
		errno = 0;
		o->seed = strtoull(a, &end, 0);
		return end == a || *end || errno || a[0] == '-' ? tt_err_set(err, "--seed '%s': want an unsigned integer", a)
								 : 0;
	case O_ZERO:
		if (parse_long("--zero", a, 0, 3, &n, NULL))
			return tt_err_set(err, "--zero '%s': want 0 (DDP), 1, 2 or 3", a);
		o->zero = (int)n;
		return 0;
	case O_ACCUM:
		if (parse_long("--accum", a, 1, 1 << 20, &n, err))
			return -1;
		o->accum = (int)n;
		return 0;
	case O_KEEP:
		if (parse_long("--keep", a, 0, 1 << 20, &n, err))
			return -1;
		o->keep = (int)n;
		return 0;
	case O_SIGNAL: return parse_signal(a, &o->signal, err);
	case O_TP:
	case O_PP:
		if (parse_long(c == O_TP ? "--tp" : "--pp", a, 1, 4096, &n, err))
			return -1;
		*(c == O_TP ? &o->tp : &o->pp) = (int)n;
		return 0;
	case O_SCHEDULE:
		if (!strcmp(a, "1f1b"))
			o->schedule = TT_SCHED_1F1B;
		else if (!strcmp(a, "gpipe"))
			o->schedule = TT_SCHED_GPIPE;
		else
			return tt_err_set(err, "--schedule '%s': want 1f1b or gpipe", a);
		return 0;
	case O_RECOMPUTE: o->recompute = 1; return 0;
	case O_DEVICE:
		if (!strcmp(a, "cpu"))
			o->device = TT_DEVICE_CPU;
		else if (!strcmp(a, "gpu"))
			o->device = TT_DEVICE_GPU;
		else if (!strcmp(a, "auto"))
			o->device = TT_DEVICE_AUTO;
		else
			return tt_err_set(err, "--device '%s': want cpu, gpu or auto", a);
		return 0;
	case O_ON_SIGNAL:
		if (!strcmp(a, "checkpoint"))
			o->on_signal = TT_ON_SIGNAL_CHECKPOINT;
		else if (!strcmp(a, "checkpoint-exit"))
			o->on_signal = TT_ON_SIGNAL_CHECKPOINT_EXIT;
		else
			return tt_err_set(err, "--on-signal '%s': want checkpoint or checkpoint-exit", a);
		return 0;
	case O_BETAS: {
		float b1, b2;
		char extra;

		if (sscanf(a, "%f,%f%c", &b1, &b2, &extra) != 2 || !(b1 >= 0 && b1 < 1) || !(b2 >= 0 && b2 < 1))
			return tt_err_set(err, "--betas '%s': want two numbers in [0, 1) such as 0.9,0.999", a);
		o->beta1 = b1;
		o->beta2 = b2;
		return 0;
	}
	case O_SYNTH: {
		long tr, te = o->synthetic_test;
		char extra;
		int got = sscanf(a, "%ld,%ld%c", &tr, &te, &extra);

		if ((got != 1 && got != 2) || tr < 1 || te < 1 || (got == 1 && strchr(a, ',')))
			return tt_err_set(err, "--synthetic-samples '%s': want N or N,T with positive counts", a);
		o->synthetic_train = tr;
		o->synthetic_test = te;
		return 0;
	}
	default: return tt_err_set(err, "unknown option; see train-mlp --help");
	}
}

static const struct option longopts[] = {
	{ "layers", required_argument, NULL, O_LAYERS },
	{ "data", required_argument, NULL, O_DATA },
	{ "epochs", required_argument, NULL, O_EPOCHS },
	{ "batch", required_argument, NULL, O_BATCH },
	{ "lr", required_argument, NULL, O_LR },
	{ "seed", required_argument, NULL, O_SEED },
	{ "zero", required_argument, NULL, O_ZERO },
	{ "bucket-mb", required_argument, NULL, O_BUCKET },
	{ "ckpt-dir", required_argument, NULL, O_CKPT_DIR },
	{ "ckpt-every", required_argument, NULL, O_CKPT_EVERY },
	{ "ckpt-minutes", required_argument, NULL, O_CKPT_MIN },
	{ "keep", required_argument, NULL, O_KEEP },
	{ "on-signal", required_argument, NULL, O_ON_SIGNAL },
	{ "signal", required_argument, NULL, O_SIGNAL },
	{ "summary", required_argument, NULL, O_SUMMARY },
	{ "log-every", required_argument, NULL, O_LOG_EVERY },
	{ "eval-every", required_argument, NULL, O_EVAL_EVERY },
	{ "accum", required_argument, NULL, O_ACCUM },
	{ "warmup", required_argument, NULL, O_WARMUP },
	{ "weight-decay", required_argument, NULL, O_WD },
	{ "max-steps", required_argument, NULL, O_MAX_STEPS },
	{ "betas", required_argument, NULL, O_BETAS },
	{ "synthetic-samples", required_argument, NULL, O_SYNTH },
	{ "device", required_argument, NULL, O_DEVICE },
	{ "tp", required_argument, NULL, O_TP },
	{ "pp", required_argument, NULL, O_PP },
	{ "schedule", required_argument, NULL, O_SCHEDULE },
	{ "recompute", no_argument, NULL, O_RECOMPUTE },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

int tt_train_opt_takes_value(const char *name)
{
	for (const struct option *o = longopts; o->name; o++)
		if (!strcmp(o->name, name))
			return o->val == O_HELP || o->val == O_VERSION ? -1 : o->has_arg == required_argument;
	return -1;
}

void tt_train_opt_names(char *buf, size_t len)
{
	size_t used = 0;

	if (len)
		buf[0] = '\0';
	for (const struct option *o = longopts; o->name && used < len; o++) {
		int n;

		if (o->has_arg != required_argument)
			continue;
		n = snprintf(buf + used, len - used, "%s%s", used ? ", " : "", o->name);
		if (n < 0)
			break;
		used += (size_t)n;
	}
}

int tt_train_opts_parse(tt_train_opts *o, int argc, char **argv, tt_err *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->epochs = 1;
	o->batch = 64;
	o->lr = 1e-3f;
	o->beta1 = 0.9f;
	o->beta2 = 0.999f;
	o->weight_decay = 0.01f;
	o->bucket_mb = 25.0;
	o->keep = 3;
	o->signal = SIGUSR1;
	o->on_signal = TT_ON_SIGNAL_CHECKPOINT_EXIT;
	o->log_every = 100;
	o->accum = 1;
	o->tp = 1;
	o->pp = 1;
	o->synthetic_train = 8192;
	o->synthetic_test = 1024;
	optind = 0; /* GNU: full re-initialisation, so a parse never continues the previous one's argv */
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hV", longopts, NULL)) != -1) {
		if (c == O_HELP)
			return 1;
		if (c == O_VERSION)
			return 2;
		/* Inside a cluster such as -xy getopt has not moved on yet: name the letter (optopt; for
		 * long options it is 0 or an option code >= 256). */
		if (c == '?' && optopt != 0 && optopt < 256)
			return tt_err_set(err, "option '-%c' is unknown; see train-mlp --help", (char)optopt);
		if (c == '?' || c == ':')
			return tt_err_set(err, "option '%s' is unknown or lacks its value; see train-mlp --help",
					  argv[optind - 1]);
		if (apply(o, c, optarg, err))
			return -1;
	}
	/* The launcher's checkpoint protocol: the status train-run, Slurm scripts and requeue loops
	 * take for a clean stop. */
	o->ckpt_exit = tt_ckpt_exit_parse(getenv(TT_ENV_CKPT_EXIT), err);
	if (o->ckpt_exit < 0)
		return -1;
	if (optind < argc)
		return tt_err_set(err, "unexpected argument '%s'; see train-mlp --help", argv[optind]);
	if (!o->layers)
		return tt_err_set(err, "--layers is required (e.g. --layers 784,256,10)");
	if (!o->data)
		return tt_err_set(err, "--data is required: an IDX directory such as /usr/share/datasets/fashion-mnist, "
				  "or synthetic");
	if (o->batch % o->accum)
		return tt_err_set(err, "--batch %ld is not divisible by --accum %d", o->batch, o->accum);
	if (o->device == TT_DEVICE_GPU && o->zero)
		return tt_err_set(err, "--zero %d with --device gpu: the GPU path is DDP only; use --zero 0, or --device cpu "
				  "for ZeRO", o->zero);
	if (o->device == TT_DEVICE_GPU && (o->tp > 1 || o->pp > 1 || o->recompute))
		return tt_err_set(err, "--tp %d --pp %d%s with --device gpu: the GPU path is data parallelism only; use "
				  "--device cpu for tensor and pipeline parallelism and recomputation", o->tp, o->pp,
				  o->recompute ? " --recompute" : "");
	if ((o->ckpt_every || o->ckpt_minutes > 0) && !o->ckpt_dir)
		return tt_err_set(err, "--ckpt-every/--ckpt-minutes need --ckpt-dir");
	return 0;
}

/* options.h — train-run's command line: torchrun's flags where they make sense, plus its own.
 * Parsing is pure (argv in, struct out) so every spelling and every bad input is unit-tested. */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include "tt_err.h"

enum tt_nproc_mode {
	TT_NPROC_DEFAULT,	/* one worker per visible GPU, or one worker when none is visible */
	TT_NPROC_COUNT,		/* --nproc-per-node N */
	TT_NPROC_GPU,		/* one per visible GPU; an error when none is visible */
	TT_NPROC_CPU,		/* one per CPU train-run may run on */
	TT_NPROC_AUTO,		/* one per visible GPU, else one per CPU (torchrun's "auto") */
};

struct tt_run_opts {
	enum tt_nproc_mode nproc_mode;
	int nproc;		/* with TT_NPROC_COUNT */
	int nnodes;		/* -1: from Slurm, else 1 */
	int node_rank;		/* -1: from Slurm, else 0 */
	const char *master_addr;	/* NULL: from the env contract, or 127.0.0.1 standalone */
	int master_port;	/* 0: from the env contract, or a free port standalone */
	int max_restarts;
	int grace_s;		/* seconds between SIGTERM and SIGKILL */
	int tag_output;
	int rank0_only;
	int standalone;		/* ignore SLURM_* and run as a single-node job */
	const char *topology;	/* hwloc XML of this node instead of discovering it, or NULL */
	int no_python;		/* run a PROGRAM ending in .py as is, not through python3 */
	int signal_worker_only;	/* --signal-scope worker: SIGUSR1/2 to the worker process alone */
	int help;
	int version;
	char **argv;		/* PROGRAM ARGS..., NULL-terminated (points into the caller's argv) */
	int argc;
};

/* Exit status for a usage error, as getopt-based tools use. */
#define TT_EXIT_USAGE 2

/* Fills opts from argv. Returns 0, or -1 with err naming the bad argument. With --help or
 * --version it returns 0 with opts->help/version set and no PROGRAM required. */
int tt_run_parse_args(struct tt_run_opts *opts, int argc, char **argv, tt_err *err);

/* The interpreter for a PROGRAM ending in ".py", as torchrun runs scripts through Python. */
#define TT_PYTHON "python3"

/* Whether PROGRAM is run through TT_PYTHON: it ends in ".py" and --no-python was not given. */
int tt_run_wants_python(const struct tt_run_opts *opts);

/* The --help text. */
extern const char tt_run_usage[];

#endif

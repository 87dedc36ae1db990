/* SPDX-License-Identifier: MIT */
/* options.h — train-run's command line: torchrun's flags with torchrun's meaning where train-run
 * can honour them (a clear error where it cannot), plus its own. Parsing is pure (argv in,
 * struct out) so every spelling and every bad input is unit-tested. */
#ifndef TT_OPTIONS_H
#define TT_OPTIONS_H

#include "heartbeat.h"
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
	int nnodes_min, nnodes_max;	/* --nnodes N or MIN:MAX; -1: from Slurm, else 1 */
	int node_rank;		/* -1: from Slurm, else 0 */
	const char *master_addr;	/* NULL: from the env contract, or 127.0.0.1 standalone */
	int master_port;	/* 0: from the env contract, or a free port standalone */
	const char *rdzv_endpoint;	/* --rdzv-endpoint HOST[:PORT] as given, or NULL */
	char endpoint_host[256];	/* its host ("[::1]" loses the brackets), "" when none */
	int endpoint_port;	/* its port, 0 when it names none */
	const char *run_id;	/* --rdzv-id: TORCHELASTIC_RUN_ID; NULL: the Slurm job id, or "none" */
	const char *role;	/* --role: ROLE_NAME (default "default") */
	int max_restarts;
	int grace_s;		/* seconds between SIGTERM and SIGKILL */
	int tag_output;
	int rank0_only;
	const char *local_ranks_filter;	/* --local-ranks-filter 0,2: console output of these only */
	const char *log_dir;	/* --log-dir: where --redirects/--tee files go; NULL: a new temp dir */
	const char *redirects;	/* -r: torchrun's std spec ("0".."3" or "0:1,1:2"), "0" = none */
	const char *tee;	/* -t: the same spec; tee = log file and console */
	const char *local_addr;	/* --local-addr: MASTER_ADDR of a one-node run, or NULL */
	int standalone;		/* ignore SLURM_* and run as a single-node job */
	const char *topology;	/* hwloc XML of this node instead of discovering it, or NULL */
	int no_python;		/* run a PROGRAM ending in .py as is, not through python3 */
	int module;		/* -m: PROGRAM is a Python module: python3 -m PROGRAM ARGS */
	int run_path;		/* --run-path: PROGRAM is a Python script whatever its name */
	int signal_worker_only;	/* --signal-scope worker: application signals to the worker alone */
	struct tt_hb_config hang;	/* --hang-timeout, repeatable (heartbeat.h) */
	const char *report;	/* --report FILE: the step times as JSON (node 0); NULL: none */
	int preflight;		/* --preflight: the node health check before the census (preflight.h) */
	double preflight_min_fraction;	/* --preflight-min-fraction */
	int spares;		/* --spares K: the launch's last K nodes stand by (ctl.h); 0: none */
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

/* The interpreter for Python programs, as torchrun runs scripts through Python. */
#define TT_PYTHON "python3"

/* Whether PROGRAM is run through TT_PYTHON: -m, --run-path, or a name ending in ".py" without
 * --no-python. */
int tt_run_wants_python(const struct tt_run_opts *opts);

/* torchrun's std spec for one local rank: bit 1 stdout, bit 2 stderr (Std.OUT, Std.ERR). spec
 * was validated by tt_run_parse_args; NULL means none. */
int tt_run_std_for(const char *spec, int local_rank);

/* Whether --local-ranks-filter (NULL: every rank) lets local_rank's output reach the console. */
int tt_run_console_shows(const char *filter, int local_rank);

/* Refuses a local rank this node does not have in --local-ranks-filter, --redirects or --tee
 * (LOCAL_RANK:VALUE pairs), naming the option, the rank and the node's worker count: such a
 * rank would silently select nothing. Returns 0 or -1 with err. */
int tt_run_check_local_ranks(const struct tt_run_opts *opts, int nworkers, tt_err *err);

/* --spares K on a launch of nnodes nodes: the active nodes need at least one, and a single
 * node has no spare to stand by. Returns 0, or -1 with err naming the option. */
int tt_run_check_spares(int spares, int nnodes, tt_err *err);

/* The --help text. */
extern const char tt_run_usage[];

#endif

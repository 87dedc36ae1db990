/* options.c — parsing train-run's command line (see options.h).
 * getopt_long with "+" stops at PROGRAM, so PROGRAM's own options are never touched; both the
 * dash and torchrun's underscore spellings are accepted. */
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char tt_run_usage[] =
	"Usage: train-run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	"Starts one worker per GPU of this node (or --nproc-per-node workers), each with RANK,\n"
	"WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, its GPU and its NUMA-local CPUs; forwards signals;\n"
	"the first failing worker ends the group. See train-run(1).\n"
	"\n"
	"  --nproc-per-node N|gpu|cpu|auto  workers on this node (default: one per GPU, else 1)\n"
	"  --nnodes N                       nodes in the job (default: from Slurm, else 1)\n"
	"  --node-rank N                    this node's index (default: from Slurm, else 0)\n"
	"  --master-addr HOST               rendezvous host (default: first node, or 127.0.0.1)\n"
	"  --master-port PORT               rendezvous port (default: per job and step, or a free port)\n"
	"  --max-restarts N                 restart the node's workers up to N times after a failure\n"
	"  --grace SECONDS                  wait between SIGTERM and SIGKILL (default 30)\n"
	"  --tag-output                     prefix every output line with [rank N]\n"
	"  --rank0-only                     show only rank 0's output\n"
	"  --standalone                     ignore Slurm's environment: one node, this host\n"
	"  --topology FILE                  read this node's hardware from an hwloc XML export\n"
	"  --no-python                      run PROGRAM.py itself, not through python3\n"
	"  --signal-scope group|worker      SIGUSR1/2 to each worker's process group (default) or\n"
	"                                   to the worker alone (helpers such as data loaders\n"
	"                                   that do not catch them would die)\n"
	"  --help, --version\n"
	"Underscore spellings (--nproc_per_node, --master_addr, ...) are accepted too.\n";

enum {
	OPT_NPROC = 256, OPT_NNODES, OPT_NODE_RANK, OPT_MASTER_ADDR, OPT_MASTER_PORT,
	OPT_MAX_RESTARTS, OPT_GRACE, OPT_TAG, OPT_RANK0, OPT_STANDALONE, OPT_TOPOLOGY, OPT_NO_PYTHON, OPT_SIGNAL_SCOPE, OPT_HELP,
	OPT_VERSION,
};

static const struct option long_opts[] = {
	{ "nproc-per-node", required_argument, NULL, OPT_NPROC },
	{ "nproc_per_node", required_argument, NULL, OPT_NPROC },
	{ "nnodes", required_argument, NULL, OPT_NNODES },
	{ "node-rank", required_argument, NULL, OPT_NODE_RANK },
	{ "node_rank", required_argument, NULL, OPT_NODE_RANK },
	{ "master-addr", required_argument, NULL, OPT_MASTER_ADDR },
	{ "master_addr", required_argument, NULL, OPT_MASTER_ADDR },
	{ "master-port", required_argument, NULL, OPT_MASTER_PORT },
	{ "master_port", required_argument, NULL, OPT_MASTER_PORT },
	{ "max-restarts", required_argument, NULL, OPT_MAX_RESTARTS },
	{ "max_restarts", required_argument, NULL, OPT_MAX_RESTARTS },
	{ "grace", required_argument, NULL, OPT_GRACE },
	{ "tag-output", no_argument, NULL, OPT_TAG },
	{ "tag_output", no_argument, NULL, OPT_TAG },
	{ "rank0-only", no_argument, NULL, OPT_RANK0 },
	{ "rank0_only", no_argument, NULL, OPT_RANK0 },
	{ "standalone", no_argument, NULL, OPT_STANDALONE },
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	{ "no-python", no_argument, NULL, OPT_NO_PYTHON },
	{ "no_python", no_argument, NULL, OPT_NO_PYTHON },
	{ "signal-scope", required_argument, NULL, OPT_SIGNAL_SCOPE },
	{ "signal_scope", required_argument, NULL, OPT_SIGNAL_SCOPE },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* Parses a whole decimal number in [min, max] into *out. */
static int parse_int(const char *opt, const char *s, long min, long max, int *out, tt_err *err)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		return tt_err_set(err, "%s '%s': expected a whole number from %ld to %ld", opt, s, min, max);
	*out = (int)v;
	return 0;
}

static int parse_nproc(struct tt_run_opts *o, const char *s, tt_err *err)
{
	if (!strcmp(s, "gpu"))
		o->nproc_mode = TT_NPROC_GPU;
	else if (!strcmp(s, "cpu"))
		o->nproc_mode = TT_NPROC_CPU;
	else if (!strcmp(s, "auto"))
		o->nproc_mode = TT_NPROC_AUTO;
	else if (parse_int("--nproc-per-node", s, 1, 4096, &o->nproc, NULL) == 0)
		o->nproc_mode = TT_NPROC_COUNT;
	else
		return tt_err_set(err, "--nproc-per-node '%s': expected a number from 1 to 4096, gpu, cpu or auto", s);
	return 0;
}

static int parse_one(struct tt_run_opts *o, int c, const char *arg, tt_err *err)
{
	switch (c) {
	case OPT_NPROC: return parse_nproc(o, arg, err);
	case OPT_NNODES: return parse_int("--nnodes", arg, 1, 1000000, &o->nnodes, err);
	case OPT_NODE_RANK: return parse_int("--node-rank", arg, 0, 999999, &o->node_rank, err);
	case OPT_MASTER_PORT: return parse_int("--master-port", arg, 1, 65535, &o->master_port, err);
	case OPT_MAX_RESTARTS: return parse_int("--max-restarts", arg, 0, 1000000, &o->max_restarts, err);
	case OPT_GRACE: return parse_int("--grace", arg, 0, 86400, &o->grace_s, err);
	case OPT_MASTER_ADDR:
		if (!*arg)
			return tt_err_set(err, "--master-addr '': expected a host name or address");
		o->master_addr = arg;
		return 0;
	case OPT_TOPOLOGY:
		if (!*arg)
			return tt_err_set(err, "--topology '': expected an hwloc XML file");
		o->topology = arg;
		return 0;
	case OPT_TAG: o->tag_output = 1; return 0;
	case OPT_RANK0: o->rank0_only = 1; return 0;
	case OPT_STANDALONE: o->standalone = 1; return 0;
	case OPT_NO_PYTHON: o->no_python = 1; return 0;
	case OPT_SIGNAL_SCOPE:
		if (strcmp(arg, "group") && strcmp(arg, "worker"))
			return tt_err_set(err, "--signal-scope '%s': expected group or worker", arg);
		o->signal_worker_only = !strcmp(arg, "worker");
		return 0;
	case OPT_HELP: o->help = 1; return 0;
	case OPT_VERSION: o->version = 1; return 0;
	}
	return tt_err_set(err, "internal: option code %d has no handler", c);
}

int tt_run_parse_args(struct tt_run_opts *o, int argc, char **argv, tt_err *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->nproc_mode = TT_NPROC_DEFAULT;
	o->nnodes = -1;
	o->node_rank = -1;
	o->grace_s = 30;
	optind = 0;	/* GNU: full re-initialisation, so the parser can run more than once */
	opterr = 0;	/* errors go into err, not to stderr */
	while ((c = getopt_long(argc, argv, "+:", long_opts, NULL)) != -1) {
		if (c == ':')
			return tt_err_set(err, "option '%s' needs a value; see train-run --help", argv[optind - 1]);
		/* Inside a cluster such as -xy getopt has not moved on yet: name the letter (optopt; for
		 * long options it is 0 or an option code >= 256). */
		if (c == '?' && optopt != 0 && optopt < 256)
			return tt_err_set(err, "unknown option '-%c'; see train-run --help", (char)optopt);
		if (c == '?')
			return tt_err_set(err, "unknown option '%s'; see train-run --help", argv[optind - 1]);
		if (parse_one(o, c, optarg, err) != 0)
			return -1;
	}
	if (o->node_rank >= 0 && o->nnodes > 0 && o->node_rank >= o->nnodes)
		return tt_err_set(err, "--node-rank %d: must be below --nnodes %d", o->node_rank, o->nnodes);
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (!o->help && !o->version && o->argc == 0)
		return tt_err_set(err, "no PROGRAM given; usage: train-run [OPTIONS] -- PROGRAM [ARGS...]");
	return 0;
}

int tt_run_wants_python(const struct tt_run_opts *o)
{
	size_t len = o->argc > 0 ? strlen(o->argv[0]) : 0;

	return !o->no_python && len > 3 && !strcmp(o->argv[0] + len - 3, ".py");
}

/* SPDX-License-Identifier: MIT */
/* options.c — parsing train-run's command line (see options.h).
 * getopt_long with "+" stops at PROGRAM, so PROGRAM's own options are never touched; both the
 * dash and torchrun's underscore spellings are accepted. */
#include "options.h"
#include "preflight.h"
#include "tt_parse.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

const char tt_run_usage[] =
	"Usage: train-run [OPTIONS] [--] PROGRAM [ARGS...]\n"
	"Starts one worker per GPU of this node (or --nproc-per-node workers), each with RANK,\n"
	"WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT, its GPU and its NUMA-local CPUs; forwards signals;\n"
	"the first failing worker ends the group. torchrun's options mean what they mean to torchrun.\n"
	"See train-run(1).\n"
	"\n"
	"  --nproc-per-node N|gpu|cpu|auto  workers on this node (default: one per GPU, else 1)\n"
	"  --nnodes N|MIN:MAX               nodes in the job (default: from Slurm, else 1)\n"
	"                                   MIN < MAX: a lost node leaves the others going on\n"
	"                                   down to MIN nodes (Slurm)\n"
	"  --node-rank N                    this node's index (default: from Slurm, else 0)\n"
	"  --master-addr HOST               rendezvous host (default: first node, or 127.0.0.1)\n"
	"  --master-port PORT               rendezvous port (default: per job and step, or a free port)\n"
	"  --rdzv-endpoint HOST[:PORT]      the same as --master-addr HOST --master-port PORT\n"
	"  --rdzv-backend static|c10d       accepted; every node's workers start at once\n"
	"  --rdzv-id ID                     TORCHELASTIC_RUN_ID (default: the Slurm job id, or none)\n"
	"  --rdzv-conf K=V,...              accepted and checked; train-run has no rendezvous to tune\n"
	"  --standalone                     ignore Slurm's environment: one node, this host\n"
	"  --local-addr ADDR                MASTER_ADDR of a one-node run\n"
	"  --max-restarts N                 restart the node's workers up to N times after a failure\n"
	"  --monitor-interval SECONDS       accepted; train-run sees a worker exit at once\n"
	"  --start-method spawn|fork|forkserver  accepted; workers are always fork+exec'd\n"
	"  --role NAME                      ROLE_NAME (default: default)\n"
	"  -m, --module                     PROGRAM is a Python module: python3 -m PROGRAM ARGS\n"
	"  --no-python                      run PROGRAM.py itself, not through python3\n"
	"  --run-path                       run PROGRAM through python3 whatever its name\n"
	"  --log-dir DIR                    where --redirects/--tee write (default: a new temp dir)\n"
	"  -r, --redirects 0-3|LR:0-3,...   workers' stdout (1), stderr (2), both (3) to log files only\n"
	"  -t, --tee 0-3|LR:0-3,...         the same to log files and the console\n"
	"  --local-ranks-filter LR,...      console output of these local ranks only\n"
	"  --grace SECONDS                  wait between SIGTERM and SIGKILL (default 30)\n"
	"  --tag-output                     prefix every output line with [rank N]\n"
	"  --rank0-only                     show only rank 0's output\n"
	"  --topology FILE                  read this node's hardware from an hwloc XML export\n"
	"  --signal-scope group|worker      application signals (SIGUSR1/2, URG, ALRM, XCPU) to each\n"
	"                                   worker's process group (default) or the worker alone\n"
	"  --hang-timeout off|S|SECTION=S   a worker that writes heartbeats (TRAIN_HEARTBEAT_FD) and\n"
	"                                   makes no progress for S seconds is hung: named, killed,\n"
	"                                   restarted under --max-restarts (default: 2 x p99 of its\n"
	"                                   step intervals, at least 5 s, after 15 steps); repeatable\n"
	"  --report FILE                    node 0 writes every rank's step times and the stragglers\n"
	"                                   as JSON to FILE at the end\n"
	"  --preflight[=on|off]             check every node before any worker starts: its GPUs'\n"
	"                                   device files open, its memory bandwidth is at least\n"
	"                                   --preflight-min-fraction x the nodes' median (default on)\n"
	"  --preflight-min-fraction F       0 < F <= 1 (default 0.5)\n"
	"  --spares K                       the step's last K nodes stand by, without workers, to\n"
	"                                   take the NODE_RANK of a lost node (default 0)\n"
	"  -h, --help; -V, --version\n"
	"Underscore spellings (--nproc_per_node, --rdzv_endpoint, ...) are accepted too.\n";

enum {
	OPT_NPROC = 256, OPT_NNODES, OPT_NODE_RANK, OPT_MASTER_ADDR, OPT_MASTER_PORT,
	OPT_MAX_RESTARTS, OPT_GRACE, OPT_TAG, OPT_RANK0, OPT_STANDALONE, OPT_TOPOLOGY, OPT_NO_PYTHON,
	OPT_SIGNAL_SCOPE, OPT_RDZV_ENDPOINT, OPT_RDZV_BACKEND, OPT_RDZV_ID, OPT_RDZV_CONF,
	OPT_MONITOR, OPT_START_METHOD, OPT_ROLE, OPT_RUN_PATH, OPT_LOG_DIR, OPT_FILTER,
	OPT_LOCAL_ADDR, OPT_HANG_TIMEOUT, OPT_PREFLIGHT, OPT_PREFLIGHT_FRACTION, OPT_REPORT, OPT_SPARES,
	OPT_HELP = 'h', OPT_VERSION = 'V', OPT_MODULE = 'm', OPT_REDIRECTS = 'r', OPT_TEE = 't',
};

/* Each option with torchrun's dash and underscore spellings (one spelling where both agree). */
#define BOTH(dash, under, arg, code) { dash, arg, NULL, code }, { under, arg, NULL, code }
static const struct option long_opts[] = {
	BOTH("nproc-per-node", "nproc_per_node", required_argument, OPT_NPROC),
	{ "nnodes", required_argument, NULL, OPT_NNODES },
	BOTH("node-rank", "node_rank", required_argument, OPT_NODE_RANK),
	BOTH("master-addr", "master_addr", required_argument, OPT_MASTER_ADDR),
	BOTH("master-port", "master_port", required_argument, OPT_MASTER_PORT),
	BOTH("rdzv-endpoint", "rdzv_endpoint", required_argument, OPT_RDZV_ENDPOINT),
	BOTH("rdzv-backend", "rdzv_backend", required_argument, OPT_RDZV_BACKEND),
	BOTH("rdzv-id", "rdzv_id", required_argument, OPT_RDZV_ID),
	BOTH("rdzv-conf", "rdzv_conf", required_argument, OPT_RDZV_CONF),
	BOTH("max-restarts", "max_restarts", required_argument, OPT_MAX_RESTARTS),
	BOTH("monitor-interval", "monitor_interval", required_argument, OPT_MONITOR),
	BOTH("start-method", "start_method", required_argument, OPT_START_METHOD),
	{ "role", required_argument, NULL, OPT_ROLE },
	{ "module", no_argument, NULL, OPT_MODULE },
	BOTH("no-python", "no_python", no_argument, OPT_NO_PYTHON),
	BOTH("run-path", "run_path", no_argument, OPT_RUN_PATH),
	BOTH("log-dir", "log_dir", required_argument, OPT_LOG_DIR),
	{ "redirects", required_argument, NULL, OPT_REDIRECTS },
	{ "tee", required_argument, NULL, OPT_TEE },
	BOTH("local-ranks-filter", "local_ranks_filter", required_argument, OPT_FILTER),
	BOTH("local-addr", "local_addr", required_argument, OPT_LOCAL_ADDR),
	{ "standalone", no_argument, NULL, OPT_STANDALONE },
	{ "grace", required_argument, NULL, OPT_GRACE },
	BOTH("tag-output", "tag_output", no_argument, OPT_TAG),
	BOTH("rank0-only", "rank0_only", no_argument, OPT_RANK0),
	{ "topology", required_argument, NULL, OPT_TOPOLOGY },
	BOTH("signal-scope", "signal_scope", required_argument, OPT_SIGNAL_SCOPE),
	BOTH("hang-timeout", "hang_timeout", required_argument, OPT_HANG_TIMEOUT),
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "preflight", optional_argument, NULL, OPT_PREFLIGHT },
	{ "preflight-min-fraction", required_argument, NULL, OPT_PREFLIGHT_FRACTION },
	{ "spares", required_argument, NULL, OPT_SPARES },
	{ "help", no_argument, NULL, OPT_HELP },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ NULL, 0, NULL, 0 },
};

/* A whole number option in [min, max] (the shared strict parser names the option and the range). */
static int parse_int(const char *opt, const char *s, long min, long max, int *out, tt_err *err)
{
	long long v;

	if (tt_parse_int(s, min, max, opt, &v, err) != 0)
		return -1;
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

/* --nnodes N or MIN:MAX (torchrun's elastic range). */
static int parse_nnodes(struct tt_run_opts *o, const char *s, tt_err *err)
{
	const char *colon = strchr(s, ':');
	char min[16] = "";

	if (colon && (size_t)(colon - s) < sizeof(min))
		memcpy(min, s, (size_t)(colon - s));
	if (parse_int("--nnodes", colon ? min : s, 1, 1000000, &o->nnodes_min, NULL) != 0 ||
	    parse_int("--nnodes", colon ? colon + 1 : s, 1, 1000000, &o->nnodes_max, NULL) != 0 ||
	    o->nnodes_min > o->nnodes_max)
		return tt_err_set(err, "--nnodes '%s': expected N or MIN:MAX with 1 <= MIN <= MAX", s);
	return 0;
}

/* --rdzv-endpoint HOST[:PORT], "[v6addr]" or "[v6addr]:PORT". */
static int parse_endpoint(struct tt_run_opts *o, const char *s, tt_err *err)
{
	const char *host = s, *port = NULL;
	size_t hlen;

	if (s[0] == '[') {
		const char *close = strchr(s, ']');

		if (!close || (close[1] && close[1] != ':'))
			goto bad;
		host = s + 1;
		hlen = (size_t)(close - host);
		port = close[1] ? close + 2 : NULL;
	} else {
		const char *colon = strrchr(s, ':');

		if (colon && strchr(s, ':') != colon)
			goto bad;	/* a bare IPv6 address: torchrun wants it in brackets */
		hlen = colon ? (size_t)(colon - s) : strlen(s);
		port = colon ? colon + 1 : NULL;
	}
	if (hlen == 0 || hlen >= sizeof(o->endpoint_host))
		goto bad;
	memcpy(o->endpoint_host, host, hlen);
	o->endpoint_host[hlen] = '\0';
	o->endpoint_port = 0;
	if (port && parse_int("--rdzv-endpoint", port, 1, 65535, &o->endpoint_port, NULL) != 0)
		goto bad;
	o->rdzv_endpoint = s;
	return 0;
bad:
	return tt_err_set(err, "--rdzv-endpoint '%s': expected HOST, HOST:PORT or [IPv6]:PORT with "
			  "a port from 1 to 65535", s);
}

/* --rdzv-conf KEY=VALUE,...: checked as torchrun checks it, then not used. */
static int check_rdzv_conf(const char *s, tt_err *err)
{
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, ",");
		const char *eq = memchr(p, '=', len);

		if (!eq || eq == p || eq == p + len - 1)
			return tt_err_set(err, "--rdzv-conf '%s': element '%.*s' is not KEY=VALUE", s,
					  (int)len, p);
		p += len + (p[len] == ',');
	}
	return 0;
}

/* Whether s is a comma list of non-negative local ranks, each with ":V" when with_value
 * (V in 0-3). */
static int valid_rank_list(const char *s, int with_value)
{
	if (!*s)
		return 0;
	for (const char *p = s; *p;) {
		size_t len = strcspn(p, ","), digits = strspn(p, "0123456789");

		if (digits == 0 || digits > 6)
			return 0;
		if (!with_value && len != digits)
			return 0;
		if (with_value && (len != digits + 2 || p[digits] != ':' ||
				   p[digits + 1] < '0' || p[digits + 1] > '3'))
			return 0;
		p += len;
		if (*p == ',' && !*++p)
			return 0;	/* a trailing comma */
	}
	return 1;
}

static int parse_std(const char *opt, const char *s, const char **out, tt_err *err)
{
	if (!((strlen(s) == 1 && strchr("0123", s[0])) || valid_rank_list(s, 1)))
		return tt_err_set(err, "%s '%s': expected 0 (none), 1 (stdout), 2 (stderr), 3 (both), "
				  "or LOCAL_RANK:VALUE pairs like 0:3,1:2", opt, s);
	*out = s;
	return 0;
}

static int parse_word(const char *opt, const char *s, const char *const *words, const char *list,
		      tt_err *err)
{
	for (; *words; words++)
		if (!strcmp(s, *words))
			return 0;
	return tt_err_set(err, "%s '%s': expected %s", opt, s, list);
}

static int parse_nonempty(const char *opt, const char *s, const char *what, const char **out,
			  tt_err *err)
{
	if (!*s)
		return tt_err_set(err, "%s '': expected %s", opt, what);
	*out = s;
	return 0;
}

static int parse_one(struct tt_run_opts *o, int c, const char *arg, tt_err *err)
{
	static const char *const backends[] = { "static", "c10d", NULL };
	static const char *const methods[] = { "spawn", "fork", "forkserver", NULL };
	char *end;

	switch (c) {
	case OPT_NPROC: return parse_nproc(o, arg, err);
	case OPT_NNODES: return parse_nnodes(o, arg, err);
	case OPT_NODE_RANK: return parse_int("--node-rank", arg, 0, 999999, &o->node_rank, err);
	case OPT_MASTER_PORT: return parse_int("--master-port", arg, 1, 65535, &o->master_port, err);
	case OPT_MAX_RESTARTS: return parse_int("--max-restarts", arg, 0, 1000000, &o->max_restarts, err);
	case OPT_GRACE: return parse_int("--grace", arg, 0, 86400, &o->grace_s, err);
	case OPT_SPARES: return parse_int("--spares", arg, 0, 999999, &o->spares, err);
	case OPT_MASTER_ADDR:
		return parse_nonempty("--master-addr", arg, "a host name or address", &o->master_addr, err);
	case OPT_TOPOLOGY: return parse_nonempty("--topology", arg, "an hwloc XML file", &o->topology, err);
	case OPT_RDZV_ENDPOINT: return parse_endpoint(o, arg, err);
	case OPT_RDZV_BACKEND:
		return parse_word("--rdzv-backend", arg, backends, "static or c10d (train-run starts "
				  "every node's workers at once; it has no elastic rendezvous)", err);
	case OPT_RDZV_ID: return parse_nonempty("--rdzv-id", arg, "a job id", &o->run_id, err);
	case OPT_RDZV_CONF: return check_rdzv_conf(arg, err);
	case OPT_MONITOR:
		if (!*arg || strtod(arg, &end) < 0 || *end)
			return tt_err_set(err, "--monitor-interval '%s': expected a number of seconds >= 0", arg);
		return 0;
	case OPT_START_METHOD:
		return parse_word("--start-method", arg, methods, "spawn, fork or forkserver", err);
	case OPT_ROLE: return parse_nonempty("--role", arg, "a role name", &o->role, err);
	case OPT_LOG_DIR: return parse_nonempty("--log-dir", arg, "a directory", &o->log_dir, err);
	case OPT_REDIRECTS: return parse_std("--redirects", arg, &o->redirects, err);
	case OPT_TEE: return parse_std("--tee", arg, &o->tee, err);
	case OPT_FILTER:
		if (!valid_rank_list(arg, 0))
			return tt_err_set(err, "--local-ranks-filter '%s': expected local ranks like 0,1,2", arg);
		o->local_ranks_filter = arg;
		return 0;
	case OPT_LOCAL_ADDR:
		return parse_nonempty("--local-addr", arg, "a host name or address", &o->local_addr, err);
	case OPT_TAG: o->tag_output = 1; return 0;
	case OPT_RANK0: o->rank0_only = 1; return 0;
	case OPT_STANDALONE: o->standalone = 1; return 0;
	case OPT_NO_PYTHON: o->no_python = 1; return 0;
	case OPT_MODULE: o->module = 1; return 0;
	case OPT_RUN_PATH: o->run_path = 1; return 0;
	case OPT_SIGNAL_SCOPE:
		if (strcmp(arg, "group") && strcmp(arg, "worker"))
			return tt_err_set(err, "--signal-scope '%s': expected group or worker", arg);
		o->signal_worker_only = !strcmp(arg, "worker");
		return 0;
	case OPT_HANG_TIMEOUT: return tt_hb_config_add(&o->hang, arg, err);
	case OPT_REPORT: return parse_nonempty("--report", arg, "a file", &o->report, err);
	case OPT_PREFLIGHT:
		if (arg && strcmp(arg, "on") && strcmp(arg, "off"))
			return tt_err_set(err, "--preflight='%s': expected on or off", arg);
		o->preflight = !arg || !strcmp(arg, "on");
		return 0;
	case OPT_PREFLIGHT_FRACTION:
		errno = 0;
		o->preflight_min_fraction = strtod(arg, &end);
		if (!*arg || *end || errno || !(o->preflight_min_fraction > 0 &&
						o->preflight_min_fraction <= 1))
			return tt_err_set(err, "--preflight-min-fraction '%s': expected a number above 0 "
					  "and at most 1 (a node below that x the nodes' median fails)", arg);
		return 0;
	case OPT_HELP: o->help = 1; return 0;
	case OPT_VERSION: o->version = 1; return 0;
	}
	return tt_err_set(err, "internal: option code %d has no handler", c);
}

int tt_run_check_spares(int spares, int nnodes, tt_err *err)
{
	if (spares > 0 && nnodes == 1)
		return tt_err_set(err, "--spares %d on a single node: a spare is another node of the "
				  "launch; drop the option or run on more nodes", spares);
	if (spares >= nnodes)
		return tt_err_set(err, "--spares %d: must be below the launch's %d nodes (at least one "
				  "runs the program)", spares, nnodes);
	return 0;
}

/* Rules between options, checked once all are read. */
static int check_combination(const struct tt_run_opts *o, tt_err *err)
{
	if (o->nnodes_max > 0 && tt_run_check_spares(o->spares, o->nnodes_min, err) != 0)
		return -1;
	if (o->node_rank >= 0 && o->nnodes_max > 0 && o->node_rank >= o->nnodes_max)
		return tt_err_set(err, "--node-rank %d: must be below --nnodes %d", o->node_rank,
				  o->nnodes_max);
	if (o->rdzv_endpoint && o->master_addr)
		return tt_err_set(err, "--rdzv-endpoint %s and --master-addr %s both name the rendezvous "
				  "host: give one", o->rdzv_endpoint, o->master_addr);
	if (o->rdzv_endpoint && o->endpoint_port && o->master_port)
		return tt_err_set(err, "--rdzv-endpoint %s and --master-port %d both name the rendezvous "
				  "port: give one", o->rdzv_endpoint, o->master_port);
	if (o->module && o->no_python)
		return tt_err_set(err, "--module runs PROGRAM with python3 -m, --no-python without "
				  "python3: give one (as torchrun)");
	return 0;
}

int tt_run_parse_args(struct tt_run_opts *o, int argc, char **argv, tt_err *err)
{
	int c;

	memset(o, 0, sizeof(*o));
	o->nproc_mode = TT_NPROC_DEFAULT;
	o->nnodes_min = o->nnodes_max = -1;
	o->node_rank = -1;
	o->grace_s = 30;
	o->preflight = 1;
	o->preflight_min_fraction = TT_PF_MIN_FRACTION;
	o->role = "default";
	optind = 0;	/* GNU: full re-initialisation, so the parser can run more than once */
	opterr = 0;	/* errors go into err, not to stderr */
	while ((c = getopt_long(argc, argv, "+:hVmr:t:", long_opts, NULL)) != -1) {
		if (c == ':')
			return tt_err_set(err, "option '%s' needs a value; see train-run --help", argv[optind - 1]);
		if (c == '?') {
			if (optopt && optopt < 256)
				return tt_err_set(err, "unknown option '-%c'; see train-run --help", optopt);
			return tt_err_set(err, "unknown option '%s'; see train-run --help", argv[optind - 1]);
		}
		if (parse_one(o, c, optarg, err) != 0)
			return -1;
	}
	if (check_combination(o, err) != 0)
		return -1;
	o->argv = argv + optind;
	o->argc = argc - optind;
	if (!o->help && !o->version && o->argc == 0)
		return tt_err_set(err, "no PROGRAM given; usage: train-run [OPTIONS] -- PROGRAM [ARGS...]");
	return 0;
}

int tt_run_wants_python(const struct tt_run_opts *o)
{
	size_t len = o->argc > 0 ? strlen(o->argv[0]) : 0;

	if (o->module || o->run_path)
		return 1;
	return !o->no_python && len > 3 && !strcmp(o->argv[0] + len - 3, ".py");
}

/* One item of a list valid_rank_list passed: its local rank into *rank and, for RANK:V pairs
 * (value not NULL), where V is. Returns the next item, or NULL at the end of the list or at an
 * item that is not one (the lists were validated; this only stops the walk). */
static const char *rank_item(const char *p, long long *rank, const char **value)
{
	size_t digits = strspn(p, "0123456789");

	if (!digits || tt_parse_int_span(p, digits, 0, 999999, rank) != 0)
		return NULL;
	if (value) {
		if (p[digits] != ':' || !p[digits + 1])
			return NULL;
		*value = p + digits + 1;
	}
	p += strcspn(p, ",");
	return p + (*p == ',');
}

int tt_run_std_for(const char *spec, int local_rank)
{
	const char *v;
	long long r;

	if (!spec)
		return 0;
	if (!strchr(spec, ':'))
		return spec[0] - '0';
	for (const char *p = spec; (p = rank_item(p, &r, &v));)
		if (r == local_rank)
			return *v - '0';
	return 0;
}

/* The first local rank of a list valid_rank_list passed that is nworkers or more, or -1. */
static long long rank_beyond(const char *list, int nworkers)
{
	long long r;

	for (const char *p = list; (p = rank_item(p, &r, NULL));)
		if (r >= nworkers)
			return r;
	return -1;
}

int tt_run_check_local_ranks(const struct tt_run_opts *opts, int nworkers, tt_err *err)
{
	const struct {
		const char *opt, *list;
	} lists[] = {
		{"--local-ranks-filter", opts->local_ranks_filter},
		/* A single digit 0-3 is a std value for every rank, not a rank list. */
		{"--redirects", opts->redirects && strchr(opts->redirects, ':') ? opts->redirects : NULL},
		{"--tee", opts->tee && strchr(opts->tee, ':') ? opts->tee : NULL},
	};

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		long long r = lists[i].list ? rank_beyond(lists[i].list, nworkers) : -1;

		if (r >= 0 && nworkers == 1)
			return tt_err_set(err, "%s '%s': local rank %lld does not exist here: this node runs 1 "
					  "worker (local rank 0); name only rank 0", lists[i].opt, lists[i].list, r);
		if (r >= 0)
			return tt_err_set(err, "%s '%s': local rank %lld does not exist here: this node runs %d "
					  "workers (local ranks 0-%d); name only ranks below %d",
					  lists[i].opt, lists[i].list, r, nworkers, nworkers - 1, nworkers);
	}
	return 0;
}

int tt_run_console_shows(const char *filter, int local_rank)
{
	long long r;

	if (!filter)
		return 1;
	for (const char *p = filter; (p = rank_item(p, &r, NULL));)
		if (r == local_rank)
			return 1;
	return 0;
}

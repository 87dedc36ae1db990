/* train_run.c — main() of train-run: parse the command line, gather the step's facts (from
 * Slurm's environment through the layout module, or standalone like torchrun), compute each
 * worker's env contract and CPUs, then hand the group to the supervisor. Only this file prints
 * errors; every rule it applies lives in the module named at the call. */
#include "config.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "bind.h"
#include "gres.h"
#include "hw_policy.h"
#include "layout.h"
#include "options.h"
#include "signals.h"
#include "spawn.h"
#include "supervise.h"

/* torchrun's default port when several standalone nodes must agree without Slurm. */
#define STANDALONE_PORT 29500

/* Everything main() computes before the supervisor takes over. */
struct launch {
	struct tt_run_opts opts;
	struct tt_step_facts facts;
	int slurm;			/* facts come from Slurm's environment */
	cpu_set_t allowed;
	int nproc;
	struct tt_worker_setup *setup;	/* [nproc] */
	char path[PATH_MAX];
	char **argv;			/* what the workers exec: PROGRAM ARGS, or python3 PROGRAM ARGS */
	struct tt_hw_model *hw;		/* the node's hardware, NULL when not needed or unknown */
	char host[256];
};

/* A port the kernel says is free on 127.0.0.1 now (torchrun --standalone does the same). */
static int free_port(uint16_t *port, tt_err *err)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), rc = -1;

	if (fd < 0)
		return tt_err_errno(err, "finding a free MASTER_PORT on 127.0.0.1 (socket)");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		tt_err_errno(err, "finding a free MASTER_PORT on 127.0.0.1; pass --master-port");
	else {
		*port = ntohs(a.sin_port);
		rc = 0;
	}
	close(fd);
	return rc;
}

/* Standalone facts: nnodes nodes named by index, this one node_rank; GPUs from the usual
 * variables. MASTER_ADDR/PORT are filled in after the contract is computed. */
static int standalone_facts(struct launch *l, tt_err *err)
{
	struct tt_step_facts *f = &l->facts;
	int nnodes = l->opts.nnodes > 0 ? l->opts.nnodes : 1;
	int node = l->opts.node_rank >= 0 ? l->opts.node_rank : 0;

	if (node >= nnodes)
		return tt_err_set(err, "--node-rank %d: must be below --nnodes %d", node, nnodes);
	if (nnodes > 1 && !l->opts.master_addr)
		return tt_err_set(err, "--nnodes %d without Slurm: pass --master-addr (the host of node rank 0)", nnodes);
	memset(f, 0, sizeof(*f));
	if (nnodes == 1)
		snprintf(f->nodelist, sizeof(f->nodelist), "node0");
	else
		snprintf(f->nodelist, sizeof(f->nodelist), "node[0-%d]", nnodes - 1);
	f->node_index = (uint32_t)node;
	f->ports.lo = TT_PORT_LO_DEFAULT;
	f->ports.hi = TT_PORT_HI_DEFAULT;
	return tt_gres_node_gpus(tt_env_process, NULL, &f->gpus, f->gpus_checked, sizeof(f->gpus_checked), err);
}

static int slurm_facts(struct launch *l, tt_err *err)
{
	uint32_t on_node, nnodes, ntasks;

	if (tt_step_facts_from_env(&l->facts, tt_env_process, NULL, err) != 0)
		return tt_err_wrap(err, "reading Slurm's environment (use --standalone to ignore it)");
	if (l->facts.tasks_per_node[0] &&
	    tt_tasks_per_node(l->facts.tasks_per_node, l->facts.node_index, &on_node, &nnodes, &ntasks, err) != 0)
		return -1;
	if (l->facts.tasks_per_node[0] && on_node > 1)
		return tt_err_set(err, "the step runs %u tasks on this node (SLURM_STEP_TASKS_PER_NODE=%s): run one "
				  "train-run per node (srun --ntasks-per-node=1), it starts the workers itself",
				  on_node, l->facts.tasks_per_node);
	if (l->opts.node_rank >= 0 && (uint32_t)l->opts.node_rank != l->facts.node_index)
		return tt_err_set(err, "--node-rank %d contradicts SLURM_NODEID=%u; drop the option under Slurm",
				  l->opts.node_rank, l->facts.node_index);
	return 0;
}

/* Outside Slurm with CUDA_VISIBLE_DEVICES unset, the GPUs are the node's own (torchrun asks
 * CUDA the same question); a worker count that does not depend on GPUs needs no look. */
static int count_node_gpus(const struct launch *l)
{
	return !l->slurm && l->facts.gpus.n == 0 && !getenv("CUDA_VISIBLE_DEVICES") &&
	       l->opts.nproc_mode != TT_NPROC_COUNT && l->opts.nproc_mode != TT_NPROC_CPU;
}

static int choose_nproc(struct launch *l, tt_err *err)
{
	int ngpus = (int)l->facts.gpus.n;
	int ncpus = CPU_COUNT(&l->allowed);

	switch (l->opts.nproc_mode) {
	case TT_NPROC_COUNT:
		l->nproc = l->opts.nproc;
		break;
	case TT_NPROC_GPU:
		if (ngpus == 0)
			return tt_err_set(err, "--nproc-per-node gpu: no GPUs found; checked %s (none set or all empty)%s; "
					  "request GPUs (srun --gres=gpu:N) or pass a number",
					  l->facts.gpus_checked[0] ? l->facts.gpus_checked : "nothing",
					  count_node_gpus(l) ? " and the node's PCI devices" : "");
		l->nproc = ngpus;
		break;
	case TT_NPROC_CPU:
		l->nproc = ncpus;
		break;
	case TT_NPROC_AUTO:
		l->nproc = ngpus ? ngpus : ncpus;
		break;
	case TT_NPROC_DEFAULT:
		l->nproc = ngpus ? ngpus : 1;
		break;
	}
	return 0;
}

/* Each worker's contract, with the rendezvous address overridden where the user or the
 * plugin chose it. */
static int compute_envs(struct launch *l, tt_err *err)
{
	const char *env_addr = l->slurm ? getenv("MASTER_ADDR") : NULL;
	const char *env_port = l->slurm ? getenv("MASTER_PORT") : NULL;
	uint16_t port = 0;
	int i;
	size_t w;

	l->setup = calloc((size_t)l->nproc, sizeof(*l->setup));
	if (!l->setup)
		return tt_err_errno(err, "allocating the setup of %d workers", l->nproc);
	if (l->opts.master_port) {
		port = (uint16_t)l->opts.master_port;
	} else if (env_port && *env_port) {
		char *end;
		long v = strtol(env_port, &end, 10);

		if (*end || v < 1 || v > 65535)
			return tt_err_set(err, "MASTER_PORT='%s' in the environment is not a port number (1-65535); "
					  "unset it or pass --master-port", env_port);
		port = (uint16_t)v;
	} else if (!l->slurm) {
		if (l->opts.nnodes > 1)
			port = STANDALONE_PORT;
		else if (free_port(&port, err) != 0)
			return -1;
	}
	for (i = 0; i < l->nproc; i++) {
		struct tt_task_env *e = &l->setup[i].env;
		const char *addr = l->opts.master_addr ? l->opts.master_addr :
				   env_addr && *env_addr ? env_addr : l->slurm ? NULL : "127.0.0.1";

		if (tt_layout_compute_worker(&l->facts, (uint32_t)l->nproc, (uint32_t)i, e, err) != 0)
			return -1;
		if (addr && (size_t)snprintf(e->master_addr, sizeof(e->master_addr), "%s", addr) >= sizeof(e->master_addr))
			return tt_err_set(err, "MASTER_ADDR '%s' is longer than %zu characters", addr, sizeof(e->master_addr) - 1);
		if (port)
			e->master_port = port;
	}
	for (w = 0; w < l->setup[0].env.nwarnings; w++)
		fprintf(stderr, "train-run: %s\n", l->setup[0].env.warnings[w]);
	return 0;
}

/* The node-wide index of worker i's first GPU (gres.h), or -1 when it cannot be told. */
static int node_gpu_index(const struct launch *l, int i)
{
	return tt_gres_node_index(l->slurm ? tt_env_process : tt_env_none, NULL, &l->facts.gpus,
				  l->setup[i].env.cuda_visible_devices);
}

/* Each worker's CPUs (its GPU's NUMA-local ones, shared with the workers of the same NUMA node,
 * see bind.h), NCCL_IB_HCA and NCCL_SOCKET_IFNAME from the node's hardware model; without a
 * model the allowed CPUs are split evenly. OMP_NUM_THREADS follows the binding. */
static int bind_workers(struct launch *l, tt_err *err)
{
	cpu_set_t *local = NULL, *cpus = calloc((size_t)l->nproc, sizeof(*cpus));
	int i, rc = -1;

	if (!cpus)
		return tt_err_errno(err, "allocating the CPU sets of %d workers", l->nproc);
	if (l->hw) {
		local = calloc((size_t)l->nproc, sizeof(*local));
		if (!local) {
			tt_err_errno(err, "allocating the NUMA sets of %d workers", l->nproc);
			goto out;
		}
		for (i = 0; i < l->nproc; i++) {
			struct tt_rank_policy pol;

			/* A GPU the model does not know (a UUID, an index past its GPUs): no locality. */
			if (tt_hw_rank_policy(l->hw, node_gpu_index(l, i), &pol, err) != 0 &&
			    tt_hw_rank_policy(l->hw, -1, &pol, err) != 0)
				goto out;
			local[i] = pol.cpus;
			snprintf(l->setup[i].nccl_ib_hca, sizeof(l->setup[i].nccl_ib_hca), "%s", pol.nccl_ib_hca);
			snprintf(l->setup[i].nccl_socket_ifname, sizeof(l->setup[i].nccl_socket_ifname), "%s",
				 pol.nccl_socket_ifname);
		}
	}
	if (tt_bind_workers(&l->allowed, local, l->nproc, cpus) != 0) {
		tt_err_set(err, "binding %d workers to the %d CPUs train-run may use", l->nproc, CPU_COUNT(&l->allowed));
		goto out;
	}
	for (i = 0; i < l->nproc; i++) {
		l->setup[i].cpus = cpus[i];
		if (!l->facts.omp_set)
			l->setup[i].env.omp_num_threads = (unsigned)CPU_COUNT(&cpus[i]);
	}
	rc = 0;
out:
	free(local);
	free(cpus);
	return rc;
}

/* Reads the node's hardware when a worker has a GPU to bind near, or the GPUs must be counted.
 * Without --topology a failed discovery only costs the locality: a warning, not an error. */
static int load_hardware(struct launch *l, tt_err *err)
{
	struct tt_hw_options o = { .input_xml = l->opts.topology };
	int count = count_node_gpus(l);
	size_t g;

	if (!l->opts.topology && l->facts.gpus.n == 0 && !count)
		return 0;
	if (tt_hw_discover(&o, &l->hw, err) != 0) {
		if (l->opts.topology)
			return -1;
		if (l->facts.gpus.n > 0)
			fprintf(stderr, "train-run: %s; binding the workers to an even share of CPUs instead\n", err->msg);
		l->hw = NULL;
		return 0;
	}
	if (!count || l->hw->ngpu == 0)
		return 0;
	l->facts.gpus.n = (size_t)l->hw->ngpu < TT_GPU_MAX ? (size_t)l->hw->ngpu : TT_GPU_MAX;
	for (g = 0; g < l->facts.gpus.n; g++)
		snprintf(l->facts.gpus.id[g], sizeof(l->facts.gpus.id[g]), "%zu", g);
	return 0;
}

static int prepare(struct launch *l, tt_err *err)
{
	const char *job = getenv("SLURM_JOB_ID");

	if (sched_getaffinity(0, sizeof(l->allowed), &l->allowed) != 0)
		return tt_err_errno(err, "reading the CPUs train-run may use (sched_getaffinity)");
	if (gethostname(l->host, sizeof(l->host) - 1) != 0)
		snprintf(l->host, sizeof(l->host), "?");
	l->slurm = !l->opts.standalone && job && *job;
	if ((l->slurm ? slurm_facts(l, err) : standalone_facts(l, err)) != 0)
		return -1;
	l->facts.cpus = (unsigned)CPU_COUNT(&l->allowed);
	l->facts.omp_set = getenv("OMP_NUM_THREADS") != NULL;
	if (load_hardware(l, err) != 0 || choose_nproc(l, err) != 0 || compute_envs(l, err) != 0 || bind_workers(l, err) != 0)
		return -1;
	return 0;
}

/* Finds what to exec before any worker starts: PROGRAM, or python3 for PROGRAM.py (torchrun's
 * rule). Returns 0, or the exit status (127 not found, 126 not executable) with err. */
static int resolve(struct launch *l, tt_err *err)
{
	const char *program = l->opts.argv[0];
	int i;

	if (!tt_run_wants_python(&l->opts)) {
		l->argv = l->opts.argv;
		return tt_resolve_program(program, getenv("PATH"), l->path, sizeof(l->path), err);
	}
	if (access(program, R_OK) != 0) {
		tt_err_errno(err, "PROGRAM '%s' (a Python script, run with %s) cannot be read", program, TT_PYTHON);
		return 127;
	}
	l->argv = calloc((size_t)l->opts.argc + 2, sizeof(*l->argv));
	if (!l->argv) {
		tt_err_errno(err, "allocating the command line of %s", program);
		return 126;
	}
	l->argv[0] = TT_PYTHON;
	for (i = 0; i < l->opts.argc; i++)
		l->argv[i + 1] = l->opts.argv[i];
	return tt_resolve_program(TT_PYTHON, getenv("PATH"), l->path, sizeof(l->path), err);
}

int main(int argc, char **argv)
{
	struct launch l;
	struct tt_supervisor s;
	tt_err err;
	int rc;

	memset(&l, 0, sizeof(l));
	memset(&s, 0, sizeof(s));
	/* Before anything else: a SIGUSR1 that arrives while train-run starts must not kill it. */
	s.sigfd = tt_sig_open(&s.oldmask, &err);
	if (s.sigfd < 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		return 1;
	}
	if (tt_run_parse_args(&l.opts, argc, argv, &err) != 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		return TT_EXIT_USAGE;
	}
	if (l.opts.help) {
		fputs(tt_run_usage, stdout);
		return 0;
	}
	if (l.opts.version) {
		printf("train-run (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
		return 0;
	}
	rc = resolve(&l, &err);
	if (rc != 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		goto out;
	}
	if (prepare(&l, &err) != 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		rc = 1;
		goto out;
	}
	s.host = l.host;
	s.grace_s = l.opts.grace_s;
	s.tag_output = l.opts.tag_output;
	s.rank0_only = l.opts.rank0_only;
	s.user_signals_to_group = !l.opts.signal_worker_only;
	s.path = l.path;
	s.argv = l.argv;
	s.nworkers = l.nproc;
	s.max_restarts = l.opts.max_restarts;
	s.setup = l.setup;
	rc = tt_supervise(&s, &err);
	if (rc < 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		rc = 1;
	}
out:
	close(s.sigfd);
	free(l.setup);
	if (l.hw)
		tt_hw_free(l.hw);
	if (l.argv != l.opts.argv)
		free(l.argv);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* train_run.c — main() of train-run: parse the command line, gather the step's facts (from
 * Slurm's environment through the layout module, or standalone like torchrun), learn every
 * node's worker count (census.h; a node that refuses tells the others there, and node 0 judges
 * every node's health check, preflight.h), compute each
 * worker's env contract and CPUs, then hand the
 * group to the supervisor. Only this file prints errors; every rule it applies lives in the
 * module named at the call. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "census.h"
#include "ctl.h"
#include "cpu_bind.h"
#include "gres.h"
#include "hostlist.h"
#include "hw_policy.h"
#include "layout.h"
#include "options.h"
#include "preflight.h"
#include "proctree.h"
#include "rt_token.h"
#include "relay.h"
#include "signals.h"
#include "spawn.h"
#include "supervise.h"
#include "tt_file.h"
#include "tt_io.h"
#include "tt_parse.h"
#include "tt_signal.h"

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
	uint32_t *per_node;		/* every node's worker count (census.h), NULL: all nproc */
	uint32_t *world;		/* the worker counts by NODE_RANK of the program's world:
					 * facts.nactive of them (a shrink removes one, ctl.h); NULL:
					 * all nproc */
	int relay_signal;		/* the checkpoint signal a relay above delivers, or 0 */
	struct tt_group_env group;
	char run_id[64];
	struct tt_ctl ctl;		/* the control plane (ctl.h); ctl.peers NULL: none */
	struct tt_census_swap *swap;	/* [nnodes]: the nodes the census set aside, each replaced by
					 * a spare or a spare itself (census.h); NULL: none */
	int excluded;			/* this node is one set aside: it stands aside */
	char key[RT_KEY_TEXT];		/* the job key, for the census and the control plane */
	char chan_id[TT_NC_ID_MAX];	/* the launch id of both */
	char log_dir[PATH_MAX];		/* this run's --redirects/--tee directory, "" when none */
	char host[256];
};

/* Standalone facts: nnodes nodes named by index, this one node_rank; GPUs from the usual
 * variables. The rendezvous point is resolved later (resolve_rendezvous). */
static int standalone_facts(struct launch *l, tt_err *err)
{
	struct tt_step_facts *f = &l->facts;
	int nnodes = l->opts.nnodes_max > 0 ? l->opts.nnodes_max : 1;
	int node = l->opts.node_rank >= 0 ? l->opts.node_rank : 0;

	if (l->opts.nnodes_min != l->opts.nnodes_max)
		return tt_err_set(err, "--nnodes %d:%d without Slurm: train-run starts every node's workers "
				  "at once and cannot wait for nodes to join; give --nnodes N",
				  l->opts.nnodes_min, l->opts.nnodes_max);
	if (node >= nnodes)
		return tt_err_set(err, "--node-rank %d: must be below --nnodes %d", node, nnodes);
	if (nnodes > 1 && !l->opts.master_addr && !l->opts.rdzv_endpoint)
		return tt_err_set(err, "--nnodes %d without Slurm: pass --master-addr or --rdzv-endpoint "
				  "(the host of node rank 0)", nnodes);
	memset(f, 0, sizeof(*f));
	if (nnodes == 1)
		snprintf(f->nodelist, sizeof(f->nodelist), "node0");
	else
		snprintf(f->nodelist, sizeof(f->nodelist), "node[0-%d]", nnodes - 1);
	f->node_index = (uint32_t)node;
	f->ports.lo = TT_PORT_LO_DEFAULT;
	f->ports.hi = TT_PORT_HI_DEFAULT;
	f->omp_set = tt_env_user_set(tt_env_process, NULL, "OMP_NUM_THREADS");
	return tt_gres_node_gpus(tt_env_process, NULL, &f->gpus, f->gpus_checked, sizeof(f->gpus_checked), err);
}

static int slurm_facts(struct launch *l, tt_err *err)
{
	if (tt_step_facts_from_env(&l->facts, tt_env_process, NULL, err) != 0)
		return tt_err_wrap(err, "reading Slurm's environment (use --standalone to ignore it)");
	return 0;
}

/* What this node of a Slurm step refuses (the other nodes learn it through the census). */
static int slurm_checks(const struct launch *l, tt_err *err)
{
	uint32_t on_node, nnodes, ntasks;

	if (!l->slurm)
		return 0;
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

/* --nnodes under Slurm: the step's node count must be in the range (torchrun's MIN:MAX). */
static int check_nnodes(const struct launch *l, tt_err *err)
{
	size_t nnodes;

	if (!l->slurm || l->opts.nnodes_max < 0)
		return 0;
	if (tt_hostlist_count(l->facts.nodelist, &nnodes, err) != 0)
		return -1;
	if (nnodes < (size_t)l->opts.nnodes_min || nnodes > (size_t)l->opts.nnodes_max) {
		if (l->opts.nnodes_min == l->opts.nnodes_max)
			return tt_err_set(err, "--nnodes %d, but the step has %zu nodes (%s); drop the option "
					  "under Slurm", l->opts.nnodes_max, nnodes, l->facts.nodelist);
		return tt_err_set(err, "--nnodes %d:%d, but the step has %zu nodes (%s)", l->opts.nnodes_min,
				  l->opts.nnodes_max, nnodes, l->facts.nodelist);
	}
	return 0;
}

/* The checkpoint signal of the plugin's relay when that relay is one of train-run's ancestors
 * (it then delivers that signal to every process of the task that handles it, the workers
 * included), else 0. A TRAIN_TOPO_RELAY_PID inherited from another step, e.g. the batch step,
 * or under --train-topo=off, names a process that is not above train-run and is ignored; so is
 * a relay above a container runtime that passes the signal on to train-run itself (Apptainer, an
 * OCI container in the relay's PID namespace), since the relay then leaves the workers to it. */
static int relay_signal_above(void)
{
	const char *pid = getenv(TT_ENV_RELAY_PID), *name = getenv(TT_ENV_RELAY_SIGNAL);
	const char *ns = getenv(TT_ENV_RELAY_MNT_NS);
	long long relay, mnt_ns = 0;
	int sig;

	if (!pid || !name || tt_parse_int(pid, 2, INT32_MAX, TT_ENV_RELAY_PID, &relay, NULL) != 0)
		return 0;
	sig = tt_signal_by_name(name);
	if (sig < 0)
		return 0;
	/* A malformed namespace id counts as none: the ancestor check alone decides. */
	if (ns && tt_parse_int(ns, 1, LLONG_MAX, TT_ENV_RELAY_MNT_NS, &mnt_ns, NULL) != 0)
		mnt_ns = 0;
	return tt_relay_reaches("/proc", getpid(), (pid_t)relay, sig, (unsigned long long)mnt_ns) ? sig : 0;
}

/* Outside Slurm with CUDA_VISIBLE_DEVICES unset, the GPUs are the node's own (torchrun asks
 * CUDA the same question); a worker count that does not depend on GPUs needs no look. */
static int count_node_gpus(const struct launch *l)
{
	return !l->slurm && l->facts.gpus.n == 0 && !getenv(TT_ENV_CUDA_VISIBLE_DEVICES) &&
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

/* name from the environment under Slurm when the user or the plugin set it for this step, not
 * as a default for an enclosing one; else NULL. */
static const char *slurm_env(const struct launch *l, const char *name)
{
	return l->slurm && tt_env_user_set(tt_env_process, NULL, name) ? getenv(name) : NULL;
}

/* The rendezvous point of this launch from every source (rendezvous.h) into the facts, which
 * every worker's contract then takes; and the launch's node count. */
static int resolve_rendezvous(struct launch *l, uint32_t *nnodes, tt_err *err)
{
	char first[TT_HOSTNAME_LEN];
	size_t n;
	struct tt_rdzv_sources s = {
		.master_addr = l->opts.master_addr, .master_port = l->opts.master_port,
		.endpoint_host = l->opts.rdzv_endpoint ? l->opts.endpoint_host : NULL,
		.endpoint_port = l->opts.endpoint_port,
		/* Under Slurm these are the plugin's (or the user's for the step); outside it a
		 * stray MASTER_* of the shell is not this launch's rendezvous, and neither is the
		 * job's that the batch script got (listed in TRAIN_TOPO_SET: tt_env_user_set). */
		.env_addr = slurm_env(l, TT_ENV_MASTER_ADDR),
		.env_port = slurm_env(l, TT_ENV_MASTER_PORT),
		.local_addr = l->opts.local_addr,
		.slurm = l->slurm, .step_host = first, .resv_ports = l->facts.resv_ports,
		.job_id = l->facts.job_id, .step_id = l->facts.step_id, .ports = l->facts.ports,
	};

	if (tt_hostlist_first(l->facts.nodelist, first, sizeof(first), &n, err) != 0)
		return tt_err_wrap(err, "step nodelist");
	s.nnodes = (uint32_t)n;
	*nnodes = (uint32_t)n;
	return tt_rendezvous_resolve(&s, &l->facts.rdzv, err);
}

/* This node's name for the other nodes' lines and a lost node's sbatch --exclude: Slurm's name
 * of the node under Slurm, else the host name. */
static const char *node_name(const struct launch *l)
{
	const char *name = l->slurm ? getenv("SLURMD_NODENAME") : NULL;

	return name && *name ? name : l->host;
}

static void census_notice(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "train-run: %s\n", line);
}

/* This node's health check (preflight.h) into pf: its GPUs' device files, and on a launch of
 * more than one node (where there is a median to compare with) its memory bandwidth; the census
 * adds the network probe's numbers. */
static void preflight(const struct launch *l, uint32_t nnodes, struct tt_preflight *pf)
{
	tt_err why;

	memset(pf, 0, sizeof(*pf));
	tt_preflight_boot_id(pf);
	tt_preflight_devices(&l->facts.gpus, l->slurm, pf);
	if (nnodes > 1 && tt_preflight_memory(pf, &why) != 0)
		fprintf(stderr, "train-run: %s\n", why.msg);
}

/* Ctrl-C, scancel and a hang-up end a wait on node 0 (they are blocked for the supervisor's
 * signalfd, so only pending); others, like the SIGCONT srun may send, do not. */
static void stop_signals(sigset_t *stop)
{
	sigemptyset(stop);
	sigaddset(stop, SIGINT);
	sigaddset(stop, SIGTERM);
	sigaddset(stop, SIGHUP);
}

/* The checks before each restart round (supervise.h's check): the devices and the memory, and on
 * every node but node 0 the network probe to node 0's control port (ctl.h), bounded: one that
 * fails leaves the network unmeasured, as at the start. */
static void restart_preflight(void *arg, struct tt_preflight *pf)
{
	const struct launch *l = arg;
	struct tt_probe_result r;
	sigset_t stop;
	tt_err why;

	preflight(l, l->ctl.nnodes, pf);
	if (l->ctl.node == 0)
		return;
	stop_signals(&stop);
	if (tt_probe_run(l->ctl.server, l->ctl.port, l->key, l->chan_id, l->ctl.node, &stop,
			 tt_now_ms() + TT_CTL_PROBE_WAIT_MS, &r, &why) == 0) {
		pf->net_mbps = r.net_mbps;
		pf->rtt_us = r.rtt_us;
	} else {
		fprintf(stderr, "train-run: %s; the network of this node is not judged before the "
			"restart\n", why.msg);
	}
}

/* Under TRAINRT_PREFLIGHT_VERBOSE=1, what this node's health check found and cost. */
static void preflight_said(const struct launch *l, const struct tt_preflight *pf, int64_t local_us,
			   int64_t total_us)
{
	const char *verbose = getenv("TRAINRT_PREFLIGHT_VERBOSE");

	if (!verbose || strcmp(verbose, "1"))
		return;
	fprintf(stderr, "train-run: preflight of node %u (%s): memory %u MB/s, network to node 0 "
		"%u MB/s, round trip %u us, GPUs %s; %.1f ms here, %.1f ms with the probe and the "
		"census\n", l->facts.node_index, l->host, pf->mem_mbps, pf->net_mbps, pf->rtt_us,
		pf->gpu_fail[0] ? pf->gpu_fail : "opened (or none checked)", (double)local_us / 1000,
		(double)total_us / 1000);
}

/* Every node's worker count through the census, which also tells every node when one refuses
 * (refusal: this node's reason, or NULL) and judges every node's health check (--preflight).
 * It runs at node 0's host on the rendezvous port (rendezvous.h), on every launch of more than
 * one node: even with one --nproc-per-node everywhere, a node that refuses must stop the
 * others. One node judges its own health check alone. */
static int learn_node_counts(struct launch *l, uint32_t nnodes, const char *refusal, tt_err *err)
{
	const struct tt_rendezvous *r = &l->facts.rdzv;
	sigset_t stop;
	uint16_t ctl_port = 0;
	struct tt_census c = {
		.server = r->node0, .port = r->port, .nnodes = nnodes, .key = l->key,
		.node = l->facts.node_index, .count = (uint32_t)l->nproc, .host = node_name(l),
		.refusal = refusal, .timeout_s = refusal ? TT_CENSUS_REFUSE_S : TT_CENSUS_TIMEOUT_S,
		.notice_s = TT_CENSUS_NOTICE_S,
		.stop = &stop, .ctl_port = refusal ? NULL : &ctl_port,
		.notice = census_notice, .id = l->chan_id,
		.min_fraction = l->opts.preflight_min_fraction,
		.nspares = (uint32_t)l->opts.spares,
	};
	struct tt_ctl *ctl = &l->ctl;
	struct tt_preflight pf;
	int64_t start = tt_now_us(), local_us = 0;
	int rc;

	if (!refusal && l->opts.preflight) {
		preflight(l, nnodes, &pf);
		c.preflight = &pf;
		local_us = tt_now_us() - start;
	}
	if (nnodes <= 1) {
		char host[1][TT_CENSUS_HOST];

		snprintf(host[0], sizeof(host[0]), "%.*s", TT_CENSUS_HOST - 1, l->host);
		return c.preflight ? tt_census_preflight(&pf, host, &c.count, 1, 0, c.min_fraction, NULL,
							 err) : 0;
	}
	stop_signals(&stop);
	/* The node channel proves the job key libtrainrt's ranks prove (TRAINRT_TOKEN, the token
	 * file; SLURM_JOB_ID and SLURM_STEP_ID): a local user without it can neither count nor
	 * fail this launch. */
	if (rt_token_load(l->key, err) != 0)
		return tt_err_wrap(err, "the job key for the node count exchange");
	/* The run id and the port: the same on every node of this launch, different for the
	 * job's other steps. */
	snprintf(l->chan_id, sizeof(l->chan_id), "%.*s.%u", TT_NC_ID_MAX - 8, l->run_id, r->port);
	l->per_node = calloc(nnodes, sizeof(*l->per_node));
	l->swap = calloc(nnodes, sizeof(*l->swap));
	if (!l->per_node || !l->swap)
		return tt_err_errno(err, "allocating the worker counts of %u nodes", nnodes);
	c.swap = refusal ? NULL : l->swap;
	/* The control plane (ctl.h): node 0 listens before the census announces its port. The
	 * host is Slurm's name of the node, for a lost node's sbatch --exclude. */
	*ctl = (struct tt_ctl){ .key = l->key, .id = l->chan_id, .server = r->node0,
				.host = node_name(l),
				.nnodes = nnodes, .node = l->facts.node_index, .stop = &stop,
				.nspares = (uint32_t)l->opts.spares, .counts = l->per_node,
				.min_nodes = l->opts.nnodes_max > 0 && l->opts.nnodes_min < l->opts.nnodes_max ?
					     (uint32_t)l->opts.nnodes_min : 0,
				.health = l->opts.preflight, .min_fraction = l->opts.preflight_min_fraction,
				.health_wait_ms = (l->opts.grace_s + TT_CTL_LOST_MS / 1000) * 1000L,
				.lfd = -1, .timerfd = -1 };
	if (!refusal && ctl->node == 0 && tt_ctl_listen(ctl, err) != 0)
		return -1;
	ctl_port = ctl->port;
	rc = tt_census_run(&c, l->per_node, err);
	if (c.preflight)
		preflight_said(l, &pf, local_us, tt_now_us() - start);
	if (rc == 0 && !refusal) {
		ctl->swaps = l->swap;
		rc = tt_ctl_connect(ctl, ctl_port, (uint32_t)l->opts.max_restarts, err);
		if (rc != 0)
			tt_ctl_close(ctl);
	} else {
		tt_ctl_close(ctl);
	}
	return rc;
}

/* Whether this node is a spare standing by (--spares: the launch's last nodes): its workers'
 * contracts wait for the NODE_RANK it takes (take_role); or one the census replaced, which
 * stands aside the same way and is never given one. */
static int standing_by(const struct launch *l)
{
	return l->excluded || (l->facts.nactive && l->facts.node_index >= l->facts.nactive);
}

/* The census set aside the nodes that failed their preflight (census.h): every node says so,
 * one line each; a spare takes a failing node's NODE_RANK from the start (as take_role later),
 * a failing node or spare stands aside. */
static void apply_swap(struct launch *l)
{
	uint32_t me = l->facts.node_index;

	for (const struct tt_census_swap *w = l->swap; w && w->node; w++) {
		fprintf(stderr, "train-run: host %s: %s\n", l->host, w->line);
		if (me == w->node) {
			l->excluded = 1;
			fprintf(stderr, "train-run: host %s: node %u is excluded (it failed preflight): it "
				"starts no workers and stands aside until the job ends, then exits 0\n",
				l->host, me);
		}
		if (w->spare && me == w->spare)
			l->facts.node_index = w->node;
	}
}

/* The program's world at the start: the census's counts of the active nodes, NODE_RANK = node
 * index. */
static int alloc_world(struct launch *l, uint32_t nnodes, tt_err *err)
{
	if (!l->per_node)
		return 0;
	l->world = calloc(nnodes, sizeof(*l->world));
	if (!l->world)
		return tt_err_errno(err, "allocating the world of %u nodes", nnodes);
	memcpy(l->world, l->per_node, nnodes * sizeof(*l->world));
	return 0;
}

static int alloc_setup(struct launch *l, tt_err *err)
{
	l->setup = calloc((size_t)l->nproc, sizeof(*l->setup));
	if (!l->setup)
		return tt_err_errno(err, "allocating the setup of %d workers", l->nproc);
	return 0;
}

/* Each worker's contract, computed once (a spare's: when it takes a NODE_RANK), at the
 * rendezvous point resolved first (the census meets there before the contracts can be known). */
static int compute_envs(struct launch *l, tt_err *err)
{
	int i;
	size_t w;

	for (i = 0; i < l->nproc; i++)
		if (tt_layout_compute_worker(&l->facts, (uint32_t)l->nproc, l->world, (uint32_t)i,
					     &l->setup[i].env, err) != 0)
			return -1;
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

/* Each worker's CPUs (cpu_bind.h: its GPU's NUMA-local ones, shared with the workers of the same
 * NUMA node), NCCL_IB_HCA and NCCL_SOCKET_IFNAME from the node's hardware model; without a model
 * the allowed CPUs are split evenly. OMP_NUM_THREADS and TRAIN_CPU_LIST follow the binding. */
static int bind_workers(struct launch *l, tt_err *err)
{
	cpu_set_t *numa = NULL, *cpus = calloc((size_t)l->nproc, sizeof(*cpus));
	int i, g, rc = -1, ngpu = l->hw ? l->hw->ngpu : 0;

	if (!cpus)
		return tt_err_errno(err, "allocating the CPU sets of %d workers", l->nproc);
	if (ngpu > 0) {
		numa = calloc((size_t)ngpu, sizeof(*numa));
		if (!numa) {
			tt_err_errno(err, "allocating the NUMA sets of %d GPUs", ngpu);
			goto out;
		}
		for (g = 0; g < ngpu; g++) {
			struct tt_rank_policy pol;

			if (tt_hw_rank_policy(l->hw, g, &pol, err) != 0)
				goto out;
			numa[g] = pol.cpus;
		}
	}
	for (i = 0; l->hw && i < l->nproc; i++) {
		struct tt_rank_policy pol;

		/* A GPU the model does not know (a UUID, an index past its GPUs): no locality. */
		if (tt_hw_rank_policy(l->hw, node_gpu_index(l, i), &pol, err) != 0 &&
		    tt_hw_rank_policy(l->hw, -1, &pol, err) != 0)
			goto out;
		snprintf(l->setup[i].nccl_ib_hca, sizeof(l->setup[i].nccl_ib_hca), "%s", pol.nccl_ib_hca);
		snprintf(l->setup[i].nccl_socket_ifname, sizeof(l->setup[i].nccl_socket_ifname), "%s",
			 pol.nccl_socket_ifname);
	}
	if (tt_bind_node_processes(&l->allowed, &l->facts.gpus, l->slurm ? tt_env_process : tt_env_none,
				   NULL, numa, ngpu, (uint32_t)l->nproc, cpus) != 0) {
		tt_err_set(err, "binding %d workers to the %d CPUs train-run may use", l->nproc, CPU_COUNT(&l->allowed));
		goto out;
	}
	for (i = 0; i < l->nproc; i++) {
		struct tt_task_env *e = &l->setup[i].env;

		l->setup[i].cpus = cpus[i];
		if (!l->facts.omp_set)
			e->omp_num_threads = (unsigned)CPU_COUNT(&cpus[i]);
		if (tt_cpuset_to_list(&cpus[i], e->cpu_list, sizeof(e->cpu_list)) != 0) {
			tt_err_set(err, "the CPU list of rank %u is longer than %zu characters", e->rank,
				   sizeof(e->cpu_list) - 1);
			goto out;
		}
	}
	rc = 0;
out:
	free(numa);
	free(cpus);
	return rc;
}

/* The hwloc XML to read instead of discovering the node: --topology, else the one the plugin
 * read for this node (TRAIN_TOPO_HWLOC_XML), so workers get what the plugin gives tasks. */
static const char *topology_source(const struct launch *l, const char **which)
{
	const char *env = l->slurm ? getenv(TT_ENV_HWLOC_XML) : NULL;

	*which = "--topology";
	if (l->opts.topology)
		return l->opts.topology;
	*which = TT_ENV_HWLOC_XML;
	return env && *env ? env : NULL;
}

/* Reads the node's hardware when a worker has a GPU to bind near, or the GPUs must be counted.
 * Without an XML to read a failed discovery only costs the locality: a warning, not an error. */
static int load_hardware(struct launch *l, tt_err *err)
{
	const char *which, *xml = topology_source(l, &which);
	struct tt_hw_options o = { .input_xml = xml };
	int count = count_node_gpus(l);
	size_t g;

	if (!xml && l->facts.gpus.n == 0 && !count)
		return 0;
	if (tt_hw_discover(&o, &l->hw, err) != 0) {
		if (xml)
			return tt_err_wrap(err, "%s %s", which, xml);
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

/* What every worker shares: torchrun's run id and role, and which defaults are the user's. The
 * plugin's NCCL_TOPO_FILE (one file per node and step) stays every worker's default. */
static int group_env(struct launch *l, tt_err *err)
{
	struct tt_group_env *g = &l->group;

	g->role = l->opts.role;
	g->max_restarts = l->opts.max_restarts;
	g->user_nccl_ib_hca = tt_env_user_set(tt_env_process, NULL, "NCCL_IB_HCA");
	g->user_nccl_socket_ifname = tt_env_user_set(tt_env_process, NULL, "NCCL_SOCKET_IFNAME");
	if (getenv("NCCL_TOPO_FILE") && !tt_env_user_set(tt_env_process, NULL, "NCCL_TOPO_FILE") &&
	    tt_env_set_list_add(g->topo_set, sizeof(g->topo_set), "NCCL_TOPO_FILE") != 0)
		return tt_err_set(err, "internal: TRAIN_TOPO_SET does not fit");
	return 0;
}

/* The run id: --rdzv-id, else the Slurm job id (every node of the job agrees on it), else
 * torchrun's default "none". */
static void choose_run_id(struct launch *l)
{
	const char *job = l->slurm ? getenv("SLURM_JOB_ID") : NULL;

	snprintf(l->run_id, sizeof(l->run_id), "%s",
		 l->opts.run_id ? l->opts.run_id : job && *job ? job : "none");
	l->group.run_id = l->run_id;
}

/* --redirects/--tee: this run's log directory, LOG_DIR/RUNID_XXXXXX (a new one each run, as
 * torchrun makes), or ${TMPDIR:-/tmp}/train-run_XXXXXX without --log-dir. */
static int make_log_dir(struct launch *l, tt_err *err)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	if (!(l->opts.redirects && strcmp(l->opts.redirects, "0")) && !(l->opts.tee && strcmp(l->opts.tee, "0")))
		return 0;
	if (l->opts.log_dir) {
		if (mkdir(l->opts.log_dir, 0777) != 0 && errno != EEXIST)
			return tt_err_errno(err, "--log-dir %s: cannot create it", l->opts.log_dir);
		n = snprintf(l->log_dir, sizeof(l->log_dir), "%s/%s_XXXXXX", l->opts.log_dir, l->run_id);
	} else {
		n = snprintf(l->log_dir, sizeof(l->log_dir), "%s/train-run_XXXXXX", tmp && *tmp ? tmp : "/tmp");
	}
	if (n < 0 || (size_t)n >= sizeof(l->log_dir))
		return tt_err_set(err, "--log-dir %s: path too long", l->opts.log_dir);
	if (!mkdtemp(l->log_dir))
		return tt_err_errno(err, "creating the worker log directory %s", l->log_dir);
	fprintf(stderr, "train-run: worker logs in %s\n", l->log_dir);
	return 0;
}

/* What this node refuses once the rendezvous is known: told to the others by the census. */
static int node_checks(struct launch *l, uint32_t nnodes, tt_err *err)
{
	if (slurm_checks(l, err) != 0 || check_nnodes(l, err) != 0 || load_hardware(l, err) != 0 ||
	    choose_nproc(l, err) != 0 || tt_run_check_local_ranks(&l->opts, l->nproc, err) != 0)
		return -1;
	if (tt_run_check_spares(l->opts.spares, (int)nnodes, err) != 0)
		return -1;
	if (l->opts.local_addr && nnodes > 1)
		return tt_err_set(err, "--local-addr %s on %u nodes: train-run has no rendezvous through which "
				  "the other nodes could learn it; pass --master-addr or --rdzv-endpoint",
				  l->opts.local_addr, nnodes);
	return 0;
}

/* Everything before the supervisor. refused: this node's earlier refusal (its program cannot be
 * run), or NULL. A refusal is printed here at once, before the census tells the other nodes
 * (which can take until they arrive): then -2, printed; -1 with err otherwise. */
static int prepare(struct launch *l, const tt_err *refused, tt_err *err)
{
	const char *job = getenv("SLURM_JOB_ID");
	uint32_t nnodes = 1;
	tt_err why;

	if (sched_getaffinity(0, sizeof(l->allowed), &l->allowed) != 0)
		return tt_err_errno(err, "reading the CPUs train-run may use (sched_getaffinity)");
	if (gethostname(l->host, sizeof(l->host) - 1) != 0)
		snprintf(l->host, sizeof(l->host), "?");
	l->slurm = !l->opts.standalone && job && *job;
	if ((l->slurm ? slurm_facts(l, err) : standalone_facts(l, err)) != 0)
		return refused ? (*err = *refused, -1) : -1;
	l->facts.cpus = (unsigned)CPU_COUNT(&l->allowed);
	l->relay_signal = relay_signal_above();
	choose_run_id(l);
	if (resolve_rendezvous(l, &nnodes, err) != 0)
		return refused ? (*err = *refused, -1) : -1;
	if (refused)
		why = *refused;
	if (refused || node_checks(l, nnodes, &why) != 0) {
		fprintf(stderr, "train-run: %s\n", why.msg);
		if (nnodes > 1 && learn_node_counts(l, nnodes, why.msg, err) != 0 &&
		    strstr(err->msg, "refused: ") == NULL)
			fprintf(stderr, "train-run: could not tell node 0 why this node refuses: %s\n",
				err->msg);
		return -2;
	}
	l->facts.nactive = nnodes - (uint32_t)l->opts.spares;
	if (learn_node_counts(l, nnodes, NULL, err) != 0)
		return -1;
	apply_swap(l);
	if (alloc_world(l, nnodes, err) != 0 || alloc_setup(l, err) != 0 ||
	    (!standing_by(l) && (compute_envs(l, err) != 0 || bind_workers(l, err) != 0)) ||
	    group_env(l, err) != 0 || make_log_dir(l, err) != 0)
		return -1;
	if (standing_by(l) && !l->excluded)
		fprintf(stderr, "train-run: host %s: spare node %u stands by (%d worker%s when it takes a "
			"lost node's rank)\n", l->host, l->facts.node_index, l->nproc, l->nproc == 1 ? "" : "s");
	return 0;
}

/* This node takes NODE_RANK node_rank of the current world (supervise.h: a spare, or a shrink's
 * renumbering): the contracts an original node of that rank gets, with this node's own GPUs and
 * CPUs. */
static int take_role(void *arg, uint32_t node_rank, tt_err *err)
{
	struct launch *l = arg;

	l->facts.node_index = node_rank;
	return compute_envs(l, err) != 0 || bind_workers(l, err) != 0 ? -1 : 0;
}

/* A shrink (supervise.h): NODE_RANK lost leaves the world, nnodes nodes remain. */
static int shrink(void *arg, uint32_t lost, uint32_t nnodes, uint32_t *world, tt_err *err)
{
	struct launch *l = arg;
	uint32_t n = l->facts.nactive;

	if (!l->world || lost >= n || nnodes + 1 != n)
		return tt_err_set(err, "node 0's %u nodes without node rank %u do not fit this node's "
				  "world of %u", nnodes, lost, n);
	memmove(&l->world[lost], &l->world[lost + 1], (n - lost - 1) * sizeof(*l->world));
	l->facts.nactive = nnodes;
	*world = 0;
	for (uint32_t k = 0; k < nnodes; k++)
		*world += l->world[k];
	return 0;
}

/* Finds what to exec before any worker starts: PROGRAM, or python3 for a Python program
 * (torchrun's rule: PROGRAM.py, --run-path; -m runs python3 -m PROGRAM). Returns 0, or the
 * exit status (127 not found, 126 not executable) with err. */
static int resolve(struct launch *l, tt_err *err)
{
	const char *program = l->opts.argv[0];
	int i, k = 0;

	if (!tt_run_wants_python(&l->opts)) {
		l->argv = l->opts.argv;
		return tt_resolve_program(program, getenv("PATH"), l->path, sizeof(l->path), err);
	}
	if (!l->opts.module && access(program, R_OK) != 0) {
		tt_err_errno(err, "PROGRAM '%s' (a Python script, run with %s) cannot be read", program, TT_PYTHON);
		return 127;
	}
	l->argv = calloc((size_t)l->opts.argc + 3, sizeof(*l->argv));
	if (!l->argv) {
		tt_err_errno(err, "allocating the command line of %s", program);
		return 126;
	}
	l->argv[k++] = TT_PYTHON;
	if (l->opts.module)
		l->argv[k++] = "-m";
	for (i = 0; i < l->opts.argc; i++)
		l->argv[k++] = l->opts.argv[i];
	return tt_resolve_program(TT_PYTHON, getenv("PATH"), l->path, sizeof(l->path), err);
}

/* TRAIN_TOPO_OUTCOME_FILE (ctl.h): node 0's exit status, the launch's outcome. Another node
 * writes nothing: its status is its own, and node 0's already counts its failures. */
static void note_outcome(const struct launch *l, int rc)
{
	const char *path = getenv(TT_ENV_OUTCOME_FILE);
	char text[16];
	tt_err err;
	int node0 = l->ctl.peers ? l->ctl.node == 0 : l->facts.node_index == 0;

	if (!path || !*path || !node0)
		return;
	snprintf(text, sizeof(text), "%d\n", rc);
	if (tt_file_write_atomic(path, text, strlen(text), &err) != 0)
		fprintf(stderr, "train-run: cannot write the launch's outcome to %s (%s): %s\n", path,
			TT_ENV_OUTCOME_FILE, err.msg);
}

int main(int argc, char **argv)
{
	static struct launch l;	/* static: its facts hold a nodelist and tasks per node (TT_NODELIST_LEN each) */
	struct tt_supervisor s;
	tt_err err, refused;
	int rc, rc2;

	memset(&l, 0, sizeof(l));
	err.msg[0] = '\0';
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
	/* A program that cannot run is this node's refusal: the other nodes hear of it. */
	rc = resolve(&l, &err);
	refused = err;
	rc2 = prepare(&l, rc != 0 ? &refused : NULL, &err);
	if (rc2 != 0) {
		if (rc2 == -1)
			fprintf(stderr, "train-run: %s\n", err.msg);
		rc = rc != 0 ? rc : 1;
		goto out;
	}
	s.host = l.host;
	s.grace_s = l.opts.grace_s;
	s.tag_output = l.opts.tag_output;
	s.rank0_only = l.opts.rank0_only;
	s.user_signals_to_group = !l.opts.signal_worker_only;
	s.relay_signal = l.relay_signal;
	s.console_filter = l.opts.local_ranks_filter;
	s.redirects = l.opts.redirects;
	s.tee = l.opts.tee;
	s.log_dir = l.log_dir;
	s.group = &l.group;
	s.path = l.path;
	s.argv = l.argv;
	s.nworkers = l.nproc;
	s.max_restarts = l.opts.max_restarts;
	s.hang = &l.opts.hang;
	s.setup = l.setup;
	s.ctl = l.ctl.peers ? &l.ctl : NULL;
	s.standby = standing_by(&l);
	s.take_role = take_role;
	s.shrink = shrink;
	s.role_arg = &l;
	s.check = restart_preflight;
	s.report_file = l.opts.report;
	s.start_aside = l.swap;
	s.exclude_file = getenv(TT_ENV_EXCLUDE_FILE) && *getenv(TT_ENV_EXCLUDE_FILE) ? getenv(TT_ENV_EXCLUDE_FILE) : NULL;
	rc = tt_supervise(&s, &err);
	if (rc < 0) {
		fprintf(stderr, "train-run: %s\n", err.msg);
		rc = 1;
	}
out:
	note_outcome(&l, rc);
	if (l.ctl.peers)
		tt_ctl_close(&l.ctl);
	memset(l.key, 0, sizeof(l.key));
	close(s.sigfd);
	free(l.setup);
	free(l.per_node);
	free(l.swap);
	free(l.world);
	if (l.hw)
		tt_hw_free(l.hw);
	if (l.argv != l.opts.argv)
		free(l.argv);
	return rc;
}

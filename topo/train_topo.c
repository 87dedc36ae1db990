/* SPDX-License-Identifier: MIT */
/* train_topo.c — the `train-topo` command: shows this node's hardware model (or one read from an
 * hwloc XML export) as a topo -m style view, NCCL topology XML, JSON, or the per-rank environment;
 * `probe` is what the SPANK plugin runs on a compute node (the file and node_policy.h's report).
 * All work is in libtthw; this file only parses arguments and decides where output goes. */
#include "config.h"
#include "hw_model.h"
#include "hw_nccl_xml.h"
#include "hw_policy.h"
#include "hw_report.h"
#include "node_policy.h"
#include "tt_file.h"
#include "tt_parse.h"
#include "tt_strbuf.h"

#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
	"usage: train-topo show|nccl-xml|json|env|probe [options]\n"
	"  show                 GPUs, RDMA NICs, NUMA nodes and the GPU/NIC relation matrix\n"
	"  nccl-xml             NCCL topology file (for NCCL_TOPO_FILE)\n"
	"  json                 the whole hardware model as JSON\n"
	"  env                  NCCL_IB_HCA, NCCL_SOCKET_IFNAME and CPU binding for one local rank\n"
	"  probe -o FILE        for the SPANK plugin: the NCCL topology file into FILE, and the node's\n"
	"                       policy as a report on standard output (errors too; see train-topo(1))\n"
	"options:\n"
	"  --input FILE         read an hwloc 2.x XML export instead of this machine\n"
	"  --sysfs-root DIR     read sysfs facts from DIR instead of /sys\n"
	"  --local-rank N       (env) the rank's GPU is GPU N in PCI bus order\n"
	"                       (default: $SLURM_LOCALID inside a Slurm step, else 0)\n"
	"  --virtual-switches   infer PCIe switches a cloud VM hides (pairs GPUs with their NIC);\n"
	"                       refused on bare metal\n"
	"  -o, --output FILE    write to FILE atomically instead of standard output ('-': standard\n"
	"                       output); FILE must be a regular file or not exist\n"
	"  -h, --help           this text\n"
	"  -V, --version        version\n"
	"exit status: 0 done, 1 error, 2 usage error, 3 (nccl-xml, probe) no NVIDIA GPU and no RDMA\n"
	"NIC: no file written, leave NCCL_TOPO_FILE unset\n";

/* Exit status of nccl-xml and probe on a machine with nothing for the file (see train-topo(1)). */
#define TT_TOPO_EXIT_NOTHING 3

struct cli {
	const char *command;
	const char *output;     /* NULL or "-": standard output */
	int local_rank;
	const char *rank_from;  /* "--local-rank" or "SLURM_LOCALID", for messages */
	struct tt_hw_options hw;
};

static int parse_rank(const char *text, const char *what, int *rank)
{
	long long v;

	if (tt_parse_int(text, 0, 4095, what, &v, NULL) != 0) {
		fprintf(stderr, "train-topo: %s '%s' is not a rank number (0..4095)\n", what, text);
		return -1;
	}
	*rank = (int)v;
	return 0;
}

static int parse(int argc, char **argv, struct cli *c)
{
	static const struct option opts[] = {
		{ "input", required_argument, NULL, 'i' },
		{ "sysfs-root", required_argument, NULL, 's' },
		{ "local-rank", required_argument, NULL, 'r' },
		{ "virtual-switches", no_argument, NULL, 'v' },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *slurm_rank = getenv("SLURM_LOCALID");
	int opt;

	c->local_rank = -1;
	opterr = 0;	/* getopt's own messages name the program by its full path */
	while ((opt = getopt_long(argc, argv, ":o:hV", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': c->hw.input_xml = optarg; break;
		case 's': c->hw.sysfs_root = optarg; break;
		case 'v': c->hw.virtual_switches = 1; break;
		case 'o': c->output = optarg; break;
		case 'r':
			if (parse_rank(optarg, "--local-rank", &c->local_rank) < 0)
				return -1;
			c->rank_from = "--local-rank";
			break;
		case 'h': fputs(usage, stdout); exit(0);
		case 'V': printf("train-topo (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION); exit(0);
		case ':':
			fprintf(stderr, "train-topo: option '%s' needs a value\n%s", argv[optind - 1], usage);
			return -1;
		default:
			fprintf(stderr, "train-topo: unknown option '%s'\n%s", argv[optind - 1], usage);
			return -1;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "train-topo: expected one command (show, nccl-xml, json, env or probe)\n%s", usage);
		return -1;
	}
	c->command = argv[optind];
	if (strcmp(c->command, "show") && strcmp(c->command, "nccl-xml") && strcmp(c->command, "json") &&
	    strcmp(c->command, "env") && strcmp(c->command, "probe")) {
		fprintf(stderr, "train-topo: unknown command '%s' (show, nccl-xml, json, env or probe)\n",
			c->command);
		return -1;
	}
	if (strcmp(c->command, "probe") == 0 && (!c->output || strcmp(c->output, "-") == 0)) {
		fprintf(stderr, "train-topo: probe needs -o FILE for the topology file (standard output "
			"carries the report)\n");
		return -1;
	}
	if (c->local_rank >= 0 && strcmp(c->command, "env")) {
		fprintf(stderr, "train-topo: --local-rank only applies to 'env'\n");
		return -1;
	}
	if (c->local_rank < 0 && slurm_rank && *slurm_rank) {
		if (parse_rank(slurm_rank, "SLURM_LOCALID", &c->local_rank) < 0)
			return -1;
		c->rank_from = "SLURM_LOCALID";
	}
	return 0;
}

/* The rank's GPU into *gpu (-1 on a node without GPUs); a rank the node cannot have is an error. */
static int env_gpu(const struct tt_hw_model *m, int local_rank, const char *rank_from, int *gpu,
		   tt_err *err)
{
	int ncpus = CPU_COUNT(&m->all_cpus);

	*gpu = m->ngpu ? (local_rank > 0 ? local_rank : 0) : -1;
	if (local_rank < 0)
		return 0;
	if (m->ngpu > 0 && local_rank >= m->ngpu)
		return tt_err_set(err, "%s %d is out of range: %s has %d GPU%s, so local ranks are 0..%d "
				  "(one per GPU)", rank_from, local_rank, m->source, m->ngpu,
				  m->ngpu == 1 ? "" : "s", m->ngpu - 1);
	/* A node without GPUs runs at most a rank per CPU, each on the whole node. */
	if (m->ngpu == 0 && local_rank >= ncpus)
		return tt_err_set(err, "%s %d is out of range: %s has no GPU and %d CPU%s, so local ranks "
				  "are 0..%d (one per CPU)", rank_from, local_rank, m->source, ncpus,
				  ncpus == 1 ? "" : "s", ncpus - 1);
	return 0;
}

static int render_env(const struct tt_hw_model *m, const struct cli *c, char **out, size_t *len, tt_err *err)
{
	struct tt_strbuf sb = { 0 };
	struct tt_rank_policy p;
	int gpu;

	if (env_gpu(m, c->local_rank, c->rank_from, &gpu, err) < 0 ||
	    tt_hw_rank_policy(m, gpu, &p, err) < 0)
		return -1;
	if (p.cuda_index >= 0)
		tt_sb_printf(&sb, "TRAIN_GPU_BUSID=%s\n", p.gpu_busid);
	tt_sb_printf(&sb, "TRAIN_CPU_LIST=%s\nTRAIN_NUMA_NODE=%d\n", p.cpu_list, p.numa_os_index);
	if (p.nccl_ib_hca[0])
		tt_sb_printf(&sb, "NCCL_IB_HCA=%s\n", p.nccl_ib_hca);
	if (p.nccl_socket_ifname[0])
		tt_sb_printf(&sb, "NCCL_SOCKET_IFNAME=%s\n", p.nccl_socket_ifname);
	if (tt_sb_failed(&sb)) {
		tt_sb_free(&sb);
		return tt_err_set(err, "out of memory rendering the environment");
	}
	*out = sb.data;
	*len = sb.len;
	return 0;
}

static int render(const struct cli *c, const struct tt_hw_model *m, char **out, size_t *len, tt_err *err)
{
	if (strcmp(c->command, "show") == 0)
		return tt_hw_render_show(m, out, len, err);
	if (strcmp(c->command, "json") == 0)
		return tt_hw_render_json(m, out, len, err);
	if (strcmp(c->command, "nccl-xml") == 0)
		return tt_nccl_xml_render(m, out, len, err);
	return render_env(m, c, out, len, err);
}

/* The one line for a machine the NCCL file would describe nothing of, into msg; 0 when there is
 * something to describe. */
static int nothing_to_describe(const struct tt_hw_model *m, char *msg, size_t len)
{
	char found[160];

	if (!tt_nccl_xml_nothing_to_describe(m, found, sizeof(found)))
		return 0;
	snprintf(msg, len, "%s has no NVIDIA GPU and no RDMA NIC (found %s): no NCCL topology file "
		 "written, NCCL_TOPO_FILE is not set", m->source, found);
	return 1;
}

/* probe: discover, write the NCCL topology file to c->output, and the node's policy (the same
 * for every task: NCCL_SOCKET_IFNAME, NCCL_IB_HCA; per GPU its NUMA-local CPUs) and the model's
 * warnings as node_policy.h's report on standard output. Every failure is reported there too, so
 * the plugin, which reads only that, can say why. */
static int probe(const struct cli *c)
{
	struct tt_node_policy pol = { 0 };
	struct tt_hw_model *m = NULL;
	struct tt_strbuf sb = { 0 };
	struct tt_rank_policy rp;
	tt_err err = { { 0 } };
	char failed[sizeof(err.msg) + 64];
	int i, rc = 1;

	if (tt_hw_discover(&c->hw, &m, &err) < 0)
		goto out;
	for (i = 0; i < m->nwarnings; i++)
		tt_node_policy_add_note(&pol, m->warnings[i]);
	/* Reported as the probe's error: the plugin then sets no NCCL_TOPO_FILE and says why once. */
	if (nothing_to_describe(m, err.msg, sizeof(err.msg))) {
		rc = TT_TOPO_EXIT_NOTHING;
		goto out;
	}
	if (tt_nccl_xml_write_file(m, c->output, &err) < 0 || tt_hw_rank_policy(m, -1, &rp, &err) < 0)
		goto out;
	snprintf(pol.socket_ifname, sizeof(pol.socket_ifname), "%s", rp.nccl_socket_ifname);
	snprintf(pol.ib_hca, sizeof(pol.ib_hca), "%s", rp.nccl_ib_hca);
	/* GPU indices the model does not have end the list. */
	for (i = 0; i < TT_GPU_MAX && tt_hw_rank_policy(m, i, &rp, NULL) == 0; i++)
		pol.cpus[i] = rp.cpus;
	pol.ngpus = i;
	if (tt_node_policy_format(&pol, &sb, &err) < 0)
		goto out;
	rc = 0;
out:
	if (rc == 0 && (fwrite(sb.data, 1, sb.len, stdout) != sb.len || fflush(stdout) != 0))
		rc = 1;	/* the reader sees a report without its end */
	else if (rc != 0)
		fwrite(failed, 1, tt_node_policy_format_error(err.msg, failed, sizeof(failed)), stdout);
	tt_sb_free(&sb);
	tt_hw_free(m);
	return rc;
}

int main(int argc, char **argv)
{
	struct cli c = { 0 };
	struct tt_hw_model *m = NULL;
	char *text = NULL;
	size_t len = 0;
	tt_err err = { { 0 } };
	int rc = 1;

	if (parse(argc, argv, &c) < 0)
		return 2;
	setenv("HWLOC_PLUGINS_BLACKLIST", TT_HWLOC_UNUSED_PLUGINS, 0);	/* see hw_model.h */
	if (strcmp(c.command, "probe") == 0)
		return probe(&c);
	if (tt_hw_discover(&c.hw, &m, &err) < 0)
		goto fail;
	for (int i = 0; i < m->nwarnings; i++)
		fprintf(stderr, "train-topo: warning: %s\n", m->warnings[i]);
	if (strcmp(c.command, "nccl-xml") == 0 && nothing_to_describe(m, err.msg, sizeof(err.msg))) {
		rc = TT_TOPO_EXIT_NOTHING;
		goto fail;
	}
	if (render(&c, m, &text, &len, &err) < 0)
		goto fail;
	if (c.output && strcmp(c.output, "-") != 0) {
		if (tt_file_write_atomic(c.output, text, len, &err) < 0)
			goto fail;
	} else if (fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
		tt_err_errno(&err, "cannot write to standard output");
		goto fail;
	}
	rc = 0;
fail:
	if (rc)
		fprintf(stderr, "train-topo: %s%s\n", rc == TT_TOPO_EXIT_NOTHING ? "warning: " : "", err.msg);
	free(text);
	tt_hw_free(m);
	return rc;
}

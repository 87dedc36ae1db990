/* SPDX-License-Identifier: MIT */
/* scale_layout.c — nodelists and the env contract at Slurm's largest sizes (issue #20): generates
 * nodelists in the forms Slurm writes, expands them as the plugin does, and computes every task's
 * contract, timing each and reporting peak RSS. bench/scale.sh compares the expansion with
 * `scontrol show hostnames`; tests/unit/hostlist_scale.sh checks equality on a smaller version.
 *   scale-layout gen FORM NODES     print a nodelist of NODES hosts in FORM (see forms[])
 *   scale-layout expand             read a nodelist on stdin, print its hosts one per line
 *   scale-layout time FORM NODES    expand and count (best of 5), one line of numbers
 *   scale-layout env FORM NODES TPN RANKS_PER_NODE... the contract of every one of NODES x TPN tasks */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "hostlist.h"
#include "layout.h"
#include "tt_strbuf.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long peak_rss_kib(void)
{
	struct rusage ru;

	return getrusage(RUSAGE_SELF, &ru) == 0 ? ru.ru_maxrss : -1;
}

/* The forms, as `scontrol show hostlist` compresses real node sets:
 *   contiguous  n[00001-10000]                  one range, zero padded
 *   strided     n[00001,00003,...]              every other node: one range per host
 *   racks       r[001-040]-n[001-250]           two bracket groups (cartesian product)
 *   mixed       gpu[0001-0100,0102-...],cpu[00001-00009,00011-...],login[1-9]
 *               several prefixes, runs and holes
 * A list of `nodes` hosts in form; NULL when form is unknown or memory runs out. */
static char *generate(const char *form, unsigned nodes)
{
	struct tt_strbuf b = {0};

	if (strcmp(form, "contiguous") == 0) {
		tt_sb_printf(&b, "n[%05u-%05u]", 1, nodes);
	} else if (strcmp(form, "strided") == 0) {
		tt_sb_printf(&b, "n[");
		for (unsigned i = 0; i < nodes; i++)
			tt_sb_printf(&b, "%s%05u", i ? "," : "", 2 * i + 1);
		tt_sb_printf(&b, "]");
	} else if (strcmp(form, "racks") == 0) {
		/* Whole racks of 250, then the partial one as its own element. */
		if (nodes >= 250)
			tt_sb_printf(&b, "r[001-%03u]-n[001-250]", nodes / 250);
		if (nodes % 250)
			tt_sb_printf(&b, "%sr%03u-n[001-%03u]", nodes >= 250 ? "," : "", nodes / 250 + 1,
				     nodes % 250);
	} else if (strcmp(form, "mixed") == 0) {
		/* Half gpu nodes in runs of 100 with a drained node between runs, the rest cpu nodes
		 * in runs of 9 (every tenth missing), and 9 login nodes. */
		unsigned gpu = nodes / 2, cpu = nodes - gpu - 9;

		tt_sb_printf(&b, "gpu[");
		for (unsigned made = 0, k = 1, run; made < gpu; made += run, k += run + 1) {
			run = gpu - made < 100 ? gpu - made : 100;
			tt_sb_printf(&b, run > 1 ? "%s%04u-%04u" : "%s%04u", made ? "," : "", k,
				     k + run - 1);
		}
		tt_sb_printf(&b, "],cpu[");
		for (unsigned made = 0, k = 1, run; made < cpu; made += run, k += 10) {
			run = cpu - made < 9 ? cpu - made : 9;
			tt_sb_printf(&b, run > 1 ? "%s%05u-%05u" : "%s%05u", made ? "," : "", k,
				     k + run - 1);
		}
		tt_sb_printf(&b, "],login[1-9]");
	} else {
		return NULL;
	}
	if (tt_sb_failed(&b)) {
		tt_sb_free(&b);
		return NULL;
	}
	return b.data;
}

static int usage(void)
{
	fprintf(stderr, "usage: scale-layout gen FORM NODES | expand | time FORM NODES | env FORM NODES TPN\n"
		"FORM: contiguous, strided, racks, mixed\n");
	return 2;
}

/* stdin's nodelist, expanded, one host a line (the oracle's format). */
static int expand_stdin(void)
{
	struct tt_strbuf in = {0};
	char chunk[65536], **hosts;
	size_t n, got;
	tt_err err;
	int rc = 0;

	while ((got = fread(chunk, 1, sizeof(chunk) - 1, stdin)) > 0) {
		chunk[got] = '\0';
		tt_sb_printf(&in, "%s", chunk);
	}
	if (tt_sb_failed(&in) || !in.data) {
		fprintf(stderr, "scale-layout: no nodelist on stdin (or out of memory)\n");
		tt_sb_free(&in);
		return 1;
	}
	in.data[strcspn(in.data, "\n")] = '\0';
	if (tt_hostlist_expand(in.data, &hosts, &n, &err) != 0) {
		fprintf(stderr, "scale-layout: %s\n", err.msg);
		rc = 1;
	} else {
		for (size_t i = 0; i < n; i++)
			puts(hosts[i]);
		tt_hostlist_free(hosts, n);
	}
	tt_sb_free(&in);
	return rc;
}

/* Expansion and count of one list, best of 5 runs: "chars hosts expand_s count_s peak_rss_kib". */
static int time_expand(const char *list)
{
	double best_expand = 1e9, best_count = 1e9;
	size_t n = 0, counted = 0;
	tt_err err;

	for (int run = 0; run < 5; run++) {
		char **hosts;
		double t = now();

		if (tt_hostlist_expand(list, &hosts, &n, &err) != 0)
			return fprintf(stderr, "scale-layout: %s\n", err.msg), 1;
		t = now() - t;
		best_expand = t < best_expand ? t : best_expand;
		tt_hostlist_free(hosts, n);
		t = now();
		if (tt_hostlist_count(list, &counted, &err) != 0)
			return fprintf(stderr, "scale-layout: %s\n", err.msg), 1;
		t = now() - t;
		best_count = t < best_count ? t : best_count;
	}
	if (counted != n)
		return fprintf(stderr, "scale-layout: count %zu != expanded %zu\n", counted, n), 1;
	printf("%zu %zu %.6f %.6f %ld\n", strlen(list), n, best_expand, best_count, peak_rss_kib());
	return 0;
}

/* Every task's contract (each task computes only its own; this is the sum over the job), checked
 * for a permutation of the ranks: "tasks total_s per_task_us peak_rss_kib". */
static int env_all(const char *list, unsigned nodes, unsigned tpn)
{
	static struct tt_step_facts f;
	struct tt_task_env e;
	unsigned char *seen = calloc((size_t)nodes * tpn, 1);
	double t;
	tt_err err;

	if (!seen || strlen(list) >= sizeof(f.nodelist)) {
		fprintf(stderr, "scale-layout: the %zu-character nodelist does not fit the %zu the facts "
			"hold (TT_NODELIST_LEN)\n", strlen(list), sizeof(f.nodelist) - 1);
		free(seen);
		return 1;
	}
	memset(&f, 0, sizeof(f));
	f.job_id = 4242;
	f.step_id = 0;
	f.ports = (struct tt_port_range){TT_PORT_LO_DEFAULT, TT_PORT_HI_DEFAULT};
	strcpy(f.nodelist, list);
	snprintf(f.tasks_per_node, sizeof(f.tasks_per_node), "%u(x%u)", tpn, nodes);
	f.ntasks = nodes * tpn;
	t = now();
	for (unsigned node = 0; node < nodes; node++)
		for (unsigned local = 0; local < tpn; local++) {
			f.node_index = node;
			f.local_id = local;
			f.task_id = node * tpn + local; /* block distribution */
			if (tt_layout_compute(&f, &e, &err) != 0) {
				fprintf(stderr, "scale-layout: task %u: %s\n", f.task_id, err.msg);
				free(seen);
				return 1;
			}
			if (e.rank >= f.ntasks || seen[e.rank]++ || e.world_size != f.ntasks ||
			    e.nnodes != nodes || e.local_world_size != tpn) {
				fprintf(stderr, "scale-layout: task %u got rank %u of %u on %u nodes\n",
					f.task_id, e.rank, e.world_size, e.nnodes);
				free(seen);
				return 1;
			}
		}
	t = now() - t;
	printf("%u %.6f %.3f %ld\n", f.ntasks, t, t / f.ntasks * 1e6, peak_rss_kib());
	free(seen);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long nodes = 0, tpn = 0;
	char *list = NULL;
	int rc;

	if (argc == 2 && strcmp(argv[1], "expand") == 0)
		return expand_stdin();
	if (argc < 4)
		return usage();
	nodes = strtoul(argv[3], NULL, 10);
	if (nodes < 10 || nodes > TT_HOSTLIST_MAX) {
		fprintf(stderr, "scale-layout: NODES '%s' must be 10..%u\n", argv[3], TT_HOSTLIST_MAX);
		return 2;
	}
	list = generate(argv[2], (unsigned)nodes);
	if (!list) {
		fprintf(stderr, "scale-layout: unknown form '%s' (or out of memory)\n", argv[2]);
		return usage();
	}
	if (strcmp(argv[1], "gen") == 0 && argc == 4)
		rc = puts(list) < 0;
	else if (strcmp(argv[1], "time") == 0 && argc == 4)
		rc = time_expand(list);
	else if (strcmp(argv[1], "env") == 0 && argc == 5 && (tpn = strtoul(argv[4], NULL, 10)) >= 1 &&
		 tpn <= 1024)
		rc = env_all(list, (unsigned)nodes, (unsigned)tpn);
	else
		rc = usage();
	free(list);
	return rc;
}

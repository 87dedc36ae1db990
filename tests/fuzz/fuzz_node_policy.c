/* SPDX-License-Identifier: MIT */
/* fuzz_node_policy.c — the topology probe's report as the SPANK plugin reads it from a pipe
 * (layout/node_policy): any bytes. A report that is accepted must come back unchanged through the
 * writer (the plugin and train-topo agree on every value), and a refusal must say why; a message
 * made from the input must travel through an error report intact (flattened to one line). */
#include "node_policy.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tt_node_policy p, q;
	struct tt_strbuf sb = { 0 };
	char *msg = fuzz_cstr(data, size), report[600];
	tt_err err = { "" };
	size_t n;

	if (tt_node_policy_parse((const char *)data, size, &p, &err) == 0) {
		FUZZ_CHECK(p.ngpus >= 0 && p.ngpus <= TT_GPU_MAX && p.nnotes <= TT_NODE_PROBE_NOTES);
		FUZZ_CHECK(tt_node_policy_format(&p, &sb, &err) == 0);
		FUZZ_CHECK(tt_node_policy_parse(sb.data, sb.len, &q, &err) == 0);
		FUZZ_CHECK(strcmp(p.socket_ifname, q.socket_ifname) == 0 && strcmp(p.ib_hca, q.ib_hca) == 0);
		FUZZ_CHECK(p.ngpus == q.ngpus && p.nnotes == q.nnotes);
		for (int i = 0; i < p.ngpus; i++)
			FUZZ_CHECK(CPU_EQUAL(&p.cpus[i], &q.cpus[i]));
		for (int i = 0; i < p.nnotes; i++)
			FUZZ_CHECK(strcmp(p.notes[i], q.notes[i]) == 0);
	} else {
		FUZZ_CHECK(err.msg[0] != '\0');
	}
	n = tt_node_policy_format_error(msg, report, sizeof(report));
	FUZZ_CHECK(n > 0 && n < sizeof(report) && report[n - 1] == '\n');
	FUZZ_CHECK(tt_node_policy_parse(report, n, &q, &err) == -1);
	tt_sb_free(&sb);
	free(msg);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_node_policy.c — the topology probe's report (node_policy.h) and CPU list text (tt_cpuset.h):
 * what the writer writes the parser reads back unchanged; the exact text of a report; a failed
 * probe's message arriving verbatim; and every malformed report refused with its line named. */
#include "cunit_main.h"
#include "node_policy.h"
#include "tt_cpuset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static cpu_set_t cpus_of(const char *list)
{
	cpu_set_t s;
	tt_err err;

	CU_ASSERT_EQUAL(tt_cpuset_from_list(list, &s, &err), 0);
	return s;
}

static void test_cpu_lists_round_trip(void)
{
	const char *lists[] = { "", "0", "0-3", "0-15,32-47", "1,3,5-6,1023" };
	char buf[256];

	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		cpu_set_t s = cpus_of(lists[i]);

		CU_ASSERT_EQUAL(tt_cpuset_to_list(&s, buf, sizeof(buf)), 0);
		CU_ASSERT_STRING_EQUAL(buf, lists[i]);
	}
	CU_ASSERT_EQUAL(CPU_COUNT((cpu_set_t[]){ cpus_of("0-15,32-47") }), 32);
}

static void cpu_list_refused(const char *text, const char *want)
{
	cpu_set_t s;
	tt_err err = { "" };

	CU_ASSERT_EQUAL(tt_cpuset_from_list(text, &s, &err), -1);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\n'%s': got '%s', want '%s'\n", text, err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
}

static void test_cpu_lists_refused(void)
{
	cpu_list_refused("a", "'a' does not start with a CPU number below 1024");
	cpu_list_refused("-1", "does not start with a CPU number");
	cpu_list_refused("+1", "does not start with a CPU number");
	cpu_list_refused("01", "does not start with a CPU number");
	cpu_list_refused("1024", "does not start with a CPU number below 1024");
	cpu_list_refused("3-3", "'3-3' is not a range A-B with A < B");
	cpu_list_refused("5-2", "'5-2' is not a range A-B with A < B");
	cpu_list_refused("0-1024", "is not a range A-B with A < B < 1024");
	cpu_list_refused("4,2", "'2' is not above the part before it");
	cpu_list_refused("0-4,4", "'4' is not above the part before it");
	cpu_list_refused("1,", "unexpected ','");
	cpu_list_refused("1,,2", "',2' does not start with a CPU number");
	cpu_list_refused("1 2", "unexpected ' 2'");
	cpu_list_refused("1-", "'1-' is not a range");
}

static struct tt_node_policy sample(void)
{
	struct tt_node_policy p = { 0 };

	snprintf(p.socket_ifname, sizeof(p.socket_ifname), "=eth0");
	snprintf(p.ib_hca, sizeof(p.ib_hca), "=mlx5_0:1,mlx5_1:1");
	p.ngpus = 2;
	p.cpus[0] = cpus_of("0-15,32-47");
	p.cpus[1] = cpus_of("16-31,48-63");
	tt_node_policy_add_note(&p, "InfiniBand controller 0000:00:1f.0 has no RDMA device");
	tt_node_policy_add_note(&p, "a note\nwith a newline");
	return p;
}

static void test_report_text_and_round_trip(void)
{
	struct tt_node_policy p = sample(), q;
	struct tt_strbuf sb = { 0 };
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_node_policy_format(&p, &sb, &err), 0);
	CU_ASSERT_STRING_EQUAL(sb.data, "train-topo-probe 1\n"
			       "nccl_socket_ifname =eth0\n"
			       "nccl_ib_hca =mlx5_0:1,mlx5_1:1\n"
			       "gpu 0 0-15,32-47\n"
			       "gpu 1 16-31,48-63\n"
			       "warning InfiniBand controller 0000:00:1f.0 has no RDMA device\n"
			       "warning a note with a newline\n"
			       "end\n");
	CU_ASSERT_EQUAL_FATAL(tt_node_policy_parse(sb.data, sb.len, &q, &err), 0);
	CU_ASSERT_STRING_EQUAL(q.socket_ifname, "=eth0");
	CU_ASSERT_STRING_EQUAL(q.ib_hca, "=mlx5_0:1,mlx5_1:1");
	CU_ASSERT_EQUAL(q.ngpus, 2);
	CU_ASSERT(CPU_EQUAL(&q.cpus[0], &p.cpus[0]) && CPU_EQUAL(&q.cpus[1], &p.cpus[1]));
	CU_ASSERT_EQUAL(q.nnotes, 2);
	CU_ASSERT_STRING_EQUAL(q.notes[1], "a note with a newline");
	tt_sb_free(&sb);
}

static void test_empty_policy_and_notes_cap(void)
{
	struct tt_node_policy p = { 0 }, q;
	struct tt_strbuf sb = { 0 };
	tt_err err;

	for (int i = 0; i < TT_NODE_MAX_NOTES + 2; i++)
		tt_node_policy_add_note(&p, "w");
	CU_ASSERT_EQUAL(p.nnotes, TT_NODE_MAX_NOTES);
	CU_ASSERT_EQUAL_FATAL(tt_node_policy_format(&p, &sb, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_node_policy_parse(sb.data, sb.len, &q, &err), 0);
	CU_ASSERT_EQUAL(q.nnotes, TT_NODE_PROBE_NOTES);	/* the writer keeps the report's limit */
	CU_ASSERT_EQUAL(q.ngpus, 0);
	CU_ASSERT_STRING_EQUAL(q.ib_hca, "");
	tt_sb_free(&sb);
	snprintf(p.ib_hca, sizeof(p.ib_hca), "=mlx5 0");
	CU_ASSERT_EQUAL(tt_node_policy_format(&p, &sb, &err), -1);
	tt_sb_free(&sb);
}

static void test_error_report_carries_the_message(void)
{
	struct tt_node_policy q;
	char buf[2048], tiny[40];
	size_t n = tt_node_policy_format_error("hwloc-crash.xml crashes libhwloc\nin a child", buf, sizeof(buf));
	tt_err err = { "" };

	CU_ASSERT_STRING_EQUAL(buf, "train-topo-probe 1\nerror hwloc-crash.xml crashes libhwloc in a child\n");
	CU_ASSERT_EQUAL(n, strlen(buf));
	CU_ASSERT_EQUAL(tt_node_policy_parse(buf, n, &q, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "hwloc-crash.xml crashes libhwloc in a child");
	/* Cut to fit, still a complete report. */
	n = tt_node_policy_format_error("a long message that does not fit", tiny, sizeof(tiny));
	CU_ASSERT_EQUAL(n, strlen(tiny));
	CU_ASSERT_EQUAL(tiny[n - 1], '\n');
	CU_ASSERT_EQUAL(tt_node_policy_parse(tiny, n, &q, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "a long messag");
}

static void refused(const char *text, const char *want)
{
	struct tt_node_policy q;
	tt_err err = { "" };

	CU_ASSERT_EQUAL(tt_node_policy_parse(text, strlen(text), &q, &err), -1);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\ngot  '%s'\nwant '%s'\n", err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
}

#define H "train-topo-probe 1\n"

static void test_malformed_reports_refused(void)
{
	char many[2048] = H;
	struct tt_node_policy q;
	tt_err err;

	refused("", "topology probe report is empty");
	refused("train-topo-probe 2\nend\n", "line 1: 'train-topo-probe 2' is not 'train-topo-probe 1'");
	refused(H "end", "does not end with a complete line");
	refused(H, "ends after line 1 without 'end' or 'error'");
	refused(H "gpu 0 0-3\n", "ends after line 2 without 'end' or 'error'");
	refused(H "end\nend\n", "line 3: more lines after the last");
	refused(H "error x\ngpu 0 1\n", "line 3: more lines after the last");
	refused(H "colour blue\nend\n", "line 2: unknown name 'colour'");
	refused(H "endless\n", "line 2: 'endless' is not 'name value'");
	refused(H "nccl_ib_hca =a\nnccl_ib_hca =b\nend\n", "line 3: nccl_ib_hca given twice");
	refused(H "nccl_socket_ifname \nend\n", "line 2: nccl_socket_ifname '' is empty");
	refused(H "nccl_socket_ifname =eth0 =eth1\nend\n", "holds a space");
	refused(H "nccl_socket_ifname =0123456789012345678901234567890123\nend\n", "too long");
	refused(H "gpu 1 0-3\nend\n", "line 2: 'gpu 1 0-3' is not GPU 0");
	refused(H "gpu 0 0-3\ngpu 0 4-7\nend\n", "line 3: 'gpu 0 4-7' is not GPU 1");
	refused(H "gpu 00 0-3\nend\n", "is not GPU 0");
	refused(H "gpu 0\nend\n", "'gpu 0' is not GPU 0");
	refused(H "gpu 0 3-1\nend\n", "line 2: GPU 0: CPU list '3-1'");
	refused(H "warning \nend\n", "line 2: a warning of 0 characters");
	refused(H "warning a\tb\nend\n", "line 2: a control character");
	for (int i = 0; i <= TT_NODE_PROBE_NOTES; i++)
		strcat(many, "warning w\n");
	strcat(many, "end\n");
	refused(many, "line 10: more than 8 warnings");
	CU_ASSERT_EQUAL(tt_node_policy_parse(H "end\n\0", sizeof(H "end\n"), &q, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "NUL byte"));
	CU_ASSERT_EQUAL(tt_node_policy_parse(H "end\n", strlen(H "end\n"), &q, &err), 0);
}

static void test_sixty_four_gpus_then_no_more(void)
{
	struct tt_strbuf sb = { 0 };
	struct tt_node_policy q;
	tt_err err;

	tt_sb_printf(&sb, H);
	for (int i = 0; i < TT_GPU_MAX; i++)
		tt_sb_printf(&sb, "gpu %d %d\n", i, i);
	tt_sb_printf(&sb, "end\n");
	CU_ASSERT_EQUAL(tt_node_policy_parse(sb.data, sb.len, &q, &err), 0);
	CU_ASSERT_EQUAL(q.ngpus, TT_GPU_MAX);
	CU_ASSERT(CPU_ISSET(63, &q.cpus[63]));
	sb.len -= strlen("end\n");
	tt_sb_printf(&sb, "gpu %d 0\nend\n", TT_GPU_MAX);
	CU_ASSERT_EQUAL(tt_node_policy_parse(sb.data, sb.len, &q, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "more than 64 GPUs"));
	tt_sb_free(&sb);
	/* The writer has the same limit: 64 GPUs written, 65 (past cpus[]) refused. */
	{
		struct tt_node_policy p = { 0 };

		p.ngpus = TT_GPU_MAX;
		CU_ASSERT_EQUAL(tt_node_policy_format(&p, &sb, &err), 0);
		tt_sb_free(&sb);
		p.ngpus = TT_GPU_MAX + 1;
		CU_ASSERT_EQUAL(tt_node_policy_format(&p, &sb, &err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "65 GPUs: a report carries 0 to 64"));
		tt_sb_free(&sb);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("node_policy", NULL, NULL);

	CU_add_test(s, "CPU lists round trip", test_cpu_lists_round_trip);
	CU_add_test(s, "CPU lists refused", test_cpu_lists_refused);
	CU_add_test(s, "report text and round trip", test_report_text_and_round_trip);
	CU_add_test(s, "empty policy, notes cap", test_empty_policy_and_notes_cap);
	CU_add_test(s, "error report carries the message", test_error_report_carries_the_message);
	CU_add_test(s, "malformed reports refused", test_malformed_reports_refused);
	CU_add_test(s, "64 GPUs, then no more", test_sixty_four_gpus_then_no_more);
	return 0;
}

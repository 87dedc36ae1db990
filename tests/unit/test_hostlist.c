/* SPDX-License-Identifier: MIT */
/* test_hostlist.c — nodelist expansion: every form, every malformed input, and agreement with
 * `scontrol show hostnames` on seeded random lists (SKIP when scontrol is not installed). */
#include "cunit_main.h"
#include "hostlist.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Expands list and compares with the space-separated want. */
static void expect(const char *list, const char *want)
{
	char **hosts = NULL;
	size_t n = 0;
	char got[4096] = "";
	tt_err err = {""};

	if (tt_hostlist_expand(list, &hosts, &n, &err) != 0) {
		fprintf(stderr, "\n%s: %s\n", list, err.msg);
		CU_FAIL("expansion failed");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		strcat(got, i ? " " : "");
		strcat(got, hosts[i]);
	}
	if (strcmp(got, want) != 0)
		fprintf(stderr, "\n%s: got '%s' want '%s'\n", list, got, want);
	CU_ASSERT_STRING_EQUAL(got, want);
	tt_hostlist_free(hosts, n);
}

/* Expansion of list must fail with a message containing needle. */
static void expect_error(const char *list, const char *needle)
{
	char **hosts = (char **)1;
	size_t n = 7;
	tt_err err = {""};

	CU_ASSERT_EQUAL(tt_hostlist_expand(list, &hosts, &n, &err), -1);
	CU_ASSERT_PTR_NULL(hosts);
	CU_ASSERT_EQUAL(n, 0);
	if (!strstr(err.msg, needle))
		fprintf(stderr, "\n%s: message '%s' lacks '%s'\n", list ? list : "(null)", err.msg,
			needle);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, needle));
}

static void test_single_and_lists(void)
{
	expect("node1", "node1");
	expect("a,b,c", "a b c");
	expect("a b", "a b");
	expect(" a , b ", "a b");
	expect("a[1-3,5],b", "a1 a2 a3 a5 b");
	expect("a[1-2],a1", "a1 a2 a1");
	expect("a[3,1]", "a3 a1");
	expect("a[2-2]", "a2");
	expect("a.b[1-2]", "a.b1 a.b2");
	expect("[1-2]", "1 2");
}

static void test_zero_padding(void)
{
	expect("n[001-003]", "n001 n002 n003");
	expect("a[01-3]", "a01 a02 a03");
	expect("a[1-010]", "a1 a2 a3 a4 a5 a6 a7 a8 a9 a10");
	expect("a[8-11]", "a8 a9 a10 a11");
	expect("a[098-101]", "a098 a099 a100 a101");
	expect("a[1-3,02-4]", "a1 a2 a3 a02 a03 a04");
	expect("a[00-1]", "a00 a01");
}

static void test_several_groups_in_slurm_order(void)
{
	expect("r[1-2]-n[01-03]", "r1-n01 r1-n02 r1-n03 r2-n01 r2-n02 r2-n03");
	expect("a[1-2][3-4]", "a13 a14 a23 a24");
	/* Three groups: last fastest, then the first, the middle slowest (as scontrol prints). */
	expect("r[1-2]-n[1-2]-q[1-2]",
	       "r1-n1-q1 r1-n1-q2 r2-n1-q1 r2-n1-q2 r1-n2-q1 r1-n2-q2 r2-n2-q1 r2-n2-q2");
	expect("a[1-3]b[7]c[1-2]", "a1b7c1 a1b7c2 a2b7c1 a2b7c2 a3b7c1 a3b7c2");
	expect("a[3,1]b[2,1]", "a3b2 a3b1 a1b2 a1b1");
}

static void test_suffix_and_mixed(void)
{
	expect("gpu[1-2]-ib", "gpu1-ib gpu2-ib");
	expect("r[1-2]-n[1-2].ib", "r1-n1.ib r1-n2.ib r2-n1.ib r2-n2.ib");
	expect("login,gpu[07-08]-ib,r[1-2]n[3],x9", "login gpu07-ib gpu08-ib r1n3 r2n3 x9");
}

static void test_malformed(void)
{
	expect_error("a[1-2", "'[' at position 2 is not closed");
	expect_error("a]", "']' at position 2 has no matching '['");
	expect_error("a[1-2]]", "']' at position 7");
	expect_error("a[[1-2]", "not closed");
	expect_error("a[3-1]", "reversed range '3-1'");
	expect_error("a[]", "empty range element");
	expect_error("a[1,]", "empty range element");
	expect_error("a[1,,2]", "empty range element");
	expect_error("a[1-]", "empty range element");
	expect_error("a[x-y]", "'x' at position 3 is not a number");
	expect_error("a[1-2-3]", "is not a number");
	expect_error("a[1- 2]", "is not a number");
	expect_error("a,,b", "empty element");
	expect_error(",a", "empty element");
	expect_error("a,", "empty element");
	expect_error("", "names no host");
	expect_error("  ", "names no host");
	expect_error(NULL, "missing");
	expect_error("a[1234567890123456789]", "more than 18 digits");
	expect_error("a[1-2000000]", "more than");
	expect_error("a[1-2000]b[1-2000]", "more than");
	expect_error("a[1]b[1]c[1]d[1]e[1]f[1]g[1]h[1]i[1]", "bracket groups");
}

static void test_count_and_first(void)
{
	char buf[16];
	size_t n = 0;
	tt_err err;

	CU_ASSERT_EQUAL(tt_hostlist_count("r[1-2]-n[01-04],x", &n, &err), 0);
	CU_ASSERT_EQUAL(n, 9);
	CU_ASSERT_EQUAL(tt_hostlist_first("r[2-3]-n[04-05],x", buf, sizeof(buf), &n, &err), 0);
	CU_ASSERT_STRING_EQUAL(buf, "r2-n04");
	CU_ASSERT_EQUAL(n, 5);
	CU_ASSERT_EQUAL(tt_hostlist_first("verylonghostname[1-2]", buf, sizeof(buf), NULL, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not fit in 16 bytes"));
	CU_ASSERT_EQUAL(tt_hostlist_first("a[", buf, sizeof(buf), NULL, &err), -1);
	CU_ASSERT_EQUAL(tt_hostlist_count("a[1-2", &n, &err), -1);
	/* The whole list is checked, not only the element the first host comes from. */
	CU_ASSERT_EQUAL(tt_hostlist_first("a,b[1-2", buf, sizeof(buf), NULL, &err), -1);
	CU_ASSERT_EQUAL(tt_hostlist_first("a,b[0-1048575]", buf, sizeof(buf), NULL, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expands to more than 1048576 hosts"));
}

/* ---- agreement with scontrol ------------------------------------------------------------- */

static uint64_t rng_state;

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

static void append(char *buf, size_t len, const char *s)
{
	strncat(buf, s, len - strlen(buf) - 1);
}

/* A valid list in the forms Slurm 22.05 accepts (no literal after the last bracket group). */
static void random_list(char *buf, size_t len)
{
	static const char *const names[] = {"n", "gpu", "r", "node-", "a.b", "x1y", "c"};
	static const char *const joins[] = {"-n", "b", "", "-", "s"};
	unsigned elements = 1 + rnd(4);

	buf[0] = '\0';
	for (unsigned e = 0; e < elements; e++) {
		unsigned groups = rnd(4);

		append(buf, len, e ? "," : "");
		append(buf, len, names[rnd(7)]);
		if (groups == 0 && rnd(2))
			append(buf, len, "7");
		for (unsigned g = 0; g < groups; g++) {
			unsigned ranges = 1 + rnd(groups > 1 ? 2 : 3);

			if (g)
				append(buf, len, joins[rnd(5)]);
			append(buf, len, "[");
			for (unsigned r = 0; r < ranges; r++) {
				unsigned lo = rnd(120), width = 1 + rnd(4), span = rnd(groups > 1 ? 3 : 12);
				char num[64];

				if (width < 2 || rnd(2))
					width = 0;
				snprintf(num, sizeof(num), "%s%0*u", r ? "," : "", (int)width, lo);
				append(buf, len, num);
				if (span) {
					snprintf(num, sizeof(num), "-%u", lo + span);
					append(buf, len, num);
				}
			}
			append(buf, len, "]");
		}
	}
}

static char *find_in_path(const char *prog)
{
	const char *path = getenv("PATH");
	static char full[4096];

	for (const char *p = path ? path : ""; *p;) {
		size_t n = strcspn(p, ":");

		snprintf(full, sizeof(full), "%.*s/%s", (int)n, p, prog);
		if (access(full, X_OK) == 0)
			return full;
		p += n + (p[n] == ':');
	}
	return NULL;
}

/* scontrol needs a slurm.conf even to expand a hostlist; a minimal one in a temp dir will do. */
static int make_slurm_conf(char *dir, size_t len)
{
	char conf[4200];
	FILE *f;

	snprintf(dir, len, "/tmp/tt-hostlist-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(conf, sizeof(conf), "%s/slurm.conf", dir);
	f = fopen(conf, "w");
	if (!f)
		return -1;
	fputs("ClusterName=tt\nSlurmctldHost=localhost\nNodeName=n1\nPartitionName=p Nodes=n1\n", f);
	if (fclose(f) != 0)
		return -1;
	return setenv("SLURM_CONF", conf, 1);
}

static int scontrol_expand(const char *scontrol, const char *list, char *out, size_t len)
{
	char cmd[8192];
	size_t used = 0;
	char line[512];
	FILE *p;

	/* scontrol reads only the local slurm.conf here, but a test must never hang on it. */
	snprintf(cmd, sizeof(cmd), "timeout 10 '%s' show hostnames '%s' 2>&1", scontrol, list);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	out[0] = '\0';
	while (fgets(line, sizeof(line), p)) {
		line[strcspn(line, "\n")] = '\0';
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? " " : "", line);
		if (used >= len)
			break;
	}
	return pclose(p) == 0 ? 0 : -1;
}

static void test_agrees_with_scontrol(void)
{
	const char *scontrol = find_in_path("scontrol");
	char dir[64], conf[128], list[1024], want[16384];
	int compared = 0;

	if (!scontrol) {
		tt_test_skip("scontrol is not installed: apt-get install slurm-client (scripts/install-deps.sh)");
		return;
	}
	CU_ASSERT_FATAL(make_slurm_conf(dir, sizeof(dir)) == 0);
	rng_state = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 300; i++) {
		random_list(list, sizeof(list));
		if (scontrol_expand(scontrol, list, want, sizeof(want)) != 0) {
			fprintf(stderr, "\nscontrol show hostnames '%s' failed: %s\n", list, want);
			CU_FAIL("scontrol failed");
			break;
		}
		expect(list, want);
		compared++;
	}
	CU_ASSERT_EQUAL(compared, 300);
	snprintf(conf, sizeof(conf), "%s/slurm.conf", dir);
	unlink(conf);
	rmdir(dir);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hostlist", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "single hosts and lists", test_single_and_lists);
	CU_add_test(s, "zero padding", test_zero_padding);
	CU_add_test(s, "several groups in Slurm's order", test_several_groups_in_slurm_order);
	CU_add_test(s, "suffix and mixed", test_suffix_and_mixed);
	CU_add_test(s, "malformed lists", test_malformed);
	CU_add_test(s, "count and first", test_count_and_first);
	CU_add_test(s, "agrees with scontrol show hostnames", test_agrees_with_scontrol);
	return 0;
}

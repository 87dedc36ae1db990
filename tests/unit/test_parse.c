/* SPDX-License-Identifier: MIT */
/* test_parse.c — the strict integer parser (base/tt_parse.h) at its exact boundaries, and the
 * write-all helper (base/tt_io.h) across a pipe. */
#include "cunit_main.h"
#include "tt_io.h"
#include "tt_parse.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

/* Parses text in [min, max] and, when it is refused, checks that *out is untouched. */
static int parse(const char *text, long long min, long long max, long long *out, tt_err *err)
{
	long long before = *out;
	int rc = tt_parse_int(text, min, max, "MASTER_PORT", out, err);

	if (rc != 0)
		CU_ASSERT_EQUAL(*out, before);
	return rc;
}

static void test_accepts_min_and_max(void)
{
	long long v = -7;
	tt_err err;

	CU_ASSERT_EQUAL(parse("1", 1, 65535, &v, &err), 0);
	CU_ASSERT_EQUAL(v, 1);
	CU_ASSERT_EQUAL(parse("65535", 1, 65535, &v, &err), 0);
	CU_ASSERT_EQUAL(v, 65535);
	CU_ASSERT_EQUAL(parse("-5", -5, 5, &v, &err), 0);
	CU_ASSERT_EQUAL(v, -5);
	CU_ASSERT_EQUAL(parse("9223372036854775807", 0, LLONG_MAX, &v, &err), 0);
	CU_ASSERT_EQUAL(v, LLONG_MAX);
	CU_ASSERT_EQUAL(parse("-9223372036854775808", LLONG_MIN, 0, &v, &err), 0);
	CU_ASSERT_EQUAL(v, LLONG_MIN);
}

static void test_refuses_one_past_each_end(void)
{
	long long v = -7;
	tt_err err;

	CU_ASSERT_EQUAL(parse("65536", 1, 65535, &v, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "MASTER_PORT='65536' is not an integer in [1, 65535]");
	CU_ASSERT_EQUAL(parse("0", 1, 65535, &v, &err), -1);
	CU_ASSERT_EQUAL(parse("-6", -5, 5, &v, &err), -1);
	CU_ASSERT_EQUAL(v, -7);
}

static void test_refuses_overflow(void)
{
	long long v = -7;
	tt_err err;

	CU_ASSERT_EQUAL(parse("9223372036854775808", 0, LLONG_MAX, &v, &err), -1);
	CU_ASSERT_EQUAL(parse("-9223372036854775809", LLONG_MIN, 0, &v, &err), -1);
	CU_ASSERT_EQUAL(parse("99999999999999999999999", 0, LLONG_MAX, &v, &err), -1);
	/* strtol would clamp to LONG_MAX and an unchecked caller would take it as a port. */
	CU_ASSERT_EQUAL(parse("18446744073709551617", 0, 65535, &v, &err), -1);
}

static void test_refuses_empty_junk_and_signs(void)
{
	static const char *const bad[] = { "", "-", "29500x", "x29500", " 29500", "29500 ", "+29500",
					   "29 500", "0x10", "1e3", "29500\n" };
	long long v = -7;
	tt_err err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CU_ASSERT_EQUAL(parse(bad[i], 0, 65535, &v, &err), -1);
	/* A minus sign only where the range has negative numbers: "-0" is not a port. */
	CU_ASSERT_EQUAL(parse("-0", 0, 65535, &v, &err), -1);
	CU_ASSERT_EQUAL(parse("-0", -1, 1, &v, &err), 0);
	CU_ASSERT_EQUAL(v, 0);
	CU_ASSERT_EQUAL(parse("", 0, 65535, &v, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "MASTER_PORT='' is not an integer in [0, 65535]");
}

static void test_option_names_read_as_options(void)
{
	long long v;
	tt_err err;

	CU_ASSERT_EQUAL(tt_parse_int("0", 1, 4096, "--tp", &v, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "--tp '0' is not an integer in [1, 4096]");
	CU_ASSERT_EQUAL(tt_parse_int("x", 1, 2, "pid", &v, NULL), -1);
}

static void test_span_reads_only_its_field(void)
{
	long long v = -7;

	CU_ASSERT_EQUAL(tt_parse_int_span("12000-12003", 5, 0, 65535, &v), 0);
	CU_ASSERT_EQUAL(v, 12000);
	CU_ASSERT_EQUAL(tt_parse_int_span("12000-12003", 0, 0, 65535, &v), -1);
	CU_ASSERT_EQUAL(tt_parse_int_span("12000-12003", 6, 0, 65535, &v), -1);
	CU_ASSERT_EQUAL(v, 12000);
}

static void test_write_all_writes_everything(void)
{
	char big[200000], back[sizeof(big)];
	size_t got = 0;
	int fds[2];
	pid_t child;

	CU_ASSERT_FATAL(pipe(fds) == 0);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	/* More than a pipe holds: the writer must loop over short writes while the reader drains. */
	child = fork();
	CU_ASSERT_FATAL(child >= 0);
	if (child == 0) {
		close(fds[0]);
		_exit(tt_write_all(fds[1], big, sizeof(big), false) == 0 ? 0 : 1);
	}
	close(fds[1]);
	for (ssize_t n; (n = read(fds[0], back + got, sizeof(back) - got)) > 0;)
		got += (size_t)n;
	close(fds[0]);
	CU_ASSERT_EQUAL(got, sizeof(big));
	CU_ASSERT_EQUAL(memcmp(big, back, sizeof(big)), 0);
	CU_ASSERT(tt_now_ms() > 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("tt_parse", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "accepts min and max", test_accepts_min_and_max);
	CU_add_test(s, "refuses one past each end", test_refuses_one_past_each_end);
	CU_add_test(s, "refuses overflow", test_refuses_overflow);
	CU_add_test(s, "refuses empty, junk and signs", test_refuses_empty_junk_and_signs);
	CU_add_test(s, "option names read as options", test_option_names_read_as_options);
	CU_add_test(s, "span reads only its field", test_span_reads_only_its_field);
	CU_add_test(s, "write_all writes everything", test_write_all_writes_everything);
	return 0;
}

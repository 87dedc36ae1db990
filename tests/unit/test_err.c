/* SPDX-License-Identifier: MIT */
/* test_err.c — the error record: formatting, errno text, wrapping, truncation. */
#include "cunit_main.h"
#include "tt_err.h"

#include <errno.h>
#include <string.h>

static void test_set_returns_minus_one_and_formats(void)
{
	tt_err err;

	CU_ASSERT_EQUAL(tt_err_set(&err, "bad value '%s' for %s", "x", "mode"), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "bad value 'x' for mode");
	CU_ASSERT_EQUAL(tt_err_set(NULL, "ignored"), -1);
}

static void test_errno_appends_strerror(void)
{
	tt_err err;

	errno = ENOENT;
	tt_err_errno(&err, "cannot open %s", "/nope");
	CU_ASSERT_STRING_EQUAL(err.msg, "cannot open /nope: No such file or directory");
	CU_ASSERT_EQUAL(errno, ENOENT);
}

static void test_wrap_prefixes_context(void)
{
	tt_err err;

	tt_err_set(&err, "line 3: unknown key 'foo'");
	tt_err_wrap(&err, "plugstack.conf");
	CU_ASSERT_STRING_EQUAL(err.msg, "plugstack.conf: line 3: unknown key 'foo'");
}

static void test_long_message_is_truncated_not_overflowed(void)
{
	char big[4096];
	tt_err err;

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tt_err_set(&err, "%s", big);
	CU_ASSERT_EQUAL(strlen(err.msg), sizeof(err.msg) - 1);
	tt_err_wrap(&err, "ctx");
	CU_ASSERT_EQUAL(strncmp(err.msg, "ctx: aaa", 8), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("tt_err", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "set returns -1 and formats", test_set_returns_minus_one_and_formats);
	CU_add_test(s, "errno appends strerror", test_errno_appends_strerror);
	CU_add_test(s, "wrap prefixes context", test_wrap_prefixes_context);
	CU_add_test(s, "long message truncated", test_long_message_is_truncated_not_overflowed);
	return 0;
}

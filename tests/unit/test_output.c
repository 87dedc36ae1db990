/* SPDX-License-Identifier: MIT */
/* test_output.c — the line splitter: whole lines out whatever the read sizes, prefixes, partial
 * last lines, over-long lines, and a failing sink. */
#include "cunit_main.h"
#include "output.h"

#include <stdlib.h>
#include <string.h>

/* Collects emitted lines, joined, and counts them. */
struct sink {
	char text[4 * TT_OUT_MAX_LINE];
	size_t len;
	int lines;
	int fail_after;	/* emit fails once this many lines were taken; 0 = never */
};

static int collect(void *ctx, const char *line, size_t len)
{
	struct sink *s = ctx;

	if (s->fail_after && s->lines >= s->fail_after)
		return -1;
	CU_ASSERT_EQUAL(line[len - 1], '\n');	/* every emitted unit is a whole line */
	CU_ASSERT_PTR_NULL(memchr(line, '\n', len - 1));
	memcpy(s->text + s->len, line, len);
	s->len += len;
	s->text[s->len] = '\0';
	s->lines++;
	return 0;
}

static void test_lines_split_across_reads(void)
{
	struct tt_linesplit ls;
	static struct sink s;

	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, NULL, NULL), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, "hel", 3, collect, &s), 0);
	CU_ASSERT_EQUAL(s.lines, 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, "lo\nwor", 6, collect, &s), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, "ld\n\nx\n", 6, collect, &s), 0);
	CU_ASSERT_EQUAL(s.lines, 4);
	CU_ASSERT_STRING_EQUAL(s.text, "hello\nworld\n\nx\n");
	CU_ASSERT_EQUAL(tt_out_flush(&ls, collect, &s), 0);
	CU_ASSERT_EQUAL(s.lines, 4);	/* nothing pending: no empty line invented */
	tt_out_free(&ls);
}

static void test_prefix_on_every_line_and_partial_flushed(void)
{
	struct tt_linesplit ls;
	static struct sink s;
	char prefix[32];

	memset(&s, 0, sizeof(s));
	tt_out_rank_prefix(prefix, sizeof(prefix), 12);
	CU_ASSERT_STRING_EQUAL(prefix, "[rank 12] ");
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, prefix, NULL), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, "a\nb\nno newline", 14, collect, &s), 0);
	CU_ASSERT_EQUAL(tt_out_flush(&ls, collect, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.text, "[rank 12] a\n[rank 12] b\n[rank 12] no newline\n");
	CU_ASSERT_EQUAL(s.lines, 3);
	tt_out_free(&ls);
}

static void test_byte_by_byte_equals_one_block(void)
{
	const char *in = "line one\nline two\r\nthird\n";
	struct tt_linesplit ls;
	static struct sink s;
	size_t i;

	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, "> ", NULL), 0);
	for (i = 0; i < strlen(in); i++)
		CU_ASSERT_EQUAL(tt_out_feed(&ls, in + i, 1, collect, &s), 0);
	CU_ASSERT_STRING_EQUAL(s.text, "> line one\n> line two\r\n> third\n");
	tt_out_free(&ls);
}

static void test_overlong_line_broken_without_loss(void)
{
	size_t n = TT_OUT_MAX_LINE * 2 + 10;
	char *big = malloc(n + 1);
	struct tt_linesplit ls;
	static struct sink s;
	size_t i, letters = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(big);
	memset(&s, 0, sizeof(s));
	memset(big, 'z', n);
	big[n] = '\n';
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, "[rank 0] ", NULL), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, big, n + 1, collect, &s), 0);
	CU_ASSERT_EQUAL(s.lines, 3);
	for (i = 0; i < s.len; i++)
		letters += s.text[i] == 'z';
	CU_ASSERT_EQUAL(letters, n);
	CU_ASSERT_EQUAL(strncmp(s.text + s.len - 20, "[rank 0] zzzzzzzzzz\n", 20), 0);
	tt_out_free(&ls);
	free(big);
}

static void test_exactly_full_line_with_newline_is_one_line(void)
{
	char *line = malloc(TT_OUT_MAX_LINE + 1);
	struct tt_linesplit ls;
	static struct sink s;

	CU_ASSERT_PTR_NOT_NULL_FATAL(line);
	memset(&s, 0, sizeof(s));
	memset(line, 'q', TT_OUT_MAX_LINE);
	line[TT_OUT_MAX_LINE] = '\n';
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, NULL, NULL), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, line, TT_OUT_MAX_LINE + 1, collect, &s), 0);
	CU_ASSERT_EQUAL(tt_out_flush(&ls, collect, &s), 0);
	CU_ASSERT_EQUAL(s.lines, 1);
	CU_ASSERT_EQUAL(s.len, (size_t)TT_OUT_MAX_LINE + 1);
	tt_out_free(&ls);
	free(line);
}

static void test_failing_sink_reported(void)
{
	struct tt_linesplit ls;
	static struct sink s;

	memset(&s, 0, sizeof(s));
	s.fail_after = 1;
	CU_ASSERT_EQUAL_FATAL(tt_out_init(&ls, NULL, NULL), 0);
	CU_ASSERT_EQUAL(tt_out_feed(&ls, "a\nb\n", 4, collect, &s), -1);
	CU_ASSERT_EQUAL(s.lines, 1);
	tt_out_free(&ls);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("output", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "lines split across reads", test_lines_split_across_reads);
	CU_add_test(s, "prefix and partial last line", test_prefix_on_every_line_and_partial_flushed);
	CU_add_test(s, "byte by byte equals one block", test_byte_by_byte_equals_one_block);
	CU_add_test(s, "over-long line broken without loss", test_overlong_line_broken_without_loss);
	CU_add_test(s, "exactly full line is one line", test_exactly_full_line_with_newline_is_one_line);
	CU_add_test(s, "failing sink reported", test_failing_sink_reported);
	return 0;
}

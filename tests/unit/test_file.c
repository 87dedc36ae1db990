/* SPDX-License-Identifier: MIT */
/* test_file.c — base/tt_file: a file is replaced, never written in place. While the new content
 * is written, and after an abort, the path holds the old content; after the commit the path is a
 * new file (a reader that opened the old one still reads the old bytes) and no temporary remains. */
#include "cunit_main.h"
#include "tt_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whole content of path (up to len - 1 bytes) as a string; -1 when it cannot be read. */
static int slurp_fd(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	if (n < 0)
		return -1;
	buf[n] = '\0';
	return 0;
}

static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY), rc;

	if (fd < 0)
		return -1;
	rc = slurp_fd(fd, buf, len);
	close(fd);
	return rc;
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void write_old(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT_EQUAL(write(fd, "old content\n", 12), 12);
	close(fd);
}

static void test_old_file_intact_until_commit(void)
{
	char dir[] = "/tmp/tt-file-XXXXXX", path[64], buf[64];
	struct stat before, after;
	tt_file_out f;
	tt_err err;
	int reader;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	write_old(path);
	CU_ASSERT_EQUAL_FATAL(stat(path, &before), 0);
	reader = open(path, O_RDONLY);
	CU_ASSERT_FATAL(reader >= 0);

	/* Written but not committed: the path holds the old content; then aborted: still. */
	CU_ASSERT_EQUAL_FATAL(tt_file_open(&f, path, &err), 0);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "old content\n");
	CU_ASSERT_EQUAL(tt_file_write(&f, "new", 3, &err), 0);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "old content\n");
	tt_file_abort(&f);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "old content\n");
	CU_ASSERT_EQUAL(entries(dir), 1);

	/* Committed: a new file at the path; the reader of the old one still reads the old bytes. */
	CU_ASSERT_EQUAL_FATAL(tt_file_open(&f, path, &err), 0);
	CU_ASSERT_EQUAL(tt_file_write(&f, "new content\n", 12, &err), 0);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "old content\n");
	CU_ASSERT_EQUAL_FATAL(tt_file_commit(&f, &err), 0);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "new content\n");
	CU_ASSERT_EQUAL(stat(path, &after), 0);
	CU_ASSERT_NOT_EQUAL(after.st_ino, before.st_ino);
	CU_ASSERT_EQUAL(slurp_fd(reader, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "old content\n");
	CU_ASSERT_EQUAL(entries(dir), 1);
	close(reader);

	/* The one-call form replaces the same way. */
	CU_ASSERT_EQUAL_FATAL(stat(path, &before), 0);
	CU_ASSERT_EQUAL(tt_file_write_atomic(path, "third\n", 6, &err), 0);
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "third\n");
	CU_ASSERT_EQUAL(stat(path, &after), 0);
	CU_ASSERT_NOT_EQUAL(after.st_ino, before.st_ino);
	CU_ASSERT_EQUAL(entries(dir), 1);
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(rmdir(dir), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("file", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "the old file is intact until the commit", test_old_file_intact_until_commit);
	return 0;
}

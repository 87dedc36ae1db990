/* SPDX-License-Identifier: MIT */
/* test_oci_spool.c — finding a step's OCI spool directory through slurmstepd's socket, on a fake
 * /proc/self (fd links and net/unix) and a spool directory of this test's own. */
#include "cunit_main.h"
#include "oci_spool.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[] = "/tmp/tt-oci-XXXXXX";
static char self[PATH_MAX], spool[PATH_MAX];

/* Suite set-up helpers: no CUnit assertions outside a test, so they return -1 on failure. */
static int put(const char *rel, const char *text)
{
	char path[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", self, rel);
	f = fopen(path, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static int fd_link(const char *fd, const char *target)
{
	char path[PATH_MAX + 64];

	snprintf(path, sizeof(path), "%s/fd/%s", self, fd);
	return symlink(target, path);
}

/* The socket table: job 11's step 0 socket held open (inode 500), job 1's not held (600), a
 * user's look-alike that is not ours (700), an abstract one; fds 3-5. */
static int set_up(void)
{
	char table[4 * PATH_MAX];
	char path[PATH_MAX + 64];

	if (!mkdtemp(root))
		return -1;
	snprintf(self, sizeof(self), "%s/self", root);
	snprintf(spool, sizeof(spool), "%s/spool/node1", root);
	snprintf(path, sizeof(path), "%s/fd", self);
	if (mkdir(self, 0755) || mkdir(path, 0755) || snprintf(path, sizeof(path), "%s/net", self) < 0 ||
	    mkdir(path, 0755) || snprintf(path, sizeof(path), "%s/spool", root) < 0 || mkdir(path, 0755) ||
	    mkdir(spool, 0755))
		return -1;
	snprintf(table, sizeof(table),
		 "Num       RefCount Protocol Flags    Type St Inode Path\n"
		 "0000000000000000: 00000002 00000000 00010000 0001 01 400 @/tmp/.X11-unix/X0\n"
		 "0000000000000000: 00000002 00000000 00010000 0001 01 700 /tmp/evil/x_11.0\n"
		 "0000000000000000: 00000002 00000000 00010000 0001 01 600 %s/node1_1.0\n"
		 "0000000000000000: 00000002 00000000 00010000 0001 01 500 %s/node1_11.0\n"
		 "0000000000000000: 00000003 00000000 00000000 0001 03 501\n", spool, spool);
	if (put("net/unix", table) || fd_link("3", "socket:[500]") || fd_link("4", "/dev/null") ||
	    fd_link("5", "socket:[501]"))
		return -1;
	return 0;
}

static int tear_down(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_finds_the_step_directory(void)
{
	char dir[PATH_MAX], want[PATH_MAX + 32];
	tt_err err;

	snprintf(want, sizeof(want), "%s/oci-job11-0", spool);
	CU_ASSERT_EQUAL_FATAL(mkdir(want, 0770), 0);
	CU_ASSERT_EQUAL(tt_oci_step_dir(self, 11, 0, dir, sizeof(dir), &err), 0);
	CU_ASSERT_STRING_EQUAL(dir, want);
	rmdir(want);
}

static void test_missing_directory_is_refused(void)
{
	char dir[PATH_MAX];
	tt_err err;

	/* The socket is there, the directory is not (ContainerPath elsewhere, or no oci.conf). */
	CU_ASSERT_EQUAL(tt_oci_step_dir(self, 11, 0, dir, sizeof(dir), &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "oci-job11-0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "ContainerPath"));
}

static void test_only_a_socket_held_open_counts(void)
{
	char dir[PATH_MAX];
	tt_err err;

	/* Job 1's socket is listed but not open here; the look-alike for 11 is not held either. */
	CU_ASSERT_EQUAL(tt_oci_step_dir(self, 1, 0, dir, sizeof(dir), &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "_1.0"));
	CU_ASSERT_EQUAL(tt_oci_step_dir(self, 11, 1, dir, sizeof(dir), &err), -1);
}

static void test_a_link_in_its_place_is_refused(void)
{
	char dir[PATH_MAX], link[PATH_MAX + 32];
	tt_err err;

	snprintf(link, sizeof(link), "%s/oci-job11-0", spool);
	CU_ASSERT_EQUAL_FATAL(symlink("/tmp", link), 0);
	CU_ASSERT_EQUAL(tt_oci_step_dir(self, 11, 0, dir, sizeof(dir), &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not a directory"));
	unlink(link);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("oci_spool", set_up, tear_down);

	if (!s)
		return -1;
	CU_add_test(s, "finds the step's directory", test_finds_the_step_directory);
	CU_add_test(s, "missing directory refused", test_missing_directory_is_refused);
	CU_add_test(s, "only a socket held open", test_only_a_socket_held_open_counts);
	CU_add_test(s, "a link in its place refused", test_a_link_in_its_place_is_refused);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_topo_file.c — the plugin's topology file and the job's directory, in a private topo_dir:
 * made 0700 and used, a directory that is not the user's private one (wrong mode, a symbolic link,
 * a file) never used nor cleaned, removal only through the directory that was checked (also after
 * the user moved it and put a link in its place), the node-wide policy and the probe's warnings,
 * and nothing left behind when the file cannot be made. The other-user cases run as a second
 * user in the cluster suite (t_plugin.sh). */
#include "cunit_main.h"
#include "topo_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct env {
	char base[64];		/* the topo_dir */
	struct tt_plugin_config cfg;
};

static void setup(struct env *e, const char *fixture)
{
	snprintf(e->base, sizeof(e->base), "/tmp/tt-topo-file-XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(e->base));
	tt_plugin_config_defaults(&e->cfg);
	snprintf(e->cfg.topo_dir, sizeof(e->cfg.topo_dir), "%s", e->base);
	snprintf(e->cfg.hwloc_xml, sizeof(e->cfg.hwloc_xml), "%s/tests/fixtures/topo/%s", tt_test_srcdir(),
		 fixture);
	snprintf(e->cfg.probe, sizeof(e->cfg.probe), "%s", TT_TEST_PROBE);	/* this build's train-topo */
}

/* Entries of dir not named with a leading dot (dotted too with hidden), -1 when it is gone. */
static int count_entries(const char *dir, int hidden)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.' || (hidden && strcmp(de->d_name, ".") != 0 &&
					      strcmp(de->d_name, "..") != 0);
	closedir(d);
	return n;
}

static int entries(const char *dir)
{
	return count_entries(dir, 0);
}

static void teardown(struct env *e)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", e->base);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

static int slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return n < 0 ? -1 : 0;
}

static void test_made_private_written_and_removed(void)
{
	struct env e;
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX], expect[PATH_MAX], jobdir[256], buf[64];
	struct stat st;
	tt_err err;

	setup(&e, "dual-pcie-8gpu.xml");
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 42, 3, path, sizeof(path), &dir, &pol, &err), 0);
	snprintf(expect, sizeof(expect), "%s/traintopo.42/nccl-topo.3.xml", e.base);
	CU_ASSERT_STRING_EQUAL(path, expect);
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.42", e.base);
	CU_ASSERT_EQUAL(lstat(jobdir, &st), 0);
	CU_ASSERT_TRUE(S_ISDIR(st.st_mode));
	CU_ASSERT_EQUAL(st.st_mode & 07777, 0700);
	CU_ASSERT_EQUAL(st.st_uid, geteuid());
	CU_ASSERT_EQUAL(slurp(path, buf, sizeof(buf)), 0);
	CU_ASSERT_EQUAL(strncmp(buf, "<system version=\"1\">", 20), 0);
	/* One NCCL_IB_HCA for the node (every task gets it), the socket interface, no notes. */
	CU_ASSERT_STRING_EQUAL(pol.ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	CU_ASSERT_STRING_EQUAL(pol.socket_ifname, "=eno1");
	CU_ASSERT_EQUAL(pol.nnotes, 0);
	CU_ASSERT_EQUAL(entries(jobdir), 1);
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &dir, path, &err), 0);
	CU_ASSERT_NOT_EQUAL(lstat(jobdir, &st), 0);
	CU_ASSERT_EQUAL(dir.fd, -1);
	teardown(&e);
}

static void test_second_step_shares_the_directory(void)
{
	struct env e;
	struct tt_topo_dir d0, d1;
	struct tt_node_policy pol;
	char p0[PATH_MAX], p1[PATH_MAX], jobdir[256];
	tt_err err;

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.7", e.base);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 7, 0, p0, sizeof(p0), &d0, &pol, &err), 0);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 7, 1, p1, sizeof(p1), &d1, &pol, &err), 0);
	CU_ASSERT_EQUAL(entries(jobdir), 2);
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &d0, p0, &err), 0);
	CU_ASSERT_EQUAL(entries(jobdir), 1); /* step 1's file and the directory stay */
	CU_ASSERT_EQUAL(access(p1, R_OK), 0);
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &d1, p1, &err), 0);
	CU_ASSERT_EQUAL(entries(jobdir), -1);
	teardown(&e);
}

/* A task with a /tmp of its own (job_container/tmpfs): the job's directory of slurmstepd's view is
 * not at its path there (here: moved away), so the task copies the file through the descriptor
 * to the same path; a second task does it again; a foreign directory there, or no descriptor,
 * is refused. The task that sees slurmstepd's directory gets no copy. */
static void test_task_view_copies_into_a_private_tmp(void)
{
	struct env e;
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX], jobdir[256], moved[256], orig_path[PATH_MAX];
	static char orig[1 << 16], copy[1 << 16];
	struct stat before, after;
	tt_err err;

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.9", e.base);
	snprintf(moved, sizeof(moved), "%s/stepd-view", e.base);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 9, 2, path, sizeof(path), &dir, &pol, &err), 0);
	CU_ASSERT_EQUAL(stat(path, &before), 0);
	CU_ASSERT_EQUAL(tt_topo_file_task_view(&e.cfg, &dir, path, &err), 0);
	CU_ASSERT_EQUAL(stat(path, &after), 0);
	CU_ASSERT_EQUAL(after.st_ino, before.st_ino);	/* seen as it is: not copied */

	CU_ASSERT_EQUAL_FATAL(rename(jobdir, moved), 0);
	for (int task = 0; task < 2; task++) {
		CU_ASSERT_EQUAL(tt_topo_file_task_view(&e.cfg, &dir, path, &err), 0);
		CU_ASSERT_EQUAL(slurp(path, copy, sizeof(copy)), 0);
		CU_ASSERT_EQUAL(count_entries(jobdir, 1), 1);	/* no temporary file left */
	}
	snprintf(orig_path, sizeof(orig_path), "%s/nccl-topo.2.xml", moved);
	CU_ASSERT_EQUAL(slurp(orig_path, orig, sizeof(orig)), 0);
	CU_ASSERT_STRING_EQUAL(copy, orig);
	CU_ASSERT_EQUAL(strncmp(copy, "<system version=\"1\">", 20), 0);
	CU_ASSERT_EQUAL(lstat(jobdir, &after), 0);
	CU_ASSERT_EQUAL(after.st_mode & 07777, 0700);

	/* Not the user's private directory at the path: not written into. */
	CU_ASSERT_EQUAL(unlink(path), 0);
	CU_ASSERT_EQUAL(chmod(jobdir, 0755), 0);
	CU_ASSERT_EQUAL(tt_topo_file_task_view(&e.cfg, &dir, path, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "traintopo.9 in the task's view belongs to uid"));
	CU_ASSERT_EQUAL(entries(jobdir), 0);
	/* No descriptor to copy from. */
	CU_ASSERT_EQUAL(rmdir(jobdir), 0);
	close(dir.fd);
	dir.fd = -1;
	CU_ASSERT_EQUAL(tt_topo_file_task_view(&e.cfg, &dir, path, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is not in this task's view of"));
	CU_ASSERT_EQUAL(access(jobdir, F_OK), -1);
	teardown(&e);
}

/* A directory in the job's place that is not the user's private one: never used, never cleaned. */
static void check_not_used(struct env *e, const char *what)
{
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX], jobdir[256];
	tt_err err;

	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.9", e->base);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e->cfg, 9, 0, path, sizeof(path), &dir, &pol, &err), 0);
	CU_ASSERT_EQUAL(strncmp(path, jobdir, strlen(jobdir)), 0);
	CU_ASSERT_EQUAL(path[strlen(jobdir)], '.'); /* traintopo.9.XXXXXX/... beside it */
	CU_ASSERT_EQUAL(access(path, R_OK), 0);
	CU_ASSERT_EQUAL(pol.nnotes, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(pol.notes[0], what));
	if (!strstr(pol.notes[0], what))
		fprintf(stderr, "note: %s\n", pol.notes[0]);
	CU_ASSERT_PTR_NOT_NULL(strstr(pol.notes[0], "not used"));
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e->cfg, &dir, path, &err), 0);
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
}

static void test_foreign_directories_are_never_used(void)
{
	char jobdir[256], victim[256], kept[PATH_MAX], buf[64];
	struct env e;
	struct stat st;
	int fd;

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.9", e.base);
	snprintf(kept, sizeof(kept), "%s/someone-elses", jobdir);
	/* A world-writable directory (as another user would leave it), with a file in it. */
	CU_ASSERT_EQUAL_FATAL(mkdir(jobdir, 0700), 0);
	CU_ASSERT_EQUAL_FATAL(chmod(jobdir, 0777), 0);
	fd = open(kept, O_WRONLY | O_CREAT, 0644);
	close(fd);
	check_not_used(&e, "with mode 0777");
	CU_ASSERT_EQUAL(entries(jobdir), 1);
	CU_ASSERT_EQUAL(access(kept, F_OK), 0);
	CU_ASSERT_EQUAL(unlink(kept), 0);
	CU_ASSERT_EQUAL(rmdir(jobdir), 0);
	/* A symbolic link to a directory holding a file of the step's name: not written, not removed. */
	snprintf(victim, sizeof(victim), "%s/victim", e.base);
	CU_ASSERT_EQUAL_FATAL(mkdir(victim, 0755), 0);
	snprintf(kept, sizeof(kept), "%s/nccl-topo.0.xml", victim);
	fd = open(kept, O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_EQUAL(write(fd, "precious", 8), 8);
	close(fd);
	CU_ASSERT_EQUAL_FATAL(symlink(victim, jobdir), 0);
	check_not_used(&e, "is a symbolic link");
	CU_ASSERT_EQUAL(lstat(jobdir, &st), 0);
	CU_ASSERT_TRUE(S_ISLNK(st.st_mode));
	CU_ASSERT_EQUAL(slurp(kept, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "precious");
	CU_ASSERT_EQUAL(unlink(jobdir), 0);
	/* A plain file. */
	fd = open(jobdir, O_WRONLY | O_CREAT, 0600);
	close(fd);
	check_not_used(&e, "is not a directory");
	CU_ASSERT_EQUAL(lstat(jobdir, &st), 0);
	CU_ASSERT_TRUE(S_ISREG(st.st_mode));
	teardown(&e);
}

/* A directory of the job's name that is private (0700) but another user's: as root (the plugin's
 * real uid) everything can be opened, so only the owner check keeps the step out of it. */
static void test_another_users_private_directory_is_not_used(void)
{
	char jobdir[256], kept[PATH_MAX];
	struct env e;
	int fd;

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.9", e.base);
	snprintf(kept, sizeof(kept), "%s/nccl-topo.0.xml", jobdir);
	CU_ASSERT_EQUAL_FATAL(mkdir(jobdir, 0700), 0);
	fd = open(kept, O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_EQUAL(write(fd, "theirs", 6), 6);
	close(fd);
	if (chown(kept, 65534, 65534) != 0 || chown(jobdir, 65534, 65534) != 0) {
		tt_test_skip("cannot give %s to uid 65534 (%s): a foreign owner needs root", jobdir,
			     strerror(errno));
	} else {
		char buf[16];

		CU_ASSERT_EQUAL(chmod(jobdir, 0700), 0);
		check_not_used(&e, "belongs to uid 65534 with mode 0700");
		CU_ASSERT_EQUAL(entries(jobdir), 1);
		CU_ASSERT_EQUAL(slurp(kept, buf, sizeof(buf)), 0);
		CU_ASSERT_STRING_EQUAL(buf, "theirs");
	}
	CU_ASSERT_EQUAL(unlink(kept), 0);
	CU_ASSERT_EQUAL(rmdir(jobdir), 0);
	teardown(&e);
}

/* The plugin's own case: the step runs as the job user (here uid 65534, forked), and the job's
 * directory is someone else's private one (root's, 0700) in a shared sticky topo_dir. The step
 * writes its file beside it, leaves the directory and its file alone, and says why. */
static void test_a_user_passes_over_another_users_directory(void)
{
	char jobdir[256], kept[PATH_MAX], buf[16];
	struct env e;
	int fd, status;
	pid_t pid;

	if (geteuid() != 0) {
		tt_test_skip("switching to uid 65534 needs root");
		return;
	}
	setup(&e, "dual-pcie-8gpu.xml");
	CU_ASSERT_EQUAL_FATAL(chmod(e.base, 01777), 0);
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.9", e.base);
	snprintf(kept, sizeof(kept), "%s/nccl-topo.0.xml", jobdir);
	CU_ASSERT_EQUAL_FATAL(mkdir(jobdir, 0700), 0);
	fd = open(kept, O_WRONLY | O_CREAT, 0600);
	CU_ASSERT_EQUAL(write(fd, "roots", 5), 5);
	close(fd);
	pid = fork();
	CU_ASSERT_FATAL(pid >= 0);
	if (pid == 0) {
		struct tt_topo_dir dir;
		struct tt_node_policy pol;
		char path[PATH_MAX];
		tt_err err;
		int bad = 0;

		if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
			_exit(64);
		if (tt_topo_file_create(&e.cfg, 9, 0, path, sizeof(path), &dir, &pol, &err) != 0)
			_exit(65);
		bad |= strncmp(path, jobdir, strlen(jobdir)) != 0 || path[strlen(jobdir)] != '.';
		bad |= (access(path, R_OK) != 0) << 1;
		bad |= (pol.nnotes != 1 || !strstr(pol.notes[0], "not used")) << 2;
		bad |= (tt_topo_file_remove(&e.cfg, &dir, path, &err) != 0 || access(path, F_OK) == 0) << 3;
		_exit(bad);
	}
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT(WIFEXITED(status));
	CU_ASSERT_EQUAL(WEXITSTATUS(status), 0);
	CU_ASSERT_EQUAL(entries(jobdir), 1);
	CU_ASSERT_EQUAL(slurp(kept, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "roots");
	teardown(&e);
}

static void test_removal_only_through_the_checked_directory(void)
{
	char jobdir[256], moved[256], victim[256], kept[PATH_MAX], path[PATH_MAX], buf[64];
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	struct env e;
	tt_err err;
	int fd;

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(jobdir, sizeof(jobdir), "%s/traintopo.5", e.base);
	snprintf(moved, sizeof(moved), "%s/moved", e.base);
	snprintf(victim, sizeof(victim), "%s/victim", e.base);
	snprintf(kept, sizeof(kept), "%s/nccl-topo.2.xml", victim);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 5, 2, path, sizeof(path), &dir, &pol, &err), 0);
	/* During the step the user moves the directory away and links a victim's in its place. */
	CU_ASSERT_EQUAL_FATAL(mkdir(victim, 0755), 0);
	fd = open(kept, O_WRONLY | O_CREAT, 0644);
	CU_ASSERT_EQUAL(write(fd, "precious", 8), 8);
	close(fd);
	CU_ASSERT_EQUAL_FATAL(rename(jobdir, moved), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(victim, jobdir), 0);
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &dir, path, &err), 0);
	CU_ASSERT_EQUAL(slurp(kept, buf, sizeof(buf)), 0); /* the victim's file is untouched */
	CU_ASSERT_STRING_EQUAL(buf, "precious");
	CU_ASSERT_EQUAL(entries(moved), 0); /* our file went, through the directory we checked */
	/* Without the open directory (ContainSpank: another fd table, the number means something
	 * else here) the name leads to a link: nothing is touched at all, not even that number. */
	CU_ASSERT_EQUAL(rmdir(moved), 0);
	CU_ASSERT_EQUAL(unlink(jobdir), 0);
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 5, 2, path, sizeof(path), &dir, &pol, &err), 0);
	close(dir.fd);
	dir.fd = open("/dev/null", O_RDONLY); /* the number now names another file of the process */
	fd = dir.fd;
	CU_ASSERT_EQUAL_FATAL(rename(jobdir, moved), 0);
	CU_ASSERT_EQUAL_FATAL(symlink(victim, jobdir), 0);
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &dir, path, &err), 0);
	CU_ASSERT_EQUAL(access(kept, F_OK), 0);
	CU_ASSERT_EQUAL(entries(moved), 1);
	CU_ASSERT_NOT_EQUAL(fcntl(fd, F_GETFD), -1); /* not closed: it was not the directory */
	close(fd);
	teardown(&e);
}

static void test_probe_failure_leaves_nothing(void)
{
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX];
	struct env e;
	tt_err err;

	setup(&e, "hwloc-crash.xml");
	CU_ASSERT_EQUAL(tt_topo_file_create(&e.cfg, 11, 0, path, sizeof(path), &dir, &pol, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "crashes libhwloc"));
	CU_ASSERT_EQUAL(entries(e.base), 0);
	CU_ASSERT_EQUAL(dir.fd, -1);
	teardown(&e);
}

/* A node with no NVIDIA GPU and no RDMA NIC: the probe writes no file and says what it found, so
 * the step gets no NCCL_TOPO_FILE (rather than a file with one <cpu>) and that one line. */
static void test_nothing_to_describe_gets_no_file(void)
{
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX];
	struct env e;
	tt_err err;

	setup(&e, "amd-mi250x-node.xml");
	CU_ASSERT_EQUAL(tt_topo_file_create(&e.cfg, 12, 0, path, sizeof(path), &dir, &pol, &err), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "has no NVIDIA GPU and no RDMA NIC (found 8 GPUs 1002:7408, "
					       "NICs hsn0 hsn1 hsn2 hsn3 without RDMA): no NCCL topology file "
					       "written, NCCL_TOPO_FILE is not set"));
	CU_ASSERT_EQUAL(entries(e.base), 0);
	CU_ASSERT_EQUAL(dir.fd, -1);
	teardown(&e);
}

static void test_probe_warnings_become_notes(void)
{
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX];
	struct env e;
	tt_err err;

	setup(&e, "cloud-efa-vm.xml");
	CU_ASSERT_EQUAL_FATAL(tt_topo_file_create(&e.cfg, 12, 0, path, sizeof(path), &dir, &pol, &err), 0);
	CU_ASSERT_EQUAL(pol.nnotes, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(pol.notes[0], "InfiniBand controller 0000:00:1f.0 has no RDMA device"));
	CU_ASSERT_STRING_EQUAL(pol.ib_hca, "=rdmap0s29,rdmap0s30");
	CU_ASSERT_EQUAL(tt_topo_file_remove(&e.cfg, &dir, path, &err), 0);
	teardown(&e);
}

/* The probe program missing (a login node's package set on a compute node), or one that answers
 * with something other than a report: the step runs without a file, the reason names it. */
static void probe_fails(const char *program, const char *want)
{
	struct tt_topo_dir dir;
	struct tt_node_policy pol;
	char path[PATH_MAX];
	struct env e;
	tt_err err = { "" };

	setup(&e, "dual-pcie-8gpu.xml");
	snprintf(e.cfg.probe, sizeof(e.cfg.probe), "%s", program);
	CU_ASSERT_EQUAL(tt_topo_file_create(&e.cfg, 13, 0, path, sizeof(path), &dir, &pol, &err), -1);
	if (!strstr(err.msg, want))
		fprintf(stderr, "\ngot  '%s'\nwant '%s'\n", err.msg, want);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
	CU_ASSERT_EQUAL(entries(e.base), 0);
	CU_ASSERT_EQUAL(dir.fd, -1);
	teardown(&e);
}

static void test_missing_or_foreign_probe(void)
{
	probe_fails("/nonexistent/train-topo", "cannot run the topology probe /nonexistent/train-topo: No "
		    "such file or directory (install traintopo's train-topo on this node, or name it with "
		    "plugstack probe=PATH)");
	probe_fails("/bin/echo", "topology probe report line 1: 'probe --output /proc/self/fd/");
	probe_fails("/bin/true", "topology probe report is empty");
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("topo_file", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "made private, written, removed", test_made_private_written_and_removed);
	CU_add_test(s, "a second step shares the directory", test_second_step_shares_the_directory);
	CU_add_test(s, "foreign directories are never used", test_foreign_directories_are_never_used);
	CU_add_test(s, "another user's private directory is not used",
		    test_another_users_private_directory_is_not_used);
	CU_add_test(s, "a user passes over another user's directory",
		    test_a_user_passes_over_another_users_directory);
	CU_add_test(s, "removal only through the checked directory",
		    test_removal_only_through_the_checked_directory);
	CU_add_test(s, "probe failure leaves nothing", test_probe_failure_leaves_nothing);
	CU_add_test(s, "a task with a private /tmp gets a copy",
		    test_task_view_copies_into_a_private_tmp);
	CU_add_test(s, "probe warnings become notes", test_probe_warnings_become_notes);
	CU_add_test(s, "nothing to describe gets no file", test_nothing_to_describe_gets_no_file);
	CU_add_test(s, "missing or foreign probe", test_missing_or_foreign_probe);
	return 0;
}

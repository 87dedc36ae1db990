/* SPDX-License-Identifier: MIT */
/* test_spawn.c — the edge where train-run meets the kernel: finding PROGRAM like execvp does
 * (127 missing, 126 not executable, empty PATH entries) and starting one worker with its env
 * contract, restart count, own process group, CPU binding, output pipe and exit status. */
#include "cunit_main.h"
#include "spawn.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/test_spawn.XXXXXX";

/* What the workers of run_worker share; tests change it. */
static struct tt_group_env group = { .run_id = "job42", .role = "trainer", .max_restarts = 3,
				     .topo_set = "NCCL_TOPO_FILE" };

static void make_file(const char *sub, const char *name, mode_t mode)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, sub);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%s/%s", dir, sub, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(write(fd, "#!/bin/sh\n", 10) == 10);
	close(fd);
	chmod(path, mode);
}

static int setup(void)
{
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_resolve_like_execvp(void)
{
	char path_env[3 * PATH_MAX], out[PATH_MAX], want[PATH_MAX];
	tt_err err;

	make_file("a", "prog", 0644);	/* found first but not executable: keep looking */
	make_file("b", "prog", 0755);
	snprintf(path_env, sizeof(path_env), "%s/a:%s/b", dir, dir);
	CU_ASSERT_EQUAL(tt_resolve_program("prog", path_env, out, sizeof(out), &err), 0);
	snprintf(want, sizeof(want), "%s/b/prog", dir);
	CU_ASSERT_STRING_EQUAL(out, want);

	snprintf(path_env, sizeof(path_env), "%s/a", dir);
	CU_ASSERT_EQUAL(tt_resolve_program("prog", path_env, out, sizeof(out), &err), 126);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'prog' found in PATH but not executable"));

	CU_ASSERT_EQUAL(tt_resolve_program("nope-xyz", path_env, out, sizeof(out), &err), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'nope-xyz' not found in PATH="));
	CU_ASSERT_EQUAL(tt_resolve_program("./nope-xyz", path_env, out, sizeof(out), &err), 127);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'./nope-xyz' not found"));
	snprintf(want, sizeof(want), "%s/a/prog", dir);
	CU_ASSERT_EQUAL(tt_resolve_program(want, path_env, out, sizeof(out), &err), 126);
	CU_ASSERT_EQUAL(tt_resolve_program(dir, path_env, out, sizeof(out), &err), 126);	/* a directory */
	CU_ASSERT_EQUAL(tt_resolve_program("", path_env, out, sizeof(out), &err), 127);
}

static void test_empty_path_entry_is_cwd(void)
{
	char old[PATH_MAX], sub[PATH_MAX], out[PATH_MAX];

	make_file("c", "here", 0755);
	snprintf(sub, sizeof(sub), "%s/c", dir);
	CU_ASSERT_FATAL(getcwd(old, sizeof(old)) != NULL);
	CU_ASSERT_FATAL(chdir(sub) == 0);
	CU_ASSERT_EQUAL(tt_resolve_program("here", "/nonexistent:", out, sizeof(out), NULL), 0);
	CU_ASSERT_STRING_EQUAL(out, "./here");
	CU_ASSERT_EQUAL(chdir(old), 0);
}

/* Starts sh -c script as worker rank 5 and returns what it printed and its wait status. */
static int run_worker(const char *script, const cpu_set_t *cpus, char *buf, size_t len, int *status)
{
	char *argv[] = { "sh", "-c", (char *)script, NULL };
	struct tt_task_env env;
	struct tt_spawn_req req;
	sigset_t mask;
	int p[2];
	ssize_t n, got = 0;
	pid_t pid;

	memset(&env, 0, sizeof(env));
	env.rank = 5;
	env.world_size = 8;
	env.local_rank = 1;
	env.local_world_size = 4;
	env.node_rank = 1;
	env.nnodes = 2;
	snprintf(env.master_addr, sizeof(env.master_addr), "n1");
	env.master_port = 29511;
	snprintf(env.cuda_visible_devices, sizeof(env.cuda_visible_devices), "1");
	env.omp_num_threads = 3;
	CU_ASSERT_FATAL(pipe(p) == 0);
	sigprocmask(SIG_SETMASK, NULL, &mask);
	memset(&req, 0, sizeof(req));
	req.path = "/bin/sh";
	req.argv = argv;
	req.env = &env;
	req.group = &group;
	req.restart_count = 2;
	req.cpus = cpus;
	req.nccl_ib_hca = "=mlx5_1:1";
	req.ckpt_exit = "42";
	req.out_fd = p[1];
	req.err_fd = p[1];
	req.sigmask = &mask;
	pid = tt_spawn_worker(&req, NULL);
	close(p[1]);
	CU_ASSERT_FATAL(pid > 0);
	while ((n = read(p[0], buf + got, len - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(p[0]);
	CU_ASSERT_EQUAL(waitpid(pid, status, 0), pid);
	return pid;
}

static void test_worker_env_group_and_status(void)
{
	char out[4096], want[256];
	int status;
	pid_t pid = run_worker("echo $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $GROUP_RANK "
			       "$NNODES $MASTER_ADDR $MASTER_PORT $CUDA_VISIBLE_DEVICES $OMP_NUM_THREADS "
			       "$TRAIN_RESTART_COUNT $NCCL_IB_HCA $TRAIN_TOPO_CKPT_EXIT; "
			       "echo pgrp=$(cut -d' ' -f5 /proc/$$/stat) pid=$$; exit 7",
			       NULL, out, sizeof(out), &status);

	CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7);
	CU_ASSERT_PTR_NOT_NULL(strstr(out, "5 8 1 4 1 1 2 n1 29511 1 3 2 =mlx5_1:1 42\n"));
	snprintf(want, sizeof(want), "pgrp=%d pid=%d\n", (int)pid, (int)pid);	/* leads its own group */
	CU_ASSERT_PTR_NOT_NULL(strstr(out, want));
}

/* torchrun's variables (local_elastic_agent.py) and TRAIN_TOPO_SET. */
static void test_worker_torchrun_env(void)
{
	char out[4096];
	int status;

	run_worker("echo $TORCHELASTIC_RUN_ID $TORCHELASTIC_RESTART_COUNT $TORCHELASTIC_MAX_RESTARTS "
		   "$TORCHELASTIC_USE_AGENT_STORE $ROLE_NAME $ROLE_RANK $ROLE_WORLD_SIZE $GROUP_RANK "
		   "$GROUP_WORLD_SIZE $TRAIN_TOPO_SET", NULL, out, sizeof(out), &status);
	CU_ASSERT_STRING_EQUAL(out, "job42 2 3 False trainer 5 8 1 2 "
			       "NCCL_TOPO_FILE,OMP_NUM_THREADS,CUDA_VISIBLE_DEVICES,NCCL_IB_HCA\n");
}

/* NCCL_IB_HCA the plugin set for the launcher task is replaced; the user's own is kept. */
static void test_worker_nccl_defaults(void)
{
	char out[4096];
	int status;

	setenv("NCCL_IB_HCA", "=mlx5_0:1", 1);	/* as the plugin set it for GPU 0 */
	setenv("NCCL_SOCKET_IFNAME", "=ib0", 1);
	run_worker("echo \"$NCCL_IB_HCA|${NCCL_SOCKET_IFNAME-unset}\"", NULL, out, sizeof(out), &status);
	CU_ASSERT_STRING_EQUAL(out, "=mlx5_1:1|unset\n");
	group.user_nccl_ib_hca = group.user_nccl_socket_ifname = 1;
	run_worker("echo \"$NCCL_IB_HCA|$NCCL_SOCKET_IFNAME|$TRAIN_TOPO_SET\"", NULL, out, sizeof(out),
		   &status);
	CU_ASSERT_STRING_EQUAL(out, "=mlx5_0:1|=ib0|NCCL_TOPO_FILE,OMP_NUM_THREADS,CUDA_VISIBLE_DEVICES\n");
	group.user_nccl_ib_hca = group.user_nccl_socket_ifname = 0;
	unsetenv("NCCL_IB_HCA");
	unsetenv("NCCL_SOCKET_IFNAME");
}

static void test_worker_bound_to_its_cpus(void)
{
	cpu_set_t allowed, one;
	char out[4096], want[64];
	int status, cpu;

	CU_ASSERT_FATAL(sched_getaffinity(0, sizeof(allowed), &allowed) == 0);
	for (cpu = CPU_SETSIZE - 1; cpu >= 0 && !CPU_ISSET(cpu, &allowed); cpu--)
		;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	run_worker("grep Cpus_allowed_list /proc/self/status", &one, out, sizeof(out), &status);
	snprintf(want, sizeof(want), "Cpus_allowed_list:\t%d\n", cpu);
	CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_exec_failure_is_126(void)
{
	char *argv[] = { "x", NULL };
	struct tt_task_env env;
	struct tt_spawn_req req;
	char path[PATH_MAX];
	sigset_t mask;
	int status, devnull = open("/dev/null", O_WRONLY);
	pid_t pid;

	make_file("d", "noexec", 0644);
	snprintf(path, sizeof(path), "%s/d/noexec", dir);
	memset(&env, 0, sizeof(env));
	sigprocmask(SIG_SETMASK, NULL, &mask);
	memset(&req, 0, sizeof(req));
	req.path = path;
	req.argv = argv;
	req.env = &env;
	req.group = &group;
	req.out_fd = req.err_fd = devnull;
	req.ckpt_exit = "99";
	req.sigmask = &mask;
	pid = tt_spawn_worker(&req, NULL);
	CU_ASSERT_FATAL(pid > 0);
	CU_ASSERT_EQUAL(waitpid(pid, &status, 0), pid);
	CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 126);
	close(devnull);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("spawn", setup, teardown);

	if (!s)
		return -1;
	CU_add_test(s, "resolve like execvp", test_resolve_like_execvp);
	CU_add_test(s, "empty PATH entry is the current directory", test_empty_path_entry_is_cwd);
	CU_add_test(s, "worker env, process group, status", test_worker_env_group_and_status);
	CU_add_test(s, "worker bound to its CPUs", test_worker_bound_to_its_cpus);
	CU_add_test(s, "torchrun's variables", test_worker_torchrun_env);
	CU_add_test(s, "NCCL defaults: train-run's or the user's", test_worker_nccl_defaults);
	CU_add_test(s, "exec failure is 126", test_exec_failure_is_126);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_options.c — train-run's command line: torchrun spellings, defaults, PROGRAM boundary,
 * and a clear error for every bad input. */
#include "cunit_main.h"
#include "options.h"

#include <string.h>

#define ARGC(a) ((int)(sizeof(a) / sizeof((a)[0])) - 1)

static void test_defaults_and_program(void)
{
	char *argv[] = { "train-run", "python3", "train.py", "--lr", "3", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(argv), argv, NULL), 0);
	CU_ASSERT_EQUAL(o.nproc_mode, TT_NPROC_DEFAULT);
	CU_ASSERT_EQUAL(o.nnodes_min, -1);
	CU_ASSERT_EQUAL(o.nnodes_max, -1);
	CU_ASSERT_EQUAL(o.node_rank, -1);
	CU_ASSERT_EQUAL(o.grace_s, 30);
	CU_ASSERT_STRING_EQUAL(o.role, "default");
	CU_ASSERT_PTR_NULL(o.run_id);
	CU_ASSERT_PTR_NULL(o.redirects);
	CU_ASSERT_EQUAL(o.max_restarts, 0);
	CU_ASSERT_FALSE(o.signal_worker_only);
	CU_ASSERT_PTR_NULL(o.master_addr);
	CU_ASSERT_EQUAL(o.argc, 4);
	CU_ASSERT_STRING_EQUAL(o.argv[0], "python3");
	CU_ASSERT_STRING_EQUAL(o.argv[2], "--lr");	/* PROGRAM's options are left alone */
	CU_ASSERT_PTR_NULL(o.argv[4]);
}

static void test_torchrun_spellings(void)
{
	char *argv[] = { "train-run", "--nproc_per_node=4", "--nnodes", "2", "--node_rank=1",
		"--master_addr", "n1", "--master-port=29500", "--max_restarts", "3", "--grace", "5",
		"--tag-output", "--rank0-only", "--topology", "node.xml", "--signal-scope=worker", "--", "prog", "-x",
		NULL };
	struct tt_run_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(argv), argv, &err), 0);
	CU_ASSERT_EQUAL(o.nproc_mode, TT_NPROC_COUNT);
	CU_ASSERT_EQUAL(o.nproc, 4);
	CU_ASSERT_EQUAL(o.nnodes_min, 2);
	CU_ASSERT_EQUAL(o.nnodes_max, 2);
	CU_ASSERT_EQUAL(o.node_rank, 1);
	CU_ASSERT_STRING_EQUAL(o.master_addr, "n1");
	CU_ASSERT_EQUAL(o.master_port, 29500);
	CU_ASSERT_EQUAL(o.max_restarts, 3);
	CU_ASSERT_EQUAL(o.grace_s, 5);
	CU_ASSERT_TRUE(o.tag_output);
	CU_ASSERT_TRUE(o.rank0_only);
	CU_ASSERT_STRING_EQUAL(o.topology, "node.xml");
	CU_ASSERT_TRUE(o.signal_worker_only);
	CU_ASSERT_EQUAL(o.argc, 2);
	CU_ASSERT_STRING_EQUAL(o.argv[0], "prog");
}

/* Every torchrun flag, in both spellings where torchrun has both, with torchrun's meaning. */
static void test_torchrun_flags(void)
{
	char *dash[] = { "train-run", "--rdzv-backend", "c10d", "--rdzv-endpoint", "n1:29400",
		"--rdzv-id=job42", "--rdzv-conf", "join_timeout=900,read_timeout=60", "--nnodes", "1:2",
		"-m", "--monitor-interval", "0.5", "--start-method", "fork", "--role", "trainer",
		"--log-dir", "/tmp/logs", "-r", "3", "-t", "0:1,1:2", "--local-ranks-filter", "0,2",
		"--local-addr", "10.0.0.1", "pkg.train", "--lr", "1", NULL };
	char *under[] = { "train-run", "--rdzv_backend=static", "--rdzv_endpoint=[::1]",
		"--rdzv_id", "7", "--rdzv_conf=timeout=5", "--monitor_interval=5", "--start_method=spawn",
		"--log_dir=d", "--redirects=0:3", "--tee", "1", "--local_ranks_filter=1",
		"--local_addr=h", "--run_path", "--max_restarts=2", "script", NULL };
	char *helpv[] = { "train-run", "-h", NULL };
	char *versionv[] = { "train-run", "-V", NULL };
	struct tt_run_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(dash), dash, &err), 0);
	CU_ASSERT_STRING_EQUAL(o.endpoint_host, "n1");
	CU_ASSERT_EQUAL(o.endpoint_port, 29400);
	CU_ASSERT_STRING_EQUAL(o.run_id, "job42");
	CU_ASSERT_EQUAL(o.nnodes_min, 1);
	CU_ASSERT_EQUAL(o.nnodes_max, 2);
	CU_ASSERT_TRUE(o.module);
	CU_ASSERT_STRING_EQUAL(o.role, "trainer");
	CU_ASSERT_STRING_EQUAL(o.log_dir, "/tmp/logs");
	CU_ASSERT_STRING_EQUAL(o.local_addr, "10.0.0.1");
	CU_ASSERT_STRING_EQUAL(o.argv[0], "pkg.train");
	CU_ASSERT_TRUE(tt_run_wants_python(&o));	/* -m: python3 -m pkg.train */
	/* -r 3: both streams of every local rank; -t 0:1,1:2: stdout of 0, stderr of 1. */
	CU_ASSERT_EQUAL(tt_run_std_for(o.redirects, 5), 3);
	CU_ASSERT_EQUAL(tt_run_std_for(o.tee, 0), 1);
	CU_ASSERT_EQUAL(tt_run_std_for(o.tee, 1), 2);
	CU_ASSERT_EQUAL(tt_run_std_for(o.tee, 2), 0);
	CU_ASSERT_TRUE(tt_run_console_shows(o.local_ranks_filter, 0));
	CU_ASSERT_FALSE(tt_run_console_shows(o.local_ranks_filter, 1));
	CU_ASSERT_TRUE(tt_run_console_shows(o.local_ranks_filter, 2));
	CU_ASSERT_TRUE(tt_run_console_shows(NULL, 7));

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(under), under, &err), 0);
	CU_ASSERT_STRING_EQUAL(o.endpoint_host, "::1");
	CU_ASSERT_EQUAL(o.endpoint_port, 0);
	CU_ASSERT_STRING_EQUAL(o.run_id, "7");
	CU_ASSERT_EQUAL(tt_run_std_for(o.redirects, 0), 3);
	CU_ASSERT_EQUAL(tt_run_std_for(o.redirects, 1), 0);
	CU_ASSERT_EQUAL(tt_run_std_for(o.tee, 4), 1);
	CU_ASSERT_TRUE(o.run_path);
	CU_ASSERT_EQUAL(o.max_restarts, 2);
	CU_ASSERT_TRUE(tt_run_wants_python(&o));	/* --run-path: whatever the name */

	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(helpv), helpv, &err), 0);
	CU_ASSERT_TRUE(o.help);
	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(versionv), versionv, &err), 0);
	CU_ASSERT_TRUE(o.version);
}

/* A rank list naming a local rank the node does not have selects nothing: refused at exactly
 * the worker count (rank nworkers - 1 is the last one accepted). */
static void test_local_ranks_beyond_the_workers_refused(void)
{
	char *filter[] = { "train-run", "--local-ranks-filter", "0,7", "p", NULL };
	char *tee[] = { "train-run", "--tee", "0:3,3:1", "p", NULL };
	char *all[] = { "train-run", "--redirects", "3", "p", NULL };
	struct tt_run_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(filter), filter, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 8, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 7, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--local-ranks-filter '0,7': local rank 7 does not exist here: "
					      "this node runs 7 workers (local ranks 0-6)"));
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 1, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "runs 1 worker (local rank 0)"));

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(tee), tee, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 4, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 3, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--tee '0:3,3:1': local rank 3"));

	/* A plain std value applies to every rank: no rank list to check. */
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(all), all, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_local_ranks(&o, 1, &err), 0);
}

static void test_nproc_words(void)
{
	char *gpu[] = { "train-run", "--nproc-per-node", "gpu", "p", NULL };
	char *cpu[] = { "train-run", "--nproc-per-node=cpu", "p", NULL };
	char *aut[] = { "train-run", "--nproc_per_node", "auto", "p", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(gpu), gpu, NULL), 0);
	CU_ASSERT_EQUAL(o.nproc_mode, TT_NPROC_GPU);
	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(cpu), cpu, NULL), 0);
	CU_ASSERT_EQUAL(o.nproc_mode, TT_NPROC_CPU);
	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(aut), aut, NULL), 0);
	CU_ASSERT_EQUAL(o.nproc_mode, TT_NPROC_AUTO);
}

/* Parses argv, expects failure and the message to contain want. */
static void expect_error(char **argv, int argc, const char *want)
{
	struct tt_run_opts o;
	tt_err err;

	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_run_parse_args(&o, argc, argv, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, want));
}

static void test_bad_inputs_named(void)
{
	char *unknown[] = { "train-run", "--frobnicate", "p", NULL };
	char *cluster[] = { "train-run", "-xy", "p", NULL };
	char *noval[] = { "train-run", "--grace", NULL };
	char *badn[] = { "train-run", "--nproc-per-node", "0", "p", NULL };
	char *badword[] = { "train-run", "--nproc-per-node", "gpus", "p", NULL };
	char *badport[] = { "train-run", "--master-port", "70000", "p", NULL };
	char *trailing[] = { "train-run", "--grace", "5s", "p", NULL };
	char *rank[] = { "train-run", "--nnodes", "2", "--node-rank", "2", "p", NULL };
	char *noprog[] = { "train-run", "--tag-output", NULL };
	char *scope[] = { "train-run", "--signal-scope", "all", "p", NULL };
	char *noprog2[] = { "train-run", "--", NULL };

	expect_error(unknown, ARGC(unknown), "unknown option '--frobnicate'");
	expect_error(cluster, ARGC(cluster), "unknown option '-x'");
	expect_error(noval, ARGC(noval), "'--grace' needs a value");
	expect_error(badn, ARGC(badn), "--nproc-per-node '0'");
	expect_error(badword, ARGC(badword), "--nproc-per-node 'gpus'");
	expect_error(badport, ARGC(badport), "--master-port '70000'");
	expect_error(trailing, ARGC(trailing), "--grace '5s'");
	expect_error(rank, ARGC(rank), "--node-rank 2");
	expect_error(noprog, ARGC(noprog), "no PROGRAM");
	expect_error(scope, ARGC(scope), "--signal-scope 'all'");
	expect_error(noprog2, ARGC(noprog2), "no PROGRAM");
}

/* --hang-timeout is repeatable: a fixed timeout, per-section ones, off; a bad value is named. */
static void test_hang_timeout(void)
{
	char *argv[] = { "train-run", "--hang-timeout", "12", "--hang_timeout=checkpoint=600", "--hang-timeout",
		"eval=0.5", "p", NULL };
	char *off[] = { "train-run", "--hang-timeout", "off", "p", NULL };
	char *bad[] = { "train-run", "--hang-timeout", "5m", "p", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(argv), argv, NULL), 0);
	CU_ASSERT_FALSE(o.hang.off);
	CU_ASSERT_EQUAL(o.hang.fixed_us, 12000000);
	CU_ASSERT_EQUAL(o.hang.nsections, 2);
	CU_ASSERT_STRING_EQUAL(o.hang.sections[0].name, "checkpoint");
	CU_ASSERT_EQUAL(o.hang.sections[0].timeout_us, 600000000);
	CU_ASSERT_STRING_EQUAL(o.hang.sections[1].name, "eval");
	CU_ASSERT_EQUAL(o.hang.sections[1].timeout_us, 500000);
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(off), off, NULL), 0);
	CU_ASSERT_TRUE(o.hang.off);
	expect_error(bad, ARGC(bad), "--hang-timeout '5m'");
}

/* --preflight is on by default; =off and =on say it; its fraction is a number in (0, 1]. */
static void test_preflight(void)
{
	char *dflt[] = { "train-run", "p", NULL };
	char *off[] = { "train-run", "--preflight=off", "--preflight-min-fraction", "0.25", "p", NULL };
	char *on[] = { "train-run", "--preflight=off", "--preflight", "p", NULL };
	char *word[] = { "train-run", "--preflight=no", "p", NULL };
	char *zero[] = { "train-run", "--preflight-min-fraction", "0", "p", NULL };
	char *big[] = { "train-run", "--preflight-min-fraction=1.5", "p", NULL };
	char *text[] = { "train-run", "--preflight-min-fraction=half", "p", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(dflt), dflt, NULL), 0);
	CU_ASSERT_TRUE(o.preflight);
	CU_ASSERT_DOUBLE_EQUAL(o.preflight_min_fraction, 0.5, 0);
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(off), off, NULL), 0);
	CU_ASSERT_FALSE(o.preflight);
	CU_ASSERT_DOUBLE_EQUAL(o.preflight_min_fraction, 0.25, 0);
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(on), on, NULL), 0);
	CU_ASSERT_TRUE(o.preflight);
	CU_ASSERT_STRING_EQUAL(o.argv[0], "p");
	expect_error(word, ARGC(word), "--preflight='no': expected on or off");
	expect_error(zero, ARGC(zero), "--preflight-min-fraction '0': expected a number above 0");
	expect_error(big, ARGC(big), "--preflight-min-fraction '1.5'");
	expect_error(text, ARGC(text), "--preflight-min-fraction 'half'");
}

static void test_spares(void)
{
	char *dflt[] = { "train-run", "p", NULL };
	char *two[] = { "train-run", "--nnodes", "3", "--spares", "2", "p", NULL };
	char *slurm[] = { "train-run", "--spares=1", "p", NULL };
	char *neg[] = { "train-run", "--spares", "-1", "p", NULL };
	char *all[] = { "train-run", "--nnodes", "2", "--spares", "2", "p", NULL };
	char *range[] = { "train-run", "--nnodes", "2:4", "--spares", "2", "p", NULL };
	char *one[] = { "train-run", "--nnodes", "1", "--spares", "1", "p", NULL };
	char *text[] = { "train-run", "--spares", "some", "p", NULL };
	struct tt_run_opts o;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(dflt), dflt, NULL), 0);
	CU_ASSERT_EQUAL(o.spares, 0);
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(two), two, NULL), 0);
	CU_ASSERT_EQUAL(o.spares, 2);
	/* Under Slurm the node count is known later: the same rule then (train_run.c). */
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(slurm), slurm, NULL), 0);
	CU_ASSERT_EQUAL(o.spares, 1);
	CU_ASSERT_EQUAL(tt_run_check_spares(1, 2, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_spares(0, 1, &err), 0);
	CU_ASSERT_EQUAL(tt_run_check_spares(3, 3, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--spares 3: must be below the launch's 3 nodes"));
	expect_error(neg, ARGC(neg), "--spares");
	expect_error(all, ARGC(all), "--spares 2: must be below the launch's 2 nodes");
	expect_error(range, ARGC(range), "--spares 2: must be below the launch's 2 nodes");
	expect_error(one, ARGC(one), "--spares 1 on a single node");
	expect_error(text, ARGC(text), "--spares");
}

static void test_bad_torchrun_flags_named(void)
{
	char *backend[] = { "train-run", "--rdzv-backend", "etcd", "p", NULL };
	char *endpoint[] = { "train-run", "--rdzv-endpoint", "n1:http", "p", NULL };
	char *v6[] = { "train-run", "--rdzv-endpoint", "::1:29400", "p", NULL };
	char *conf[] = { "train-run", "--rdzv-conf", "timeout", "p", NULL };
	char *range[] = { "train-run", "--nnodes", "3:2", "p", NULL };
	char *range2[] = { "train-run", "--nnodes", "1:", "p", NULL };
	char *method[] = { "train-run", "--start-method", "thread", "p", NULL };
	char *monitor[] = { "train-run", "--monitor-interval", "-1", "p", NULL };
	char *redir[] = { "train-run", "-r", "4", "p", NULL };
	char *tee[] = { "train-run", "--tee", "0:1,", "p", NULL };
	char *filter[] = { "train-run", "--local-ranks-filter", "a", "p", NULL };
	char *both[] = { "train-run", "--rdzv-endpoint", "a:1", "--master-addr", "b", "p", NULL };
	char *ports[] = { "train-run", "--rdzv-endpoint", "a:1", "--master-port", "2", "p", NULL };
	char *module[] = { "train-run", "-m", "--no-python", "p", NULL };
	char *short_unknown[] = { "train-run", "-x", "p", NULL };
	char *role[] = { "train-run", "--role", "", "p", NULL };

	expect_error(backend, ARGC(backend), "--rdzv-backend 'etcd': expected static or c10d");
	expect_error(endpoint, ARGC(endpoint), "--rdzv-endpoint 'n1:http'");
	expect_error(v6, ARGC(v6), "[IPv6]:PORT");
	expect_error(conf, ARGC(conf), "element 'timeout' is not KEY=VALUE");
	expect_error(range, ARGC(range), "--nnodes '3:2'");
	expect_error(range2, ARGC(range2), "--nnodes '1:'");
	expect_error(method, ARGC(method), "--start-method 'thread': expected spawn, fork or forkserver");
	expect_error(monitor, ARGC(monitor), "--monitor-interval '-1'");
	expect_error(redir, ARGC(redir), "--redirects '4'");
	expect_error(tee, ARGC(tee), "--tee '0:1,'");
	expect_error(filter, ARGC(filter), "--local-ranks-filter 'a'");
	expect_error(both, ARGC(both), "give one");
	expect_error(ports, ARGC(ports), "give one");
	expect_error(module, ARGC(module), "--module");
	expect_error(short_unknown, ARGC(short_unknown), "unknown option '-x'");
	expect_error(role, ARGC(role), "--role ''");
}

static void test_help_and_version_need_no_program(void)
{
	char *help[] = { "train-run", "--help", NULL };
	char *version[] = { "train-run", "--version", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(help), help, NULL), 0);
	CU_ASSERT_TRUE(o.help);
	CU_ASSERT_EQUAL(tt_run_parse_args(&o, ARGC(version), version, NULL), 0);
	CU_ASSERT_TRUE(o.version);
	CU_ASSERT_FALSE(o.help);	/* every parse starts from the defaults */
}

static void test_python_scripts(void)
{
	char *script[] = { "train-run", "--nproc-per-node=2", "train.py", "--lr", "1", NULL };
	char *plain[] = { "train-run", "--no_python", "train.py", NULL };
	char *binary[] = { "train-run", "--", "./train-mlp", NULL };
	char *dotpy[] = { "train-run", "--", ".py", NULL };
	struct tt_run_opts o;

	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(script), script, NULL), 0);
	CU_ASSERT_TRUE(tt_run_wants_python(&o));
	CU_ASSERT_STRING_EQUAL(o.argv[1], "--lr");	/* the script's options stay its own */
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(plain), plain, NULL), 0);
	CU_ASSERT_FALSE(tt_run_wants_python(&o));
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(binary), binary, NULL), 0);
	CU_ASSERT_FALSE(tt_run_wants_python(&o));
	CU_ASSERT_EQUAL_FATAL(tt_run_parse_args(&o, ARGC(dotpy), dotpy, NULL), 0);
	CU_ASSERT_FALSE(tt_run_wants_python(&o));
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("options", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "defaults and PROGRAM", test_defaults_and_program);
	CU_add_test(s, "torchrun spellings", test_torchrun_spellings);
	CU_add_test(s, "nproc words", test_nproc_words);
	CU_add_test(s, "local ranks beyond the workers refused", test_local_ranks_beyond_the_workers_refused);
	CU_add_test(s, "torchrun flags", test_torchrun_flags);
	CU_add_test(s, "bad torchrun flags named", test_bad_torchrun_flags_named);
	CU_add_test(s, "bad inputs named", test_bad_inputs_named);
	CU_add_test(s, "--hang-timeout", test_hang_timeout);
	CU_add_test(s, "--preflight", test_preflight);
	CU_add_test(s, "--spares", test_spares);
	CU_add_test(s, "help and version", test_help_and_version_need_no_program);
	CU_add_test(s, "python scripts", test_python_scripts);
	return 0;
}

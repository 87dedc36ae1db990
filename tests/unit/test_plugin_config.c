/* SPDX-License-Identifier: MIT */
/* test_plugin_config.c — plugstack.conf arguments and --train-topo values: defaults, every
 * key, and every error (position, bad text and the valid keys or values named). */
#include "config.h"
#include "cunit_main.h"
#include "plugin_config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void test_defaults(void)
{
	struct tt_plugin_config cfg;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_plugin_config_parse(0, NULL, &cfg, &err), 0);
	CU_ASSERT_EQUAL(cfg.default_mode, TT_MODE_OFF);
	CU_ASSERT_EQUAL(cfg.ports.lo, 29500);
	CU_ASSERT_EQUAL(cfg.ports.hi, 32499);
	CU_ASSERT_STRING_EQUAL(cfg.topo_dir, "/tmp");
	CU_ASSERT_STRING_EQUAL(cfg.hwloc_xml, "");
	CU_ASSERT_FALSE(cfg.strict);
	CU_ASSERT_EQUAL(cfg.signal, SIGUSR1);
	CU_ASSERT_STRING_EQUAL(cfg.probe, TT_PROBE_DEFAULT);
	CU_ASSERT_EQUAL(cfg.probe[0], '/');
}

static void test_every_key(void)
{
	char *argv[] = {"default=on", "port_range=20000-20999", "topo_dir=/local/scratch",
			"hwloc_xml=/etc/traintopo/node.xml", "strict=yes", "signal=USR2",
			"probe=/opt/traintopo/bin/train-topo"};
	struct tt_plugin_config cfg;
	tt_err err;
	char dir[64];

	CU_ASSERT_EQUAL_FATAL(tt_plugin_config_parse(7, argv, &cfg, &err), 0);
	CU_ASSERT_EQUAL(cfg.default_mode, TT_MODE_FULL);
	CU_ASSERT(cfg.ports.lo == 20000 && cfg.ports.hi == 20999);
	CU_ASSERT_STRING_EQUAL(cfg.topo_dir, "/local/scratch");
	CU_ASSERT_STRING_EQUAL(cfg.hwloc_xml, "/etc/traintopo/node.xml");
	CU_ASSERT_TRUE(cfg.strict);
	CU_ASSERT_EQUAL(cfg.signal, SIGUSR2);
	CU_ASSERT_STRING_EQUAL(cfg.probe, "/opt/traintopo/bin/train-topo");
	CU_ASSERT_EQUAL(tt_plugin_topo_dir(&cfg, 4242, dir, sizeof(dir), &err), 0);
	CU_ASSERT_STRING_EQUAL(dir, "/local/scratch/traintopo.4242");
	CU_ASSERT_EQUAL(tt_plugin_topo_dir(&cfg, 4242, dir, 20, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "longer than 19 characters"));
}

/* The parsed value of one argument, checked through a field picked by the caller. */
static struct tt_plugin_config one(char *arg)
{
	struct tt_plugin_config cfg;
	tt_err err;

	if (tt_plugin_config_parse(1, &arg, &cfg, &err) != 0)
		CU_FAIL(err.msg);
	return cfg;
}

static void test_values(void)
{
	CU_ASSERT_EQUAL(one("default=off").default_mode, TT_MODE_OFF);
	CU_ASSERT_EQUAL(one("default=env").default_mode, TT_MODE_ENV);
	CU_ASSERT_EQUAL(one("default=full").default_mode, TT_MODE_FULL);
	CU_ASSERT_FALSE(one("strict=no").strict);
	CU_ASSERT_EQUAL(one("signal=SIGUSR1").signal, SIGUSR1);
	CU_ASSERT_EQUAL(one("signal=usr2").signal, SIGUSR2);
	CU_ASSERT_EQUAL(one("signal=TERM").signal, SIGTERM);
	CU_ASSERT_EQUAL(one("signal=sigurg").signal, SIGURG);
	CU_ASSERT_EQUAL(one("signal=HUP").signal, SIGHUP);
	CU_ASSERT_EQUAL(one("signal=INT").signal, SIGINT);
}

static void expect_error(int argc, char **argv, const char *want)
{
	struct tt_plugin_config cfg;
	tt_err err = {""};

	CU_ASSERT_EQUAL(tt_plugin_config_parse(argc, argv, &cfg, &err), -1);
	if (strcmp(err.msg, want) != 0)
		fprintf(stderr, "\ngot  '%s'\nwant '%s'\n", err.msg, want);
	CU_ASSERT_STRING_EQUAL(err.msg, want);
}

/* An absolute path that just fits topo_dir (PATH_MAX - 1 characters) is taken; one character more
 * is refused, not copied past the field. */
static void test_path_length_at_its_limit(void)
{
	struct tt_plugin_config cfg;
	size_t room = sizeof(cfg.topo_dir);
	char *arg = malloc(room + 16);
	tt_err err;

	CU_ASSERT_PTR_NOT_NULL_FATAL(arg);
	strcpy(arg, "topo_dir=/");
	memset(arg + 10, 'd', room - 2);
	arg[10 + room - 2] = '\0';	/* "/" + room - 2 characters: room - 1 in all */
	CU_ASSERT_EQUAL(tt_plugin_config_parse(1, &arg, &cfg, &err), 0);
	CU_ASSERT_EQUAL(strlen(cfg.topo_dir), room - 1);
	strcat(arg, "d");
	CU_ASSERT_EQUAL(tt_plugin_config_parse(1, &arg, &cfg, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "plugstack.conf argument 1 'topo_dir=/ddd"));
	free(arg);
}

static void test_errors(void)
{
	char *missing_eq[] = {"strict=yes", "verbose"};
	char *unknown[] = {"topo=/x"};
	char *dup[] = {"strict=yes", "signal=USR1", "strict=no"};
	char *empty[] = {"hwloc_xml="};
	char *bad_default[] = {"default=yes"};
	char *bad_strict[] = {"strict=true"};
	char *bad_signal[] = {"signal=KILL"};
	char *bad_signal_num[] = {"signal=10"};
	char *relative_dir[] = {"topo_dir=tmp/topo"};
	char *relative_xml[] = {"hwloc_xml=node.xml"};
	char *relative_probe[] = {"probe=train-topo"};
	char *bad_range[] = {"default=off", "port_range=30000-20000"};
	char *eq_first[] = {"=on"};

	expect_error(2, missing_eq, "plugstack.conf argument 2 'verbose' is not key=value: valid "
		     "keys are default, port_range, topo_dir, hwloc_xml, strict, signal, probe");
	expect_error(1, unknown, "plugstack.conf argument 1 'topo=/x': unknown key 'topo': valid "
		     "keys are default, port_range, topo_dir, hwloc_xml, strict, signal, probe");
	expect_error(3, dup, "plugstack.conf argument 3 'strict=no': strict was already given as "
		     "argument 1: give each key once");
	expect_error(1, empty, "plugstack.conf argument 1 'hwloc_xml=': empty value for hwloc_xml");
	expect_error(1, bad_default, "plugstack.conf argument 1 'default=yes': bad value for "
		     "default: use on, off, full or env");
	expect_error(1, bad_strict, "plugstack.conf argument 1 'strict=true': bad value for "
		     "strict: use yes or no");
	expect_error(1, bad_signal, "plugstack.conf argument 1 'signal=KILL': bad value for "
		     "signal: use USR1, USR2, HUP, INT, TERM or URG");
	expect_error(1, bad_signal_num, "plugstack.conf argument 1 'signal=10': bad value for "
		     "signal: use USR1, USR2, HUP, INT, TERM or URG");
	expect_error(1, relative_dir, "plugstack.conf argument 1 'topo_dir=tmp/topo': bad value "
		     "for topo_dir: use an absolute directory path");
	expect_error(1, relative_xml, "plugstack.conf argument 1 'hwloc_xml=node.xml': bad value "
		     "for hwloc_xml: use an absolute file path");
	expect_error(1, relative_probe, "plugstack.conf argument 1 'probe=train-topo': bad value "
		     "for probe: use an absolute program path");
	expect_error(2, bad_range, "plugstack.conf argument 2 'port_range=30000-20000': port range "
		     "'30000-20000' is not LO-HI with 1024 <= LO <= HI <= 65535 (e.g. 29500-32499)");
	expect_error(1, eq_first, "plugstack.conf argument 1 '=on': unknown key '': valid keys "
		     "are default, port_range, topo_dir, hwloc_xml, strict, signal, probe");
}

static void test_mode_parse(void)
{
	enum tt_mode m = TT_MODE_OFF;
	tt_err err;

	CU_ASSERT_EQUAL(tt_mode_parse(NULL, &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_FULL);
	m = TT_MODE_OFF;
	CU_ASSERT_EQUAL(tt_mode_parse("", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_FULL);
	CU_ASSERT_EQUAL(tt_mode_parse("env", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_ENV);
	CU_ASSERT_EQUAL(tt_mode_parse("off", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_OFF);
	CU_ASSERT_EQUAL(tt_mode_parse("full", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_FULL);
	CU_ASSERT_EQUAL(tt_mode_parse("Full", &m, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "--train-topo='Full' is not a mode: use full (the default "
			       "for --train-topo alone), env or off");
	CU_ASSERT_EQUAL(tt_mode_parse("on", &m, &err), -1);
	CU_ASSERT_STRING_EQUAL(tt_mode_name(TT_MODE_OFF), "off");
	CU_ASSERT_STRING_EQUAL(tt_mode_name(TT_MODE_ENV), "env");
	CU_ASSERT_STRING_EQUAL(tt_mode_name(TT_MODE_FULL), "full");
}

static void test_mode_from_env(void)
{
	enum tt_mode m = TT_MODE_OFF;
	tt_err err;

	CU_ASSERT_EQUAL(tt_mode_from_env("env", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_ENV);
	CU_ASSERT_EQUAL(tt_mode_from_env("full", &m, &err), 0);
	CU_ASSERT_EQUAL(m, TT_MODE_FULL);
	CU_ASSERT_EQUAL(tt_mode_from_env("garbage", &m, &err), -1);
	CU_ASSERT_STRING_EQUAL(err.msg, "TRAIN_TOPO_MODE='garbage' in the environment is not a mode: "
			       "use full, env or off (as for --train-topo=MODE), or unset it");
	CU_ASSERT_EQUAL(tt_mode_from_env("", &m, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "TRAIN_TOPO_MODE=''"));
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("plugin_config", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "defaults", test_defaults);
	CU_add_test(s, "every key", test_every_key);
	CU_add_test(s, "accepted values", test_values);
	CU_add_test(s, "errors name position, text and valid choices", test_errors);
	CU_add_test(s, "a path at its length limit", test_path_length_at_its_limit);
	CU_add_test(s, "--train-topo modes", test_mode_parse);
	CU_add_test(s, "TRAIN_TOPO_MODE from the environment", test_mode_from_env);
	return 0;
}

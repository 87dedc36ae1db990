/* SPDX-License-Identifier: MIT */
/* plugin_config.c — strict parsing of the plugin's plugstack.conf arguments and of
 * --train-topo[=MODE] (keys and defaults documented in plugin_config.h). */
#include "config.h"
#include "plugin_config.h"
#include "tt_signal.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>

#define VALID_KEYS "default, port_range, topo_dir, hwloc_xml, strict, signal, probe"

enum key { KEY_DEFAULT, KEY_PORT_RANGE, KEY_TOPO_DIR, KEY_HWLOC_XML, KEY_STRICT, KEY_SIGNAL, KEY_PROBE, NKEYS };

static const struct {
	const char *name;
	const char *valid;      /* for the "bad value" message */
} keys[NKEYS] = {
	[KEY_DEFAULT] = {"default", "on, off, full or env"},
	[KEY_PORT_RANGE] = {"port_range", "LO-HI"},
	[KEY_TOPO_DIR] = {"topo_dir", "an absolute directory path"},
	[KEY_HWLOC_XML] = {"hwloc_xml", "an absolute file path"},
	[KEY_STRICT] = {"strict", "yes or no"},
	[KEY_SIGNAL] = {"signal", NULL},	/* the checkpoint names of tt_signal.h */
	[KEY_PROBE] = {"probe", "an absolute program path"},
};

void tt_plugin_config_defaults(struct tt_plugin_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->default_mode = TT_MODE_OFF;
	cfg->ports.lo = TT_PORT_LO_DEFAULT;
	cfg->ports.hi = TT_PORT_HI_DEFAULT;
	snprintf(cfg->topo_dir, sizeof(cfg->topo_dir), "%s", TT_TOPO_DIR_DEFAULT);
	snprintf(cfg->probe, sizeof(cfg->probe), "%s", TT_PROBE_DEFAULT);
	cfg->strict = false;
	cfg->signal = SIGUSR1;
}

int tt_mode_parse(const char *s, enum tt_mode *m, tt_err *err)
{
	if (!s || !*s || strcmp(s, "full") == 0)
		*m = TT_MODE_FULL;
	else if (strcmp(s, "env") == 0)
		*m = TT_MODE_ENV;
	else if (strcmp(s, "off") == 0)
		*m = TT_MODE_OFF;
	else
		return tt_err_set(err, "--train-topo='%s' is not a mode: use full (the default for "
				  "--train-topo alone), env or off", s);
	return 0;
}

int tt_mode_from_env(const char *value, enum tt_mode *m, tt_err *err)
{
	if (!*value || tt_mode_parse(value, m, NULL) != 0)
		return tt_err_set(err, "TRAIN_TOPO_MODE='%s' in the environment is not a mode: use full, "
				  "env or off (as for --train-topo=MODE), or unset it", value);
	return 0;
}

const char *tt_mode_name(enum tt_mode m)
{
	switch (m) {
	case TT_MODE_OFF:
		return "off";
	case TT_MODE_ENV:
		return "env";
	case TT_MODE_FULL:
		return "full";
	}
	return "?";
}

static int parse_path(const char *value, char *dst, size_t len)
{
	if (value[0] != '/' || strlen(value) >= len)
		return -1;
	strcpy(dst, value);
	return 0;
}

static int parse_signal(const char *value, int *signo)
{
	int sig = tt_signal_by_name(value);

	if (sig < 0)
		return -1;
	*signo = sig;
	return 0;
}

/* Applies key k with value; -1 with err on a bad value (arg and pos for the message). */
static int apply(struct tt_plugin_config *cfg, enum key k, const char *value, int pos,
		 const char *arg, tt_err *err)
{
	char names[64];
	int ok = 0;

	switch (k) {
	case KEY_DEFAULT:
		ok = tt_mode_parse(strcmp(value, "on") == 0 ? "full" : value, &cfg->default_mode,
				   NULL) == 0;
		break;
	case KEY_PORT_RANGE:
		if (tt_port_range_parse(value, &cfg->ports, err) != 0)
			return tt_err_wrap(err, "plugstack.conf argument %d '%s'", pos, arg);
		ok = 1;
		break;
	case KEY_TOPO_DIR:
		ok = parse_path(value, cfg->topo_dir, sizeof(cfg->topo_dir)) == 0;
		break;
	case KEY_HWLOC_XML:
		ok = parse_path(value, cfg->hwloc_xml, sizeof(cfg->hwloc_xml)) == 0;
		break;
	case KEY_STRICT:
		ok = strcmp(value, "yes") == 0 || strcmp(value, "no") == 0;
		cfg->strict = strcmp(value, "yes") == 0;
		break;
	case KEY_SIGNAL:
		ok = parse_signal(value, &cfg->signal) == 0;
		break;
	case KEY_PROBE:
		ok = parse_path(value, cfg->probe, sizeof(cfg->probe)) == 0;
		break;
	case NKEYS:
		break;
	}
	if (ok)
		return 0;
	tt_signal_checkpoint_names(names, sizeof(names));
	return tt_err_set(err, "plugstack.conf argument %d '%s': bad value for %s: use %s", pos,
			  arg, keys[k].name, keys[k].valid ? keys[k].valid : names);
}

int tt_plugin_config_parse(int argc, char **argv, struct tt_plugin_config *cfg, tt_err *err)
{
	int seen[NKEYS] = {0};

	tt_plugin_config_defaults(cfg);
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		enum key k;

		if (!eq)
			return tt_err_set(err, "plugstack.conf argument %d '%s' is not key=value: "
					  "valid keys are " VALID_KEYS, i + 1, arg);
		for (k = 0; k < NKEYS; k++)
			if (strlen(keys[k].name) == (size_t)(eq - arg) &&
			    strncmp(arg, keys[k].name, (size_t)(eq - arg)) == 0)
				break;
		if (k == NKEYS)
			return tt_err_set(err, "plugstack.conf argument %d '%s': unknown key '%.*s': "
					  "valid keys are " VALID_KEYS, i + 1, arg,
					  (int)(eq - arg), arg);
		if (seen[k])
			return tt_err_set(err, "plugstack.conf argument %d '%s': %s was already given "
					  "as argument %d: give each key once", i + 1, arg,
					  keys[k].name, seen[k]);
		seen[k] = i + 1;
		if (!eq[1])
			return tt_err_set(err, "plugstack.conf argument %d '%s': empty value for %s",
					  i + 1, arg, keys[k].name);
		if (apply(cfg, k, eq + 1, i + 1, arg, err) != 0)
			return -1;
	}
	return 0;
}

int tt_plugin_topo_dir(const struct tt_plugin_config *cfg, uint32_t job_id, char *buf,
		       size_t len, tt_err *err)
{
	int n = snprintf(buf, len, "%s/traintopo.%u", cfg->topo_dir, job_id);

	if (n < 0 || (size_t)n >= len)
		return tt_err_set(err, "topology directory '%s/traintopo.%u' is longer than %zu "
				  "characters", cfg->topo_dir, job_id, len - 1);
	return 0;
}

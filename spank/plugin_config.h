/* SPDX-License-Identifier: MIT */
/* plugin_config.h — the SPANK plugin's settings: the strict parser of its plugstack.conf
 * arguments (`required /path/train_topo.so key=value ...`) and of the user's --train-topo[=MODE].
 * Pure (no Slurm headers), so every error message is unit-tested; named plugin_config, not
 * config, so it never shadows autoconf's config.h for files in spank/.
 *
 * Keys (each at most once):
 *   default=on|off|full|env  mode when the user gives no --train-topo (on = full; default off)
 *   port_range=LO-HI         MASTER_PORT range (default 29500-32499, see rendezvous.h)
 *   topo_dir=DIR             absolute base directory for NCCL topology files; the plugin writes
 *                            into DIR/traintopo.<jobid>/ (default base: /tmp, node-local and
 *                            job-private by that subdirectory, made 0700 by the job's user)
 *   hwloc_xml=PATH           absolute path of an hwloc XML to read instead of probing the node
 *   strict=yes|no            a topology failure fails the task (yes) or only warns (default no)
 *   signal=USR1|USR2|HUP|INT|TERM|URG  checkpoint signal relayed to the tasks (default USR1;
 *                            an optional SIG prefix and any letter case are accepted)
 *   probe=PATH               absolute path of the program that discovers the node (default
 *                            BINDIR/train-topo, or configure --with-train-topo=PATH; topo_file.h) */
#ifndef TT_PLUGIN_CONFIG_H
#define TT_PLUGIN_CONFIG_H

#include <limits.h>
#include <stdbool.h>

#include "layout.h"
#include "tt_err.h"

#define TT_TOPO_DIR_DEFAULT "/tmp"

/* What --train-topo asks for. */
enum tt_mode {
	TT_MODE_OFF,    /* the plugin does nothing for this job */
	TT_MODE_ENV,    /* rank env contract only, no topology file */
	TT_MODE_FULL,   /* env contract and NCCL topology file */
};

struct tt_plugin_config {
	enum tt_mode default_mode;
	struct tt_port_range ports;
	char topo_dir[PATH_MAX];
	char hwloc_xml[PATH_MAX];   /* "" = probe the node */
	bool strict;
	int signal;                 /* signal number, SIGUSR1 by default */
	char probe[PATH_MAX];       /* the topology probe program */
};

/* Fills cfg with the defaults above. */
void tt_plugin_config_defaults(struct tt_plugin_config *cfg);

/* Parses the plugin's plugstack.conf arguments (SPANK's argc/argv, without the plugin path) over
 * the defaults. -1 with err naming the argument's position (1-based) and text and listing the
 * valid keys or values: unknown key, missing '=', empty value, duplicate key, bad value. */
int tt_plugin_config_parse(int argc, char **argv, struct tt_plugin_config *cfg, tt_err *err);

/* Parses the value of --train-topo: NULL or "" (the option without a value) = full, "full",
 * "env", "off". -1 with err naming the text and the valid modes. */
int tt_mode_parse(const char *s, enum tt_mode *m, tt_err *err);

/* Parses TRAIN_TOPO_MODE as it arrives in an environment (the plugin sets it for nested steps;
 * users may too): "full", "env" or "off". -1 with err naming the variable and the valid modes
 * (the empty value too). */
int tt_mode_from_env(const char *value, enum tt_mode *m, tt_err *err);

/* Name of a mode as the option spells it ("off", "env", "full"). */
const char *tt_mode_name(enum tt_mode m);

/* DIR/traintopo.<job_id> for cfg's topo_dir into buf. -1 with err when it does not fit. */
int tt_plugin_topo_dir(const struct tt_plugin_config *cfg, uint32_t job_id, char *buf,
		       size_t len, tt_err *err);

#endif

/* SPDX-License-Identifier: MIT */
/* fuzz_plugin_config.c — the SPANK plugin's plugstack.conf arguments and --train-topo modes
 * (spank/plugin_config): the input is one plugstack.conf argument list, split at white space as
 * Slurm splits it. Each argument is also tried as a --train-topo value. Accepted settings must
 * be usable: a port range the formula accepts, absolute paths, a topology directory name that
 * fits or an error saying it does not. */
#include "plugin_config.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tt_plugin_config cfg;
	char *text = fuzz_cstr(data, size), dir[64];
	int argc;
	char **argv = fuzz_split(text, " \t\n", NULL, &argc);
	tt_err err = { "" };
	enum tt_mode mode;

	for (int i = 0; i < argc; i++)
		if (tt_mode_parse(argv[i], &mode, &err) == 0)
			FUZZ_CHECK(strcmp(tt_mode_name(mode), "?") != 0);
	if (tt_plugin_config_parse(argc, argv, &cfg, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
		goto out;
	}
	FUZZ_CHECK(cfg.ports.lo >= 1024 && cfg.ports.lo <= cfg.ports.hi);
	FUZZ_CHECK(cfg.topo_dir[0] == '/' && (cfg.hwloc_xml[0] == '\0' || cfg.hwloc_xml[0] == '/'));
	FUZZ_CHECK(strcmp(tt_mode_name(cfg.default_mode), "?") != 0 && cfg.signal > 0);
	if (tt_plugin_topo_dir(&cfg, (uint32_t)size * 2654435769u, dir, sizeof(dir), &err) == 0)
		FUZZ_CHECK(strncmp(dir, cfg.topo_dir, strlen(cfg.topo_dir)) == 0);
out:
	free(argv);
	free(text);
	return 0;
}

# spank/: the train_topo SPANK plugin. Pure parts (plugstack parser, relay rules, the topology
# file's life) live in a convenience library the unit tests link too; only the hook files
# include slurm/spank.h.
noinst_LTLIBRARIES += libttspank.la
libttspank_la_SOURCES = \
	spank/plugin_config.h spank/plugin_config.c \
	spank/proctree.h spank/proctree.c \
	spank/relay.h spank/relay.c \
	spank/topo_file.h spank/topo_file.c
libttspank_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank

spank_LTLIBRARIES += train_topo.la
train_topo_la_SOURCES = \
	spank/plugin.h spank/train_topo.c spank/local.c spank/remote.c
train_topo_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank $(SLURM_CPPFLAGS)
train_topo_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(top_srcdir)/spank/train_topo.map
train_topo_la_LIBADD = libttspank.la libtthw.la libttlayout.la libttbase.la
EXTRA_DIST += spank/train_topo.map
EXTRA_train_topo_la_DEPENDENCIES = $(top_srcdir)/spank/train_topo.map

# The plugin's sources against the headers of every Slurm release in ../shared (skips without it);
# the test reads the plugin's compiler and flags from print-plugin-compile.
TESTS += tests/slurm-headers.sh
dist_noinst_SCRIPTS += tests/slurm-headers.sh
print-plugin-compile:
	@echo '$(CC)'
	@echo '$(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(train_topo_la_CPPFLAGS) $(CPPFLAGS) $(AM_CFLAGS) $(CFLAGS)'
.PHONY: print-plugin-compile

# Example plugstack.conf fragment pointing at the installed plugin.
pkgdata_DATA = spank/plugstack.conf.example
CLEANFILES += spank/plugstack.conf.example
spank/plugstack.conf.example: Makefile
	$(AM_V_GEN)mkdir -p spank && { \
	  echo "# traintopo: enable with --train-topo (srun/sbatch/salloc); see train_topo(8)."; \
	  echo "# Arguments: default=on|off port_range=LO-HI topo_dir=DIR hwloc_xml=PATH strict=yes|no signal=USR1"; \
	  echo "required $(spankdir)/train_topo.so"; } >$@

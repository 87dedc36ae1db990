# SPDX-License-Identifier: MIT
# spank/: the train_topo SPANK plugin. Pure parts (plugstack parser, the topology file's life and
# its probe) live in a convenience library the unit tests link too (the signal relay is relay/'s);
# only the hook files include slurm/spank.h. The plugin links nothing but libc: hardware discovery
# runs in `train-topo probe` (topo_file.h), so srun, sbatch and salloc never load hwloc or verbs.
noinst_LTLIBRARIES += libttspank.la
libttspank_la_SOURCES = \
	spank/oci_spool.h spank/oci_spool.c \
	spank/plugin_config.h spank/plugin_config.c \
	spank/topo_file.h spank/topo_file.c
libttspank_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank

if BUILD_PLUGIN
spank_LTLIBRARIES += train_topo.la
train_topo_la_SOURCES = \
	spank/plugin.h spank/plugin.c spank/local.c spank/remote.c
train_topo_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank $(SLURM_CPPFLAGS)
train_topo_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared \
	-Wl,--version-script=$(top_srcdir)/spank/train_topo.map
train_topo_la_LIBADD = libttspank.la libttrelay.la libttlayout.la libttbase.la
EXTRA_train_topo_la_DEPENDENCIES = $(top_srcdir)/spank/train_topo.map

# The plugin's sources against the headers of every Slurm release in ../shared (skips without it);
# the test reads the plugin's compiler and flags from print-plugin-compile (below).
TESTS += tests/slurm-headers.sh
# The snippet that loads it: Debian's /etc/slurm/plugstack.conf includes plugstack.conf.d/*.conf
# (elsewhere add `include SYSCONFDIR/slurm/plugstack.conf.d/*.conf` to plugstack.conf once).
plugstack_DATA += spank/train_topo.conf
CLEANFILES += spank/train_topo.conf
spank/train_topo.conf: Makefile
	$(AM_V_GEN)mkdir -p spank && { \
	  echo "# traintopo: the SPANK plugin train_topo(8), --train-topo for srun, sbatch and salloc."; \
	  echo "# Arguments after the path (key=value): default=on|off port_range=LO-HI topo_dir=DIR"; \
	  echo "# hwloc_xml=PATH strict=yes|no signal=USR1 probe=PATH. Built for Slurm $(SLURM_VERSION_STRING):"; \
	  echo "# Slurm loads it only at that major.minor release; rebuild it for another."; \
	  echo "required $(spankdir)/train_topo.so"; } >$@

# Slurm loads the .so; libtool's .la beside Slurm's plugins is of no use to anyone (spankdir is
# installed by install-data: automake puts a user-defined directory there unless it says "exec").
install-data-hook:
	rm -f "$(DESTDIR)$(spankdir)/train_topo.la"
uninstall-hook:
	rm -f "$(DESTDIR)$(spankdir)/train_topo.so"

# What srun, sbatch and salloc load with the plugin: no hwloc, verbs or CUDA (readelf -d).
TESTS += tests/unit/plugin_deps.sh
endif
EXTRA_DIST += spank/train_topo.map
dist_noinst_SCRIPTS += tests/unit/plugin_deps.sh tests/slurm-headers.sh
print-plugin-compile:
	@echo '$(CC)'
	@echo '$(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(train_topo_la_CPPFLAGS) $(CPPFLAGS) $(AM_CFLAGS) $(CFLAGS)'
.PHONY: print-plugin-compile

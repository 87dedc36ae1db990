# spank: build rules (filled by its owner)

# The plugin's plugstack.conf/--train-topo parser: pure, no Slurm headers, so it is a separate
# convenience library that unit tests link without the plugin. Link it with libtopo.la.
noinst_LTLIBRARIES += spank/libplugin_config.la
spank_libplugin_config_la_SOURCES = spank/plugin_config.h spank/plugin_config.c

# topo/: where things are — the rank layout of a step and the hardware of a node.
# libtopo is a PIC convenience library linked into the SPANK plugin, train-run and train-topo.
noinst_LTLIBRARIES += libtopo.la
libtopo_la_SOURCES = \
	topo/tt_err.h topo/tt_err.c
libtopo_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS)
libtopo_la_LIBADD = $(HWLOC_LIBS) $(IBVERBS_LIBS)
# layout: nodelists, GRES GPU lists and the rank env contract (topo/layout.h).
libtopo_la_SOURCES += topo/tt_env.h topo/tt_env.c topo/hostlist.h topo/hostlist.c \
	topo/gres.h topo/gres.c topo/layout.h topo/layout.c topo/cpu_bind.h topo/cpu_bind.c
# Node hardware model: discovery (hwloc, sysfs, verbs), writers and the per-rank policy.
libtopo_la_SOURCES += topo/hw_model.h topo/hw_model.c topo/hw_sources.h topo/hw_discover.c
libtopo_la_SOURCES += topo/hw_sysfs.c topo/hw_verbs.c topo/hw_netif.c topo/hw_vswitch.c topo/hw_xml_input.c
libtopo_la_SOURCES += topo/hw_nccl_xml.h topo/hw_nccl_xml.c topo/hw_policy.h topo/hw_policy.c
libtopo_la_SOURCES += topo/tt_strbuf.h topo/tt_strbuf.c topo/tt_file.h topo/tt_file.c
libtopo_la_SOURCES += topo/hw_report.h topo/hw_report.c
libtopo_la_SOURCES += topo/tt_signal.h topo/tt_signal.c
bin_PROGRAMS += train-topo
train_topo_SOURCES = topo/train_topo.c
train_topo_LDADD = libtopo.la

# topo/: where things are — the rank layout of a step and the hardware of a node.
# libtopo is a PIC convenience library linked into the SPANK plugin, train-run and train-topo.
noinst_LTLIBRARIES += libtopo.la
libtopo_la_SOURCES = \
	topo/tt_err.h topo/tt_err.c
libtopo_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS)
libtopo_la_LIBADD = $(HWLOC_LIBS) $(IBVERBS_LIBS)
# layout: nodelists, GRES GPU lists and the rank env contract (topo/layout.h).
libtopo_la_SOURCES += topo/tt_env.h topo/tt_env.c topo/hostlist.h topo/hostlist.c

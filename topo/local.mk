# SPDX-License-Identifier: MIT
# topo/: what the node is — the hardware model from hwloc (live or an XML export), sysfs and verbs,
# its writers (NCCL topology XML, JSON, the show matrix), the per-rank policy, and train-topo
# (also the SPANK plugin's probe on compute nodes).
if BUILD_TOPO
noinst_LTLIBRARIES += libtthw.la
libtthw_la_SOURCES = \
	topo/hw_model.h topo/hw_model.c topo/hw_sources.h topo/hw_discover.c \
	topo/hw_parse.c topo/hw_links.c topo/hw_sysfs.c topo/hw_verbs.c topo/hw_netif.c topo/hw_vswitch.c topo/hw_xml_input.c \
	topo/hw_nccl_xml.h topo/hw_nccl_xml.c topo/hw_policy.h topo/hw_policy.c \
	topo/hw_report.h topo/hw_report.c
libtthw_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS)
libtthw_la_LIBADD = $(HWLOC_LIBS) $(IBVERBS_LIBS)

bin_PROGRAMS += train-topo
train_topo_SOURCES = topo/train_topo.c
train_topo_LDADD = libtthw.la libttlayout.la libttbase.la
endif

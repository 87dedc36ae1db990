# SPDX-License-Identifier: MIT
# hw/: what the node is — the hardware model from hwloc (live or an XML export), sysfs and verbs,
# its writers (NCCL topology XML, JSON, the show matrix), the per-rank policy, and train-topo
# (also the SPANK plugin's probe on compute nodes).
if BUILD_TOPO
noinst_LTLIBRARIES += libtthw.la
libtthw_la_SOURCES = \
	hw/hw_model.h hw/hw_model.c hw/hw_sources.h hw/hw_discover.c \
	hw/hw_parse.c hw/hw_sysfs.c hw/hw_verbs.c hw/hw_netif.c hw/hw_vswitch.c hw/hw_xml_input.c \
	hw/hw_nccl_xml.h hw/hw_nccl_xml.c hw/hw_policy.h hw/hw_policy.c \
	hw/hw_report.h hw/hw_report.c
libtthw_la_CFLAGS = $(AM_CFLAGS) $(HWLOC_CFLAGS) $(IBVERBS_CFLAGS)
libtthw_la_LIBADD = $(HWLOC_LIBS) $(IBVERBS_LIBS)

bin_PROGRAMS += train-topo
train_topo_SOURCES = hw/train_topo.c
train_topo_LDADD = libtthw.la libttlayout.la libttbase.la
endif

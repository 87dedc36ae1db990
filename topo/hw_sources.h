/* SPDX-License-Identifier: MIT */
/* hw_sources.h — the discovery sources behind tt_hw_discover (hw_discover.c): sysfs (hw_sysfs.c),
 * libibverbs (hw_verbs.c), interfaces (hw_netif.c) and the virtual-switch pass (hw_vswitch.c),
 * with the small parsers they share. Not for callers outside topo/. */
#ifndef TT_HW_SOURCES_H
#define TT_HW_SOURCES_H

#include "hw_model.h"

#include <stddef.h>

/* hwloc's PCIe bandwidth (GB/s) to per-lane GT/s and lane count; 0/0 when it matches nothing. */
void tt_pcie_from_gbps(double gbps, double *gts, int *width);
/* "506b:4b03:003c:eee8" (hwloc, sysfs) to a number; 0 for NULL or garbage. */
uint64_t tt_parse_guid(const char *s);
/* IB port rate in Mb/s from verbs' active_speed and active_width codes; 0 when unknown. */
int tt_ib_rate_mbps(unsigned active_speed, unsigned active_width);
/* Interfaces NCCL must never use for sockets: lo, docker*, virbr*, veth*, br-*, cni*, flannel*. */
int tt_netif_name_excluded(const char *name);

/* Adds PCIe link rate/width, HCA ports (state, link layer, rate, GUIDs, PCI address) and network
 * interfaces found under root (a /sys tree). Missing optional files are skipped; a listed HCA
 * or interface missing a required file is an error naming that file. */
int tt_sysfs_enrich(struct tt_hw_model *m, const char *root, tt_err *err);
/* Live HCAs and ports from libibverbs; none is not an error (m->rdma_note says why). */
int tt_verbs_enrich(struct tt_hw_model *m, tt_err *err);
/* Marks the interface holding the address this host's name resolves to (live only). */
void tt_netif_mark_node_address(struct tt_hw_model *m);
/* PCIe max_link_speed/max_link_width under root for every PCI node whose bus id root has (and,
 * where root says, the same vendor and device ids): the device's capability, as NCCL reads it. */
void tt_sysfs_pci_links(struct tt_hw_model *m, const char *root);
/* 1 when the flags line of a /proc/cpuinfo-style file holds "hypervisor", 0 when a flags line
 * does not, -1 when the file has no flags line (not x86) or cannot be read. */
int tt_cpuinfo_hypervisor(const char *path);
/* Turns each PCI node's link into the one NCCL reads for it (see hw_links.c); warns once when an
 * export's link looks downtrained. Runs before virtual switches re-parent anything. */
void tt_hw_nccl_links(struct tt_hw_model *m);
/* Checks an hwloc XML export before it is loaded: readable, not hwloc 3.x, CPU/NUMA set words
 * as hwloc writes them, and loadable by libhwloc in a child process (see hw_xml_input.c). */
int tt_hwloc_xml_check(const char *path, tt_err *err);
/* Whether the machine is a VM (1) or bare metal (0), and the signal that says so into why. */
int tt_hw_is_virtual_machine(const struct tt_hw_model *m, char *why, size_t len);
/* See hw_vswitch.c for the heuristic. Refuses (err) on a machine that is not a VM. */
int tt_hw_add_virtual_switches(struct tt_hw_model *m, tt_err *err);

#endif

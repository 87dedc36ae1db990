/* SPDX-License-Identifier: MIT */
/* hw_discover.c — builds the node model: hwloc (live, or its XML loader) gives NUMA nodes, the PCI
 * tree, OpenFabrics and network OS devices and NVLink bandwidths; then sysfs and libibverbs fill
 * what hwloc does not carry (port link layer and rate, PCIe width, interfaces), see hw_sources.h. */
#include "hw_model.h"
#include "hw_sources.h"

#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct walk {
	struct tt_hw_model *m;
	hwloc_topology_t topo;
	tt_err *err;
};

static void set_busid(char *dst, const struct hwloc_pcidev_attr_s *a)
{
	snprintf(dst, TT_BUSID_LEN, "%04x:%02x:%02x.%01x", (unsigned)a->domain, a->bus, a->dev, a->func);
}

static int numa_of(struct walk *w, hwloc_obj_t obj)
{
	hwloc_obj_t anc = hwloc_get_non_io_ancestor_obj(w->topo, obj);
	int os;

	if (!anc || !anc->nodeset || hwloc_bitmap_iszero(anc->nodeset) ||
	    hwloc_bitmap_isequal(anc->nodeset, hwloc_topology_get_topology_nodeset(w->topo)))
		return w->m->nnuma == 1 ? 0 : -1;
	os = hwloc_bitmap_first(anc->nodeset);
	for (int i = 0; i < w->m->nnuma; i++)
		if (w->m->numa[i].os_index == os)
			return i;
	return -1;
}

static void fill_port_states(struct tt_hca *h, hwloc_obj_t os)
{
	for (unsigned i = 0; i < os->infos_count; i++) {
		unsigned port;
		int state, used = 0;

		/* %n is only reached when "State" matched: Port1LID and Port1GID0 leave used at 0. */
		if (sscanf(os->infos[i].name, "Port%uState%n", &port, &used) != 1 || used == 0 ||
		    os->infos[i].name[used] != '\0' || port == 0 || h->nports >= TT_HCA_MAX_PORTS)
			continue;
		state = atoi(os->infos[i].value);
		h->ports[h->nports].num = (int)port;
		h->ports[h->nports].active = state == 4; /* IB_PORT_ACTIVE */
		h->nports++;
	}
}

static int add_osdev(struct walk *w, hwloc_obj_t os, int parent)
{
	if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS) {
		struct tt_hca h = { .pci = parent };

		snprintf(h.name, sizeof(h.name), "%s", os->name);
		h.node_guid = tt_parse_guid(hwloc_obj_get_info_by_name(os, "NodeGUID"));
		h.sys_image_guid = tt_parse_guid(hwloc_obj_get_info_by_name(os, "SysImageGUID"));
		fill_port_states(&h, os);
		return tt_hw_add_hca(w->m, &h) < 0 ? -1 : 0;
	}
	if (os->attr->osdev.type == HWLOC_OBJ_OSDEV_NETWORK) {
		struct tt_netif n = { .pci = parent, .up = 1 };

		snprintf(n.name, sizeof(n.name), "%s", os->name);
		n.excluded = tt_netif_name_excluded(n.name);
		return tt_hw_add_netif(w->m, &n) < 0 ? -1 : 0;
	}
	return 0;
}

static int add_io(struct walk *w, hwloc_obj_t obj, int parent)
{
	struct tt_pci p = { .parent = parent, .numa = -1 };
	const struct hwloc_pcidev_attr_s *a = NULL;
	const char *name;
	int idx;

	if (obj->type == HWLOC_OBJ_OS_DEVICE)
		return add_osdev(w, obj, parent);
	if (obj->type == HWLOC_OBJ_BRIDGE && obj->attr->bridge.upstream_type == HWLOC_OBJ_BRIDGE_HOST) {
		p.kind = TT_PCI_HOSTBRIDGE;
	} else if (obj->type == HWLOC_OBJ_BRIDGE) {
		p.kind = TT_PCI_BRIDGE;
		a = &obj->attr->bridge.upstream.pci;
	} else {
		p.kind = TT_PCI_DEVICE;
		a = &obj->attr->pcidev;
	}
	if (parent < 0)
		p.numa = numa_of(w, obj);
	if (a) {
		set_busid(p.busid, a);
		/* hwloc keeps class and subclass; the programming interface byte is not exported. */
		p.class_id = (unsigned)a->class_id << 8;
		p.vendor = a->vendor_id;
		p.device = a->device_id;
		p.subvendor = a->subvendor_id;
		p.subdevice = a->subdevice_id;
		tt_pcie_from_gbps(a->linkspeed, &p.link_gts, &p.link_width);
	}
	name = hwloc_obj_get_info_by_name(obj, "PCIDevice");
	if (name)
		snprintf(p.name, sizeof(p.name), "%s", name);
	p.nvswitch_subtype = obj->subtype && strcmp(obj->subtype, "NVSwitch") == 0;
	idx = tt_hw_add_pci(w->m, &p);
	if (idx < 0)
		return -1;
	for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
		if (add_io(w, c, idx) < 0)
			return -1;
	return 0;
}

static int walk_tree(struct walk *w, hwloc_obj_t obj)
{
	for (hwloc_obj_t c = obj->first_child; c; c = c->next_sibling)
		if (walk_tree(w, c) < 0)
			return -1;
	/* Host bridges, and OS devices without a PCI parent (soft RoCE), hang off CPU-side objects. */
	for (hwloc_obj_t c = obj->io_first_child; c; c = c->next_sibling)
		if (add_io(w, c, -1) < 0)
			return -1;
	return 0;
}

static void cpuset_from_bitmap(hwloc_const_bitmap_t b, cpu_set_t *set)
{
	unsigned cpu;

	CPU_ZERO(set);
	hwloc_bitmap_foreach_begin(cpu, b)
		if (cpu < CPU_SETSIZE)
			CPU_SET(cpu, set);
	hwloc_bitmap_foreach_end();
}

/* Exports without CPUVendor (older hwloc, 32em64t-style files) still name the model. */
static void vendor_from_model_name(const char *model, struct tt_numa *t)
{
	if (model && strstr(model, "Intel"))
		snprintf(t->cpu_vendor, sizeof(t->cpu_vendor), "GenuineIntel");
	else if (model && strstr(model, "AMD"))
		snprintf(t->cpu_vendor, sizeof(t->cpu_vendor), "AuthenticAMD");
}

/* Overlapping NUMA CPU sets mean a broken export; every CPU binding would be wrong. */
static int numa_sets_disjoint(struct walk *w)
{
	for (int i = 0; i < w->m->nnuma; i++) {
		for (int j = i + 1; j < w->m->nnuma; j++) {
			cpu_set_t both;
			char cpus[256];

			CPU_AND(&both, &w->m->numa[i].cpus, &w->m->numa[j].cpus);
			if (CPU_COUNT(&both) == 0)
				continue;
			if (tt_cpuset_to_list(&both, cpus, sizeof(cpus)) < 0)
				snprintf(cpus, sizeof(cpus), "(many)");
			return tt_err_set(w->err, "%s: NUMA nodes %d and %d both hold CPUs %s: the CPU sets "
					  "are inconsistent; export the topology again", w->m->source,
					  w->m->numa[i].os_index, w->m->numa[j].os_index, cpus);
		}
	}
	return 0;
}

static int read_numa(struct walk *w)
{
	int n = hwloc_get_nbobjs_by_type(w->topo, HWLOC_OBJ_NUMANODE);

	w->m->numa = calloc((size_t)(n > 0 ? n : 1), sizeof(*w->m->numa));
	if (!w->m->numa)
		return tt_err_set(w->err, "%s: out of memory reading NUMA nodes", w->m->source);
	for (int i = 0; i < n; i++) {
		hwloc_obj_t node = hwloc_get_obj_by_type(w->topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
		hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(w->topo, HWLOC_OBJ_PACKAGE, node);
		struct tt_numa *t = &w->m->numa[i];
		const char *s;

		t->os_index = (int)node->os_index;
		cpuset_from_bitmap(node->cpuset, &t->cpus);
		if (!pkg) /* NUMA above the package (e.g. cluster-on-die exports): any package in it */
			pkg = hwloc_get_next_obj_covering_cpuset_by_type(w->topo, node->cpuset,
									 HWLOC_OBJ_PACKAGE, NULL);
		if (!pkg)
			pkg = hwloc_get_obj_by_type(w->topo, HWLOC_OBJ_PACKAGE, 0);
		if (!pkg)
			continue;
		if ((s = hwloc_obj_get_info_by_name(pkg, "CPUVendor")))
			snprintf(t->cpu_vendor, sizeof(t->cpu_vendor), "%s", s);
		if ((s = hwloc_obj_get_info_by_name(pkg, "CPUFamilyNumber")))
			t->cpu_family = atoi(s);
		if ((s = hwloc_obj_get_info_by_name(pkg, "CPUModelNumber")))
			t->cpu_model = atoi(s);
		if (!t->cpu_vendor[0] && strcmp(w->m->arch, "x86_64") == 0)
			vendor_from_model_name(hwloc_obj_get_info_by_name(pkg, "CPUModel"), t);
	}
	w->m->nnuma = n;
	return numa_sets_disjoint(w);
}

static void read_arch(struct walk *w)
{
	hwloc_obj_t root = hwloc_get_root_obj(w->topo);
	const char *a = hwloc_obj_get_info_by_name(root, "Architecture");
	const char *vendor = hwloc_obj_get_info_by_name(root, "DMISysVendor");
	const char *product = hwloc_obj_get_info_by_name(root, "DMIProductName");

	/* What tells a VM from bare metal (hw_vswitch.c). */
	snprintf(w->m->dmi_vendor, sizeof(w->m->dmi_vendor), "%s", vendor ? vendor : "");
	snprintf(w->m->dmi_product, sizeof(w->m->dmi_product), "%s", product ? product : "");

	/* NCCL's names: x86_64, arm64, ppc64. */
	if (!a)
		a = "";
	if (strcmp(a, "aarch64") == 0)
		a = "arm64";
	else if (strncmp(a, "ppc64", 5) == 0)
		a = "ppc64";
	snprintf(w->m->arch, sizeof(w->m->arch), "%s", a);
}

static int pci_index_of(struct walk *w, hwloc_obj_t obj)
{
	char busid[TT_BUSID_LEN];

	/* NVML names GPUs by OS device; their PCI parent is the node the model knows. */
	if (obj->type == HWLOC_OBJ_OS_DEVICE)
		obj = obj->parent;
	if (!obj || obj->type != HWLOC_OBJ_PCI_DEVICE)
		return -1;
	set_busid(busid, &obj->attr->pcidev);
	return tt_hw_find_pci(w->m, busid);
}

/* NVLink counts from hwloc's NVLinkBandwidth matrix (MB/s). A link is 25 GB/s from NVLink 2 on
 * and 20 GB/s on NVLink 1 (P100); a total that 25000 does not divide is taken as NVLink 1. */
static int read_nvlinks(struct walk *w)
{
	struct hwloc_distances_s *d = NULL;
	unsigned nr = 1;
	int rc = 0;

	if (hwloc_distances_get_by_name(w->topo, "NVLinkBandwidth", &nr, &d, 0) != 0 || nr == 0)
		return 0;
	for (unsigned i = 0; i < d->nbobjs && rc == 0; i++) {
		for (unsigned j = i + 1; j < d->nbobjs; j++) {
			uint64_t bw = d->values[i * d->nbobjs + j];
			int a = pci_index_of(w, d->objs[i]), b = pci_index_of(w, d->objs[j]);

			if (bw == 0 || a < 0 || b < 0)
				continue;
			if (tt_hw_add_nvlink(w->m, a, b, (int)(bw % 25000 == 0 ? bw / 25000 : (bw + 19999) / 20000)) < 0) {
				rc = tt_err_set(w->err, "%s: out of memory reading NVLinks", w->m->source);
				break;
			}
		}
	}
	hwloc_distances_release(w->topo, d);
	return rc;
}

static int load_hwloc(const struct tt_hw_options *o, hwloc_topology_t *topo, tt_err *err)
{
	if (o->input_xml && tt_hwloc_xml_check(o->input_xml, err) < 0)
		return -1;
	if (hwloc_topology_init(topo) != 0)
		return tt_err_errno(err, "hwloc: cannot initialise a topology");
	/* Live: only the PCI objects and OS devices that matter (GPUs, NICs, HCAs and the bridges
	 * above them) keeps discovery fast; an XML export is already what its author kept. */
	hwloc_topology_set_io_types_filter(*topo, o->input_xml ? HWLOC_TYPE_FILTER_KEEP_ALL
							       : HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
	/* OpenCL and GL devices are nothing NCCL uses, hwloc's Linux backend reads the PCI tree from
	 * sysfs and the CPU vendor/family/model from /proc/cpuinfo itself: skipping the opencl, gl,
	 * pci and x86 (CPUID) components saves start-up time, and the libpciaccess one leaks memory
	 * on every load (valgrind). */
	hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "opencl");
	hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "gl");
	hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "pci");
	hwloc_topology_set_components(*topo, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
	/* Caches matter to nobody here; not building them skips reading hundreds of sysfs files. */
	hwloc_topology_set_cache_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	hwloc_topology_set_icache_types_filter(*topo, HWLOC_TYPE_FILTER_KEEP_NONE);
	/* hwloc parses the file in set_xml (libxml2) or in load (its own parser): same message. */
	if ((o->input_xml && hwloc_topology_set_xml(*topo, o->input_xml) != 0) ||
	    hwloc_topology_load(*topo) != 0) {
		if (o->input_xml)
			tt_err_set(err, "hwloc XML '%s' is malformed or not an hwloc 2.x topology: "
				   "check the file or export it again with `lstopo --of xml`", o->input_xml);
		else
			tt_err_errno(err, "hwloc cannot read this machine's topology");
		goto fail;
	}
	return 0;
fail:
	hwloc_topology_destroy(*topo);
	*topo = NULL;
	return -1;
}

/* An InfiniBand controller (class 0x0207, or 0x0c06 on older cards) without an RDMA device has
 * no name NCCL could match: the export lacks OS devices, or the driver is not loaded. Its PCI
 * node is still written (NCCL can place the NIC by bus id), but the user must hear about it. */
static void warn_unnamed_ib(struct tt_hw_model *m)
{
	for (int i = 0; i < m->npci; i++) {
		unsigned cls = m->pci[i].class_id >> 8;

		if (m->pci[i].kind != TT_PCI_DEVICE || (cls != 0x0207 && cls != 0x0c06) ||
		    tt_hw_pci_is_hca(m, i))
			continue;
		tt_hw_warn(m, "%s: InfiniBand controller %s has no RDMA device (%s): it gets no <net> in "
			   "the NCCL topology file and no NCCL_IB_HCA entry", m->source, m->pci[i].busid,
			   strcmp(m->source, "this machine") == 0 ? "is its driver loaded?"
								   : "the export has no OS devices for it");
	}
}

int tt_hw_discover(const struct tt_hw_options *o, struct tt_hw_model **out, tt_err *err)
{
	struct walk w = { .err = err };
	const char *sysfs = o->sysfs_root;
	int live = o->input_xml == NULL;
	int rc = -1;

	*out = NULL;
	w.m = calloc(1, sizeof(*w.m));
	if (!w.m)
		return tt_err_set(err, "out of memory allocating the node model");
	snprintf(w.m->source, sizeof(w.m->source), "%s", live ? "this machine" : o->input_xml);
	w.m->cpu_hypervisor = live ? tt_cpuinfo_hypervisor("/proc/cpuinfo") : -1;
	if (load_hwloc(o, &w.topo, err) < 0)
		goto fail;
	read_arch(&w);
	cpuset_from_bitmap(hwloc_topology_get_topology_cpuset(w.topo), &w.m->all_cpus);
	if (read_numa(&w) < 0)
		goto fail;
	if (walk_tree(&w, hwloc_get_root_obj(w.topo)) < 0) {
		tt_err_set(err, "%s: out of memory reading the PCI tree", w.m->source);
		goto fail;
	}
	if (read_nvlinks(&w) < 0)
		goto fail;
	/* An XML file may describe another machine: this machine's /sys gives its HCAs and
	 * interfaces only on request, and its links below. */
	if (!sysfs && live)
		sysfs = "/sys";
	if (sysfs && tt_sysfs_enrich(w.m, sysfs, err) < 0)
		goto fail;
	/* An export read on the node it describes: NCCL there reads max_link_* of these very bus ids
	 * (tt_sysfs_pci_links takes only those whose vendor and device ids agree). */
	if (!sysfs)
		tt_sysfs_pci_links(w.m, "/sys");
	tt_hw_nccl_links(w.m);
	if (live && (!o->sysfs_root || strcmp(o->sysfs_root, "/sys") == 0)) {
		if (tt_verbs_enrich(w.m, err) < 0)
			goto fail;
		tt_netif_mark_node_address(w.m);
	}
	warn_unnamed_ib(w.m);
	if (tt_hw_finish(w.m) < 0) {
		tt_err_set(err, "%s: out of memory ordering GPUs", w.m->source);
		goto fail;
	}
	if (o->virtual_switches && tt_hw_add_virtual_switches(w.m, err) < 0)
		goto fail;
	*out = w.m;
	w.m = NULL;
	rc = 0;
fail:
	if (w.topo)
		hwloc_topology_destroy(w.topo);
	tt_hw_free(w.m);
	return rc;
}

/* SPDX-License-Identifier: MIT */
/* test_hw_model.c — the pure parts of the node model: NCCL's one-node-per-switch tree and the
 * relations on it for hand-built PCI trees, NVLink counting through NVSwitches (also hwloc's
 * subtype-only ones), usable HCAs, warnings, cpu list / cpumap text, PCIe and IB rate decoding,
 * GUID parsing. */
#include "cunit_main.h"
#include "hw_model.h"
#include "hw_sources.h"

#include <stdlib.h>
#include <string.h>

/* Two NUMA nodes. NUMA 0: host bridge 0 -> root port -> switch up -> 2 down ports -> GPU a, GPU b;
 * a second root port with GPU c directly below; a second host bridge with GPU d. NUMA 1: GPU e. */
struct tree {
	struct tt_hw_model *m;
	int a, b, c, d, e, nvsw;
};

static int add(struct tt_hw_model *m, enum tt_pci_kind kind, int parent, int numa, const char *busid,
	       unsigned cls, unsigned vendor)
{
	struct tt_pci p = { .kind = kind, .parent = parent, .numa = numa, .class_id = cls, .vendor = vendor };

	snprintf(p.busid, sizeof(p.busid), "%s", busid);
	return tt_hw_add_pci(m, &p);
}

static struct tree build(void)
{
	struct tree t;
	int hb0, rp, up, d0, d1, rp2, hb1, hb2;

	t.m = calloc(1, sizeof(*t.m));
	t.m->nnuma = 2;
	t.m->numa = calloc(2, sizeof(*t.m->numa));
	t.m->numa[0].os_index = 0;
	t.m->numa[1].os_index = 1;
	hb0 = add(t.m, TT_PCI_HOSTBRIDGE, -1, 0, "", 0, 0);
	rp = add(t.m, TT_PCI_BRIDGE, hb0, -1, "0000:10:01.0", 0x060400, 0x8086);
	up = add(t.m, TT_PCI_BRIDGE, rp, -1, "0000:11:00.0", 0x060400, 0x10b5);
	d0 = add(t.m, TT_PCI_BRIDGE, up, -1, "0000:12:00.0", 0x060400, 0x10b5);
	d1 = add(t.m, TT_PCI_BRIDGE, up, -1, "0000:12:01.0", 0x060400, 0x10b5);
	t.a = add(t.m, TT_PCI_DEVICE, d0, -1, "0000:13:00.0", 0x030200, 0x10de);
	t.b = add(t.m, TT_PCI_DEVICE, d1, -1, "0000:14:00.0", 0x030200, 0x10de);
	rp2 = add(t.m, TT_PCI_BRIDGE, hb0, -1, "0000:10:02.0", 0x060400, 0x8086);
	t.c = add(t.m, TT_PCI_DEVICE, rp2, -1, "0000:20:00.0", 0x030200, 0x10de);
	hb1 = add(t.m, TT_PCI_HOSTBRIDGE, -1, 0, "", 0, 0);
	t.d = add(t.m, TT_PCI_DEVICE, hb1, -1, "0000:40:00.0", 0x030000, 0x10de);
	hb2 = add(t.m, TT_PCI_HOSTBRIDGE, -1, 1, "", 0, 0);
	t.e = add(t.m, TT_PCI_DEVICE, hb2, -1, "0000:90:00.0", 0x030200, 0x10de);
	t.nvsw = add(t.m, TT_PCI_DEVICE, hb2, -1, "0000:91:00.0", 0x068000, 0x10de);
	CU_ASSERT_EQUAL_FATAL(tt_hw_finish(t.m), 0);
	return t;
}

static void test_relations_follow_the_pci_tree(void)
{
	struct tree t = build();
	int nv = -1;

	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.a, NULL), TT_REL_X);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.b, &nv), TT_REL_PIX); /* one switch */
	CU_ASSERT_EQUAL(nv, 0);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.c, NULL), TT_REL_PHB); /* meet at the host bridge */
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.c, t.d, NULL), TT_REL_NODE); /* two host bridges, one NUMA */
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.e, NULL), TT_REL_SYS);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.e, t.b, NULL), TT_REL_SYS);
	tt_hw_free(t.m);
}

static void test_cascaded_switches_are_pxb(void)
{
	struct tree t = build();
	int up2, dn, f;

	/* A second switch below the first one's down port 0: b-to-f and a-to-f cross two switches. */
	up2 = add(t.m, TT_PCI_BRIDGE, t.m->pci[t.a].parent, -1, "0000:15:00.0", 0x060400, 0x10b5);
	dn = add(t.m, TT_PCI_BRIDGE, up2, -1, "0000:16:00.0", 0x060400, 0x10b5);
	f = add(t.m, TT_PCI_DEVICE, dn, -1, "0000:17:00.0", 0x020700, 0x15b3);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.b, f, NULL), TT_REL_PXB);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, f, NULL), TT_REL_PXB);
	/* On NCCL's tree the second switch (up2) hangs from the first (up). */
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, f), up2);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, up2), t.m->pci[t.m->pci[t.a].parent].parent);
	CU_ASSERT_EQUAL(dn, t.m->pci[f].parent);
	tt_hw_free(t.m);
}

static void test_nccl_keeps_one_node_per_switch(void)
{
	struct tree t = build();
	int up = t.m->pci[t.m->pci[t.a].parent].parent, vs, g;

	/* Downstream and root ports are no nodes: a and b hang from the upstream port, the upstream
	 * port and c (below a root port only) from the CPU, as do devices off a host bridge. */
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, t.a), up);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, t.b), up);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, up), -1);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, t.c), -1);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, t.d), -1);
	/* A virtual switch is a node of its own. */
	vs = add(t.m, TT_PCI_BRIDGE, -1, 1, "ffff:ff:01.0", 0x060400, 0);
	t.m->pci[vs].is_virtual = 1;
	g = add(t.m, TT_PCI_DEVICE, vs, -1, "0000:95:00.0", 0x030200, 0x10de);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, g), vs);
	CU_ASSERT_EQUAL(tt_hw_nccl_parent(t.m, vs), -1);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, g, t.e, NULL), TT_REL_NODE); /* another top, same NUMA */
	tt_hw_free(t.m);
}

static void test_siblings_under_a_root_port_are_phb(void)
{
	struct tree t = build();
	int rp = t.m->pci[t.c].parent;
	int nic = add(t.m, TT_PCI_DEVICE, rp, -1, "0000:21:00.0", 0x020700, 0x15b3);

	/* No switch between them: NCCL reaches one from the other through the CPU. */
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.c, nic, NULL), TT_REL_PHB);
	tt_hw_free(t.m);
}

static void test_unknown_numa_is_one_node(void)
{
	struct tree t = build();

	/* NCCL puts every device of unknown locality under one <cpu numaid="-1">. */
	t.m->pci[t.m->pci[t.d].parent].numa = -1;
	t.m->pci[t.m->pci[t.e].parent].numa = -1;
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.d, t.e, NULL), TT_REL_NODE);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.e, NULL), TT_REL_SYS);
	tt_hw_free(t.m);
}

static void test_nvlinks_direct_and_through_nvswitch(void)
{
	struct tree t = build();
	char name[16];
	int nv = 0;

	tt_hw_add_nvlink(t.m, t.a, t.b, 4);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.b, t.a, &nv), TT_REL_NV);
	CU_ASSERT_EQUAL(nv, 4);
	CU_ASSERT_STRING_EQUAL(tt_hw_rel_name(TT_REL_NV, nv, name, sizeof(name)), "NV4");
	/* c has 6 links to the NVSwitch, e has 12: they share min(6, 12). */
	tt_hw_add_nvlink(t.m, t.c, t.nvsw, 6);
	tt_hw_add_nvlink(t.m, t.nvsw, t.e, 12);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.c, t.e, &nv), TT_REL_NV);
	CU_ASSERT_EQUAL(nv, 6);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.a, t.e, &nv), TT_REL_SYS); /* a has no switch links */
	CU_ASSERT_STRING_EQUAL(tt_hw_rel_name(TT_REL_NODE, 0, name, sizeof(name)), "NODE");
	tt_hw_free(t.m);
}

static void test_nvswitch_known_by_hwloc_subtype_only(void)
{
	struct tree t = build();
	int sw2 = add(t.m, TT_PCI_DEVICE, t.m->pci[t.nvsw].parent, -1, "0000:92:00.0", 0, 0);
	int nv = 0;

	/* DGX-2 exports have NVSwitches with class and vendor 0000 and subtype "NVSwitch". */
	CU_ASSERT_FALSE(tt_pci_is_nvswitch(&t.m->pci[sw2]));
	t.m->pci[sw2].nvswitch_subtype = 1;
	CU_ASSERT_TRUE(tt_pci_is_nvswitch(&t.m->pci[sw2]));
	tt_hw_add_nvlink(t.m, t.c, t.nvsw, 5);
	tt_hw_add_nvlink(t.m, t.c, sw2, 1);
	tt_hw_add_nvlink(t.m, t.e, t.nvsw, 5);
	tt_hw_add_nvlink(t.m, t.e, sw2, 1);
	CU_ASSERT_EQUAL(tt_hw_relation(t.m, t.c, t.e, &nv), TT_REL_NV);
	CU_ASSERT_EQUAL(nv, 6);
	tt_hw_free(t.m);
}

static void test_usable_hcas_and_warnings(void)
{
	struct tt_hca h = { .name = "mlx5_0" };
	struct tt_hw_model m = { .source = "x.xml" };

	CU_ASSERT_TRUE(tt_hca_usable(&h)); /* port states unknown */
	h.nports = 2;
	h.ports[0].num = 1;
	h.ports[1].num = 2;
	CU_ASSERT_FALSE(tt_hca_usable(&h)); /* both known down */
	h.ports[1].active = 1;
	CU_ASSERT_TRUE(tt_hca_usable(&h));
	h.name[0] = '\0';
	CU_ASSERT_FALSE(tt_hca_usable(&h)); /* NCCL matches names */
	for (int i = 0; i < TT_HW_MAX_WARNINGS + 3; i++)
		tt_hw_warn(&m, "%s: warning %d", m.source, i);
	CU_ASSERT_EQUAL(m.nwarnings, TT_HW_MAX_WARNINGS);
	CU_ASSERT_STRING_EQUAL(m.warnings[0], "x.xml: warning 0");
	CU_ASSERT_PTR_NOT_NULL(strstr(m.warnings[TT_HW_MAX_WARNINGS - 1], "not shown"));
}

static void test_gpus_in_bus_order_and_numa_inherited(void)
{
	struct tree t = build();

	/* NVIDIA class 0x03 only: the NVSwitch (0x0680) is not a GPU. */
	CU_ASSERT_EQUAL(t.m->ngpu, 5);
	CU_ASSERT_EQUAL(t.m->gpu[0].pci, t.a);
	CU_ASSERT_EQUAL(t.m->gpu[3].pci, t.d);
	CU_ASSERT_EQUAL(t.m->gpu[4].cuda_index, 4);
	CU_ASSERT_EQUAL(tt_hw_pci_numa(t.m, t.b), 0);
	CU_ASSERT_EQUAL(tt_hw_pci_numa(t.m, t.e), 1);
	CU_ASSERT_EQUAL(tt_hw_find_pci(t.m, "0000:90:00.0"), t.e);
	CU_ASSERT_EQUAL(tt_hw_find_pci(t.m, "0000:99:00.0"), -1);
	tt_hw_free(t.m);
}

/* Several 8-GPU servers put the higher bus numbers on NUMA 0, so hwloc's tree (NUMA 0 first)
 * lists GPUs 8a, 8b, then 1a, 1b; CUDA's default order (PCI_BUS_ID, the one NCCL and
 * CUDA_VISIBLE_DEVICES use) is by bus id: 1a is GPU 0. */
static void test_gpu_numbering_is_bus_order_not_tree_order(void)
{
	struct tt_hw_model *m = calloc(1, sizeof(*m));
	int hb0, hb1, g[4];

	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	m->nnuma = 2;
	m->numa = calloc(2, sizeof(*m->numa));
	m->numa[1].os_index = 1;
	hb0 = add(m, TT_PCI_HOSTBRIDGE, -1, 0, "", 0, 0);
	g[0] = add(m, TT_PCI_DEVICE, hb0, -1, "0000:8a:00.0", 0x030200, 0x10de);
	g[1] = add(m, TT_PCI_DEVICE, hb0, -1, "0000:8b:00.0", 0x030200, 0x10de);
	hb1 = add(m, TT_PCI_HOSTBRIDGE, -1, 1, "", 0, 0);
	g[2] = add(m, TT_PCI_DEVICE, hb1, -1, "0000:1b:00.0", 0x030200, 0x10de);
	g[3] = add(m, TT_PCI_DEVICE, hb1, -1, "0000:1a:00.0", 0x030200, 0x10de);
	CU_ASSERT_EQUAL_FATAL(tt_hw_finish(m), 0);
	CU_ASSERT_EQUAL_FATAL(m->ngpu, 4);
	CU_ASSERT_EQUAL(m->gpu[0].pci, g[3]);
	CU_ASSERT_EQUAL(m->gpu[1].pci, g[2]);
	CU_ASSERT_EQUAL(m->gpu[2].pci, g[0]);
	CU_ASSERT_EQUAL(m->gpu[3].pci, g[1]);
	for (int i = 0; i < 4; i++)
		CU_ASSERT_EQUAL(m->gpu[i].cuda_index, i);
	/* GPU 0 (bus 1a) is on NUMA 1, GPU 2 (bus 8a) on NUMA 0. */
	CU_ASSERT_EQUAL(tt_hw_pci_numa(m, m->gpu[0].pci), 1);
	CU_ASSERT_EQUAL(tt_hw_pci_numa(m, m->gpu[2].pci), 0);
	tt_hw_free(m);
}

static void test_cpuset_text_forms(void)
{
	cpu_set_t s;
	char buf[256];

	CPU_ZERO(&s);
	for (int c = 0; c < 8; c++)
		CPU_SET(c, &s);
	CPU_SET(10, &s);
	for (int c = 40; c < 44; c++)
		CPU_SET(c, &s);
	CU_ASSERT_EQUAL(tt_cpuset_to_list(&s, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "0-7,10,40-43");
	CU_ASSERT_EQUAL(tt_cpuset_to_cpumap(&s, 1, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "00000f00,000004ff");
	CU_ASSERT_EQUAL(tt_cpuset_to_cpumap(&s, 3, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "00000000,00000f00,000004ff");
	CU_ASSERT_EQUAL(tt_cpuset_to_list(&s, buf, 5), -1);
	/* Exactly: "0-7,10,40-43" needs 13 bytes with its terminator; 12 are refused, not cut. */
	CU_ASSERT_EQUAL(tt_cpuset_to_list(&s, buf, 13), 0);
	CU_ASSERT_STRING_EQUAL(buf, "0-7,10,40-43");
	CU_ASSERT_EQUAL(tt_cpuset_to_list(&s, buf, 12), -1);
	CPU_ZERO(&s);
	CU_ASSERT_EQUAL(tt_cpuset_to_cpumap(&s, 1, buf, sizeof(buf)), 0);
	CU_ASSERT_STRING_EQUAL(buf, "00000000");
}

static void test_pcie_rate_from_hwloc_bandwidth(void)
{
	double gts;
	int width;

	tt_pcie_from_gbps(15.753846, &gts, &width);
	CU_ASSERT_DOUBLE_EQUAL(gts, 8.0, 1e-9);
	CU_ASSERT_EQUAL(width, 16);
	tt_pcie_from_gbps(63.015385, &gts, &width);
	CU_ASSERT_DOUBLE_EQUAL(gts, 32.0, 1e-9);
	CU_ASSERT_EQUAL(width, 16);
	tt_pcie_from_gbps(4.0, &gts, &width); /* Gen1 x16 */
	CU_ASSERT_DOUBLE_EQUAL(gts, 2.5, 1e-9);
	tt_pcie_from_gbps(7.876923, &gts, &width); /* Gen3 x8, not Gen2 x16 (8.0) */
	CU_ASSERT_DOUBLE_EQUAL(gts, 8.0, 1e-9);
	CU_ASSERT_EQUAL(width, 8);
	tt_pcie_from_gbps(3.0, &gts, &width); /* matches nothing: unknown */
	CU_ASSERT_EQUAL(width, 0);
	tt_pcie_from_gbps(0, &gts, &width);
	CU_ASSERT_EQUAL(width, 0);
}

static void test_ib_rate_from_verbs_codes(void)
{
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(1, 1), 2500);      /* SDR 1x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(32, 2), 100000);   /* EDR 4x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(64, 2), 200000);   /* HDR 4x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(128, 2), 400000);  /* NDR 4x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(16, 8), 168000);   /* FDR 12x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(64, 16), 100000);  /* HDR 2x */
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(0, 2), 0);
	CU_ASSERT_EQUAL(tt_ib_rate_mbps(32, 0), 0);
}

static void test_guid_and_interface_names(void)
{
	CU_ASSERT_EQUAL(tt_parse_guid("506b:4b03:003c:eee8"), 0x506b4b03003ceee8ULL);
	CU_ASSERT_EQUAL(tt_parse_guid(NULL), 0);
	CU_ASSERT_TRUE(tt_netif_name_excluded("lo"));
	CU_ASSERT_TRUE(tt_netif_name_excluded("docker0"));
	CU_ASSERT_TRUE(tt_netif_name_excluded("virbr0"));
	CU_ASSERT_FALSE(tt_netif_name_excluded("eth0"));
	CU_ASSERT_FALSE(tt_netif_name_excluded("ib0"));
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hw_model", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "relations follow the PCI tree", test_relations_follow_the_pci_tree);
	CU_add_test(s, "cascaded switches are PXB", test_cascaded_switches_are_pxb);
	CU_add_test(s, "NCCL keeps one node per switch", test_nccl_keeps_one_node_per_switch);
	CU_add_test(s, "siblings under a root port are PHB", test_siblings_under_a_root_port_are_phb);
	CU_add_test(s, "unknown NUMA is one node", test_unknown_numa_is_one_node);
	CU_add_test(s, "NVSwitch known by hwloc subtype only", test_nvswitch_known_by_hwloc_subtype_only);
	CU_add_test(s, "usable HCAs and warnings", test_usable_hcas_and_warnings);
	CU_add_test(s, "NVLinks direct and through NVSwitch", test_nvlinks_direct_and_through_nvswitch);
	CU_add_test(s, "GPUs in bus order, NUMA inherited", test_gpus_in_bus_order_and_numa_inherited);
	CU_add_test(s, "GPU numbering is bus order, not tree order",
		    test_gpu_numbering_is_bus_order_not_tree_order);
	CU_add_test(s, "cpuset text forms", test_cpuset_text_forms);
	CU_add_test(s, "PCIe rate from hwloc bandwidth", test_pcie_rate_from_hwloc_bandwidth);
	CU_add_test(s, "IB rate from verbs codes", test_ib_rate_from_verbs_codes);
	CU_add_test(s, "GUIDs and interface names", test_guid_and_interface_names);
	return 0;
}

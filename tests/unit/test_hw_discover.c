/* SPDX-License-Identifier: MIT */
/* test_hw_discover.c — discovery from the fixture servers: NUMA placement, switches, HCAs next to
 * the right GPUs, NVLinks through NVSwitches, sysfs ports, links and interfaces, virtual switches
 * on a cloud VM, what a VM export lacks (link data, CPU vendor, RDMA devices), clear errors for
 * bad inputs (also ones that crash libhwloc), and the live machine. Links as NCCL reads them (an
 * idle-downtrained port in an export, sysfs max_link_* of the same device only), and what tells a
 * VM (where virtual switches apply) from bare metal (where they are refused). */
#include "cunit_main.h"
#include "hw_fixture.h"
#include "hw_model.h"
#include "hw_sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct tt_pci *gpu_pci(const struct tt_hw_model *m, int cuda)
{
	return &m->pci[m->gpu[cuda].pci];
}

static int gpu_numa(const struct tt_hw_model *m, int cuda)
{
	return m->numa[tt_hw_pci_numa(m, m->gpu[cuda].pci)].os_index;
}

static void test_dual_socket_structure(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	char list[64];
	int sw0, sw1;

	CU_ASSERT_EQUAL(m->nnuma, 2);
	CU_ASSERT_EQUAL(m->ngpu, 8);
	CU_ASSERT_EQUAL(m->nhca, 6);
	CU_ASSERT_STRING_EQUAL(m->arch, "x86_64");
	CU_ASSERT_STRING_EQUAL(gpu_pci(m, 0)->busid, "0000:13:00.0");
	CU_ASSERT_STRING_EQUAL(gpu_pci(m, 7)->busid, "0000:a4:00.0");
	for (int g = 0; g < 8; g++)
		CU_ASSERT_EQUAL(gpu_numa(m, g), g < 4 ? 0 : 1);
	tt_cpuset_to_list(&m->numa[1].cpus, list, sizeof(list));
	CU_ASSERT_STRING_EQUAL(list, "16-31");
	CU_ASSERT_STRING_EQUAL(m->numa[0].cpu_vendor, "GenuineIntel");
	/* GPU0 and GPU1 share a switch (same upstream port two levels up), GPU2 is on the other. */
	sw0 = m->pci[gpu_pci(m, 0)->parent].parent;
	sw1 = m->pci[gpu_pci(m, 1)->parent].parent;
	CU_ASSERT_EQUAL(sw0, sw1);
	CU_ASSERT_STRING_EQUAL(m->pci[sw0].busid, "0000:11:00.0");
	CU_ASSERT_NOT_EQUAL(m->pci[m->pci[gpu_pci(m, 2)->parent].parent].busid[5], '1');
	/* Link attributes from hwloc's GB/s: Gen5 x16 everywhere on the GPU path. */
	CU_ASSERT_DOUBLE_EQUAL(gpu_pci(m, 0)->link_gts, 32.0, 1e-9);
	CU_ASSERT_EQUAL(gpu_pci(m, 0)->link_width, 16);
	CU_ASSERT_EQUAL(gpu_pci(m, 0)->class_id, 0x030200);
	CU_ASSERT_EQUAL(gpu_pci(m, 0)->vendor, 0x10de);
	tt_hw_free(m);
}

static void test_dual_socket_nics_next_to_gpus(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	int g0 = m->gpu[0].pci, g2 = m->gpu[2].pci, g4 = m->gpu[4].pci, g7 = m->gpu[7].pci;

	CU_ASSERT_STRING_EQUAL(m->pci[tt_fixture_hca_pci(m, "mlx5_0")].busid, "0000:15:00.0");
	CU_ASSERT_EQUAL(tt_hw_relation(m, g0, tt_fixture_hca_pci(m, "mlx5_0"), NULL), TT_REL_PIX);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g2, tt_fixture_hca_pci(m, "mlx5_0"), NULL), TT_REL_PHB);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g2, tt_fixture_hca_pci(m, "mlx5_1"), NULL), TT_REL_PIX);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g2, tt_fixture_hca_pci(m, "mlx5_2"), NULL), TT_REL_PIX);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g4, tt_fixture_hca_pci(m, "mlx5_0"), NULL), TT_REL_SYS);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g7, tt_fixture_hca_pci(m, "mlx5_5"), NULL), TT_REL_PIX);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g0, g2, NULL), TT_REL_PHB);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g0, g7, NULL), TT_REL_SYS);
	/* hwloc's GUID and Port1State = 4 (active) come through without sysfs. */
	CU_ASSERT_EQUAL(m->hca[0].sys_image_guid, 0xb83fd2030000a0b0ULL);
	CU_ASSERT_EQUAL(m->hca[0].nports, 1);
	CU_ASSERT_TRUE(m->hca[0].ports[0].active);
	tt_hw_free(m);
}

static const struct tt_netif *netif(const struct tt_hw_model *m, const char *name)
{
	for (int i = 0; i < m->nnetif; i++)
		if (strcmp(m->netif[i].name, name) == 0)
			return &m->netif[i];
	return NULL;
}

static void test_sysfs_adds_ports_links_and_interfaces(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", "sysfs-dual", 0);
	const struct tt_hca *h;
	int eth;

	h = &m->hca[tt_hw_find_hca(m, "mlx5_0")];
	CU_ASSERT_EQUAL(h->ports[0].link_layer, TT_LL_INFINIBAND);
	CU_ASSERT_EQUAL(h->ports[0].rate_mbps, 400000);
	CU_ASSERT_TRUE(h->ports[0].active);
	h = &m->hca[tt_hw_find_hca(m, "mlx5_1")];
	CU_ASSERT_FALSE(h->ports[0].active);
	h = &m->hca[tt_hw_find_hca(m, "mlx5_3")];
	CU_ASSERT_EQUAL(h->ports[0].link_layer, TT_LL_ETHERNET);
	CU_ASSERT_EQUAL(h->ports[0].rate_mbps, 200000);
	CU_ASSERT_STRING_EQUAL(m->pci[h->pci].busid, "0000:95:00.0");
	/* max_link_* from sysfs replace the guess, not the idle current_link_* (2.5 GT/s for GPU
	 * 13:00.0); "Unknown" leaves hwloc's value alone. */
	CU_ASSERT_DOUBLE_EQUAL(m->pci[tt_hw_find_pci(m, "0000:13:00.0")].link_gts, 32.0, 1e-9);
	CU_ASSERT_DOUBLE_EQUAL(m->pci[tt_hw_find_pci(m, "0000:22:00.0")].link_gts, 16.0, 1e-9);
	CU_ASSERT_EQUAL(m->pci[tt_hw_find_pci(m, "0000:22:00.0")].link_width, 8);
	eth = tt_hw_find_pci(m, "0000:70:00.0");
	CU_ASSERT_DOUBLE_EQUAL(m->pci[eth].link_gts, 8.0, 1e-9);
	CU_ASSERT_EQUAL(m->pci[eth].link_width, 4);
	CU_ASSERT_DOUBLE_EQUAL(m->pci[tt_hw_find_pci(m, "0000:15:00.0")].link_gts, 32.0, 1e-9);
	CU_ASSERT_PTR_NOT_NULL_FATAL(netif(m, "eno1"));
	CU_ASSERT_EQUAL(netif(m, "eno1")->pci, eth);
	CU_ASSERT_TRUE(netif(m, "eno1")->up);
	CU_ASSERT_FALSE(netif(m, "eno1")->excluded);
	CU_ASSERT_PTR_NOT_NULL_FATAL(netif(m, "docker0"));
	CU_ASSERT_TRUE(netif(m, "docker0")->excluded);
	CU_ASSERT_TRUE(netif(m, "lo")->excluded);
	tt_hw_free(m);
}

/* A max_link_width of 0 (a port that reports no lanes) is no link fact: the device keeps what
 * hwloc's export says, as without sysfs, instead of a link of width 0. */
static void test_sysfs_width_zero_is_ignored(void)
{
	char dir[] = "/tmp/tt-sysfs-XXXXXX", cmd[2200], src[1024], path[1100];
	struct tt_hw_model *plain = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0), *m = NULL;
	struct tt_hw_options o = { 0 };
	char xml[1024];
	FILE *f;
	tt_err err;
	int i, j;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(cmd, sizeof(cmd), "cp -a '%s/.' '%s'", tt_fixture_path("sysfs-dual", src, sizeof(src)), dir);
	CU_ASSERT_EQUAL_FATAL(system(cmd), 0);
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:22:00.0/max_link_width", dir);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs("0\n", f);
	fclose(f);
	o.input_xml = tt_fixture_path("dual-pcie-8gpu.xml", xml, sizeof(xml));
	o.sysfs_root = dir;
	CU_ASSERT_EQUAL_FATAL(tt_hw_discover(&o, &m, &err), 0);
	i = tt_hw_find_pci(m, "0000:22:00.0");
	j = tt_hw_find_pci(plain, "0000:22:00.0");
	CU_ASSERT_FATAL(i >= 0 && j >= 0);
	CU_ASSERT_EQUAL(m->pci[i].link_width, plain->pci[j].link_width);
	CU_ASSERT_DOUBLE_EQUAL(m->pci[i].link_gts, plain->pci[j].link_gts, 1e-9);
	/* The other sysfs facts still apply. */
	CU_ASSERT_DOUBLE_EQUAL(m->pci[tt_hw_find_pci(m, "0000:13:00.0")].link_gts, 32.0, 1e-9);
	tt_hw_free(m);
	tt_hw_free(plain);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

static void test_nvswitch_box(void)
{
	struct tt_hw_model *m = tt_fixture_model("hgx-nvswitch-8gpu.xml", NULL, 0);
	int nv = 0;

	CU_ASSERT_EQUAL(m->ngpu, 8);
	CU_ASSERT_EQUAL(m->nhca, 4);
	CU_ASSERT_EQUAL(m->nnvlink, 32); /* 8 GPUs x 4 NVSwitches */
	/* 18 links each: 5 of them to the NVSwitch that has only hwloc's subtype (class 0000). */
	CU_ASSERT_TRUE(tt_pci_is_nvswitch(&m->pci[tt_hw_find_pci(m, "0000:64:00.0")]));
	CU_ASSERT_EQUAL(m->pci[tt_hw_find_pci(m, "0000:64:00.0")].class_id, 0);
	CU_ASSERT_EQUAL(tt_hw_relation(m, m->gpu[0].pci, m->gpu[7].pci, &nv), TT_REL_NV);
	CU_ASSERT_EQUAL(nv, 18);
	CU_ASSERT_EQUAL(tt_hw_relation(m, m->gpu[4].pci, tt_fixture_hca_pci(m, "mlx5_2"), NULL), TT_REL_PIX);
	tt_hw_free(m);
}

static void test_cloud_vm_without_and_with_virtual_switches(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 0);
	int g0, g1, vs;

	CU_ASSERT_EQUAL(m->ngpu, 8);
	CU_ASSERT_EQUAL(m->nhca, 8);
	CU_ASSERT_EQUAL(tt_hw_relation(m, m->gpu[0].pci, tt_fixture_hca_pci(m, "mlx5_ib0"), NULL), TT_REL_NODE);
	tt_hw_free(m);

	m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 1);
	g0 = m->gpu[0].pci;
	g1 = m->gpu[1].pci;
	vs = m->pci[g0].parent;
	CU_ASSERT_STRING_EQUAL(m->pci[vs].busid, "ffff:ff:01.0");
	CU_ASSERT_EQUAL(m->pci[vs].class_id, 0x060400);
	CU_ASSERT_TRUE(m->pci[vs].is_virtual);
	CU_ASSERT_EQUAL(m->pci[g1].parent, vs);
	CU_ASSERT_EQUAL(m->pci[tt_fixture_hca_pci(m, "mlx5_ib0")].parent, vs);
	CU_ASSERT_EQUAL(m->pci[tt_fixture_hca_pci(m, "mlx5_ib1")].parent, vs);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g0, tt_fixture_hca_pci(m, "mlx5_ib1"), NULL), TT_REL_PIX);
	CU_ASSERT_EQUAL(tt_hw_relation(m, g0, tt_fixture_hca_pci(m, "mlx5_ib2"), NULL), TT_REL_NODE);
	/* GPU6+7 with ib6+7 on NUMA 1 under the fourth switch. */
	CU_ASSERT_STRING_EQUAL(m->pci[m->pci[m->gpu[7].pci].parent].busid, "ffff:ff:04.0");
	CU_ASSERT_EQUAL(gpu_numa(m, 7), 1);
	CU_ASSERT_EQUAL(m->pci[tt_fixture_hca_pci(m, "mlx5_ib7")].parent, m->pci[m->gpu[7].pci].parent);
	CU_ASSERT_DOUBLE_EQUAL(m->pci[vs].link_gts, 16.0, 1e-9);
	tt_hw_free(m);

}

static void test_vm_export_gaps(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-efa-vm.xml", NULL, 0);
	int efa = tt_fixture_hca_pci(m, "rdmap0s29");

	/* EFA NICs: no PCIe link data, no port states (usable), real bus ids. */
	CU_ASSERT_EQUAL(m->nhca, 2);
	CU_ASSERT_STRING_EQUAL(m->pci[efa].busid, "0000:00:1d.0");
	CU_ASSERT_EQUAL(m->pci[efa].link_width, 0);
	CU_ASSERT_TRUE(tt_hca_usable(&m->hca[tt_hw_find_hca(m, "rdmap0s29")]));
	/* Only "Intel(R) Xeon(R) Platinum 8275CL" names the CPU. */
	CU_ASSERT_STRING_EQUAL(m->numa[0].cpu_vendor, "GenuineIntel");
	CU_ASSERT_EQUAL(m->numa[0].cpu_family, 0);
	/* The InfiniBand controller without an RDMA device is reported, not dropped silently. */
	CU_ASSERT_EQUAL(m->nwarnings, 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(m->warnings[0], "InfiniBand controller 0000:00:1f.0 has no RDMA device"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m->warnings[0], "cloud-efa-vm.xml"));
	tt_hw_free(m);
}

static void expect_failure(const char *xml, const char *sysfs, const char *needle)
{
	struct tt_hw_options o = { .input_xml = xml, .sysfs_root = sysfs };
	struct tt_hw_model *m = (struct tt_hw_model *)&o; /* must be reset to NULL */
	tt_err err = { { 0 } };

	CU_ASSERT_EQUAL(tt_hw_discover(&o, &m, &err), -1);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, needle));
	if (!strstr(err.msg, needle))
		fprintf(stderr, "expected '%s' in: %s\n", needle, err.msg);
}

static void test_bad_inputs_name_the_file(void)
{
	char xml[1024], sysfs[1024], bad[] = "/tmp/tt-hw-bad-XXXXXX";
	int fd = mkstemp(bad);

	CU_ASSERT_FATAL(fd >= 0);
	CU_ASSERT(write(fd, "<topology version=\"2.0\"><object type=", 37) == 37);
	close(fd);
	expect_failure("/nonexistent/topo.xml", NULL, "/nonexistent/topo.xml");
	expect_failure("/tmp", NULL, "cannot read hwloc XML '/tmp': Is a directory");
	expect_failure(bad, NULL, bad);
	expect_failure(bad, NULL, "malformed");
	tt_fixture_path("dual-pcie-8gpu.xml", xml, sizeof(xml));
	tt_fixture_path("sysfs-missing-rate", sysfs, sizeof(sysfs));
	expect_failure(xml, sysfs, "sysfs-missing-rate/class/infiniband/mlx5_0/ports/1/rate");
	expect_failure(xml, "/nonexistent-sysfs", "/nonexistent-sysfs");
	unlink(bad);
}

static void test_broken_exports_are_refused(void)
{
	char xml[1024];

	/* libhwloc 2.9 dies with SIGSEGV on this one: parsed in a child first, the crash is a line. */
	tt_fixture_path("hwloc-crash.xml", xml, sizeof(xml));
	expect_failure(xml, NULL, "hwloc-crash.xml' crashes libhwloc (Segmentation fault)");
	/* A CPU set word of 7 hex digits, named with its object and line. */
	tt_fixture_path("bad-cpuset.xml", xml, sizeof(xml));
	expect_failure(xml, NULL, "bad-cpuset.xml' line 25: object Package os_index=1 has cpuset word "
				  "'0x00000ff', not 8 hex digits");
	/* Well-formed words that make NUMA nodes overlap. */
	tt_fixture_path("numa-overlap.xml", xml, sizeof(xml));
	expect_failure(xml, NULL, "NUMA nodes 0 and 1 both hold CPUs 0-3");
	tt_fixture_path("hwloc-v3.xml", xml, sizeof(xml));
	expect_failure(xml, NULL, "hwloc-v3.xml' is in hwloc 3.x format");
}

static const struct tt_pci *pci_at(const struct tt_hw_model *m, const char *busid)
{
	int i = tt_hw_find_pci(m, busid);

	CU_ASSERT_FATAL(i >= 0);
	return &m->pci[i];
}

/* g4dn.metal-like export: hwloc saw GPU 18:00.0's root port idle (2.5 GT/s x8), the GPU at
 * 8.0 GT/s x16. NCCL on the machine reads max_link_* (sysfs-metal): Gen3 x16 everywhere. */
static void test_downtrained_port_in_an_export(void)
{
	struct tt_hw_model *m = tt_fixture_model("metal-t4-downtrained.xml", NULL, 0);
	int downtrain_warnings = 0;

	CU_ASSERT_DOUBLE_EQUAL(pci_at(m, "0000:18:00.0")->link_gts, 8.0, 1e-9);
	CU_ASSERT_EQUAL(pci_at(m, "0000:18:00.0")->link_width, 16);
	CU_ASSERT_DOUBLE_EQUAL(pci_at(m, "0000:3b:00.0")->link_gts, 8.0, 1e-9);
	for (int i = 0; i < m->nwarnings; i++)
		downtrain_warnings += strstr(m->warnings[i], "hwloc saw the link idle") != NULL;
	CU_ASSERT_EQUAL(m->nwarnings, 1);
	CU_ASSERT_EQUAL(downtrain_warnings, 1);
	/* The warning names the slow port, the device, and the value chosen. */
	CU_ASSERT_PTR_NOT_NULL(strstr(m->warnings[0], "PCIe port 0000:00:01.0 at 2.5 GT/s x8 above "
					       "0000:18:00.0 at 8.0 GT/s x16"));
	CU_ASSERT_PTR_NOT_NULL(strstr(m->warnings[0], "written as 8.0 GT/s x16"));
	tt_hw_free(m);

	/* With the machine's max_link_* the same values, and nothing to warn about. */
	m = tt_fixture_model("metal-t4-downtrained.xml", "sysfs-metal", 0);
	CU_ASSERT_DOUBLE_EQUAL(pci_at(m, "0000:18:00.0")->link_gts, 8.0, 1e-9);
	CU_ASSERT_EQUAL(pci_at(m, "0000:18:00.0")->link_width, 16);
	CU_ASSERT_TRUE(pci_at(m, "0000:18:00.0")->link_max);
	CU_ASSERT_EQUAL(m->nwarnings, 0);
	tt_hw_free(m);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	fputs(text, f);
	fclose(f);
}

/* sysfs values join only for the device the export names: another device at the same bus id
 * (an export read on another machine) keeps the export's values. */
static void test_sysfs_links_only_for_the_same_device(void)
{
	char root[] = "/tmp/tt-hw-sysfs-XXXXXX", dir[256], xml[1024];
	struct tt_hw_options o = { .input_xml = tt_fixture_path("metal-t4-downtrained.xml", xml, sizeof(xml)) };
	struct tt_hw_model *m = NULL;
	tt_err err;
	int rc;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(root));
	o.sysfs_root = root;
	for (int same = 0; same < 2; same++) {
		snprintf(dir, sizeof(dir), "%s/bus", root);
		mkdir(dir, 0700);
		snprintf(dir, sizeof(dir), "%s/bus/pci", root);
		mkdir(dir, 0700);
		snprintf(dir, sizeof(dir), "%s/bus/pci/devices", root);
		mkdir(dir, 0700);
		snprintf(dir, sizeof(dir), "%s/bus/pci/devices/0000:3b:00.0", root);
		mkdir(dir, 0700);
		put_file(dir, "max_link_speed", "5.0 GT/s PCIe\n");
		put_file(dir, "max_link_width", "4\n");
		put_file(dir, "vendor", same ? "0x10de\n" : "0x1002\n");
		put_file(dir, "device", same ? "0x1eb8\n" : "0x7408\n");
		rc = tt_hw_discover(&o, &m, &err);
		CU_ASSERT_EQUAL_FATAL(rc, 0);
		CU_ASSERT_DOUBLE_EQUAL(pci_at(m, "0000:3b:00.0")->link_gts, same ? 5.0 : 8.0, 1e-9);
		CU_ASSERT_EQUAL(pci_at(m, "0000:3b:00.0")->link_width, same ? 4 : 16);
		tt_hw_free(m);
		m = NULL;
	}
	for (const char *f = "max_link_speed\0max_link_width\0vendor\0device\0"; *f; f += strlen(f) + 1) {
		snprintf(dir, sizeof(dir), "%s/bus/pci/devices/0000:3b:00.0/%s", root, f);
		unlink(dir);
	}
	for (const char *d = "/bus/pci/devices/0000:3b:00.0\0/bus/pci/devices\0/bus/pci\0/bus\0\0"; *d;
	     d += strlen(d) + 1) {
		snprintf(dir, sizeof(dir), "%s%s", root, d);
		rmdir(dir);
	}
	rmdir(root);
}

/* The link NCCL reads does not depend on --virtual-switches: on a q35 KVM guest (a VM by DMI)
 * with an idle port above GPU 01:00.0 and GPU 02:00.0 itself recorded idle, both GPUs are
 * 16.0 GT/s x16 with and without (the port's value counts though a made-up switch replaces it). */
static void test_links_do_not_depend_on_virtual_switches(void)
{
	for (int vs = 0; vs < 2; vs++) {
		struct tt_hw_model *m = tt_fixture_model("kvm-q35-2gpu.xml", NULL, vs);

		for (const char *b = "0000:01:00.0\0" "0000:02:00.0\0"; *b; b += strlen(b) + 1) {
			const struct tt_pci *g = pci_at(m, b);

			CU_ASSERT_DOUBLE_EQUAL(g->link_gts, 16.0, 1e-9);
			CU_ASSERT_EQUAL(g->link_width, 16);
			CU_ASSERT_EQUAL(m->pci[g->parent].is_virtual, vs);
		}
		tt_hw_free(m);
	}
}

static void expect_vm(const char *xml, int hypervisor, int want, const char *needle)
{
	struct tt_hw_model *m = tt_fixture_model(xml, NULL, 0);
	char why[192];

	if (hypervisor >= 0)
		m->cpu_hypervisor = hypervisor;	/* as live discovery on x86 sets it */
	CU_ASSERT_EQUAL(tt_hw_is_virtual_machine(m, why, sizeof(why)), want);
	CU_ASSERT_PTR_NOT_NULL(strstr(why, needle));
	if (!strstr(why, needle))
		fprintf(stderr, "%s: expected '%s' in: %s\n", xml, needle, why);
	tt_hw_free(m);
}

static void test_what_tells_a_vm(void)
{
	/* DMI first: Amazon's .metal is bare metal, QEMU a VM though its tree has root ports. */
	expect_vm("metal-t4-downtrained.xml", -1, 0, "DMI says Amazon EC2 g4dn.metal, a bare-metal instance");
	expect_vm("kvm-q35-2gpu.xml", -1, 1, "DMI says QEMU");
	/* No DMI: the tree. A card on a host bridge with no port above is a hypervisor's bus. */
	expect_vm("cloud-vm-8gpu.xml", -1, 1, "0001:00:00.0 sits on a host bridge");
	expect_vm("dual-pcie-8gpu.xml", -1, 0, "every GPU and RDMA NIC sits below a PCIe port");
	/* Live x86: the CPU's hypervisor flag decides alone. */
	expect_vm("metal-t4-downtrained.xml", 1, 1, "hypervisor flag in /proc/cpuinfo is set");
	expect_vm("cloud-vm-8gpu.xml", 0, 0, "hypervisor flag in /proc/cpuinfo is clear");
}

static void test_virtual_switches_refused_on_bare_metal(void)
{
	char xml[1024];
	struct tt_hw_options o = { .virtual_switches = 1 };
	struct tt_hw_model *m = NULL;
	tt_err err;

	o.input_xml = tt_fixture_path("metal-t4-downtrained.xml", xml, sizeof(xml));
	CU_ASSERT_EQUAL(tt_hw_discover(&o, &m, &err), -1);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--virtual-switches: "));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "metal-t4-downtrained.xml is not a virtual machine (DMI says "
					       "Amazon EC2 g4dn.metal, a bare-metal instance)"));
	CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
	o.input_xml = tt_fixture_path("dual-pcie-8gpu.xml", xml, sizeof(xml));
	CU_ASSERT_EQUAL(tt_hw_discover(&o, &m, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "dual-pcie-8gpu.xml is not a virtual machine (every GPU"));
}

static void test_cpuinfo_hypervisor_flag(void)
{
	char path[] = "/tmp/tt-cpuinfo-XXXXXX";
	int fd = mkstemp(path);
	static const struct { const char *text; int want; } cases[] = {
		{ "processor\t: 0\nflags\t\t: fpu vme sse2 hypervisor lahf_lm\n", 1 },
		{ "processor\t: 0\nflags\t\t: fpu vme sse2 lahf_lm\n", 0 },
		{ "processor\t: 0\nflags\t\t: fpu hypervisorx\n", 0 },	/* whole words only */
		{ "processor\t: 0\nFeatures\t: fp asimd evtstrm\n", -1 },	/* arm64: no flags line */
	};

	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		FILE *f = fopen(path, "w");

		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		fputs(cases[i].text, f);
		fclose(f);
		CU_ASSERT_EQUAL(tt_cpuinfo_hypervisor(path), cases[i].want);
	}
	unlink(path);
	CU_ASSERT_EQUAL(tt_cpuinfo_hypervisor(path), -1);
}

static void test_live_machine(void)
{
	struct tt_hw_options o = { 0 };
	struct tt_hw_model *m = NULL;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_discover(&o, &m, &err), 0);
	CU_ASSERT(m->nnuma >= 1);
	CU_ASSERT(CPU_COUNT(&m->all_cpus) >= 1);
	/* No HCA must come with the reason, as on a machine without RDMA. */
	if (m->nhca == 0)
		CU_ASSERT_NOT_EQUAL(m->rdma_note[0], '\0');
	tt_hw_free(m);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hw_discover", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "dual socket structure", test_dual_socket_structure);
	CU_add_test(s, "dual socket NICs next to GPUs", test_dual_socket_nics_next_to_gpus);
	CU_add_test(s, "sysfs adds ports, links, interfaces", test_sysfs_adds_ports_links_and_interfaces);
	CU_add_test(s, "sysfs width 0 is ignored", test_sysfs_width_zero_is_ignored);
	CU_add_test(s, "NVSwitch box", test_nvswitch_box);
	CU_add_test(s, "cloud VM virtual switches", test_cloud_vm_without_and_with_virtual_switches);
	CU_add_test(s, "VM export gaps", test_vm_export_gaps);
	CU_add_test(s, "bad inputs name the file", test_bad_inputs_name_the_file);
	CU_add_test(s, "broken exports are refused", test_broken_exports_are_refused);
	CU_add_test(s, "downtrained port in an export", test_downtrained_port_in_an_export);
	CU_add_test(s, "sysfs links only for the same device", test_sysfs_links_only_for_the_same_device);
	CU_add_test(s, "links do not depend on virtual switches", test_links_do_not_depend_on_virtual_switches);
	CU_add_test(s, "what tells a VM", test_what_tells_a_vm);
	CU_add_test(s, "virtual switches refused on bare metal", test_virtual_switches_refused_on_bare_metal);
	CU_add_test(s, "cpuinfo hypervisor flag", test_cpuinfo_hypervisor_flag);
	CU_add_test(s, "live machine", test_live_machine);
	return 0;
}

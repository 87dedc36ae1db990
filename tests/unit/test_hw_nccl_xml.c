/* SPDX-License-Identifier: MIT */
/* test_hw_nccl_xml.c — the NCCL topology writer on the project's fixtures: the parser's rules
 * (nccl_xml_check.c), one node per PCIe switch as NCCL's own detection keeps it, NICs at their
 * real bus ids with the functions of a card merged, safe link values where none are known, the
 * CPU attributes NCCL needs to merge the ranks' copies, and atomic file writes. What NCCL's own
 * code makes of these files is tests/unit/nccl_oracle.sh. */
#include "cunit_main.h"
#include "hw_fixture.h"
#include "hw_nccl_xml.h"
#include "nccl_xml_check.h"
#include "tt_file.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *render(const struct tt_hw_model *m)
{
	char *xml = NULL;
	size_t len;
	tt_err err;

	if (tt_nccl_xml_render(m, &xml, &len, &err) != 0)
		fprintf(stderr, "%s\n", err.msg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(xml);
	CU_ASSERT_EQUAL(strlen(xml), len);
	return xml;
}

static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

/* The line of the <pci> element with this bus id ("" when absent). */
static const char *pci_line(const char *xml, const char *busid, char *buf, size_t len)
{
	char key[48];
	const char *at, *start, *end;

	snprintf(key, sizeof(key), "<pci busid=\"%s\"", busid);
	buf[0] = '\0';
	at = strstr(xml, key);
	if (!at)
		return buf;
	for (start = at; start > xml && start[-1] != '\n'; start--)
		;
	end = strchr(at, '\n');
	snprintf(buf, len, "%.*s", (int)(end - start), start);
	return buf;
}

/* Depth of the element starting the line (2 spaces per level). */
static int depth_of(const char *line)
{
	return (int)strspn(line, " ") / 2;
}

static void test_checker_rejects_what_nccl_rejects(void)
{
	struct xml_stats st;

	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\">\n</system>\n", &st), 0);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><pci busid=\"0000:01:00.0\" link_speed=\"\" "
				       "link_width=\"0\"/></system>", &st), 0);
	CU_ASSERT_EQUAL(nccl_xml_check("<?xml version=\"1.0\"?>\n<system version=\"1\"/>\n", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\">\n\t<cpu numaid=\"0\"/>\n</system>\n", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><pci busid=\"0000:01:00.0\" link_speed=\"8.0 GT/s\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><pci busid=\"0000:0A:00.0\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><cpu affinity=\"0x0000ffff\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><cpu numaid=\"0\"></system>", &st), -1);
}

static void test_one_node_per_pcie_switch(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	char sw[512], gpu[512], nic[512];
	struct xml_stats st;
	char *xml = render(m);

	nccl_xml_check_ok("dual", xml, &st);
	CU_ASSERT_EQUAL(strncmp(xml, "<system version=\"1\">\n", 21), 0);
	CU_ASSERT_EQUAL(st.cpus, 2);
	/* GPU0's switch: root port 10:01.0 -> upstream 11:00.0 -> down ports 12:0x.0 -> GPU 13:00.0.
	 * NCCL keeps the upstream port only: cpu > 11:00.0 > GPU, NIC, so they are PIX. */
	pci_line(xml, "0000:11:00.0", sw, sizeof(sw));
	pci_line(xml, "0000:13:00.0", gpu, sizeof(gpu));
	pci_line(xml, "0000:15:00.0", nic, sizeof(nic));
	CU_ASSERT_EQUAL(depth_of(sw), 2);
	CU_ASSERT_EQUAL(depth_of(gpu), 3);
	CU_ASSERT_EQUAL(depth_of(nic), 3);
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:10:01.0"));
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:12:00.0"));
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:12:02.0"));
	CU_ASSERT(strstr(xml, "busid=\"0000:11:00.0\"") < strstr(xml, "busid=\"0000:13:00.0\""));
	CU_ASSERT_EQUAL(st.pcis, 4 + 8 + 6); /* 4 switches, 8 GPUs, 6 HCAs */
	CU_ASSERT_EQUAL(st.nets, 6);
	/* The management NIC and its root port lead to no GPU or HCA: left out. */
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:70:00.0"));
	/* The switch node carries the upstream port's own ids. */
	CU_ASSERT_PTR_NOT_NULL(strstr(sw, "class=\"0x060400\" vendor=\"0x10b5\" device=\"0xc010\""));
	free(xml);
	tt_hw_free(m);
}

static void test_every_attribute_nccl_would_fill(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	char *xml = render(m), *line, *save;

	/* Left out, NCCL fills them from sysfs or cpuid in some ranks' copies only, and the copies
	 * then no longer merge. */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<cpu numaid=\"0\" affinity=\"0000ffff\" arch=\"x86_64\" "
					   "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">"));
	for (line = strtok_r(xml, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (!strstr(line, "<pci "))
			continue;
		CU_ASSERT_PTR_NOT_NULL(strstr(line, " vendor=\"0x"));
		CU_ASSERT_PTR_NOT_NULL(strstr(line, " subsystem_device=\"0x"));
		CU_ASSERT_PTR_NOT_NULL(strstr(line, " link_speed=\"32.0 GT/s PCIe\" link_width=\"16\""));
	}
	free(xml);
	tt_hw_free(m);
}

static void test_down_hca_left_out_and_nets_named(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", "sysfs-dual", 0);
	struct xml_stats st;
	char *xml = render(m);

	nccl_xml_check_ok("dual+sysfs", xml, &st);
	CU_ASSERT_EQUAL(st.nets, 5); /* mlx5_1's only port is down: NCCL cannot use it */
	CU_ASSERT_PTR_NULL(strstr(xml, "name=\"mlx5_1\""));
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:25:00.0"));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<net name=\"mlx5_0\" speed=\"400000\" guid=\"0xb83fd2030000a0b0\"/>"));
	CU_ASSERT_PTR_NULL(strstr(xml, " port=")); /* NCCL numbers ports itself */
	free(xml);
	tt_hw_free(m);
}

static void test_link_is_the_lower_of_device_and_port(void)
{
	/* sysfs-dual: GPU 13:00.0 idles at 2.5 GT/s but can do 32 (max_link_*, as NCCL reads);
	 * GPU 23:00.0 can do 32 x16 but its downstream port only 16 x8. */
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", "sysfs-dual", 0);
	char line[512];
	char *xml = render(m);

	CU_ASSERT_DOUBLE_EQUAL(m->pci[tt_hw_find_pci(m, "0000:13:00.0")].link_gts, 32.0, 1e-9);
	pci_line(xml, "0000:13:00.0", line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\""));
	pci_line(xml, "0000:23:00.0", line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "link_speed=\"16.0 GT/s PCIe\" link_width=\"8\""));
	free(xml);
	tt_hw_free(m);
}

static void test_card_functions_merge_at_the_real_bus_id(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	int one = m->hca[tt_hw_find_hca(m, "mlx5_1")].pci, two = m->hca[tt_hw_find_hca(m, "mlx5_2")].pci;
	struct xml_stats st;
	char *xml;

	/* mlx5_2 as the second function of mlx5_1's card, as on a dual-port ConnectX. */
	snprintf(m->pci[two].busid, sizeof(m->pci[two].busid), "0000:25:00.1");
	m->pci[two].parent = m->pci[one].parent;
	xml = render(m);
	nccl_xml_check_ok("merged", xml, &st);
	CU_ASSERT_EQUAL(occurrences(xml, "busid=\"0000:25:00.0\""), 1);
	CU_ASSERT_EQUAL(occurrences(xml, "0000:25:00.1"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<nic>\n          <net name=\"mlx5_1\" guid=\"0xb83fd2030001a0b1\"/>\n"
					   "          <net name=\"mlx5_2\" guid=\"0xb83fd2030002a0b2\"/>\n"));
	CU_ASSERT_EQUAL(st.nets, 6);
	free(xml);

	/* A function of another device on the same bus (a VF at 25:02.0) is its own NIC: its bus id
	 * is never rewritten to 25:00.0, which on a VM is often another device. */
	snprintf(m->pci[two].busid, sizeof(m->pci[two].busid), "0000:25:02.0");
	xml = render(m);
	CU_ASSERT_EQUAL(occurrences(xml, "busid=\"0000:25:00.0\""), 1);
	CU_ASSERT_EQUAL(occurrences(xml, "busid=\"0000:25:02.0\""), 1);
	free(xml);
	tt_hw_free(m);
}

static void test_vm_nics_without_link_data(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-efa-vm.xml", NULL, 0);
	char line[512];
	struct xml_stats st;
	char *xml = render(m);

	nccl_xml_check_ok("efa", xml, &st);
	/* NCCL requires both attributes on every <pci> it keeps; a NIC it finds by name gets nothing
	 * from sysfs. Unknown values are written as NCCL writes them (read as 8 GT/s x16). */
	pci_line(xml, "0000:00:1d.0", line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "class=\"0x020000\" vendor=\"0x1d0f\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "link_speed=\"\" link_width=\"0\">"));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<net name=\"rdmap0s29\"/>"));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<net name=\"rdmap0s30\"/>"));
	/* The real bus ids (functions of devices 1d and 1e), not the bus's 00.0. */
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:00:00.0"));
	CU_ASSERT_EQUAL(st.nets, 2);
	/* The IB controller without an RDMA device is placed (NCCL can still find it by bus id). */
	pci_line(xml, "0000:00:1f.0", line, sizeof(line));
	CU_ASSERT_PTR_NOT_NULL(strstr(line, "/>"));
	/* A CPU named only "Intel(R) Xeon(R) ...": NCCL's oldest Intel model, never left out. */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"0\">"));
	free(xml);
	tt_hw_free(m);
}

static void test_cpu_attributes_when_unknown(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 0);
	char *xml = render(m);

	/* AMD family 25 as cpuid encodes it for NCCL: 0xf + (0xa << 4). */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "vendor=\"AuthenticAMD\" familyid=\"175\" modelid=\"1\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "affinity=\"0000ffff,ff000000\""));
	free(xml);
	/* No vendor at all on x86: written as NCCL's lowest Intel model, not left to the reader. */
	for (int i = 0; i < m->nnuma; i++) {
		m->numa[i].cpu_vendor[0] = '\0';
		m->numa[i].cpu_family = m->numa[i].cpu_model = 0;
	}
	xml = render(m);
	CU_ASSERT_EQUAL(occurrences(xml, "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"0\""), 2);
	free(xml);
	/* Other architectures: NCCL reads none of them, they are there so that no x86 reader
	 * fills them in per rank. */
	snprintf(m->arch, sizeof(m->arch), "ppc64");
	xml = render(m);
	CU_ASSERT_EQUAL(occurrences(xml, "arch=\"ppc64\" vendor=\"\" familyid=\"0\" modelid=\"0\""), 2);
	free(xml);
	tt_hw_free(m);
}

static void test_nvswitches_and_virtual_switches(void)
{
	struct tt_hw_model *m = tt_fixture_model("hgx-nvswitch-8gpu.xml", NULL, 0);
	struct xml_stats st;
	char *xml = render(m);

	nccl_xml_check_ok("hgx", xml, &st);
	/* NVSwitches reach NCCL through NVML; NCCL makes no node of them on PCI. */
	CU_ASSERT_PTR_NULL(strstr(xml, "0x068000"));
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:64:00.0"));
	CU_ASSERT_EQUAL(st.nets, 4);
	free(xml);
	tt_hw_free(m);

	m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 1);
	xml = render(m);
	nccl_xml_check_ok("cloud", xml, &st);
	CU_ASSERT_EQUAL(st.virtual_switches, 4);
	/* A made-up switch has no sysfs entry: only what vendors' files carry. */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<pci busid=\"ffff:ff:01.0\" class=\"0x060400\" "
					   "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"));
	free(xml);
	tt_hw_free(m);
}

static void test_machine_without_gpu_or_hca_is_valid(void)
{
	struct tt_hw_options o = { 0 };
	struct tt_hw_model *m = NULL;
	struct xml_stats st;
	tt_err err;
	char *xml;

	CU_ASSERT_EQUAL_FATAL(tt_hw_discover(&o, &m, &err), 0);
	xml = render(m);
	nccl_xml_check_ok("live", xml, &st);
	CU_ASSERT(st.cpus >= 1);
	free(xml);
	tt_hw_free(m);
}

/* No NVIDIA GPU and no RDMA NIC (AMD MI250X GCDs, Slingshot NICs): nothing to describe, and what
 * was found instead; any NVIDIA GPU or usable HCA is something (AMD GPUs with an mlx5 are). */
static void test_nothing_to_describe(void)
{
	struct tt_hw_model *m = tt_fixture_model("amd-mi250x-node.xml", NULL, 0);
	char found[160];

	CU_ASSERT_EQUAL(tt_nccl_xml_nothing_to_describe(m, found, sizeof(found)), 1);
	CU_ASSERT_STRING_EQUAL(found, "8 GPUs 1002:7408, NICs hsn0 hsn1 hsn2 hsn3 without RDMA");
	tt_hw_free(m);
	m = tt_fixture_model("cpu-only-8cpu.xml", NULL, 0);
	CU_ASSERT_EQUAL(tt_nccl_xml_nothing_to_describe(m, found, sizeof(found)), 1);
	CU_ASSERT_PTR_NOT_NULL(strstr(found, "no GPU"));
	tt_hw_free(m);
	m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	CU_ASSERT_EQUAL(tt_nccl_xml_nothing_to_describe(m, found, sizeof(found)), 0);
	tt_hw_free(m);
	m = tt_fixture_model("metal-t4-downtrained.xml", NULL, 0);
	CU_ASSERT_EQUAL(tt_nccl_xml_nothing_to_describe(m, found, sizeof(found)), 0);
	tt_hw_free(m);
}

/* NCCL's limit counts the file's elements and the <gpu> and <nvlink> elements it adds: one <gpu>
 * per GPU and one <nvlink> per link end at a GPU. Links from GPU 0 to a non-GPU device (each one
 * end at a GPU, nothing in the file) bring the total to exactly 256, accepted, then 257, refused. */
static void test_element_limit_at_its_boundary(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct xml_stats st;
	char *xml = render(m), *out = NULL;
	int links, other = -1;
	size_t len;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(m->nnvlink, 0);
	CU_ASSERT_EQUAL_FATAL(nccl_xml_check(xml, &st), 0);
	free(xml);
	links = TT_NCCL_XML_MAX_ELEMENTS - st.elements - m->ngpu;
	CU_ASSERT_FATAL(links > 0);
	for (int i = 0; i < m->npci && other < 0; i++)
		if (!tt_pci_is_nvidia_gpu(&m->pci[i]) && !tt_pci_is_nvswitch(&m->pci[i]))
			other = i;
	CU_ASSERT_FATAL(other >= 0);
	free(m->nvlink);
	m->nvlink = calloc((size_t)links + 1, sizeof(*m->nvlink));
	CU_ASSERT_PTR_NOT_NULL_FATAL(m->nvlink);
	for (int l = 0; l <= links; l++)
		m->nvlink[l] = (struct tt_nvlink){ .a = m->gpu[0].pci, .b = other, .count = 1 };
	m->nnvlink = links;
	xml = render(m);
	CU_ASSERT_EQUAL(nccl_xml_check(xml, &st), 0);
	free(xml);
	m->nnvlink = links + 1;
	err.msg[0] = '\0';
	CU_ASSERT_EQUAL(tt_nccl_xml_render(m, &out, &len, &err), -1);
	CU_ASSERT_PTR_NULL(out);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "would have 257 elements (NCCL accepts 256)"));
	tt_hw_free(m);
}

static void test_atomic_write(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	char dir[] = "/tmp/tt-hw-xml-XXXXXX", path[256], expect[64], fifo[256];
	struct dirent *e;
	struct stat st;
	tt_err err;
	DIR *d;
	int entries = 0;

	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/topo.xml", dir);
	CU_ASSERT_EQUAL(tt_file_write_atomic(path, "old", 3, &err), 0);
	CU_ASSERT_EQUAL(tt_nccl_xml_write_file(m, path, &err), 0);
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT(st.st_size > 100);
	{
		mode_t mask = umask(0);

		umask(mask);
		CU_ASSERT_EQUAL(st.st_mode & 0777, 0666 & ~mask); /* created like any file */
	}
	d = opendir(dir);
	while ((e = readdir(d)))
		entries += e->d_name[0] != '.';
	closedir(d);
	CU_ASSERT_EQUAL(entries, 1); /* no temporary left behind */
	/* An unwritable place: the error names the path and nothing is created. */
	snprintf(path, sizeof(path), "%s/missing-dir/topo.xml", dir);
	CU_ASSERT_EQUAL(tt_nccl_xml_write_file(m, path, &err), -1);
	snprintf(expect, sizeof(expect), "%s/missing-dir/topo.xml", dir);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, expect));
	CU_ASSERT_NOT_EQUAL(access(path, F_OK), 0);
	/* Something that is not a regular file is refused, not replaced by one. */
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
	CU_ASSERT_EQUAL(tt_nccl_xml_write_file(m, fifo, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a FIFO, not a regular file"));
	CU_ASSERT_EQUAL(lstat(fifo, &st), 0);
	CU_ASSERT_TRUE(S_ISFIFO(st.st_mode));
	unlink(fifo);
	snprintf(path, sizeof(path), "%s/topo.xml", dir);
	unlink(path);
	rmdir(dir);
	tt_hw_free(m);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hw_nccl_xml", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "checker rejects what NCCL rejects", test_checker_rejects_what_nccl_rejects);
	CU_add_test(s, "one node per PCIe switch", test_one_node_per_pcie_switch);
	CU_add_test(s, "every attribute NCCL would fill", test_every_attribute_nccl_would_fill);
	CU_add_test(s, "down HCA left out, nets named", test_down_hca_left_out_and_nets_named);
	CU_add_test(s, "link is the lower of device and port", test_link_is_the_lower_of_device_and_port);
	CU_add_test(s, "card functions merge at the real bus id", test_card_functions_merge_at_the_real_bus_id);
	CU_add_test(s, "VM NICs without link data", test_vm_nics_without_link_data);
	CU_add_test(s, "CPU attributes when unknown", test_cpu_attributes_when_unknown);
	CU_add_test(s, "NVSwitches and virtual switches", test_nvswitches_and_virtual_switches);
	CU_add_test(s, "machine without GPU or HCA", test_machine_without_gpu_or_hca_is_valid);
	CU_add_test(s, "nothing to describe", test_nothing_to_describe);
	CU_add_test(s, "element limit at its boundary", test_element_limit_at_its_boundary);
	CU_add_test(s, "atomic write", test_atomic_write);
	return 0;
}

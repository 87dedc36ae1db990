/* test_hw_nccl_xml.c — the NCCL topology writer against the rules of NCCL's own parser (checked by
 * a small independent parser below), its structure on the fixtures, atomic file writes, and every
 * real hwloc export in ../shared/topologies when present. */
#include "cunit_main.h"
#include "hw_fixture.h"
#include "hw_nccl_xml.h"
#include "tt_file.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the checker learned about one file. */
struct xml_stats {
	int elements, cpus, pcis, nets, virtual_switches;
	char problem[256];
};

static int fail(struct xml_stats *st, const char *what, const char *at)
{
	snprintf(st->problem, sizeof(st->problem), "%s near: %.60s", what, at);
	return -1;
}

static int link_speed_ok(const char *v)
{
	static const char *const ok[] = { "2.5 GT/s", "5 GT/s", "8 GT/s", "16 GT/s", "32 GT/s",
					  "2.5 GT/s PCIe", "5.0 GT/s PCIe", "8.0 GT/s PCIe",
					  "16.0 GT/s PCIe", "32.0 GT/s PCIe", "64.0 GT/s PCIe" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (strcmp(v, ok[i]) == 0)
			return 1;
	return 0;
}

static int cpumap_ok(const char *v)
{
	size_t n = strlen(v);

	if (n < 8 || (n + 1) % 9 != 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((i % 9 == 8) ? v[i] != ',' : !isxdigit((unsigned char)v[i]) || isupper((unsigned char)v[i]))
			return 0;
	return 1;
}

static int busid_ok(const char *v)
{
	unsigned a, b, c, d;
	int n = 0;

	for (const char *p = v; *p; p++)
		if (isupper((unsigned char)*p))
			return 0;
	return sscanf(v, "%4x:%2x:%2x.%1x%n", &a, &b, &c, &d, &n) == 4 && v[n] == '\0' && n == 12;
}

static int check_attr(struct xml_stats *st, const char *elem, const char *name, const char *value)
{
	if (strcmp(name, "link_speed") == 0 && !link_speed_ok(value))
		return fail(st, "link_speed NCCL does not know", value);
	if (strcmp(name, "busid") == 0 && !busid_ok(value))
		return fail(st, "busid not dddd:bb:dd.f lower case", value);
	if (strcmp(name, "affinity") == 0 && !cpumap_ok(value))
		return fail(st, "affinity not in cpumap form", value);
	if (strcmp(elem, "pci") == 0 && strcmp(name, "busid") == 0 && strncmp(value, "ffff:ff:", 8) == 0)
		st->virtual_switches++;
	return 0;
}

/* Parses the way NCCL's hand-written parser does and checks its limits. */
static int nccl_xml_check(const char *xml, struct xml_stats *st)
{
	int depth = 0, children[64] = { 0 };
	const char *p = xml;

	memset(st, 0, sizeof(*st));
	if (strstr(xml, "<?xml"))
		return fail(st, "XML declaration", strstr(xml, "<?xml"));
	if (strchr(xml, '\t'))
		return fail(st, "tab", strchr(xml, '\t'));
	while (*p) {
		char elem[64], name[300], value[300];
		int n, nattrs = 0;

		if (*p == ' ' || *p == '\n' || *p == '\r') {
			p++;
			continue;
		}
		if (*p != '<')
			return fail(st, "text between tags", p);
		if (p[1] == '/') {
			p = strchr(p, '>');
			if (!p || depth == 0)
				return fail(st, "unbalanced close", xml);
			depth--;
			p++;
			continue;
		}
		if (sscanf(p + 1, "%63[a-z0-9]%n", elem, &n) != 1)
			return fail(st, "bad element name", p);
		p += 1 + n;
		st->elements++;
		st->cpus += strcmp(elem, "cpu") == 0;
		st->pcis += strcmp(elem, "pci") == 0;
		st->nets += strcmp(elem, "net") == 0;
		if (depth > 0 && ++children[depth - 1] > 640)
			return fail(st, "more than 640 children", p);
		while (*p == ' ') {
			if (sscanf(p + 1, "%299[a-z_]=\"%299[^\"]\"%n", name, value, &n) != 2)
				return fail(st, "attribute not name=\"value\" after one space", p);
			if (strlen(name) > 255 || strlen(value) > 255)
				return fail(st, "attribute longer than 255", p);
			if (++nattrs > 16)
				return fail(st, "more than 16 attributes", p);
			if (check_attr(st, elem, name, value) < 0)
				return -1;
			p += 1 + n;
		}
		if (p[0] == '/' && p[1] == '>') {
			p += 2;
		} else if (p[0] == '>') {
			if (depth >= 63)
				return fail(st, "too deep", p);
			children[depth] = 0;
			depth++;
			p++;
		} else {
			return fail(st, "tag not closed on its line", p);
		}
	}
	if (depth != 0)
		return fail(st, "unclosed element", xml);
	if (st->elements > TT_NCCL_XML_MAX_ELEMENTS)
		return fail(st, "more than 256 elements", xml);
	return 0;
}

static char *render(const struct tt_hw_model *m)
{
	char *xml = NULL;
	size_t len;
	tt_err err;

	if (tt_nccl_xml_render(m, &xml, &len, &err) != 0)
		fprintf(stderr, "%s\n", err.msg);
	CU_ASSERT_PTR_NOT_NULL(xml);
	if (xml)
		CU_ASSERT_EQUAL(strlen(xml), len);
	return xml;
}

static void check_ok(const char *what, const char *xml, struct xml_stats *st)
{
	int rc = nccl_xml_check(xml, st);

	if (rc != 0)
		fprintf(stderr, "%s: %s\n", what, st->problem);
	CU_ASSERT_EQUAL(rc, 0);
}

static void test_checker_rejects_what_nccl_rejects(void)
{
	struct xml_stats st;

	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\">\n</system>\n", &st), 0);
	CU_ASSERT_EQUAL(nccl_xml_check("<?xml version=\"1.0\"?>\n<system version=\"1\"/>\n", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\">\n\t<cpu numaid=\"0\"/>\n</system>\n", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><pci busid=\"0000:01:00.0\" link_speed=\"8.0 GT/s\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><pci busid=\"0000:0A:00.0\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><cpu affinity=\"0x0000ffff\"/></system>", &st), -1);
	CU_ASSERT_EQUAL(nccl_xml_check("<system version=\"1\"><cpu numaid=\"0\"></system>", &st), -1);
}

static void test_dual_socket_file(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", "sysfs-dual", 0);
	struct xml_stats st;
	char *xml = render(m);

	check_ok("dual", xml, &st);
	CU_ASSERT_EQUAL(strncmp(xml, "<system version=\"1\">\n", 21), 0);
	CU_ASSERT_EQUAL(st.cpus, 2);
	CU_ASSERT_EQUAL(st.nets, 5); /* mlx5_1's only port is down */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<cpu numaid=\"0\" affinity=\"0000ffff\" arch=\"x86_64\" "
					   "vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">"));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<cpu numaid=\"1\" affinity=\"ffff0000\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<pci busid=\"0000:13:00.0\" class=\"0x030200\" vendor=\"0x10de\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "link_speed=\"32.0 GT/s PCIe\" link_width=\"16\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<net name=\"mlx5_0\" speed=\"400000\" guid=\"0xb83fd2030000a0b0\"/>"));
	CU_ASSERT_PTR_NULL(strstr(xml, " port=")); /* NCCL numbers ports itself */
	CU_ASSERT_PTR_NULL(strstr(xml, "name=\"mlx5_1\""));
	/* The management NIC and its root port lead to no GPU or HCA: left out. */
	CU_ASSERT_PTR_NULL(strstr(xml, "0000:70:00.0"));
	/* GPU0's switch: upstream 11:00.0 holds down port 12:00.0 holding the GPU. */
	CU_ASSERT(strstr(xml, "busid=\"0000:11:00.0\"") < strstr(xml, "busid=\"0000:12:00.0\""));
	CU_ASSERT(strstr(xml, "busid=\"0000:12:00.0\"") < strstr(xml, "busid=\"0000:13:00.0\""));
	free(xml);
	tt_hw_free(m);
}

static int occurrences(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static void test_card_functions_merge_like_nccl(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	int one = m->hca[tt_hw_find_hca(m, "mlx5_1")].pci, two = m->hca[tt_hw_find_hca(m, "mlx5_2")].pci;
	struct xml_stats st;
	char *xml;

	/* Make mlx5_2 the second function of mlx5_1's card, as on a dual-port ConnectX. */
	snprintf(m->pci[two].busid, sizeof(m->pci[two].busid), "0000:25:00.1");
	m->pci[two].parent = m->pci[one].parent;
	xml = render(m);
	check_ok("merged", xml, &st);
	CU_ASSERT_EQUAL(occurrences(xml, "busid=\"0000:25:00.0\""), 1);
	CU_ASSERT_EQUAL(occurrences(xml, "0000:25:00.1"), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<nic>\n              <net name=\"mlx5_1\" guid=\"0xb83fd2030001a0b1\"/>\n"
					   "              <net name=\"mlx5_2\" guid=\"0xb83fd2030002a0b2\"/>\n"));
	CU_ASSERT_EQUAL(st.nets, 6);
	free(xml);
	tt_hw_free(m);
}

static void test_nvswitch_and_cloud_files(void)
{
	struct tt_hw_model *m = tt_fixture_model("hgx-nvswitch-8gpu.xml", NULL, 0);
	struct xml_stats st;
	char *xml = render(m);

	check_ok("hgx", xml, &st);
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "class=\"0x068000\" vendor=\"0x10de\""));
	free(xml);
	tt_hw_free(m);

	m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 1);
	xml = render(m);
	check_ok("cloud", xml, &st);
	CU_ASSERT_EQUAL(st.virtual_switches, 4);
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "<pci busid=\"ffff:ff:01.0\" class=\"0x060400\" "
					   "link_speed=\"16.0 GT/s PCIe\" link_width=\"16\">"));
	/* AMD family 25 as cpuid encodes it for NCCL: 0xf + (0xa << 4). */
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "vendor=\"AuthenticAMD\" familyid=\"175\""));
	CU_ASSERT_PTR_NOT_NULL(strstr(xml, "affinity=\"0000ffff,ff000000\""));
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
	check_ok("live", xml, &st);
	CU_ASSERT(st.cpus >= 1);
	free(xml);
	tt_hw_free(m);
}

static void test_atomic_write(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	char dir[] = "/tmp/tt-hw-xml-XXXXXX", path[256], expect[64];
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
	snprintf(path, sizeof(path), "%s/topo.xml", dir);
	unlink(path);
	rmdir(dir);
	tt_hw_free(m);
}

/* The counting rule of shared/topologies/README.md, by plain text search of the export. */
static void count_in_file(const char *path, int *gpus, int *ib)
{
	FILE *f = fopen(path, "r");
	char line[4096];

	*gpus = *ib = 0;
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		const char *t = strstr(line, "pci_type=\"");

		if (!t || !strstr(line, "type=\"PCIDev\""))
			continue;
		t += 10;
		*gpus += t[0] == '0' && t[1] == '3' && strncmp(t + 4, " [10de:", 7) == 0;
		*ib += strncmp(t, "0207", 4) == 0;
	}
	fclose(f);
}

static void test_shared_hwloc_exports(void)
{
	const char *shared = tt_test_shared_dir();
	char dir[1024], path[2048];
	struct dirent *e;
	DIR *d;
	int files = 0;

	if (!shared) {
		fprintf(stderr, "(shared topologies absent: skipped)\n");
		return;
	}
	snprintf(dir, sizeof(dir), "%s/topologies/hwloc", shared);
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		struct tt_hw_options o = { .input_xml = path };
		struct tt_hw_model *m = NULL;
		struct xml_stats st;
		int gpus, ib, model_ib = 0;
		char *xml;
		tt_err err;

		if (!strstr(e->d_name, ".xml"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		files++;
		if (tt_hw_discover(&o, &m, &err) != 0) {
			fprintf(stderr, "%s: %s\n", e->d_name, err.msg);
			CU_FAIL("a shared hwloc export did not load");
			continue;
		}
		count_in_file(path, &gpus, &ib);
		for (int h = 0; h < m->nhca; h++)
			model_ib += m->hca[h].pci >= 0 && (m->pci[m->hca[h].pci].class_id >> 8) == 0x0207;
		if (m->ngpu != gpus || model_ib != ib)
			fprintf(stderr, "%s: %d GPUs %d IB, expected %d and %d\n", e->d_name, m->ngpu, model_ib, gpus, ib);
		CU_ASSERT_EQUAL(m->ngpu, gpus);
		CU_ASSERT_EQUAL(model_ib, ib);
		CU_ASSERT(m->nhca >= ib);
		xml = render(m);
		if (xml)
			check_ok(e->d_name, xml, &st);
		free(xml);
		tt_hw_free(m);
	}
	closedir(d);
	CU_ASSERT(files >= 10);
}

static void test_shared_hwloc_v3_is_refused_clearly(void)
{
	const char *shared = tt_test_shared_dir();
	char path[1024];
	struct tt_hw_options o = { .input_xml = path };
	struct tt_hw_model *m = NULL;
	tt_err err;

	if (!shared)
		return;
	snprintf(path, sizeof(path), "%s/topologies/hwloc-v3-unsupported/nvidiaDGX2-v3.xml", shared);
	CU_ASSERT_EQUAL(tt_hw_discover(&o, &m, &err), -1);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "hwloc 3.x"));
}

static void test_shared_nccl_files_pass_the_checker(void)
{
	static const char *const files[] = { "azure-ndv4-topo.xml", "8x3090-cx6-dump.xml" };
	const char *shared = tt_test_shared_dir();

	/* The checker itself must accept what NCCL wrote or vendors ship. */
	for (size_t i = 0; shared && i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1024], buf[65536];
		struct xml_stats st;
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/topologies/nccl/%s", shared, files[i]);
		f = fopen(path, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		check_ok(files[i], buf, &st);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hw_nccl_xml", NULL, NULL);
	CU_pSuite shared = CU_add_suite("hw_nccl_xml_shared_topologies", NULL, NULL);

	if (!s || !shared)
		return -1;
	CU_add_test(s, "checker rejects what NCCL rejects", test_checker_rejects_what_nccl_rejects);
	CU_add_test(s, "dual socket file", test_dual_socket_file);
	CU_add_test(s, "card functions merge like NCCL", test_card_functions_merge_like_nccl);
	CU_add_test(s, "NVSwitch and cloud files", test_nvswitch_and_cloud_files);
	CU_add_test(s, "machine without GPU or HCA", test_machine_without_gpu_or_hca_is_valid);
	CU_add_test(s, "atomic write", test_atomic_write);
	CU_add_test(shared, "hwloc exports", test_shared_hwloc_exports);
	CU_add_test(shared, "hwloc 3 refused clearly", test_shared_hwloc_v3_is_refused_clearly);
	CU_add_test(shared, "NCCL files pass the checker", test_shared_nccl_files_pass_the_checker);
	return 0;
}

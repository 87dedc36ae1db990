/* SPDX-License-Identifier: MIT */
/* test_hw_shared.c — the node model and the NCCL writer on the real machines in
 * ../shared/topologies: every hwloc export loads with the GPU and IB HCA counts of the README's
 * counting rule and gives a file NCCL's parser takes, the hwloc 3.x export is refused clearly, and
 * the checker itself takes what NCCL wrote or vendors ship. Skipped (77) without ../shared; the
 * same claims on the project's own fixtures are in test_hw_nccl_xml and test_hw_discover. */
#include "cunit_main.h"
#include "hw_model.h"
#include "hw_nccl_xml.h"
#include "nccl_xml_check.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	char dir[1024], path[2048];
	struct dirent *e;
	DIR *d;
	int files = 0;

	snprintf(dir, sizeof(dir), "%s/topologies/hwloc", tt_test_shared_dir());
	d = opendir(dir);
	CU_ASSERT_PTR_NOT_NULL_FATAL(d);
	while ((e = readdir(d))) {
		struct tt_hw_options o = { .input_xml = path };
		struct tt_hw_model *m = NULL;
		struct xml_stats st;
		int gpus, ib, model_ib = 0;
		char *xml = NULL;
		size_t len;
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
		if (tt_nccl_xml_render(m, &xml, &len, &err) != 0)
			fprintf(stderr, "%s: %s\n", e->d_name, err.msg);
		CU_ASSERT_PTR_NOT_NULL(xml);
		if (xml)
			nccl_xml_check_ok(e->d_name, xml, &st);
		free(xml);
		tt_hw_free(m);
	}
	closedir(d);
	CU_ASSERT(files >= 10);
}

static void test_shared_hwloc_v3_is_refused_clearly(void)
{
	char path[1024];
	struct tt_hw_options o = { .input_xml = path };
	struct tt_hw_model *m = NULL;
	tt_err err;

	snprintf(path, sizeof(path), "%s/topologies/hwloc-v3-unsupported/nvidiaDGX2-v3.xml",
		 tt_test_shared_dir());
	CU_ASSERT_EQUAL(tt_hw_discover(&o, &m, &err), -1);
	CU_ASSERT_PTR_NULL(m);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, path));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "hwloc 3.x"));
}

static void test_shared_nccl_files_pass_the_checker(void)
{
	static const char *const files[] = { "azure-ndv4-topo.xml", "8x3090-cx6-dump.xml" };

	/* The checker itself must accept what NCCL wrote or vendors ship. */
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[1024], buf[65536];
		struct xml_stats st;
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/topologies/nccl/%s", tt_test_shared_dir(), files[i]);
		f = fopen(path, "r");
		CU_ASSERT_PTR_NOT_NULL_FATAL(f);
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[n] = '\0';
		nccl_xml_check_ok(files[i], buf, &st);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s;

	if (!tt_test_shared_dir()) {
		/* No suite is added: the program runs no test and exits 77 with this reason. */
		tt_test_skip("../shared (real hwloc exports and NCCL files) is not beside the checkout");
		return 0;
	}
	s = CU_add_suite("hw_shared_topologies", NULL, NULL);
	if (!s)
		return -1;
	CU_add_test(s, "hwloc exports", test_shared_hwloc_exports);
	CU_add_test(s, "hwloc 3 refused clearly", test_shared_hwloc_v3_is_refused_clearly);
	CU_add_test(s, "NCCL files pass the checker", test_shared_nccl_files_pass_the_checker);
	return 0;
}

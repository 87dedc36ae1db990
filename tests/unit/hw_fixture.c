/* SPDX-License-Identifier: MIT */
/* hw_fixture.c — see hw_fixture.h. */
#include "hw_fixture.h"

#include "cunit_main.h"

#include <stdio.h>

const char *tt_fixture_path(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s/tests/fixtures/topo/%s", tt_test_srcdir(), name);
	return buf;
}

struct tt_hw_model *tt_fixture_model(const char *xml, const char *sysfs, int virtual_switches)
{
	char xml_path[1024], sysfs_path[1024];
	struct tt_hw_options o = { .virtual_switches = virtual_switches };
	struct tt_hw_model *m = NULL;
	tt_err err;

	o.input_xml = tt_fixture_path(xml, xml_path, sizeof(xml_path));
	if (sysfs)
		o.sysfs_root = tt_fixture_path(sysfs, sysfs_path, sizeof(sysfs_path));
	if (tt_hw_discover(&o, &m, &err) != 0)
		fprintf(stderr, "fixture %s: %s\n", xml, err.msg);
	CU_ASSERT_PTR_NOT_NULL_FATAL(m);
	return m;
}

int tt_fixture_hca_pci(const struct tt_hw_model *m, const char *name)
{
	int h = tt_hw_find_hca(m, name);

	return h < 0 ? -1 : m->hca[h].pci;
}

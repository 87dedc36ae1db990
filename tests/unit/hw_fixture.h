/* SPDX-License-Identifier: MIT */
/* hw_fixture.h — loading the node-model fixtures under tests/fixtures/topo for the hw tests. */
#ifndef TT_HW_FIXTURE_H
#define TT_HW_FIXTURE_H

#include "hw_model.h"

#include <stddef.h>

/* Path of tests/fixtures/topo/name in buf. */
const char *tt_fixture_path(const char *name, char *buf, size_t len);
/* Discovers from fixture xml (and sysfs fixture dir when not NULL); fails the test on error. */
struct tt_hw_model *tt_fixture_model(const char *xml, const char *sysfs, int virtual_switches);
/* Index in model->hca of the named HCA's PCI node (-1 when absent). */
int tt_fixture_hca_pci(const struct tt_hw_model *m, const char *name);

#endif

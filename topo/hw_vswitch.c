/* SPDX-License-Identifier: MIT */
/* hw_vswitch.c — virtual PCIe switches for cloud VMs that hide the real ones. There GPUs and NICs
 * hang straight off host bridges, NCCL sees PHB or worse between a GPU and its NIC and turns
 * GPUDirect RDMA off; vendors ship hand-made topology files that put a fake switch over each GPU
 * pair and its NIC(s). This pass does the same from the model:
 *   - a device is "exposed" when at most one bridge (a root port) separates it from its host bridge;
 *   - per NUMA node, exposed NVIDIA GPUs sorted by bus id are paired (0+1, 2+3, ...), and exposed
 *     HCAs sorted by bus id are spread over the pairs in order (NIC j goes to pair j*pairs/nics);
 *   - each pair becomes the children of a made-up bridge, class 0x060400, bus id ffff:ff:NN.0
 *     (NN = 01, 02, ... in hex), on the pair's NUMA node, with its members' best link.
 * Devices behind a real switch are left alone. */
#include "hw_model.h"
#include "hw_sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int exposed(const struct tt_hw_model *m, int pci)
{
	int bridges = 0;

	for (int i = m->pci[pci].parent; i >= 0; i = m->pci[i].parent)
		if (m->pci[i].kind == TT_PCI_BRIDGE)
			bridges++;
	return bridges <= 1;
}

static int cmp_busid(const void *x, const void *y, void *model)
{
	const struct tt_hw_model *m = model;

	return strcmp(m->pci[*(const int *)x].busid, m->pci[*(const int *)y].busid);
}

static void adopt(struct tt_hw_model *m, int sw, int child)
{
	struct tt_pci *s = &m->pci[sw], *c = &m->pci[child];

	c->numa = -1; /* now inherited from the switch */
	c->parent = sw;
	if (c->link_gts > s->link_gts)
		s->link_gts = c->link_gts;
	if (c->link_width > s->link_width)
		s->link_width = c->link_width;
}

static int add_switches_on_numa(struct tt_hw_model *m, int numa, int *gpus, int *nics, int *next_id,
				tt_err *err)
{
	int ng = 0, nn = 0, npairs;

	for (int i = 0; i < m->ngpu; i++) {
		int p = m->gpu[i].pci;

		if (tt_hw_pci_numa(m, p) == numa && exposed(m, p))
			gpus[ng++] = p;
	}
	for (int i = 0; i < m->nhca; i++) {
		int p = m->hca[i].pci;

		if (p >= 0 && tt_hw_pci_numa(m, p) == numa && exposed(m, p)) {
			int dup = 0;

			for (int k = 0; k < nn; k++) /* two ports or functions of one card */
				dup |= nics[k] == p;
			if (!dup)
				nics[nn++] = p;
		}
	}
	qsort_r(gpus, (size_t)ng, sizeof(int), cmp_busid, m);
	qsort_r(nics, (size_t)nn, sizeof(int), cmp_busid, m);
	npairs = (ng + 1) / 2;
	for (int pair = 0; pair < npairs; pair++) {
		struct tt_pci sw = { .kind = TT_PCI_BRIDGE, .parent = -1, .numa = numa,
				     .class_id = 0x060400, .is_virtual = 1 };
		int idx;

		if (*next_id > 0xff)
			return tt_err_set(err, "%s: more than 255 virtual switches needed", m->source);
		snprintf(sw.busid, sizeof(sw.busid), "ffff:ff:%02x.0", (*next_id)++);
		snprintf(sw.name, sizeof(sw.name), "virtual PCIe switch");
		idx = tt_hw_add_pci(m, &sw);
		if (idx < 0)
			return tt_err_set(err, "%s: out of memory adding a virtual switch", m->source);
		for (int g = 2 * pair; g < ng && g < 2 * pair + 2; g++)
			adopt(m, idx, gpus[g]);
		for (int j = 0; j < nn; j++)
			if (j * npairs / nn == pair)
				adopt(m, idx, nics[j]);
	}
	return 0;
}

int tt_hw_add_virtual_switches(struct tt_hw_model *m, tt_err *err)
{
	int *gpus = calloc((size_t)m->npci + 1, sizeof(int));
	int *nics = calloc((size_t)m->npci + 1, sizeof(int));
	int next_id = 1, rc = 0;

	if (!gpus || !nics) {
		rc = tt_err_set(err, "%s: out of memory inferring virtual switches", m->source);
		goto out;
	}
	for (int numa = -1; numa < m->nnuma && rc == 0; numa++)
		rc = add_switches_on_numa(m, numa, gpus, nics, &next_id, err);
out:
	free(gpus);
	free(nics);
	return rc;
}

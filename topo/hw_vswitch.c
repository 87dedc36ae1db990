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
 * Devices behind a real switch are left alone.
 * Only on a VM: on bare metal NCCL reads the real tree itself, and pairing two GPUs on separate
 * root ports under a made-up switch would tell it PIX with P2P where the hardware is PHB without.
 * Which signal says VM (tt_hw_is_virtual_machine), first that applies:
 *   1. live x86: the CPU's hypervisor flag (/proc/cpuinfo "hypervisor", CPUID leaf 1 ECX bit 31).
 *      Intel and AMD reserve the bit for hypervisors and leave it clear in hardware; KVM, Xen
 *      HVM, Hyper-V, VMware and AWS Nitro set it, and AWS's .metal instances have it clear. It
 *      decides alone.
 *   2. DMI (live: /sys/class/dmi/id as hwloc reads it; an export: hwloc's DMISysVendor and
 *      DMIProductName infos): a hypervisor's firmware names itself there (QEMU, KVM, VMware,
 *      VirtualBox, Xen, Hyper-V "Virtual Machine", Google Compute Engine, OpenStack, Amazon EC2
 *      on any product but *.metal). An unknown vendor decides nothing: servers are named by
 *      their makers, and a cloud this list lacks falls to 3.
 *   3. The PCI tree: an NVIDIA GPU or RDMA NIC with no bridge above it is a VM. PCIe is point to
 *      point, so an add-in card's link ends at a root or switch port, a bridge in config space;
 *      only a hypervisor's emulated root bus shows a passed-through card without one. A tree
 *      where every GPU and NIC has a port above it is taken as bare metal (a VM that emulates
 *      root ports and names itself nowhere is refused: NCCL then detects as it would anyway). */
#include "hw_model.h"
#include "hw_sources.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int tt_cpuinfo_hypervisor(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[8192];
	int rc = -1;

	if (!f)
		return -1;
	while (rc < 0 && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "flags", 5) != 0 || !strchr(line, ':'))
			continue;
		rc = 0;
		for (char *w = strtok(strchr(line, ':') + 1, " \t\n"); w && !rc; w = strtok(NULL, " \t\n"))
			rc = strcmp(w, "hypervisor") == 0;
	}
	fclose(f);
	return rc;
}

/* DMI names of virtual hardware (vendor prefix, and the product where the vendor also makes
 * real machines); NULL product: any. */
static const struct { const char *vendor, *product; } vm_dmi[] = {
	{ "QEMU", NULL }, { "KVM", NULL }, { "VMware", NULL }, { "innotek", NULL },
	{ "Xen", NULL }, { "Bochs", NULL }, { "Parallels", NULL }, { "BHYVE", NULL },
	{ "OpenStack", NULL }, { "Microsoft Corporation", "Virtual Machine" },
	{ "Google", "Google Compute Engine" },
};

static int dmi_says(const struct tt_hw_model *m, char *why, size_t len)
{
	size_t plen = strlen(m->dmi_product);

	if (!m->dmi_vendor[0])
		return -1;
	if (strcmp(m->dmi_vendor, "Amazon EC2") == 0) {
		int metal = plen >= 6 && strcmp(m->dmi_product + plen - 6, ".metal") == 0;

		snprintf(why, len, "DMI says %s %s%s", m->dmi_vendor, m->dmi_product,
			 metal ? ", a bare-metal instance" : "");
		return !metal;
	}
	for (size_t i = 0; i < sizeof(vm_dmi) / sizeof(vm_dmi[0]); i++) {
		if (strncasecmp(m->dmi_vendor, vm_dmi[i].vendor, strlen(vm_dmi[i].vendor)) != 0 ||
		    (vm_dmi[i].product && strcmp(m->dmi_product, vm_dmi[i].product) != 0))
			continue;
		snprintf(why, len, "DMI says %s %s", m->dmi_vendor, m->dmi_product);
		return 1;
	}
	return -1;
}

int tt_hw_is_virtual_machine(const struct tt_hw_model *m, char *why, size_t len)
{
	int dmi;

	if (m->cpu_hypervisor >= 0) {
		snprintf(why, len, "the CPU's hypervisor flag in /proc/cpuinfo is %s",
			 m->cpu_hypervisor ? "set" : "clear");
		return m->cpu_hypervisor;
	}
	if ((dmi = dmi_says(m, why, len)) >= 0)
		return dmi;
	for (int i = 0; i < m->npci; i++) {
		int bridges = 0;

		if (!tt_pci_is_nvidia_gpu(&m->pci[i]) && !tt_hw_pci_is_hca(m, i))
			continue;
		for (int up = m->pci[i].parent; up >= 0; up = m->pci[up].parent)
			bridges += m->pci[up].kind == TT_PCI_BRIDGE;
		if (bridges == 0) {
			snprintf(why, len, "%s sits on a host bridge with no PCIe port above it, as only "
				 "a hypervisor's bus shows a card", m->pci[i].busid);
			return 1;
		}
	}
	snprintf(why, len, "every GPU and RDMA NIC sits below a PCIe port, as on hardware%s",
		 m->dmi_vendor[0] ? ", and DMI names no hypervisor" : "");
	return 0;
}

int tt_hw_add_virtual_switches(struct tt_hw_model *m, tt_err *err)
{
	int *gpus = calloc((size_t)m->npci + 1, sizeof(int));
	int *nics = calloc((size_t)m->npci + 1, sizeof(int));
	int next_id = 1, rc = 0;
	char why[192];

	if (!tt_hw_is_virtual_machine(m, why, sizeof(why))) {
		rc = tt_err_set(err, "--virtual-switches: %s is not a virtual machine (%s): NCCL reads "
				"its PCIe switches itself; run without --virtual-switches", m->source, why);
		goto out;
	}
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

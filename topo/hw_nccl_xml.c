/* SPDX-License-Identifier: MIT */
/* hw_nccl_xml.c — NCCL topology XML from the node model: what NCCL's own NCCL_TOPO_DUMP_FILE would
 * hold on the machine, limited to the GPUs and RDMA NICs and the switches above them (NCCL trims
 * the rest and every element counts against its 256-element limit). The rules, all from NCCL
 * 2.28 (src/graph/xml.cc, topo.cc) and checked with its own code (tests/unit/nccl_oracle.sh):
 *   - one <pci> per PCIe switch, as NCCL's detection keeps it (tt_hw_nccl_parent);
 *   - every attribute NCCL would otherwise fill in per rank is written (cpu vendor, familyid,
 *     modelid; pci vendor, device, subsystem ids, link_speed, link_width), because NCCL merges the
 *     ranks' copies of the file only where they are identical;
 *   - link values are those NCCL reads on the machine (hw_links.c: the lower of the device's and
 *     its upstream port's maximum, never an idle link's current state); a value nobody knows
 *     (VM NICs, hwloc 1.x exports) is written the way NCCL writes it for an unreadable sysfs file,
 *     link_speed="" link_width="0", which NCCL reads as 8 GT/s x16;
 *   - NICs keep their real bus id; the functions of one card become one <pci> holding a <net>
 *     per usable HCA (named as the IB plugin names it); GPUs are described by their <pci> only,
 *     NCCL adds <gpu> and NVLinks from NVML. */
#include "hw_nccl_xml.h"
#include "tt_file.h"
#include "tt_strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xml {
	const struct tt_hw_model *m;
	struct tt_strbuf sb;
	char *wanted; /* per PCI node: written (leads to a GPU or a NIC on NCCL's tree) */
	int elements;
};

/* An InfiniBand controller hwloc or verbs could not name (warned about at discovery). */
static int unnamed_ib(const struct tt_hw_model *m, int pci)
{
	unsigned cls = m->pci[pci].class_id >> 8;

	return (cls == 0x0207 || cls == 0x0c06) && !tt_hw_pci_is_hca(m, pci);
}

static int usable_hca_on(const struct tt_hw_model *m, int pci)
{
	for (int h = 0; h < m->nhca; h++)
		if (m->hca[h].pci == pci && tt_hca_usable(&m->hca[h]))
			return 1;
	return 0;
}

static int is_nic(const struct tt_hw_model *m, int pci)
{
	return m->pci[pci].kind == TT_PCI_DEVICE && (usable_hca_on(m, pci) || unnamed_ib(m, pci));
}

static void mark_wanted(struct xml *x)
{
	const struct tt_hw_model *m = x->m;

	for (int i = 0; i < m->npci; i++) {
		if (!tt_pci_is_nvidia_gpu(&m->pci[i]) && !is_nic(m, i))
			continue;
		for (int up = i; up >= 0 && !x->wanted[up]; up = tt_hw_nccl_parent(m, up))
			x->wanted[up] = 1;
	}
}

/* Up to 4 distinct "vendor:device" ids of class 0x03 devices (no NVIDIA one is here) with counts,
 * then the network interfaces (there is no RDMA NIC), into found. */
int tt_nccl_xml_nothing_to_describe(const struct tt_hw_model *m, char *found, size_t len)
{
	unsigned ids[4];
	int counts[4] = { 0 }, nids = 0, gpus = 0, nifs = 0;
	struct tt_strbuf sb = { 0 };

	for (int i = 0; i < m->npci; i++) {
		const struct tt_pci *p = &m->pci[i];
		unsigned id = p->vendor << 16 | p->device;
		int k = 0;

		if (tt_pci_is_nvidia_gpu(p) || is_nic(m, i))
			return 0;
		if (p->kind != TT_PCI_DEVICE || (p->class_id >> 16) != 0x03)
			continue;
		gpus++;
		while (k < nids && ids[k] != id)
			k++;
		if (k == nids && nids < 4)
			ids[nids++] = id;
		if (k < nids)
			counts[k]++;
	}
	tt_sb_printf(&sb, "%s", gpus ? "" : "no GPU");
	for (int k = 0; k < nids; k++)
		tt_sb_printf(&sb, "%s%d GPU%s %04x:%04x", k ? ", " : "", counts[k], counts[k] == 1 ? "" : "s",
			     ids[k] >> 16, ids[k] & 0xffff);
	for (int i = 0; i < m->nnetif; i++) {
		if (m->netif[i].excluded)
			continue;
		tt_sb_printf(&sb, "%s%s", nifs++ ? " " : ", NICs ", m->netif[i].name);
	}
	tt_sb_printf(&sb, "%s", nifs ? " without RDMA" : ", no NIC");
	snprintf(found, len, "%s", tt_sb_failed(&sb) ? "(out of memory)" : sb.data);
	tt_sb_free(&sb);
	return 1;
}

/* Functions of one card: same domain, bus and device ("dddd:bb:dd"), same place in the tree. */
static int same_card(const struct tt_hw_model *m, int a, int b)
{
	return strncmp(m->pci[a].busid, m->pci[b].busid, 10) == 0 &&
	       tt_hw_nccl_parent(m, a) == tt_hw_nccl_parent(m, b);
}

/* The card's NIC function with the lowest bus id stands for the card. */
static int card_head(const struct xml *x, int pci)
{
	int head = pci;

	for (int i = 0; i < x->m->npci; i++)
		if (x->wanted[i] && is_nic(x->m, i) && same_card(x->m, i, pci) &&
		    strcmp(x->m->pci[i].busid, x->m->pci[head].busid) < 0)
			head = i;
	return head;
}

/* NCCL reads attribute values up to the closing quote and has no entities. */
static const char *attr_safe(const char *s, char *buf, size_t len)
{
	size_t i = 0;

	for (; s[i] && i + 1 < len; i++)
		buf[i] = strchr("\"<>&\t\r\n", s[i]) ? '_' : s[i];
	buf[i] = '\0';
	return buf;
}

static void indent(struct xml *x, int depth)
{
	tt_sb_printf(&x->sb, "%*s", 2 * depth, "");
}

/* The node's link as NCCL reads it (hw_links.c made it so at discovery). */
static void link_attrs(struct xml *x, int pci)
{
	static const double known[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };
	const struct tt_pci *p = &x->m->pci[pci];
	double gts = p->link_gts;
	int width = p->link_width;
	const char *speed = "";
	char text[32];

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (gts == known[i]) {
			snprintf(text, sizeof(text), "%.1f GT/s PCIe", gts);
			speed = text;
		}
	tt_sb_printf(&x->sb, " link_speed=\"%s\" link_width=\"%d\"", speed, width > 0 ? width : 0);
}

static void write_nets(struct xml *x, int card, int depth)
{
	const struct tt_hw_model *m = x->m;
	char name[64];

	indent(x, depth);
	tt_sb_printf(&x->sb, "<nic>\n");
	x->elements++;
	for (int h = 0; h < m->nhca; h++) {
		const struct tt_hca *hca = &m->hca[h];
		int rate = 0;

		if (hca->pci < 0 || !tt_hca_usable(hca) || !same_card(m, hca->pci, card))
			continue;
		for (int p = 0; p < hca->nports && !rate; p++)
			if (hca->ports[p].active)
				rate = hca->ports[p].rate_mbps;
		indent(x, depth + 1);
		tt_sb_printf(&x->sb, "<net name=\"%s\"", attr_safe(hca->name, name, sizeof(name)));
		if (rate > 0)
			tt_sb_printf(&x->sb, " speed=\"%d\"", rate);
		if (hca->sys_image_guid)
			tt_sb_printf(&x->sb, " guid=\"0x%llx\"", (unsigned long long)hca->sys_image_guid);
		tt_sb_printf(&x->sb, "/>\n");
		x->elements++;
	}
	indent(x, depth);
	tt_sb_printf(&x->sb, "</nic>\n");
}

static void write_children(struct xml *x, int parent, int numa, int depth);

static void write_pci(struct xml *x, int i, int depth)
{
	const struct tt_pci *p = &x->m->pci[i];
	int nic = is_nic(x->m, i), nets = 0, leaf = 1;

	if (nic && card_head(x, i) != i)
		return; /* another function of the card holds its nets */
	for (int h = 0; nic && h < x->m->nhca; h++)
		nets |= x->m->hca[h].pci >= 0 && tt_hca_usable(&x->m->hca[h]) &&
			same_card(x->m, x->m->hca[h].pci, i);
	for (int c = 0; c < x->m->npci && leaf; c++)
		leaf = !(x->wanted[c] && tt_hw_nccl_parent(x->m, c) == i);
	leaf = leaf && !nets;
	indent(x, depth);
	tt_sb_printf(&x->sb, "<pci busid=\"%s\" class=\"0x%06x\"", p->busid, p->class_id);
	/* Made-up switches have no sysfs entry NCCL could fill anything from. */
	if (!p->is_virtual)
		tt_sb_printf(&x->sb, " vendor=\"0x%04x\" device=\"0x%04x\" subsystem_vendor=\"0x%04x\" "
			     "subsystem_device=\"0x%04x\"", p->vendor, p->device, p->subvendor, p->subdevice);
	link_attrs(x, i);
	tt_sb_printf(&x->sb, "%s>\n", leaf ? "/" : "");
	x->elements++;
	if (leaf)
		return;
	if (nets)
		write_nets(x, i, depth + 1);
	write_children(x, i, -2, depth + 1);
	indent(x, depth);
	tt_sb_printf(&x->sb, "</pci>\n");
}

/* Children of PCI node parent on NCCL's tree, or (parent -1) the nodes under NUMA index numa. */
static void write_children(struct xml *x, int parent, int numa, int depth)
{
	for (int i = 0; i < x->m->npci; i++) {
		if (!x->wanted[i] || x->m->pci[i].kind == TT_PCI_HOSTBRIDGE ||
		    tt_hw_nccl_parent(x->m, i) != parent ||
		    (parent < 0 && tt_hw_pci_numa(x->m, i) != numa))
			continue;
		write_pci(x, i, depth);
	}
}

static int numa_has_wanted(const struct xml *x, int numa)
{
	for (int i = 0; i < x->m->npci; i++)
		if (x->wanted[i] && x->m->pci[i].kind != TT_PCI_HOSTBRIDGE &&
		    tt_hw_nccl_parent(x->m, i) < 0 && tt_hw_pci_numa(x->m, i) == numa)
			return 1;
	return 0;
}

/* vendor, familyid and modelid, also where NCCL does not read them (not x86) or the export does
 * not say: left out, NCCL on x86 fills in the host's own CPU for some ranks only. An x86 CPU of
 * unknown vendor or model is written as NCCL's oldest Intel model (family 6, model 0), the
 * lowest inter-socket bandwidth NCCL knows (6 GB/s); an unknown vendor NCCL would treat as
 * unlimited. */
static void cpu_id_attrs(struct xml *x, const struct tt_numa *n)
{
	const char *vendor = n && n->cpu_vendor[0] ? n->cpu_vendor : "";
	int x86 = strcmp(x->m->arch, "x86_64") == 0, family = n ? n->cpu_family : 0;
	int model = n ? n->cpu_model : 0;
	char safe[64];

	if (x86 && (!vendor[0] || (strcmp(vendor, "GenuineIntel") == 0 && family <= 0))) {
		vendor = "GenuineIntel";
		family = 6;
		model = 0;
	}
	/* NCCL's family is base + extended<<4 (cpuid), hwloc's is base + extended. */
	if (family >= 15)
		family = 15 + ((family - 15) << 4);
	tt_sb_printf(&x->sb, " vendor=\"%s\" familyid=\"%d\" modelid=\"%d\"",
		     attr_safe(vendor, safe, sizeof(safe)), family > 0 ? family : 0, model > 0 ? model : 0);
}

static void write_cpu(struct xml *x, int numa)
{
	const struct tt_hw_model *m = x->m;
	const struct tt_numa *n = numa >= 0 ? &m->numa[numa] : NULL;
	const cpu_set_t *cpus = n ? &n->cpus : &m->all_cpus;
	char map[1200], arch[sizeof(m->arch)];
	int words = 1;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &m->all_cpus))
			words = c / 32 + 1;
	if (tt_cpuset_to_cpumap(cpus, words, map, sizeof(map)) < 0)
		map[0] = '\0';
	tt_sb_printf(&x->sb, "  <cpu numaid=\"%d\" affinity=\"%s\"", n ? n->os_index : -1, map);
	if (m->arch[0])
		tt_sb_printf(&x->sb, " arch=\"%s\"", attr_safe(m->arch, arch, sizeof(arch)));
	/* Devices of unknown locality: the CPUs are those of the machine's first NUMA node. */
	cpu_id_attrs(x, n ? n : m->nnuma ? &m->numa[0] : NULL);
	tt_sb_printf(&x->sb, ">\n");
	x->elements++;
	write_children(x, -1, numa, 2);
	tt_sb_printf(&x->sb, "  </cpu>\n");
}

/* Elements NCCL will add itself: a <gpu> per GPU plus one <nvlink> per peer. */
static int nccl_additions(const struct tt_hw_model *m)
{
	int n = 0;

	for (int g = 0; g < m->ngpu; g++) {
		n++;
		for (int l = 0; l < m->nnvlink; l++)
			n += m->nvlink[l].a == m->gpu[g].pci || m->nvlink[l].b == m->gpu[g].pci;
	}
	return n;
}

int tt_nccl_xml_render(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err)
{
	struct xml x = { .m = m };
	int total, any = 0;

	*out = NULL;
	x.wanted = calloc((size_t)m->npci + 1, 1);
	if (!x.wanted)
		return tt_err_set(err, "%s: out of memory rendering NCCL XML", m->source);
	mark_wanted(&x);
	for (int i = 0; i < m->npci; i++)
		any |= x.wanted[i];
	tt_sb_printf(&x.sb, "<system version=\"1\">\n");
	x.elements++;
	for (int numa = -1; numa < m->nnuma; numa++)
		if (numa_has_wanted(&x, numa) || (numa == 0 && !any))
			write_cpu(&x, numa);
	tt_sb_printf(&x.sb, "</system>\n");
	free(x.wanted);
	if (tt_sb_failed(&x.sb)) {
		tt_sb_free(&x.sb);
		return tt_err_set(err, "%s: out of memory rendering NCCL XML", m->source);
	}
	total = x.elements + nccl_additions(m);
	if (total > TT_NCCL_XML_MAX_ELEMENTS) {
		tt_sb_free(&x.sb);
		return tt_err_set(err, "%s: the NCCL topology would have %d elements (NCCL accepts %d): "
				  "too many GPUs/HCAs for one file", m->source, total, TT_NCCL_XML_MAX_ELEMENTS);
	}
	*out = x.sb.data;
	*len = x.sb.len;
	return 0;
}

int tt_nccl_xml_write_file(const struct tt_hw_model *m, const char *path, tt_err *err)
{
	char *xml;
	size_t len;
	int rc;

	if (tt_nccl_xml_render(m, &xml, &len, err) < 0)
		return -1;
	rc = tt_file_write_atomic(path, xml, len, err);
	free(xml);
	return rc;
}

/* hw_nccl_xml.c — NCCL topology XML from the node model. Only the branches of the PCI tree that
 * lead to a GPU, an HCA or an NVSwitch are written: NCCL trims the rest anyway and every element
 * counts against its 256-element limit. GPUs are described by their PCI node only (NCCL fills the
 * <gpu> element and NVLinks from NVML). HCAs are written the way NCCL's IB plugin reports them:
 * all functions and virtual functions of one card merged into bus:00.0, one <nic> holding a <net>
 * per active port, without `dev` and `port`, which NCCL numbers itself (a wrong value in the file
 * would win). Attribute facts: NCCL src/graph/xml.cc, topo.cc and transport/net_ib.cc. */
#include "hw_nccl_xml.h"
#include "tt_file.h"
#include "tt_strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xml {
	const struct tt_hw_model *m;
	struct tt_strbuf sb;
	char *wanted; /* per PCI node: leads to something NCCL uses */
	int elements;
};

static void mark_wanted(struct xml *x)
{
	const struct tt_hw_model *m = x->m;

	for (int i = 0; i < m->npci; i++) {
		const struct tt_pci *p = &m->pci[i];
		int use = tt_pci_is_nvidia_gpu(p) || tt_pci_is_nvswitch(p);

		for (int h = 0; h < m->nhca && !use; h++)
			use = m->hca[h].pci == i;
		for (int up = i; use && up >= 0 && !x->wanted[up]; up = m->pci[up].parent)
			x->wanted[up] = 1;
	}
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

/* "16.0 GT/s PCIe", the form NCCL's table lists; anything it does not list is left out so NCCL
 * reads sysfs itself instead of silently assuming 8 GT/s. */
static void link_attrs(struct xml *x, const struct tt_pci *p)
{
	static const double known[] = { 2.5, 5.0, 8.0, 16.0, 32.0, 64.0 };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (p->link_gts == known[i])
			tt_sb_printf(&x->sb, " link_speed=\"%.1f GT/s PCIe\"", p->link_gts);
	if (p->link_width > 0)
		tt_sb_printf(&x->sb, " link_width=\"%d\"", p->link_width);
}

/* NCCL's IB plugin merges ports and virtual functions of one card into one PCI device by
 * zeroing the device and function digits of its address ("dddd:bb:dd.f" -> "dddd:bb:00.0"). */
static void nic_busid(const char *busid, char *out)
{
	snprintf(out, TT_BUSID_LEN, "%s", busid);
	if (strlen(out) == 12) {
		out[8] = out[9] = '0';
		out[11] = '0';
	}
}

/* Calls back for every active, named HCA port whose card is the PCI node pci. */
static int active_ports_on(const struct tt_hw_model *m, int pci, struct xml *x, int depth)
{
	char mine[TT_BUSID_LEN], theirs[TT_BUSID_LEN], name[64];
	int n = 0;

	nic_busid(m->pci[pci].busid, mine);
	for (int h = 0; h < m->nhca; h++) {
		const struct tt_hca *hca = &m->hca[h];

		if (hca->pci < 0 || !hca->name[0])
			continue;
		nic_busid(m->pci[hca->pci].busid, theirs);
		if (m->pci[hca->pci].parent != m->pci[pci].parent || strcmp(mine, theirs) != 0)
			continue;
		for (int p = 0; p < hca->nports; p++) {
			if (!hca->ports[p].active)
				continue;
			n++;
			if (!x)
				continue;
			indent(x, depth);
			tt_sb_printf(&x->sb, "<net name=\"%s\"", attr_safe(hca->name, name, sizeof(name)));
			if (hca->ports[p].rate_mbps > 0)
				tt_sb_printf(&x->sb, " speed=\"%d\"", hca->ports[p].rate_mbps);
			if (hca->sys_image_guid)
				tt_sb_printf(&x->sb, " guid=\"0x%llx\"", (unsigned long long)hca->sys_image_guid);
			tt_sb_printf(&x->sb, "/>\n");
			x->elements++;
		}
	}
	return n;
}

static void write_nets(struct xml *x, int pci, int depth)
{
	if (active_ports_on(x->m, pci, NULL, 0) == 0)
		return;
	indent(x, depth);
	tt_sb_printf(&x->sb, "<nic>\n");
	x->elements++;
	active_ports_on(x->m, pci, x, depth + 1);
	indent(x, depth);
	tt_sb_printf(&x->sb, "</nic>\n");
}

/* Another function of the same card, earlier among the siblings, already holds this one's nets. */
static int merged_into_sibling(const struct xml *x, int pci)
{
	char mine[TT_BUSID_LEN], theirs[TT_BUSID_LEN];

	nic_busid(x->m->pci[pci].busid, mine);
	for (int i = 0; i < pci; i++) {
		if (!x->wanted[i] || x->m->pci[i].parent != x->m->pci[pci].parent ||
		    !tt_hw_pci_is_hca(x->m, i))
			continue;
		nic_busid(x->m->pci[i].busid, theirs);
		if (strcmp(mine, theirs) == 0)
			return 1;
	}
	return 0;
}

static void write_children(struct xml *x, int parent, int numa, int depth);

static void write_pci(struct xml *x, int i, int depth)
{
	const struct tt_pci *p = &x->m->pci[i];
	int leaf = 1;

	char busid[TT_BUSID_LEN];
	int hca = tt_hw_pci_is_hca(x->m, i);

	if (p->kind == TT_PCI_HOSTBRIDGE) { /* no bus id: its children hang off the cpu */
		write_children(x, i, -2, depth);
		return;
	}
	if (hca && merged_into_sibling(x, i))
		return;
	for (int c = 0; c < x->m->npci && leaf; c++)
		leaf = !(x->m->pci[c].parent == i && x->wanted[c]);
	leaf = leaf && !(hca && active_ports_on(x->m, i, NULL, 0));
	if (hca)
		nic_busid(p->busid, busid);
	else
		snprintf(busid, sizeof(busid), "%s", p->busid);
	indent(x, depth);
	tt_sb_printf(&x->sb, "<pci busid=\"%s\" class=\"0x%06x\"", busid, p->class_id);
	if (p->vendor)
		tt_sb_printf(&x->sb, " vendor=\"0x%04x\" device=\"0x%04x\" subsystem_vendor=\"0x%04x\" "
			     "subsystem_device=\"0x%04x\"", p->vendor, p->device, p->subvendor, p->subdevice);
	link_attrs(x, p);
	tt_sb_printf(&x->sb, "%s>\n", leaf ? "/" : "");
	x->elements++;
	if (leaf)
		return;
	if (hca)
		write_nets(x, i, depth + 1);
	write_children(x, i, -2, depth + 1);
	indent(x, depth);
	tt_sb_printf(&x->sb, "</pci>\n");
}

/* Children of PCI node parent, or (parent -1) the tops of hierarchies on NUMA index numa. */
static void write_children(struct xml *x, int parent, int numa, int depth)
{
	for (int i = 0; i < x->m->npci; i++) {
		const struct tt_pci *p = &x->m->pci[i];

		if (!x->wanted[i] || p->parent != parent || (parent < 0 && p->numa != numa))
			continue;
		write_pci(x, i, depth);
	}
}

static int numa_has_wanted(const struct xml *x, int numa)
{
	for (int i = 0; i < x->m->npci; i++)
		if (x->wanted[i] && x->m->pci[i].parent < 0 && x->m->pci[i].numa == numa)
			return 1;
	return 0;
}

static void write_cpu(struct xml *x, int numa)
{
	const struct tt_hw_model *m = x->m;
	const struct tt_numa *n = numa >= 0 ? &m->numa[numa] : NULL;
	const cpu_set_t *cpus = n ? &n->cpus : &m->all_cpus;
	char map[1200], vendor[64], arch[sizeof(m->arch)];
	int words = 1;

	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &m->all_cpus))
			words = c / 32 + 1;
	if (tt_cpuset_to_cpumap(cpus, words, map, sizeof(map)) < 0)
		map[0] = '\0';
	tt_sb_printf(&x->sb, "  <cpu numaid=\"%d\" affinity=\"%s\"", n ? n->os_index : -1, map);
	if (m->arch[0])
		tt_sb_printf(&x->sb, " arch=\"%s\"", attr_safe(m->arch, arch, sizeof(arch)));
	if (n && n->cpu_vendor[0])
		tt_sb_printf(&x->sb, " vendor=\"%s\"", attr_safe(n->cpu_vendor, vendor, sizeof(vendor)));
	if (n && n->cpu_family > 0) {
		/* NCCL's family is base + extended<<4 (cpuid), hwloc's is base + extended. */
		int fam = n->cpu_family >= 15 ? 15 + ((n->cpu_family - 15) << 4) : n->cpu_family;

		tt_sb_printf(&x->sb, " familyid=\"%d\" modelid=\"%d\"", fam, n->cpu_model);
	}
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
	int total;

	*out = NULL;
	x.wanted = calloc((size_t)m->npci + 1, 1);
	if (!x.wanted)
		return tt_err_set(err, "%s: out of memory rendering NCCL XML", m->source);
	mark_wanted(&x);
	tt_sb_printf(&x.sb, "<system version=\"1\">\n");
	x.elements++;
	for (int numa = -1; numa < m->nnuma; numa++)
		if (numa_has_wanted(&x, numa) || (numa == 0 && m->ngpu == 0 && m->nhca == 0))
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

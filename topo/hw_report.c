/* SPDX-License-Identifier: MIT */
/* hw_report.c — JSON and the human view of the node model (see hw_report.h). Relations come from
 * tt_hw_relation, so the matrix and the rank policy never disagree. */
#include "hw_report.h"
#include "tt_strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void json_str(struct tt_strbuf *sb, const char *s)
{
	tt_sb_printf(sb, "\"");
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			tt_sb_printf(sb, "\\%c", c);
		else if (c < 0x20)
			tt_sb_printf(sb, "\\u%04x", c);
		else
			tt_sb_printf(sb, "%c", c);
	}
	tt_sb_printf(sb, "\"");
}

static const char *busid_or_null(const struct tt_hw_model *m, int pci, char *buf, size_t len)
{
	if (pci < 0 || m->pci[pci].kind == TT_PCI_HOSTBRIDGE)
		snprintf(buf, len, "null");
	else
		snprintf(buf, len, "\"%s\"", m->pci[pci].busid);
	return buf;
}

static const char *kind_name(enum tt_pci_kind k)
{
	return k == TT_PCI_HOSTBRIDGE ? "hostbridge" : k == TT_PCI_BRIDGE ? "bridge" : "device";
}

static const char *ll_name(enum tt_link_layer ll)
{
	return ll == TT_LL_INFINIBAND ? "InfiniBand" : ll == TT_LL_ETHERNET ? "Ethernet" : "unknown";
}

static int numa_os(const struct tt_hw_model *m, int pci)
{
	int n = pci >= 0 ? tt_hw_pci_numa(m, pci) : -1;

	return n >= 0 ? m->numa[n].os_index : -1;
}

static int finish(struct tt_strbuf *sb, const struct tt_hw_model *m, char **out, size_t *len, tt_err *err)
{
	if (tt_sb_failed(sb)) {
		tt_sb_free(sb);
		return tt_err_set(err, "%s: out of memory rendering the model", m->source);
	}
	*out = sb->data;
	*len = sb->len;
	return 0;
}

static void json_numa_and_pci(struct tt_strbuf *sb, const struct tt_hw_model *m)
{
	char cpus[1024], parent[24];

	tt_sb_printf(sb, "  \"numa\": [");
	for (int i = 0; i < m->nnuma; i++) {
		if (tt_cpuset_to_list(&m->numa[i].cpus, cpus, sizeof(cpus)) < 0)
			cpus[0] = '\0';
		tt_sb_printf(sb, "%s\n    {\"os_index\": %d, \"cpus\": \"%s\", \"cpu_vendor\": ", i ? "," : "",
			     m->numa[i].os_index, cpus);
		json_str(sb, m->numa[i].cpu_vendor);
		tt_sb_printf(sb, "}");
	}
	tt_sb_printf(sb, "\n  ],\n  \"pci\": [");
	for (int i = 0; i < m->npci; i++) {
		const struct tt_pci *p = &m->pci[i];

		tt_sb_printf(sb, "%s\n    {\"index\": %d, \"kind\": \"%s\", \"busid\": \"%s\", \"parent\": %d, "
			     "\"parent_busid\": %s, \"numa\": %d, \"class\": \"0x%06x\", \"vendor\": \"0x%04x\", "
			     "\"device\": \"0x%04x\", \"link_gts\": %.1f, \"link_width\": %d, \"virtual\": %s, \"name\": ",
			     i ? "," : "", i, kind_name(p->kind), p->busid, p->parent,
			     busid_or_null(m, p->parent, parent, sizeof(parent)), numa_os(m, i), p->class_id,
			     p->vendor, p->device, p->link_gts, p->link_width, p->is_virtual ? "true" : "false");
		json_str(sb, p->name);
		tt_sb_printf(sb, "}");
	}
	tt_sb_printf(sb, "\n  ],\n");
}

static void json_devices(struct tt_strbuf *sb, const struct tt_hw_model *m)
{
	char busid[24];

	tt_sb_printf(sb, "  \"gpus\": [");
	for (int i = 0; i < m->ngpu; i++)
		tt_sb_printf(sb, "%s\n    {\"cuda_index\": %d, \"busid\": \"%s\", \"numa\": %d}", i ? "," : "",
			     m->gpu[i].cuda_index, m->pci[m->gpu[i].pci].busid, numa_os(m, m->gpu[i].pci));
	tt_sb_printf(sb, "\n  ],\n  \"nvlinks\": [");
	for (int i = 0; i < m->nnvlink; i++)
		tt_sb_printf(sb, "%s\n    {\"a\": \"%s\", \"b\": \"%s\", \"count\": %d}", i ? "," : "",
			     m->pci[m->nvlink[i].a].busid, m->pci[m->nvlink[i].b].busid, m->nvlink[i].count);
	tt_sb_printf(sb, "\n  ],\n  \"hcas\": [");
	for (int i = 0; i < m->nhca; i++) {
		const struct tt_hca *h = &m->hca[i];

		tt_sb_printf(sb, "%s\n    {\"name\": ", i ? "," : "");
		json_str(sb, h->name);
		tt_sb_printf(sb, ", \"busid\": %s, \"numa\": %d, \"node_guid\": \"0x%016llx\", "
			     "\"sys_image_guid\": \"0x%016llx\", \"ports\": [",
			     busid_or_null(m, h->pci, busid, sizeof(busid)), numa_os(m, h->pci),
			     (unsigned long long)h->node_guid, (unsigned long long)h->sys_image_guid);
		for (int p = 0; p < h->nports; p++)
			tt_sb_printf(sb, "%s{\"port\": %d, \"active\": %s, \"link_layer\": \"%s\", \"rate_mbps\": %d}",
				     p ? ", " : "", h->ports[p].num, h->ports[p].active ? "true" : "false",
				     ll_name(h->ports[p].link_layer), h->ports[p].rate_mbps);
		tt_sb_printf(sb, "]}");
	}
	tt_sb_printf(sb, "\n  ],\n  \"netifs\": [");
	for (int i = 0; i < m->nnetif; i++) {
		const struct tt_netif *n = &m->netif[i];

		tt_sb_printf(sb, "%s\n    {\"name\": ", i ? "," : "");
		json_str(sb, n->name);
		tt_sb_printf(sb, ", \"busid\": %s, \"up\": %s, \"excluded\": %s, \"node_address\": %s}",
			     busid_or_null(m, n->pci, busid, sizeof(busid)), n->up ? "true" : "false",
			     n->excluded ? "true" : "false", n->carries_node_address ? "true" : "false");
	}
	tt_sb_printf(sb, "\n  ]\n");
}

int tt_hw_render_json(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err)
{
	struct tt_strbuf sb = { 0 };
	char cpus[1024];

	if (tt_cpuset_to_list(&m->all_cpus, cpus, sizeof(cpus)) < 0)
		cpus[0] = '\0';
	tt_sb_printf(&sb, "{\n  \"source\": ");
	json_str(&sb, m->source);
	tt_sb_printf(&sb, ",\n  \"arch\": ");
	json_str(&sb, m->arch);
	tt_sb_printf(&sb, ",\n  \"cpus\": \"%s\",\n  \"rdma_note\": ", cpus);
	json_str(&sb, m->rdma_note);
	tt_sb_printf(&sb, ",\n");
	json_numa_and_pci(&sb, m);
	json_devices(&sb, m);
	tt_sb_printf(&sb, "}\n");
	return finish(&sb, m, out, len, err);
}

/* The matrix rows and columns: GPUs in CUDA order, then HCAs by name. */
struct col {
	char label[32];
	int pci;
};

static int columns(const struct tt_hw_model *m, struct col **out)
{
	struct col *c = calloc((size_t)(m->ngpu + m->nhca) + 1, sizeof(*c));
	int n = 0;

	if (!c)
		return -1;
	for (int i = 0; i < m->ngpu; i++, n++) {
		snprintf(c[n].label, sizeof(c[n].label), "GPU%d", m->gpu[i].cuda_index);
		c[n].pci = m->gpu[i].pci;
	}
	for (int i = 0; i < m->nhca; i++, n++) {
		snprintf(c[n].label, sizeof(c[n].label), "%s", m->hca[i].name[0] ? m->hca[i].name : "HCA?");
		c[n].pci = m->hca[i].pci;
	}
	*out = c;
	return n;
}

static void show_matrix(struct tt_strbuf *sb, const struct tt_hw_model *m, const struct col *c, int n)
{
	char rel[16], cpus[1024];

	tt_sb_printf(sb, "\n%-10s", "");
	for (int j = 0; j < n; j++)
		tt_sb_printf(sb, " %-8s", c[j].label);
	tt_sb_printf(sb, " %-16s %s\n", "CPU Affinity", "NUMA Affinity");
	for (int i = 0; i < n; i++) {
		int numa = c[i].pci >= 0 ? tt_hw_pci_numa(m, c[i].pci) : -1;

		tt_sb_printf(sb, "%-10s", c[i].label);
		for (int j = 0; j < n; j++) {
			int links;
			enum tt_hw_rel r = i == j ? TT_REL_X
				: c[i].pci < 0 || c[j].pci < 0 ? TT_REL_SYS
				: tt_hw_relation(m, c[i].pci, c[j].pci, &links);

			tt_sb_printf(sb, " %-8s", tt_hw_rel_name(r, r == TT_REL_NV ? links : 0, rel, sizeof(rel)));
		}
		if (numa < 0 || tt_cpuset_to_list(&m->numa[numa].cpus, cpus, sizeof(cpus)) < 0)
			snprintf(cpus, sizeof(cpus), "N/A");
		if (numa >= 0)
			tt_sb_printf(sb, " %-16s %d\n", cpus, m->numa[numa].os_index);
		else
			tt_sb_printf(sb, " %-16s N/A\n", cpus);
	}
	tt_sb_printf(sb, "\nLegend:\n"
		     "  X    = Self\n"
		     "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes\n"
		     "  NODE = Connection traversing PCIe as well as the interconnect between host bridges within a NUMA node\n"
		     "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge\n"
		     "  PXB  = Connection traversing multiple PCIe bridges (without traversing the host bridge)\n"
		     "  PIX  = Connection traversing at most a single PCIe bridge\n"
		     "  NV#  = Connection traversing a bonded set of # NVLinks\n");
}

static void show_lists(struct tt_strbuf *sb, const struct tt_hw_model *m)
{
	char cpus[1024];

	tt_sb_printf(sb, "Node: %s (%s)\nNUMA nodes:\n", m->source, m->arch[0] ? m->arch : "unknown arch");
	for (int i = 0; i < m->nnuma; i++) {
		if (tt_cpuset_to_list(&m->numa[i].cpus, cpus, sizeof(cpus)) < 0)
			cpus[0] = '\0';
		tt_sb_printf(sb, "  node %d: CPUs %s\n", m->numa[i].os_index, cpus);
	}
	tt_sb_printf(sb, "GPUs:%s\n", m->ngpu ? "" : " none");
	for (int i = 0; i < m->ngpu; i++) {
		const struct tt_pci *p = &m->pci[m->gpu[i].pci];

		tt_sb_printf(sb, "  GPU%d %s NUMA %d PCIe %.1f GT/s x%d %s\n", m->gpu[i].cuda_index, p->busid,
			     numa_os(m, m->gpu[i].pci), p->link_gts, p->link_width, p->name);
	}
	tt_sb_printf(sb, "RDMA NICs:%s\n", m->nhca ? "" : " none");
	if (!m->nhca && m->rdma_note[0])
		tt_sb_printf(sb, "  (%s)\n", m->rdma_note);
	for (int i = 0; i < m->nhca; i++) {
		const struct tt_hca *h = &m->hca[i];

		tt_sb_printf(sb, "  %s %s NUMA %d", h->name[0] ? h->name : "(unnamed)",
			     h->pci >= 0 ? m->pci[h->pci].busid : "-", numa_os(m, h->pci));
		for (int p = 0; p < h->nports; p++)
			tt_sb_printf(sb, " port %d %s %s %d Gb/s", h->ports[p].num, ll_name(h->ports[p].link_layer),
				     h->ports[p].active ? "ACTIVE" : "DOWN", h->ports[p].rate_mbps / 1000);
		tt_sb_printf(sb, "\n");
	}
	tt_sb_printf(sb, "Interfaces:%s\n", m->nnetif ? "" : " none");
	for (int i = 0; i < m->nnetif; i++) {
		const struct tt_netif *n = &m->netif[i];

		tt_sb_printf(sb, "  %s %s%s%s%s\n", n->name, n->pci >= 0 ? m->pci[n->pci].busid : "virtual",
			     n->up ? "" : " down", n->excluded ? " (never used by NCCL)" : "",
			     n->carries_node_address ? " (node address)" : "");
	}
}

int tt_hw_render_show(const struct tt_hw_model *m, char **out, size_t *len, tt_err *err)
{
	struct tt_strbuf sb = { 0 };
	struct col *c = NULL;
	int n;

	show_lists(&sb, m);
	n = columns(m, &c);
	if (n < 0) {
		tt_sb_free(&sb);
		return tt_err_set(err, "%s: out of memory rendering the matrix", m->source);
	}
	if (n > 0)
		show_matrix(&sb, m, c, n);
	free(c);
	return finish(&sb, m, out, len, err);
}

/* SPDX-License-Identifier: MIT */
/* hw_model.c — the node model's plumbing: growing its arrays, lookups, the nvidia-smi style
 * relation between two devices, and the cpu list / cpumap text forms of a CPU set.
 * Everything here is pure (no system calls), so tests build models by hand and check it. */
#include "hw_model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <string.h>

static void *grow(void *arr, int n, size_t elem)
{
	/* Capacity doubles at powers of two, so n itself says when to reallocate. */
	if (n == 0 || (n & (n - 1)) == 0)
		return realloc(arr, (size_t)(n ? 2 * n : 4) * elem);
	return arr;
}

#define TT_APPEND(m, arr, count, item)                                  \
	do {                                                            \
		void *bigger = grow((m)->arr, (m)->count, sizeof(*(m)->arr)); \
		if (!bigger)                                            \
			return -1;                                      \
		(m)->arr = bigger;                                      \
		(m)->arr[(m)->count] = *(item);                         \
		return (m)->count++;                                    \
	} while (0)

int tt_hw_add_pci(struct tt_hw_model *m, const struct tt_pci *p)
{
	TT_APPEND(m, pci, npci, p);
}

int tt_hw_add_hca(struct tt_hw_model *m, const struct tt_hca *h)
{
	TT_APPEND(m, hca, nhca, h);
}

int tt_hw_add_netif(struct tt_hw_model *m, const struct tt_netif *n)
{
	TT_APPEND(m, netif, nnetif, n);
}

int tt_hw_add_nvlink(struct tt_hw_model *m, int a, int b, int count)
{
	struct tt_nvlink l = { .a = a, .b = b, .count = count };

	TT_APPEND(m, nvlink, nnvlink, &l);
}

void tt_hw_free(struct tt_hw_model *m)
{
	if (!m)
		return;
	free(m->numa);
	free(m->pci);
	free(m->gpu);
	free(m->nvlink);
	free(m->hca);
	free(m->netif);
	free(m);
}

int tt_hw_find_pci(const struct tt_hw_model *m, const char *busid)
{
	for (int i = 0; i < m->npci; i++)
		if (m->pci[i].kind != TT_PCI_HOSTBRIDGE && strcasecmp(m->pci[i].busid, busid) == 0)
			return i;
	return -1;
}

int tt_hw_find_hca(const struct tt_hw_model *m, const char *name)
{
	for (int i = 0; i < m->nhca; i++)
		if (strcmp(m->hca[i].name, name) == 0)
			return i;
	return -1;
}

int tt_hw_pci_is_hca(const struct tt_hw_model *m, int pci)
{
	for (int h = 0; h < m->nhca; h++)
		if (m->hca[h].pci == pci)
			return 1;
	return 0;
}

int tt_hca_usable(const struct tt_hca *h)
{
	if (!h->name[0])
		return 0;
	for (int p = 0; p < h->nports; p++)
		if (h->ports[p].active)
			return 1;
	return h->nports == 0;
}

void tt_hw_warn(struct tt_hw_model *m, const char *fmt, ...)
{
	va_list ap;

	if (m->nwarnings == TT_HW_MAX_WARNINGS) {
		snprintf(m->warnings[TT_HW_MAX_WARNINGS - 1], TT_HW_WARNING_LEN,
			 "(%d or more warnings; the rest are not shown)", TT_HW_MAX_WARNINGS);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(m->warnings[m->nwarnings++], TT_HW_WARNING_LEN, fmt, ap);
	va_end(ap);
}

int tt_hw_pci_numa(const struct tt_hw_model *m, int pci)
{
	/* Discovery sets numa on the top of each hierarchy; children inherit it. */
	for (int i = pci; i >= 0; i = m->pci[i].parent)
		if (m->pci[i].numa >= 0)
			return m->pci[i].numa;
	return -1;
}

int tt_pci_is_nvidia_gpu(const struct tt_pci *p)
{
	return p->kind == TT_PCI_DEVICE && p->vendor == 0x10de && (p->class_id >> 16) == 0x03;
}

int tt_pci_is_nvswitch(const struct tt_pci *p)
{
	return p->kind == TT_PCI_DEVICE &&
	       (p->nvswitch_subtype || (p->vendor == 0x10de && (p->class_id >> 8) == 0x0680));
}

static int nvswitch_links(const struct tt_hw_model *m, int gpu)
{
	int sum = 0;

	for (int i = 0; i < m->nnvlink; i++) {
		const struct tt_nvlink *l = &m->nvlink[i];

		if (l->a == gpu && tt_pci_is_nvswitch(&m->pci[l->b]))
			sum += l->count;
		else if (l->b == gpu && tt_pci_is_nvswitch(&m->pci[l->a]))
			sum += l->count;
	}
	return sum;
}

/* Direct links between a and b, or through NVSwitches: the fewer links of either side. */
static int nvlink_count(const struct tt_hw_model *m, int a, int b)
{
	int sa, sb;

	for (int i = 0; i < m->nnvlink; i++) {
		const struct tt_nvlink *l = &m->nvlink[i];

		if ((l->a == a && l->b == b) || (l->a == b && l->b == a))
			return l->count;
	}
	sa = nvswitch_links(m, a);
	sb = nvswitch_links(m, b);
	return sa < sb ? sa : sb;
}

static int ends_at_cpu(const struct tt_hw_model *m, int pci)
{
	return pci < 0 || m->pci[pci].kind == TT_PCI_HOSTBRIDGE;
}

int tt_hw_nccl_parent(const struct tt_hw_model *m, int pci)
{
	int up = m->pci[pci].parent;

	if (ends_at_cpu(m, up))
		return -1;
	if (m->pci[up].is_virtual)
		return up;
	up = m->pci[up].parent; /* the port in between is not a node of its own */
	return ends_at_cpu(m, up) ? -1 : up;
}

/* The host bridge (or, for a virtual switch, the top node) a device hangs from. */
static int top_of(const struct tt_hw_model *m, int pci)
{
	while (m->pci[pci].parent >= 0)
		pci = m->pci[pci].parent;
	return pci;
}

enum tt_hw_rel tt_hw_relation(const struct tt_hw_model *m, int a, int b, int *nvlinks)
{
	int nv, pa, na, nb;

	if (nvlinks)
		*nvlinks = 0;
	if (a == b)
		return TT_REL_X;
	nv = nvlink_count(m, a, b);
	if (nv > 0) {
		if (nvlinks)
			*nvlinks = nv;
		return TT_REL_NV;
	}
	pa = tt_hw_nccl_parent(m, a);
	if (pa >= 0 && pa == tt_hw_nccl_parent(m, b))
		return TT_REL_PIX;
	for (; pa >= 0; pa = tt_hw_nccl_parent(m, pa))
		for (int pb = tt_hw_nccl_parent(m, b); pb >= 0; pb = tt_hw_nccl_parent(m, pb))
			if (pa == pb)
				return TT_REL_PXB;
	if (top_of(m, a) == top_of(m, b) && m->pci[top_of(m, a)].kind == TT_PCI_HOSTBRIDGE)
		return TT_REL_PHB;
	na = tt_hw_pci_numa(m, a);
	nb = tt_hw_pci_numa(m, b);
	return na == nb ? TT_REL_NODE : TT_REL_SYS;
}

const char *tt_hw_rel_name(enum tt_hw_rel rel, int nvlinks, char *buf, size_t len)
{
	static const char *const names[] = { "X", "NV", "PIX", "PXB", "PHB", "NODE", "SYS" };

	if (rel == TT_REL_NV)
		snprintf(buf, len, "NV%d", nvlinks);
	else
		snprintf(buf, len, "%s", names[rel]);
	return buf;
}

int tt_cpuset_to_cpumap(const cpu_set_t *set, int nwords32, char *buf, size_t len)
{
	size_t used = 0;
	int words = 1;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, set))
			words = cpu / 32 + 1;
	if (nwords32 > words)
		words = nwords32;
	for (int w = words - 1; w >= 0; w--) {
		uint32_t bits = 0;
		int n;

		for (int b = 0; b < 32; b++)
			if (w * 32 + b < CPU_SETSIZE && CPU_ISSET(w * 32 + b, set))
				bits |= 1u << b;
		n = snprintf(buf + used, len - used, "%s%08x", used ? "," : "", bits);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	return 0;
}

static int cmp_gpu_busid(const void *x, const void *y, void *model)
{
	const struct tt_hw_model *m = model;

	return strcmp(m->pci[((const struct tt_gpu *)x)->pci].busid,
		      m->pci[((const struct tt_gpu *)y)->pci].busid);
}

static int cmp_hca_name(const void *x, const void *y)
{
	/* Version order keeps mlx5_2 before mlx5_10, as people read them. */
	return strverscmp(((const struct tt_hca *)x)->name, ((const struct tt_hca *)y)->name);
}

int tt_hw_finish(struct tt_hw_model *m)
{
	int n = 0;

	free(m->gpu);
	m->ngpu = 0;
	m->gpu = calloc((size_t)m->npci + 1, sizeof(*m->gpu));
	if (!m->gpu)
		return -1;
	for (int i = 0; i < m->npci; i++) {
		if (tt_pci_is_nvidia_gpu(&m->pci[i]))
			m->gpu[n++].pci = i;
	}
	qsort_r(m->gpu, (size_t)n, sizeof(*m->gpu), cmp_gpu_busid, m);
	for (int i = 0; i < n; i++)
		m->gpu[i].cuda_index = i;
	m->ngpu = n;
	if (m->nhca > 1)
		qsort(m->hca, (size_t)m->nhca, sizeof(*m->hca), cmp_hca_name);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* hw_policy.c — per local rank choices from the node model (see hw_policy.h). NCCL_IB_HCA starts
 * with '=' because NCCL otherwise matches names by prefix and "mlx5_1" would also select
 * mlx5_10..mlx5_17. */
#include "hw_policy.h"

#include <stdio.h>
#include <string.h>

/* Appends "name" or "name:port" (port > 0), the whole list led by one '='. */
static int append(char *buf, size_t len, size_t *used, const char *name, int port)
{
	const char *sep = *used ? "," : "=";
	int n = port > 0 ? snprintf(buf + *used, len - *used, "%s%s:%d", sep, name, port)
			 : snprintf(buf + *used, len - *used, "%s%s", sep, name);

	if (n < 0 || (size_t)n >= len - *used)
		return -1;
	*used += (size_t)n;
	return 0;
}

/* Every usable HCA in name order, with its active ports (just the name when port states are
 * unknown). Down ports are left out: NCCL could not use them anyway. */
static int ib_hca_list(const struct tt_hw_model *m, struct tt_rank_policy *out, tt_err *err)
{
	size_t used = 0;
	int rc = 0;

	for (int h = 0; h < m->nhca && rc == 0; h++) {
		const struct tt_hca *hca = &m->hca[h];

		if (!tt_hca_usable(hca))
			continue;
		if (hca->nports == 0)
			rc = append(out->nccl_ib_hca, sizeof(out->nccl_ib_hca), &used, hca->name, 0);
		for (int p = 0; p < hca->nports && rc == 0; p++)
			if (hca->ports[p].active)
				rc = append(out->nccl_ib_hca, sizeof(out->nccl_ib_hca), &used, hca->name,
					    hca->ports[p].num);
	}
	if (rc < 0)
		return tt_err_set(err, "%s: NCCL_IB_HCA list longer than %zu characters", m->source,
				  sizeof(out->nccl_ib_hca) - 1);
	return 0;
}

/* The interface holding the node's address; failing that (no resolvable host name, an XML
 * input) a physical Ethernet port before IPoIB or RoCE netdevs, then anything not excluded. */
static const struct tt_netif *socket_netif(const struct tt_hw_model *m)
{
	const struct tt_netif *plain = NULL, *on_pci = NULL, *any = NULL;

	for (int i = 0; i < m->nnetif; i++) {
		const struct tt_netif *n = &m->netif[i];

		if (n->excluded || !n->up)
			continue;
		if (n->carries_node_address)
			return n;
		if (!plain && n->pci >= 0 && !tt_hw_pci_is_hca(m, n->pci))
			plain = n;
		if (!on_pci && n->pci >= 0)
			on_pci = n;
		if (!any)
			any = n;
	}
	return plain ? plain : on_pci ? on_pci : any;
}

int tt_hw_rank_policy(const struct tt_hw_model *m, int cuda_index, struct tt_rank_policy *out, tt_err *err)
{
	const struct tt_netif *nif;
	int gpu_pci = -1, numa = -1;

	memset(out, 0, sizeof(*out));
	out->cuda_index = -1;
	out->numa_os_index = -1;
	if (cuda_index >= m->ngpu || cuda_index < -1)
		return tt_err_set(err, "%s: GPU %d does not exist (the node has %d GPU%s, numbered 0..%d in PCI order)",
				  m->source, cuda_index, m->ngpu, m->ngpu == 1 ? "" : "s", m->ngpu - 1);
	if (cuda_index >= 0) {
		gpu_pci = m->gpu[cuda_index].pci;
		out->cuda_index = cuda_index;
		snprintf(out->gpu_busid, sizeof(out->gpu_busid), "%s", m->pci[gpu_pci].busid);
		numa = tt_hw_pci_numa(m, gpu_pci);
	}
	out->cpus = numa >= 0 ? m->numa[numa].cpus : m->all_cpus;
	out->numa_os_index = numa >= 0 ? m->numa[numa].os_index : -1;
	if (tt_cpuset_to_list(&out->cpus, out->cpu_list, sizeof(out->cpu_list)) < 0)
		return tt_err_set(err, "%s: CPU list of NUMA node %d does not fit %zu characters", m->source,
				  out->numa_os_index, sizeof(out->cpu_list));
	if (ib_hca_list(m, out, err) < 0)
		return -1;
	nif = socket_netif(m);
	if (nif) {
		snprintf(out->socket_ifname, sizeof(out->socket_ifname), "%s", nif->name);
		snprintf(out->nccl_socket_ifname, sizeof(out->nccl_socket_ifname), "=%s", nif->name);
	}
	return 0;
}

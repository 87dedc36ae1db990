/* SPDX-License-Identifier: MIT */
/* hw_policy.h — what one local rank should use on this node, from the hardware model: its GPU's
 * NUMA-local CPUs, the node's usable RDMA devices (NCCL_IB_HCA, the same for every rank) and the
 * interface that carries the node's address (NCCL_SOCKET_IFNAME). Pure: the SPANK plugin and
 * train-run apply the result. NCCL_IB_HCA is a filter, not a preference: NCCL keeps its own device
 * order whatever the list's order, and which NIC a GPU uses comes from the topology (the NCCL
 * topology file), so a per-rank "nearest first" list would change nothing. */
#ifndef TT_HW_POLICY_H
#define TT_HW_POLICY_H

#include "hw_model.h"

#include <sched.h>

struct tt_rank_policy {
	int cuda_index;                /* -1: no GPU for this rank */
	char gpu_busid[TT_BUSID_LEN];  /* "" without a GPU */
	int numa_os_index;             /* the GPU's NUMA node, -1 when unknown or no GPU */
	cpu_set_t cpus;                /* NUMA-local CPUs, or all CPUs when locality is unknown */
	char cpu_list[1024];           /* the same as "0-23,48-71" */
	char nccl_ib_hca[512];         /* "=mlx5_0:1,mlx5_2:1": the node's usable HCAs, exact names; "" without */
	char socket_ifname[32];        /* "eth0", "" when no interface qualifies */
	char nccl_socket_ifname[34];   /* "=eth0" (exact match), "" when none */
};

/* cuda_index is the GPU's index in PCI bus id order, or -1 for a rank without a GPU. */
int tt_hw_rank_policy(const struct tt_hw_model *m, int cuda_index, struct tt_rank_policy *out, tt_err *err);

#endif

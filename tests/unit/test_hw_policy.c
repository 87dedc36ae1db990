/* SPDX-License-Identifier: MIT */
/* test_hw_policy.c — per local rank choices: one node-wide NCCL_IB_HCA of the usable HCAs with
 * exact-name matching (the same for every rank), the GPU's NUMA-local CPUs, the socket interface,
 * and ranks without a GPU. */
#include "cunit_main.h"
#include "hw_fixture.h"
#include "hw_policy.h"

#include <stdlib.h>
#include <string.h>

static void test_dual_socket_with_sysfs(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", "sysfs-dual", 0);
	struct tt_rank_policy p;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 2, &p, &err), 0);
	/* mlx5_1's only port is down; the rest in name order, whichever GPU the rank has. */
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	CU_ASSERT_STRING_EQUAL(p.cpu_list, "0-15");
	CU_ASSERT_EQUAL(p.numa_os_index, 0);
	CU_ASSERT_EQUAL(CPU_COUNT(&p.cpus), 16);
	CU_ASSERT_TRUE(CPU_ISSET(15, &p.cpus));
	CU_ASSERT_FALSE(CPU_ISSET(16, &p.cpus));
	CU_ASSERT_STRING_EQUAL(p.gpu_busid, "0000:23:00.0");
	/* eno1 is a plain Ethernet port; ib0 (IPoIB) and docker0/lo are not picked. */
	CU_ASSERT_STRING_EQUAL(p.socket_ifname, "eno1");
	CU_ASSERT_STRING_EQUAL(p.nccl_socket_ifname, "=eno1");

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 7, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	CU_ASSERT_STRING_EQUAL(p.cpu_list, "16-31");
	CU_ASSERT_EQUAL(p.numa_os_index, 1);
	tt_hw_free(m);
}

static void test_without_sysfs_every_hca_is_listed(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct tt_rank_policy p;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 0, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	/* hwloc gave only network names: eno1 on PCI, not an HCA's netdev. */
	CU_ASSERT_STRING_EQUAL(p.socket_ifname, "eno1");
	tt_hw_free(m);
}

static void test_rank_without_gpu_and_bad_index(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct tt_rank_policy p;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, -1, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	CU_ASSERT_EQUAL(p.cuda_index, -1);
	CU_ASSERT_EQUAL(p.numa_os_index, -1);
	CU_ASSERT_STRING_EQUAL(p.cpu_list, "0-31");
	CU_ASSERT_STRING_EQUAL(p.gpu_busid, "");
	CU_ASSERT_EQUAL(tt_hw_rank_policy(m, 8, &p, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "GPU 8 does not exist"));
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "dual-pcie-8gpu.xml"));
	tt_hw_free(m);
}

static void test_exact_names_for_ten_plus_hcas(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct tt_rank_policy p;
	tt_err err;
	char *tok, *save;
	int seen_1 = 0, seen_10 = 0;

	/* Rename mlx5_2 to mlx5_10: the list must name both exactly, led by '=' so that NCCL's
	 * prefix match cannot make mlx5_1 select mlx5_10; version order keeps mlx5_3 before it. */
	snprintf(m->hca[tt_hw_find_hca(m, "mlx5_2")].name, sizeof(m->hca[0].name), "mlx5_10");
	tt_hw_finish(m);
	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 2, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_10:1");
	for (tok = strtok_r(p.nccl_ib_hca + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		seen_1 += strcmp(tok, "mlx5_1:1") == 0;
		seen_10 += strcmp(tok, "mlx5_10:1") == 0;
	}
	CU_ASSERT_EQUAL(seen_1, 1);
	CU_ASSERT_EQUAL(seen_10, 1);
	tt_hw_free(m);
}

static void test_every_rank_gets_the_same_hca_list(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 1);
	struct tt_rank_policy p;
	char first[sizeof(p.nccl_ib_hca)];
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 0, &p, &err), 0);
	snprintf(first, sizeof(first), "%s", p.nccl_ib_hca);
	CU_ASSERT_STRING_EQUAL(first, "=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,"
				      "mlx5_ib6:1,mlx5_ib7:1");
	for (int g = 1; g < m->ngpu; g++) {
		CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, g, &p, &err), 0);
		CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, first);
	}
	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 3, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.cpu_list, "0-23");
	CU_ASSERT_STRING_EQUAL(p.socket_ifname, "eth0");
	tt_hw_free(m);
}

static void test_hcas_without_port_states_are_named_alone(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct tt_rank_policy p;
	tt_err err;

	/* An export without port states: the HCA is usable, without a port to pin. */
	m->hca[tt_hw_find_hca(m, "mlx5_3")].nports = 0;
	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 0, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3,mlx5_4:1,mlx5_5:1");
	tt_hw_free(m);
}

/* A dual-port HCA with one port down stays usable through its other port; the down port is not
 * listed (NCCL would try it and fail), whichever of the two it is. */
static void test_down_port_of_a_dual_port_hca_left_out(void)
{
	struct tt_hw_model *m = tt_fixture_model("dual-pcie-8gpu.xml", NULL, 0);
	struct tt_hca *a = &m->hca[tt_hw_find_hca(m, "mlx5_2")], *b = &m->hca[tt_hw_find_hca(m, "mlx5_3")];
	struct tt_rank_policy p;
	tt_err err;

	a->nports = b->nports = 2;
	a->ports[1] = a->ports[0];
	b->ports[1] = b->ports[0];
	a->ports[1].num = b->ports[1].num = 2;
	a->ports[0].active = 1;
	a->ports[1].active = 0;
	b->ports[0].active = 0;
	b->ports[1].active = 1;
	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 0, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:2,mlx5_4:1,mlx5_5:1");
	tt_hw_free(m);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("hw_policy", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "dual socket with sysfs", test_dual_socket_with_sysfs);
	CU_add_test(s, "without sysfs every HCA is listed", test_without_sysfs_every_hca_is_listed);
	CU_add_test(s, "rank without GPU, bad index", test_rank_without_gpu_and_bad_index);
	CU_add_test(s, "exact names for 10+ HCAs", test_exact_names_for_ten_plus_hcas);
	CU_add_test(s, "every rank gets the same HCA list", test_every_rank_gets_the_same_hca_list);
	CU_add_test(s, "HCAs without port states named alone", test_hcas_without_port_states_are_named_alone);
	CU_add_test(s, "the down port of a dual-port HCA left out", test_down_port_of_a_dual_port_hca_left_out);
	return 0;
}

/* test_hw_policy.c — per local rank choices: nearest active HCAs first with exact-name matching,
 * the GPU's NUMA-local CPUs, the socket interface, and ranks without a GPU. */
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
	/* PIX mlx5_2 first (mlx5_1 on the same switch is down), PHB mlx5_0, then the other socket. */
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_2:1,mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
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
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_4:1,mlx5_5:1,mlx5_3:1,mlx5_0:1,mlx5_2:1");
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
	 * prefix match cannot make mlx5_1 select mlx5_10; version order keeps mlx5_1 first. */
	snprintf(m->hca[tt_hw_find_hca(m, "mlx5_2")].name, sizeof(m->hca[0].name), "mlx5_10");
	tt_hw_finish(m);
	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 2, &p, &err), 0);
	CU_ASSERT_STRING_EQUAL(p.nccl_ib_hca, "=mlx5_1:1,mlx5_10:1,mlx5_0:1,mlx5_3:1,mlx5_4:1,mlx5_5:1");
	for (tok = strtok_r(p.nccl_ib_hca + 1, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		seen_1 += strcmp(tok, "mlx5_1:1") == 0;
		seen_10 += strcmp(tok, "mlx5_10:1") == 0;
	}
	CU_ASSERT_EQUAL(seen_1, 1);
	CU_ASSERT_EQUAL(seen_10, 1);
	tt_hw_free(m);
}

static void test_cloud_vm_pairs_gpu_with_its_nics(void)
{
	struct tt_hw_model *m = tt_fixture_model("cloud-vm-8gpu.xml", NULL, 1);
	struct tt_rank_policy p;
	tt_err err;

	CU_ASSERT_EQUAL_FATAL(tt_hw_rank_policy(m, 3, &p, &err), 0);
	CU_ASSERT_EQUAL(strncmp(p.nccl_ib_hca, "=mlx5_ib2:1,mlx5_ib3:1,mlx5_ib0:1,mlx5_ib1:1,", 45), 0);
	CU_ASSERT_STRING_EQUAL(p.cpu_list, "0-23");
	CU_ASSERT_STRING_EQUAL(p.socket_ifname, "eth0");
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
	CU_add_test(s, "cloud VM pairs GPU with its NICs", test_cloud_vm_pairs_gpu_with_its_nics);
	return 0;
}

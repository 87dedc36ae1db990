/* SPDX-License-Identifier: MIT */
/* nccl_check.c — the NCCL backend on real GPUs: the collective matrix of comm_matrix.h (every
 * collective x dtype x reduction x size) with device buffers from trainrt_alloc. Run by
 * tests/gpu/run.sh with 1, 2 and 4 ranks; ranks that share a GPU each get their own NCCL_HOSTID
 * (NCCL refuses two ranks on one GPU of one host). --versions prints the NCCL, CUDA runtime and
 * driver versions this binary runs with (run.sh's preflight), without touching a GPU. */
#include "comm_matrix.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <string.h>

static void to_device(void *dev, const void *host, size_t bytes)
{
	cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
}

static void to_host(void *host, const void *dev, size_t bytes)
{
	cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

/* "nccl 2.28.9 (built with 2.28.9) cuda-runtime 13.0 cuda-driver 13.0": one line run.sh parses. */
static int versions(void)
{
	int nccl = 0, rt = 0, drv = 0;

	if (ncclGetVersion(&nccl) != ncclSuccess || cudaRuntimeGetVersion(&rt) != cudaSuccess) {
		fprintf(stderr, "nccl_check: cannot read the NCCL or CUDA runtime version\n");
		return 1;
	}
	if (cudaDriverGetVersion(&drv) != cudaSuccess)
		drv = 0; /* no driver: reported as 0.0 */
	printf("nccl %d.%d.%d (built with %d.%d.%d) cuda-runtime %d.%d cuda-driver %d.%d\n", nccl / 10000,
	       nccl / 100 % 100, nccl % 100, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, rt / 1000, rt % 1000 / 10, drv / 1000,
	       drv % 1000 / 10);
	return 0;
}

int main(int argc, char **argv)
{
	static const comm_matrix_copy copy = { to_device, to_host };

	if (argc == 2 && strcmp(argv[1], "--versions") == 0)
		return versions();
	if (argc != 1) {
		fprintf(stderr, "usage: nccl_check [--versions]   (ranks from the env contract or PMIx)\n");
		return 2;
	}
	return comm_matrix_main("nccl_check", TRAINRT_BUFFERS_DEVICE, "nccl", &copy);
}

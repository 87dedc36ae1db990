/* nccl_check.c — the NCCL backend on real GPUs: the collective matrix of comm_matrix.h (every
 * collective x dtype x reduction x size) with device buffers from trainrt_alloc. Run by
 * tests/gpu/run.sh, one rank per visible GPU (NCCL refuses two ranks on one GPU). */
#include "comm_matrix.h"

#include <cuda_runtime.h>

static void to_device(void *dev, const void *host, size_t bytes)
{
	cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice);
}

static void to_host(void *host, const void *dev, size_t bytes)
{
	cudaMemcpy(host, dev, bytes, cudaMemcpyDeviceToHost);
}

int main(void)
{
	static const comm_matrix_copy copy = { to_device, to_host };

	return comm_matrix_main("nccl_check", TRAINRT_BUFFERS_DEVICE, "nccl", &copy);
}

/* nccl_check.c — the NCCL backend on real GPUs: the collective matrix of comm_matrix.h (every
 * collective x dtype x reduction x size) with device buffers from trainrt_alloc. Run by
 * tests/gpu/run.sh, one rank per visible GPU (NCCL refuses two ranks on one GPU). */
#include "comm_matrix.h"

#include <cuda_runtime.h>
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

int main(void)
{
	static const comm_matrix_copy copy = { to_device, to_host };
	char errbuf[1200];
	trainrt_comm *c = trainrt_init_for(TRAINRT_BUFFERS_DEVICE, errbuf, sizeof(errbuf));
	long wrong;

	if (!c) {
		fprintf(stderr, "nccl_check: %s\n", errbuf);
		return 1;
	}
	if (strcmp(trainrt_backend_name(c), "nccl") != 0 || !trainrt_buffers_on_device(c)) {
		fprintf(stderr, "nccl_check: backend is %s, not nccl\n", trainrt_backend_name(c));
		trainrt_finalize(c);
		return 1;
	}
	wrong = comm_matrix_run(c, &copy);
	if (wrong < 0)
		fprintf(stderr, "nccl_check: %s\n", trainrt_last_error(c));
	else
		printf("nccl_check: rank %d of %d: %ld wrong elements\n", trainrt_rank(c), trainrt_world_size(c), wrong);
	trainrt_finalize(c);
	return wrong == 0 ? 0 : 1;
}

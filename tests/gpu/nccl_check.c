/* nccl_check.c — the NCCL backend on real GPUs: every collective x dtype x reduction x size with
 * device buffers from trainrt_alloc, results copied back and compared with a host reference.
 * Run by tests/gpu/run.sh, one rank per visible GPU (NCCL refuses two ranks on one GPU). */
#include "trainrt.h"

#include <cuda_runtime.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float input(int rank, size_t i)
{
	return (float)((int)((rank * 7 + i * 3) % 9) - 4);
}

static uint16_t to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16); /* small integers: exact */
}

static float from(const void *h, trainrt_dtype dt, size_t i)
{
	if (dt == TRAINRT_FLOAT32)
		return ((const float *)h)[i];
	uint32_t u = (uint32_t)((const uint16_t *)h)[i] << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static void put(void *h, trainrt_dtype dt, size_t i, float v)
{
	if (dt == TRAINRT_FLOAT32)
		((float *)h)[i] = v;
	else
		((uint16_t *)h)[i] = to_bf16(v);
}

static float reduce(int n, size_t i, trainrt_redop op)
{
	float acc = input(0, i);

	for (int r = 1; r < n; r++)
		acc = op == TRAINRT_MAX ? (input(r, i) > acc ? input(r, i) : acc) : acc + input(r, i);
	return op == TRAINRT_AVG ? acc / (float)n : acc;
}

int main(void)
{
	static const size_t sizes[] = { 0, 1, 7, 4097, 1048579 };
	char errbuf[1200];
	trainrt_comm *c = trainrt_init(errbuf, sizeof(errbuf));
	int n, me, wrong = 0;

	if (!c) {
		fprintf(stderr, "nccl_check: %s\n", errbuf);
		return 1;
	}
	n = trainrt_world_size(c);
	me = trainrt_rank(c);
	if (strcmp(trainrt_backend_name(c), "nccl") != 0 || !trainrt_buffers_on_device(c)) {
		fprintf(stderr, "nccl_check: backend is %s, not nccl\n", trainrt_backend_name(c));
		return 1;
	}
	for (int d = 0; d < 2; d++) {
		trainrt_dtype dt = d ? TRAINRT_BF16 : TRAINRT_FLOAT32;
		size_t es = trainrt_dtype_size(dt);

		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t count = sizes[s], all = count * (size_t)n;
			unsigned char *h = malloc(all * es + 4), *dev_a = trainrt_alloc(c, all * es + 4),
				      *dev_b = trainrt_alloc(c, all * es + 4);

			if (!h || !dev_a || !dev_b) {
				fprintf(stderr, "nccl_check: allocation failed: %s\n", trainrt_last_error(c));
				return 1;
			}
			for (int o = 0; o < 3; o++) {
				trainrt_redop op = (trainrt_redop)o;

				for (size_t i = 0; i < all; i++)
					put(h, dt, i, input(me, i));
				cudaMemcpy(dev_a, h, all * es, cudaMemcpyHostToDevice);
				trainrt_req *r = trainrt_iallreduce(c, dev_a, dev_b, count, dt, op);
				if (trainrt_wait(c, r) != 0)
					goto fail;
				cudaMemcpy(h, dev_b, count * es, cudaMemcpyDeviceToHost);
				for (size_t i = 0; i < count; i++)
					wrong += fabsf(from(h, dt, i) - reduce(n, i, op)) > 1e-2f * (1 + fabsf(reduce(n, i, op)));
				if (trainrt_reducescatter(c, dev_a, dev_b, count, dt, op) != 0)
					goto fail;
				cudaMemcpy(h, dev_b, count * es, cudaMemcpyDeviceToHost);
				for (size_t i = 0; i < count; i++)
					wrong += fabsf(from(h, dt, i) - reduce(n, (size_t)me * count + i, op)) >
						 1e-2f * (1 + fabsf(reduce(n, (size_t)me * count + i, op)));
			}
			if (trainrt_allgather(c, dev_a, dev_b, count, dt) != 0)
				goto fail;
			cudaMemcpy(h, dev_b, all * es, cudaMemcpyDeviceToHost);
			for (size_t i = 0; i < all; i++)
				wrong += from(h, dt, i) != input((int)(i / (count ? count : 1)), i % (count ? count : 1));
			if (trainrt_broadcast(c, dev_a, count, dt, n - 1) != 0)
				goto fail;
			cudaMemcpy(h, dev_a, count * es, cudaMemcpyDeviceToHost);
			for (size_t i = 0; i < count; i++)
				wrong += from(h, dt, i) != input(n - 1, i);
			trainrt_free(c, dev_a);
			trainrt_free(c, dev_b);
			free(h);
		}
	}
	if (trainrt_barrier(c) != 0)
		goto fail;
	printf("nccl_check: rank %d of %d: %d wrong elements\n", me, n, wrong);
	trainrt_finalize(c);
	return wrong ? 1 : 0;
fail:
	fprintf(stderr, "nccl_check: %s\n", trainrt_last_error(c));
	trainrt_finalize(c);
	return 1;
}

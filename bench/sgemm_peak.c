/* SPDX-License-Identifier: MIT */
/* sgemm_peak.c — OpenBLAS cblas_sgemm throughput on one square shape, the ceiling bench/train.sh
 * compares train-mlp's achieved GEMM rate against. usage: sgemm-peak [N] [seconds]; prints
 * "sgemm_gflops X" (threads from OPENBLAS_NUM_THREADS). */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 512;
	double secs = argc > 2 ? atof(argv[2]) : 1.0, t0, dt;
	float *a, *b, *c;
	long reps = 0;

	if (n < 16 || n > 8192 || secs <= 0 || secs > 30) {
		fprintf(stderr, "sgemm-peak: usage: sgemm-peak [N in 16..8192] [seconds in (0, 30]]\n");
		return 2;
	}
	a = calloc((size_t)n * n, sizeof(float));
	b = calloc((size_t)n * n, sizeof(float));
	c = calloc((size_t)n * n, sizeof(float));
	if (!a || !b || !c) {
		fprintf(stderr, "sgemm-peak: cannot allocate three %dx%d matrices\n", n, n);
		return 1;
	}
	for (size_t i = 0; i < (size_t)n * n; i++) {
		a[i] = (float)(i % 7) * 0.1f;
		b[i] = (float)(i % 5) * 0.1f;
	}
	cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
	t0 = now();
	do {
		cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
		reps++;
	} while ((dt = now() - t0) < secs);
	printf("sgemm_gflops %.2f\n", 2.0 * n * n * (double)n * reps / dt / 1e9);
	free(a);
	free(b);
	free(c);
	return 0;
}

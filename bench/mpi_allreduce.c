/* SPDX-License-Identifier: MIT */
/* mpi_allreduce.c — bench peer: Open MPI's MPI_Allreduce of float32 in place between the ranks of
 * mpirun; prints busbw (GB/s) and time per call (us).  usage: mpi_allreduce BYTES ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	int n, me, size = atoi(argv[1]), iters = atoi(argv[2]), warm = atoi(argv[3]);
	float *x = malloc(size);
	double t0, t, tmax;
	MPI_Init(&argc, &argv);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	for (int i = 0; i < size / 4; i++) x[i] = 1;
	for (int i = 0; i < warm; i++) MPI_Allreduce(MPI_IN_PLACE, x, size / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int i = 0; i < iters; i++) MPI_Allreduce(MPI_IN_PLACE, x, size / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
	t = (MPI_Wtime() - t0) / iters;
	MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (me == 0) printf("%.3f %.2f\n", size / tmax / 1e9 * 2 * (n - 1) / n, tmax * 1e6);
	MPI_Finalize();
	free(x);
	return 0;
}

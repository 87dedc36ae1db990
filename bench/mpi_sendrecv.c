/* SPDX-License-Identifier: MIT */
/* mpi_sendrecv.c — bench peer of trainrt_sendrecv: MPI_Sendrecv between 2 ranks (both directions
 * at once); prints time per exchange (us) and GB/s per direction. Open MPI's shared-memory
 * transport spins while it waits.  usage: mpi_sendrecv BYTES ITERS WARMUP */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv)
{
	int me, size = atoi(argv[1]), iters = atoi(argv[2]), warm = atoi(argv[3]);
	char *out = calloc(1, size), *in = calloc(1, size);
	double t0 = 0, t, tmax;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &me);
	for (int i = 0; i < warm + iters; i++) {
		if (i == warm) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		MPI_Sendrecv(out, size, MPI_BYTE, 1 - me, 0, in, size, MPI_BYTE, 1 - me, 0, MPI_COMM_WORLD,
			     MPI_STATUS_IGNORE);
	}
	t = (MPI_Wtime() - t0) / iters;
	MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	if (me == 0) printf("%.2f %.3f\n", tmax * 1e6, size / tmax / 1e9);
	MPI_Finalize();
	free(out);
	free(in);
	return 0;
}

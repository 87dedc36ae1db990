/* SPDX-License-Identifier: MIT */
/* comm_check.c — the collective matrix of comm_matrix.h on host buffers, as one rank of a job
 * started by any launcher (srun --mpi=pmix, the SPANK plugin's env contract, train-run). The
 * cluster tests run it across 2 and 4 nodes; exit status 0 only when every element is right. */
#include "comm_matrix.h"

#include <string.h>

static void host_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}

int main(void)
{
	static const comm_matrix_copy copy = { host_copy, host_copy };

	return comm_matrix_main("comm_check", TRAINRT_BUFFERS_HOST, NULL, &copy);
}

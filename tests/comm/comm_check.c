/* comm_check.c — the collective matrix of comm_matrix.h on host buffers, as one rank of a job
 * started by any launcher (srun --mpi=pmix, the SPANK plugin's env contract, train-run). The
 * cluster tests run it across 2 and 4 nodes; exit status 0 only when every element is right. */
#include "comm_matrix.h"

#include <stdio.h>
#include <string.h>

static void host_copy(void *dst, const void *src, size_t bytes)
{
	memcpy(dst, src, bytes);
}

int main(void)
{
	static const comm_matrix_copy copy = { host_copy, host_copy };
	char errbuf[1200];
	trainrt_comm *c = trainrt_init_for(TRAINRT_BUFFERS_HOST, errbuf, sizeof(errbuf));
	long wrong;

	if (!c) {
		fprintf(stderr, "comm_check: %s\n", errbuf);
		return 1;
	}
	wrong = comm_matrix_run(c, &copy);
	if (wrong < 0)
		fprintf(stderr, "comm_check: %s\n", trainrt_last_error(c));
	else
		printf("comm_check: rank %d of %d (%s, %d per node): %ld wrong elements\n", trainrt_rank(c),
		       trainrt_world_size(c), trainrt_backend_name(c), trainrt_local_world_size(c), wrong);
	trainrt_finalize(c);
	return wrong == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: MIT */
/* comm_matrix.h — every libtrainrt collective x dtype x reduction x size (0, 1, 7, 4097, 1M+3)
 * against a reference every rank can compute alone, and a split into two groups, for whatever
 * launcher and backend the job has. Buffers come from trainrt_alloc; the caller supplies how bytes move between them and the
 * host (memcpy for CPU backends, cudaMemcpy for nccl). Used by comm_check (cluster tests) and
 * tests/gpu/nccl_check. */
#ifndef TT_COMM_MATRIX_H
#define TT_COMM_MATRIX_H

#include "trainrt.h"

#include <stddef.h>

typedef struct comm_matrix_copy {
	void (*to_buffer)(void *buf, const void *host, size_t bytes);
	void (*to_host)(void *host, const void *buf, size_t bytes);
} comm_matrix_copy;

/* Runs the matrix; returns the number of wrong elements, or -1 when a collective failed
 * (trainrt_last_error says why). */
long comm_matrix_run(trainrt_comm *c, const comm_matrix_copy *copy);

/* The whole program of one rank: joins the job for buffers at `where`, checks that the backend
 * is want_backend (NULL: any), runs the matrix and prints "PROG: rank R of N (BACKEND, K per
 * node): W wrong elements". Returns the exit status: 0 only when everything was right. */
int comm_matrix_main(const char *prog, trainrt_buffers where, const char *want_backend,
		     const comm_matrix_copy *copy);

#endif

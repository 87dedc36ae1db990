/* SPDX-License-Identifier: MIT */
/* rt_pmix.h — launch facts and the store address through PMIx, for `srun --mpi=pmix` where no
 * MASTER_ADDR/MASTER_PORT exist: rank 0 publishes where its store listens, a fence spreads it. */
#ifndef RT_PMIX_H
#define RT_PMIX_H

#include "comm_backend.h"
#include "tt_err.h"

/* 1 when the process was started by a PMIx server (PMIX_RANK or PMIX_NAMESPACE set). */
int rt_pmix_detected(void);

/* PMIx_Init and rank, size, local rank and local size into w. */
int rt_pmix_init(rt_world *w, tt_err *err);

/* Rank 0 passes its store's "host port" in addr; after the fence (bounded by timeout_s) every
 * rank has it in addr. */
int rt_pmix_share_store(int rank, char *addr, size_t len, double timeout_s, tt_err *err);

void rt_pmix_finalize(void);

#endif

/* SPDX-License-Identifier: MIT */
/* rendezvous.h — the one owner of the rendezvous point, MASTER_ADDR and MASTER_PORT: where rank
 * 0's store listens and every other rank dials. The plugin (through the env contract, layout.h),
 * train-run and train-run's node count exchange (census.h) all take it from
 * tt_rendezvous_resolve, so they cannot disagree.
 *
 * Precedence, each field on its own, first source that gives a value wins:
 *   address                                   port
 *   1. train-run --master-addr                1. train-run --master-port
 *   2. torchrun's --rdzv-endpoint HOST        2. torchrun's --rdzv-endpoint HOST:PORT
 *   3. MASTER_ADDR in the environment         3. MASTER_PORT in the environment
 *      (under Slurm: the plugin's)               (under Slurm: the plugin's)
 *   4. train-run --local-addr                 4. under Slurm: SLURM_STEP_RESV_PORTS' first port
 *   5. under Slurm: the step's first host     5. under Slurm: the job/step formula below
 *      outside Slurm: 127.0.0.1               6. outside Slurm: 29500 on several nodes (every
 *                                                node must agree without talking), else a free
 *                                                loopback port (tt_free_loopback_port)
 * The plugin gives no options and no environment (it is the one that sets MASTER_*), so its
 * tasks get 5/4-5; train-run passes the environment only under Slurm (outside it, a stray
 * MASTER_PORT of the user's shell is not a rendezvous).
 *
 * The formula. When SLURM_STEP_RESV_PORTS is set (srun --resv-ports, MpiParams=ports=) its first
 * port is used: Slurm reserved it for this step on every node. Otherwise, with span = hi-lo+1,
 *     slot(job) = ((job_id * 2654435769) mod 2^32) * span / 2^32        (Fibonacci hashing)
 *     MASTER_PORT = lo + (slot(job) + (int32_t)step_id) mod span         (non-negative mod)
 * so the port depends only on job and step (every task and node computes the same one), steps
 * 0,1,2,... of one job get consecutive, hence distinct, ports (for fewer than span steps), the
 * batch step (0xfffffffb = -5) and the extern step (0xfffffffc = -4) sit just below step 0, and
 * consecutive job ids land about 0.38*span apart, so concurrent jobs on one node rarely meet.
 * The default range 29500-32499 starts at torchrun's default port and stays below Linux's
 * default ephemeral range (32768-60999), so outgoing connections never hold a master's port. */
#ifndef TT_RENDEZVOUS_H
#define TT_RENDEZVOUS_H

#include <stdbool.h>
#include <stdint.h>

#include "tt_err.h"

#define TT_PORT_LO_DEFAULT 29500
#define TT_PORT_HI_DEFAULT 32499
/* torchrun's default port, for several nodes that must agree on one without Slurm. */
#define TT_PORT_STANDALONE 29500
#define TT_RDZV_HOST_LEN 256

struct tt_port_range {
	uint16_t lo, hi;   /* inclusive; 1024 <= lo <= hi */
};

/* Every source of the rendezvous point; NULL or 0 where a source has nothing. */
struct tt_rdzv_sources {
	const char *master_addr;        /* --master-addr */
	int master_port;                /* --master-port */
	const char *endpoint_host;      /* --rdzv-endpoint's host */
	int endpoint_port;              /* --rdzv-endpoint's port */
	const char *env_addr;           /* MASTER_ADDR of the environment ("" counts as unset) */
	const char *env_port;           /* MASTER_PORT of the environment ("" counts as unset) */
	const char *local_addr;         /* --local-addr */
	bool slurm;                     /* the launch is a Slurm step: the next five count */
	const char *step_host;          /* the step's first host (tt_hostlist_first: the caller
					 * parses the nodelist once, for the node count too) */
	const char *resv_ports;         /* SLURM_STEP_RESV_PORTS, or NULL/"" */
	uint32_t job_id, step_id;       /* for the formula */
	struct tt_port_range ports;     /* the formula's range */
	uint32_t nnodes;                /* outside Slurm: the nodes of the launch */
};

struct tt_rendezvous {
	char addr[TT_RDZV_HOST_LEN];    /* MASTER_ADDR */
	uint16_t port;                  /* MASTER_PORT */
	/* Where node 0's train-run is: the step's first host under Slurm (node 0 runs there, whatever
	 * MASTER_ADDR names), else addr. train-run's node count exchange meets there, on port. */
	char node0[TT_RDZV_HOST_LEN];
};

/* Resolves s by the precedence above. -1 with err naming the source when a value is malformed
 * (MASTER_PORT='x' in the environment, a bad SLURM_STEP_RESV_PORTS or range, an address too
 * long), or no free loopback port is found. */
int tt_rendezvous_resolve(const struct tt_rdzv_sources *s, struct tt_rendezvous *out, tt_err *err);

/* MASTER_PORT by the formula above from the range, ignoring reserved ports. */
uint16_t tt_master_port(uint32_t job_id, uint32_t step_id, struct tt_port_range r);

/* First port of a SLURM_STEP_RESV_PORTS value ("12000-12003", "12000,12005"). -1 with err. */
int tt_resv_ports_first(const char *value, uint16_t *port, tt_err *err);

/* Parses "LO-HI" (1024 <= LO <= HI <= 65535). -1 with err naming the text. */
int tt_port_range_parse(const char *text, struct tt_port_range *r, tt_err *err);

#endif

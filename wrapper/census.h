/* SPDX-License-Identifier: MIT */
/* census.h — every node's worker count before any worker starts, so that ranks and WORLD_SIZE
 * are right when nodes run different numbers of workers (srun --gpus=12 -N2 gives 8 + 4 GPUs,
 * and no variable tells a node what the others got). torchrun's agents learn the same in their
 * rendezvous; train-run's is this one exchange: node 0 listens on the workers' MASTER_PORT
 * (free until its workers start), every other node connects, says how many workers it runs,
 * and gets every node's count back. The client closes first, so no TIME_WAIT holds the port
 * when node 0's rank 0 binds it. The line format is pure and unit-tested; the sockets are here
 * too, tested end to end by tests/wrapper/train_run.sh. */
#ifndef TT_CENSUS_H
#define TT_CENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

/* Seconds node 0 waits for every node, and a node for node 0 to answer. */
#define TT_CENSUS_TIMEOUT_S 120

struct tt_census {
	const char *id;		/* the same on every node of one launch: "<job>.<step>" */
	const char *server;	/* node 0's host name or address */
	uint16_t port;
	uint32_t nnodes, node;	/* node count and this node's index */
	uint32_t count;		/* this node's workers */
	int timeout_s;
};

/* Runs the exchange: on node 0 as the server, elsewhere as a client. Fills per_node[nnodes].
 * -1 with err naming the peer and what went wrong (no answer, a different launch, a node count
 * that differs, a node index twice). */
int tt_census_run(const struct tt_census *c, uint32_t *per_node, tt_err *err);

/* The protocol's lines, one each way ('\n'-terminated, at most TT_CENSUS_LINE bytes):
 *   client: "traintopo-census 1 ID NNODES NODE COUNT"
 *   server: "ok C0,C1,..."  or  "error MESSAGE" */
#define TT_CENSUS_LINE 65536

int tt_census_hello(const struct tt_census *c, char *buf, size_t len);

/* Checks a client's hello against the server's c; stores the node and count in per_node (seen
 * marks the nodes already heard from) and returns 0. 1 with err for a stranger (not a hello, or
 * another launch's id: turned away), -1 with err for a node of this launch that disagrees (node
 * count, index out of range or twice, no worker), which fails the launch. */
int tt_census_accept(const struct tt_census *c, const char *line, uint32_t *per_node,
		     unsigned char *seen, tt_err *err);

/* The server's answer for per_node[nnodes]. */
int tt_census_answer(const uint32_t *per_node, uint32_t nnodes, char *buf, size_t len);

/* Reads a server's answer into per_node[nnodes]. -1 with err (the server's error, or a
 * malformed answer). */
int tt_census_read_answer(const char *line, uint32_t nnodes, uint32_t *per_node, tt_err *err);

#endif

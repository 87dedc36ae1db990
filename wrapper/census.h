/* SPDX-License-Identifier: MIT */
/* census.h — every node's worker count before any worker starts, and every node's refusal.
 * Ranks and WORLD_SIZE are right only when every node knows how many workers the others run
 * (srun --gpus=12 -N2 gives 8 + 4 GPUs, and no variable tells a node what the others got), and
 * a node that refuses to start (a bad option, a missing program) must stop the others instead of
 * leaving their workers waiting for it until the time limit. torchrun's agents learn both in
 * their rendezvous; train-run's is this one exchange over the authenticated node channel
 * (nodechan.h): node 0 listens on the workers' MASTER_PORT (free until its workers start), every
 * other node connects, proves it holds the job key, and says how many workers it runs or why it
 * refuses; node 0 answers every node with all counts, or with the first refusal or failure,
 * naming the node. A node that hangs up before the answer fails the launch, named. The client
 * closes first, so no TIME_WAIT holds the port when node 0's rank 0 binds it. */
#ifndef TT_CENSUS_H
#define TT_CENSUS_H

#include <stddef.h>
#include <stdint.h>

#include "nodechan.h"
#include "preflight.h"
#include "tt_err.h"

/* Seconds node 0 waits for every node, and a node for node 0 to answer. */
#define TT_CENSUS_TIMEOUT_S 120
/* Seconds a refusing node tries to tell the others: under Slurm they start within seconds, and a
 * mistyped option on node 0 outside it must not hold the terminal for the whole timeout. */
#define TT_CENSUS_REFUSE_S 30
/* Seconds between the lines that say who a waiting node waits for. */
#define TT_CENSUS_NOTICE_S 10
#define TT_CENSUS_HOST 64	/* longest node name in a message, with its NUL */
#define TT_CENSUS_REASON 512	/* longest refusal reason sent, with its NUL */

/* A node other than 0 that failed the start preflight: it stands aside (it starts no worker)
 * while a spare standing by with its worker count takes its NODE_RANK from the start, or, when
 * it is a spare itself (spare 0), it is set aside and the job goes on with one spare fewer. A
 * list of them ends at the first node 0. */
struct tt_census_swap {
	uint32_t node;			/* the failing node; 0 ends a list */
	uint32_t spare;			/* the spare that takes node's NODE_RANK; 0: node is a
					 * spare, set aside */
	char host[TT_CENSUS_HOST];	/* the failing node's */
	char line[TT_CENSUS_REASON];	/* "node N (HOST) failed preflight: WHY; spare node S (HOST)
					 * takes its node rank N", or "spare node N (HOST) failed
					 * preflight: WHY; the job goes on with 1 spare fewer" */
};

struct tt_census {
	const char *id;		/* the same on every node of one launch: "<job>.<port>" */
	const char *key;	/* the job key (rt_token_load) */
	const char *server;	/* node 0's host name or address */
	uint16_t port;
	uint32_t nnodes, node;	/* node count and this node's index */
	uint32_t count;		/* this node's workers */
	const char *host;	/* this node's name, for the others' messages */
	const char *refusal;	/* non-NULL: this node does not start, for this reason */
	struct tt_preflight *preflight;	/* this node's health check (preflight.h), to which a node
					 * other than 0 adds its network probe's numbers (probe.h)
					 * before it says them; NULL: none, and node 0 without one
					 * judges no node's and serves no probe */
	double min_fraction;	/* node 0: a node below this x the nodes' median fails */
	int timeout_s;
	const sigset_t *stop;	/* give up once one of these is pending (tt_nc_stopped); NULL */
	uint16_t *ctl_port;	/* the control plane's port (ctl.h), NULL: none. Node 0 announces
				 * it in the answer; the others get it there (0 when absent) */
	uint32_t nspares;	/* node 0: the last nspares nodes are spares standing by (--spares) */
	struct tt_census_swap *swap;	/* [nnodes]: the nodes failing their preflight that stand
					 * aside, each replaced by a spare or a spare set aside,
					 * filled on every node (node 0's decision, said in the
					 * answer); NULL on node 0: a failing node ends the launch */
	int notice_s;		/* 0: no waiting lines */
	void (*notice)(void *arg, const char *line);	/* a waiting line */
	void *arg;
};

/* Runs the exchange: on node 0 as the server, elsewhere as a client. Fills per_node[nnodes].
 * -1 with err naming the node and what went wrong (it refused and why, it left, no answer, a
 * node count that differs, a node index twice). A refusing node tells node 0 and returns -1
 * with node 0's answer in err. */
int tt_census_run(const struct tt_census *c, uint32_t *per_node, tt_err *err);

/* ---- the message bodies (pure) -------------------------------------------------------------- *
 *   client: "census NNODES NODE COUNT HOST[ PREFLIGHT]"  or  "refuse NNODES NODE HOST REASON"
 *   server: "ok C0,C1,..." [" ctl PORT"] {" swap NODE SPARE HOST LEN LINE"}  or  "error MESSAGE"
 *           (one swap a node standing aside, LEN LINE's bytes, SPARE 0 for a spare set aside)
 * PREFLIGHT: the node's health check results, key=value words (preflight.h); a body without
 * them is a node that made none, as before they existed. Node 0 judges every node's once all
 * are heard, and fails the launch naming the first node that fails (tt_census_preflight).
 * Before its census message a node probes the network to node 0 on a connection of its own to
 * the same port ("probe ...", probe.h), which node 0's loop hands to its probe thread at once. */

/* What a proven node said. */
struct tt_census_said {
	uint32_t nnodes, node, count;	/* count 0 for a refusal */
	char host[TT_CENSUS_HOST];
	char reason[TT_CENSUS_REASON];	/* a refusal's, "" otherwise */
	struct tt_preflight pf;		/* its health check, zero when it made none */
};

/* This node's body (TT_NC_BODY_MAX + 1 bytes): its count or its refusal (reason shortened to
 * fit and made printable). */
int tt_census_body(const struct tt_census *c, char *buf, size_t len);

/* Parses a client's body. -1 with err when it is not one. */
int tt_census_parse(const char *body, struct tt_census_said *s, tt_err *err);

/* Checks what a proven node said against node 0's c: 0 and per_node, seen and host names
 * (hosts[nnodes][TT_CENSUS_HOST]) updated, or -1 with err naming the node: it refused, or
 * disagrees (node count, index out of range or twice, no worker). */
int tt_census_accept(const struct tt_census *c, const struct tt_census_said *s, uint32_t *per_node,
		     unsigned char *seen, char (*hosts)[TT_CENSUS_HOST], tt_err *err);

/* The verdict on the nnodes nodes' health checks (tt_preflight_judge, hosts[nnodes] their
 * names, per_node[nnodes] their worker counts): 0, or -1 with err the one line that names the
 * first failing node, its numbers and the sbatch --exclude that leaves it out. With swap
 * ([nnodes], not NULL) and nspares spares standing by (the last nodes), failing nodes are set
 * aside one by one, the others judged again without them, until the rest pass: a failing spare
 * is no verdict but set aside, and each failing node other than 0 is no verdict when a distinct
 * passing spare has its worker count, in the order they were found. 0 with the list in swap
 * (swap[0].node 0 when none failed); -1 naming the first failing node left unreplaced, or node
 * 0 (swap[0].node 0). */
int tt_census_preflight(const struct tt_preflight *pf, char (*hosts)[TT_CENSUS_HOST],
			const uint32_t *per_node, uint32_t nnodes, uint32_t nspares, double fraction,
			struct tt_census_swap *swap, tt_err *err);

/* The server's answer for per_node[nnodes], the control port (0: none, not said) and the list
 * swap (NULL or swap[0].node 0: none, not said). */
int tt_census_answer(const uint32_t *per_node, uint32_t nnodes, uint16_t ctl_port,
		     const struct tt_census_swap *swap, char *buf, size_t len);

/* Reads a server's answer into per_node[nnodes], *ctl_port (0 when it names none) and the list
 * swap[nnodes] (swap[0].node 0 when it names none). -1 with err (the server's error, or a
 * malformed answer: a swap of node 0, outside the nodes, or of a node already named). */
int tt_census_read_answer(const char *line, uint32_t nnodes, uint32_t *per_node,
			  uint16_t *ctl_port, struct tt_census_swap *swap, tt_err *err);

#endif

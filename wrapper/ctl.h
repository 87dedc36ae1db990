/* SPDX-License-Identifier: MIT */
/* ctl.h — the control plane of a launch of more than one node: node 0's train-run (the
 * coordinator) keeps one authenticated connection to every other node's train-run for the whole
 * run, so a fault on one node becomes one decision for all of them, and a lost node a verdict.
 *
 * Where: MASTER_PORT belongs to the workers once the census (census.h) has answered, so node 0
 * listens on an ephemeral port of its own, opened before the census and announced in the
 * census answer ("ok C0,C1,... ctl PORT"): no second well-known port to reserve or collide on,
 * and no node can connect before node 0 has proven itself in the census.
 *
 * The connection is a node channel (nodechan.h): its handshake proves the job key both ways
 * with fresh nonces; the client's proven message is its join. After that, every line either
 * way is a nodechan message ("msg MAC BODY", MAC over the launch id, both nonces and BODY,
 * with the sender's role) whose BODY starts with a sequence number, 1, 2, 3, ... per direction:
 * a line of another connection (other nonces), of the other direction (other role), replayed
 * or reordered (another number) does not check out, and the connection is dropped.
 *
 * The bodies (after "SEQ "):
 *   join NODE HOST                   the client's first message (the handshake's), then node
 *                                    0's first answer (NODE 0: the coordinator's host)
 *   ping                             keepalive, both ways, every TT_CTL_PING_MS
 *   fault ROUND RANK HOST WHAT       a node's workers failed in round ROUND: the culprit
 *   restart ROUND RANK HOST WHAT     coordinator: every node restarts into round ROUND
 *   stop ROUND RANK HOST WHAT        coordinator: no restart left; every node stops
 *   lost NODE HOST WHAT              coordinator: node NODE is gone; every node stops
 *   replace ROUND NODE HOST SPARE SPAREHOST NODE_RANK WHAT
 *                                    coordinator: node NODE is gone, spare SPARE takes its
 *                                    NODE_RANK; every node restarts into round ROUND
 *   shrink ROUND NODE HOST NODE_RANK NNODES WHAT
 *                                    coordinator: node NODE (NODE_RANK) is gone and no spare
 *                                    takes its place: every node restarts into round ROUND on
 *                                    NNODES nodes, the NODE_RANKs above NODE_RANK one lower
 *   spare-lost NODE HOST WHAT        coordinator: spare NODE, standing by, is gone; the job
 *                                    goes on with one spare fewer
 *   steps RANK P50_US P99_US SAMPLES another node: one of its ranks' step times (heartbeat.h),
 *                                    every TT_CTL_STEPS_MS and before its bye (steps.h)
 *   health ROUND WORDS               another node, its workers stopped for round ROUND: its
 *                                    preflight checks (preflight.h's words; --preflight)
 *   go ROUND                         coordinator: every active node passed; round ROUND starts
 *   bye                              this train-run ends in order: not a loss
 * A peer silent for TT_CTL_LOST_MS, or whose connection ends without a bye or with a line that
 * does not check out, is lost. The star is one level; the scale issue may make it a tree, with
 * the same messages relayed.
 *
 * Spares (train-run --spares K): the last K nodes of the launch join the census and the control
 * plane but run no worker until node 0 gives one the NODE_RANK of a lost node (tt_ctl_replace).
 * A node the census set aside at the start (its preflight failed: a node a spare replaced, or a
 * spare) joins too and stands aside, like a spare that is never chosen, until node 0 ends.
 * Node 0 is the coordinator: its loss is not replaced.
 *
 * Fewer nodes (train-run --nnodes MIN:MAX, MIN < MAX): a lost node that no spare replaces
 * leaves the others to restart without it while at least MIN nodes remain (tt_ctl_replace's
 * shrink): the survivors keep their order, NODE_RANKs stay contiguous (tt_ctl_renumber), node 0
 * stays 0. Every node, a spare standing by too, applies the shrink to its own view of the
 * world (the worker counts by NODE_RANK), so a spare that takes a place later fits in.
 *
 * Preflight before each restart (--preflight, on by default): every active node re-runs its
 * local checks (devices open, memcpy probe) once its workers stopped, and probes the network to
 * node 0 (below), before it starts the new
 * round, and waits for node 0's go. Node 0 judges the reports with tt_preflight_judge, as the
 * census does at the start; a node that fails, or sends no report within health_wait_ms of the
 * decision, is lost (a spare may take its place, and the round is checked again).
 *
 * The network too is probed again then (probe.h): every active node but node 0 measures the
 * round trip and the bandwidth to node 0 as at the start and sends them in its health words
 * (net=, rtt=), judged with the rest. MASTER_PORT belongs to the workers by then, so node 0
 * serves these probes on its control port: the listener stays open with --preflight, a new
 * connection proves the job key as a join does, and one whose first message is a probe request
 * goes to a probe thread of node 0's (one probe at a time, as at the start), which the control
 * loop never waits on; any other connection is dropped. A node's probe waits at most
 * TT_CTL_PROBE_WAIT_MS for node 0's go, then TT_PROBE_MS: a probe that fails is not measured
 * (not judged), as at the start. */
#ifndef TT_CTL_H
#define TT_CTL_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "census.h"
#include "nodechan.h"
#include "preflight.h"
#include "probe.h"
#include "steps.h"
#include "tt_err.h"

#define TT_CTL_PING_MS 1000	/* keepalive interval */
#define TT_CTL_LOST_MS 5000	/* a peer silent this long is lost */
#define TT_CTL_BYE_MS 1000	/* after its bye, a node waits this long at most for the peer to close */
/* Every node's step times reach node 0 this often: a p50 over the last TT_HB_WINDOW steps moves
 * slowly, a minute is how often a person reads a straggler line, and a rank's line a minute is
 * nothing next to the pings. */
#define TT_CTL_STEPS_MS 60000
#define TT_CTL_JOIN_S 60	/* node 0 waits this long for every node to join */
/* Before a restart, a node's network probe (probe.h) waits this long at most for node 0's go,
 * then TT_PROBE_MS: its control loop waits on it, so both stay well within TT_CTL_LOST_MS. */
#define TT_CTL_PROBE_WAIT_MS 2000
/* A file a lost node's host is appended to (one a line), for sbatch-templates/requeue.sh. */
#define TT_ENV_EXCLUDE_FILE "TRAIN_TOPO_EXCLUDE_FILE"
/* A file node 0 writes its exit status into at its end ("0\n"), whole or not at all: the
 * launch's outcome, which the sbatch-templates take over srun's when a node was lost (the lost
 * train-run's status fails the step although the job went on without it). */
#define TT_ENV_OUTCOME_FILE "TRAIN_TOPO_OUTCOME_FILE"
#define TT_CTL_HOST 64
#define TT_CTL_WHAT 256
#define TT_CTL_LINE 1024	/* longest line after the handshake, '\n' included */

/* ---- the messages (pure: tests/unit/test_ctl.c, tests/fuzz/fuzz_nodechan.c) ----------------- */

enum tt_ctl_kind { TT_CTL_JOIN, TT_CTL_PING, TT_CTL_FAULT, TT_CTL_RESTART, TT_CTL_STOP,
		   TT_CTL_LOST, TT_CTL_BYE, TT_CTL_STEPS, TT_CTL_REPLACE, TT_CTL_SPARE_LOST,
		   TT_CTL_HEALTH, TT_CTL_GO, TT_CTL_SHRINK };

struct tt_ctl_msg {
	enum tt_ctl_kind kind;
	uint32_t round;			/* fault: the round that failed; restart, health, go: the new
					 * one; stop */
	uint32_t node;			/* join, lost, replace, spare-lost, shrink: the lost node;
					 * fault, on node 0: the node it came from (not sent) */
	int32_t rank;			/* fault, restart, stop: the culprit's global rank; steps;
					 * replace: the NODE_RANK the spare takes; shrink: the
					 * NODE_RANK that is gone */
	uint32_t nnodes;		/* shrink: the nodes of the new round */
	uint32_t spare;			/* replace: the spare that takes it */
	char spare_host[TT_CTL_HOST];	/* replace: the spare's host */
	char host[TT_CTL_HOST];		/* join: the node's; fault, restart, stop: the culprit's;
					 * lost: the lost node's */
	char what[TT_CTL_WHAT];		/* fault, restart, stop: what it did; lost: how it was lost */
	int64_t p50_us, p99_us;		/* steps (>= 0) */
	uint64_t samples;		/* steps */
	int64_t busy_p50_us, busy_p99_us;	/* steps, when busy_samples > 0 (an older node */
	uint64_t busy_samples;			/* never sends them: "busy ..." is optional) */
	struct tt_preflight pf;		/* health: the node's checks */
};

/* "SEQ BODY" of m into buf (len bytes); host and what made one token / one printable line. */
int tt_ctl_format(const struct tt_ctl_msg *m, uint64_t seq, char *buf, size_t len);

/* Parses "SEQ BODY" (len bytes, not NUL-terminated). -1 with err when it is not a message. */
int tt_ctl_parse(const char *body, size_t len, uint64_t *seq, struct tt_ctl_msg *m, tt_err *err);

/* Checks one line (without its '\n') a peer sent: a nodechan message proven with the peer's
 * role (from_server: the coordinator's) over this connection's nonces, carrying sequence number
 * want. 0 with m, or -1 with err saying what is wrong. */
int tt_ctl_open(const char *key, const char *id, const unsigned char nc[RT_NONCE_LEN],
		const unsigned char ns[RT_NONCE_LEN], int from_server, uint64_t want,
		const char *line, size_t len, struct tt_ctl_msg *m, tt_err *err);

/* The coordinator's one decision per round: the first fault of the current round restarts
 * every node into the next one while restarts are left, else stops them all; later faults of
 * the same round (other nodes' workers failing as a consequence) and faults of past rounds
 * change nothing. */
struct tt_ctl_rounds {
	uint32_t round;		/* the current round = TRAIN_RESTART_COUNT */
	uint32_t max_restarts;
	int over;		/* a stop or a loss was decided (or, on the other nodes, a loss
				 * seen): nothing more is */
};

/* 1 with the decision in out (restart or stop, naming fault's culprit), 0 when fault changes
 * nothing. */
int tt_ctl_decide(struct tt_ctl_rounds *r, const struct tt_ctl_msg *fault, struct tt_ctl_msg *out);

/* Node 0's node map: role[k] is node k's NODE_RANK, TT_CTL_SPARE while it stands by,
 * TT_CTL_ASIDE while it stands aside (the census set it aside at the start: excluded),
 * TT_CTL_GONE once lost (or replaced); count[k] its workers. The three markers are the largest
 * values: a role below TT_CTL_ASIDE is a NODE_RANK. Node lost is gone: 1 when a spare standing
 * by with lost's worker count takes lost's NODE_RANK (the first such, in *spare), 3 when none
 * does but min_nodes > 0 and at least min_nodes nodes with a NODE_RANK remain: they go on
 * without it, renumbered (tt_ctl_renumber); in both, *rank is the NODE_RANK lost had and r's
 * round is bumped: the new round, which needs no restart left. 2 when lost was a spare standing
 * by (or a node standing aside), 0 when the loss stops the job (node 0, no spare fits and too
 * few nodes remain, a decision that was over, or !may_replace). role[lost] becomes TT_CTL_GONE
 * in every case. */
#define TT_CTL_SPARE UINT32_MAX
#define TT_CTL_GONE (UINT32_MAX - 1)
#define TT_CTL_ASIDE (UINT32_MAX - 2)
int tt_ctl_replace(struct tt_ctl_rounds *r, uint32_t *role, const uint32_t *count, uint32_t nnodes,
		   uint32_t lost, int may_replace, uint32_t min_nodes, uint32_t *spare, uint32_t *rank);

/* The first global rank of NODE_RANK node_rank in node 0's map: the workers of the nodes with a
 * lower NODE_RANK. */
int32_t tt_ctl_first_rank(const uint32_t *role, const uint32_t *count, uint32_t nnodes,
			  uint32_t node_rank);

/* Node 0's node map at the start (role[nnodes], as tt_ctl_replace's): node k's NODE_RANK k, the
 * last nspares TT_CTL_SPARE; then each node of the census's list swaps (census.h, NULL: none)
 * TT_CTL_ASIDE, a failing spare too, so that no loss ever chooses it, and its spare, if any,
 * its NODE_RANK. */
void tt_ctl_start_roles(uint32_t *role, uint32_t nnodes, uint32_t nspares,
			const struct tt_census_swap *swaps);

/* A node's NODE_RANK once NODE_RANK lost is gone from a shrink (the one rule of every node's
 * renumbering): the ranks above it one lower, the others kept. */
uint32_t tt_ctl_renumber(uint32_t node_rank, uint32_t lost);

/* The verdict line's resubmission hint for a lost host. */
void tt_ctl_lost_line(const struct tt_ctl_msg *lost, char *buf, size_t len);

/* ---- the connections ------------------------------------------------------------------------ */

struct tt_ctl_peer {
	int fd;				/* -1: closed (gone, or said bye) */
	uint32_t node;
	char host[TT_CTL_HOST];
	unsigned char nc[RT_NONCE_LEN], ns[RT_NONCE_LEN];
	uint64_t sent, heard;		/* the last sequence numbers each way */
	long last_heard_ms, last_sent_ms;
	char *buf;			/* TT_CTL_LINE bytes: what was read, not yet a line */
	size_t len;
};

struct tt_ctl {
	/* set by the caller */
	const char *key, *id;		/* as the census's */
	const char *server;		/* node 0's host (the census's) */
	const char *host;		/* this node's */
	uint32_t nnodes, node;
	const sigset_t *stop;		/* give up joining once one of these is pending; NULL */
	uint32_t nspares;		/* the last nspares nodes are spares (--spares) */
	uint32_t min_nodes;		/* node 0: --nnodes MIN:MAX's MIN, the fewest nodes a loss may
					 * leave running (tt_ctl_replace); 0: a loss stops the job */
	const uint32_t *counts;		/* node 0 with spares or min_nodes: every node's worker
					 * count [nnodes] */
	const struct tt_census_swap *swaps;	/* node 0: the census's list (census.h): each node
						 * stands aside, its spare (if any) runs its
						 * NODE_RANK; NULL: none */
	int health;			/* preflight before each restart (tt_ctl_health) */
	double min_fraction;		/* node 0: --preflight-min-fraction */
	long health_wait_ms;		/* node 0: a node's report is due this long after a decision */
	/* owned: lfd and timerfd -1, peers NULL before the first call */
	int lfd;			/* node 0, until every node joined; with health, to the end
					 * (the probes before a restart) */
	uint16_t port;			/* node 0's control port (on every node once connected) */
	int timerfd;			/* keepalive ticks */
	struct tt_ctl_peer *peers;	/* node 0: [nnodes] by node (0 unused); else [1]: node 0 */
	uint32_t npeers;
	struct tt_ctl_rounds rounds;	/* node 0's decisions */
	struct tt_steps *steps;		/* node 0: where the nodes' step times go; NULL: nowhere */
	struct tt_faults *faults;	/* node 0: where its decisions go, in order (--report); NULL:
					 * nowhere */
	uint32_t *role;			/* node 0 with spares or min_nodes: [nnodes] (tt_ctl_replace);
					 * else NULL */
	int draining;			/* node 0's workers are done: no spare takes a place now */
	uint32_t health_round;		/* node 0: the round whose reports it awaits; 0: none */
	long health_deadline;		/* node 0: when a missing report is a loss (tt_now_ms) */
	struct tt_preflight *reports;	/* node 0 with health: [nnodes] */
	unsigned char *reported;	/* node 0 with health: [nnodes], 1 once reports[k] is in */
	struct tt_preflight *judged;	/* node 0 with health: [nnodes], the active nodes' reports */
	uint32_t *judged_node;		/* node 0 with health: [nnodes], whose each of judged is */
	struct tt_nc_conn *probe_conns;	/* node 0 with health: [nnodes + 8], new connections on lfd
					 * (kept open) until their probe request is proven */
	struct tt_probe_server *probe;	/* node 0 with health: serves them (probe.h); NULL: none */
};

/* Node 0, before the census: listens on an ephemeral port (c->port). */
int tt_ctl_listen(struct tt_ctl *c, tt_err *err);

/* After the census: node 0 waits for every node's join (TT_CTL_JOIN_S), the others connect to
 * node 0 at port and join. 0, or -1 with err naming the node that did not come. */
int tt_ctl_connect(struct tt_ctl *c, uint16_t port, uint32_t max_restarts, tt_err *err);

/* The descriptors to wait on into p (room for tt_ctl_nfds): returns how many. */
int tt_ctl_nfds(const struct tt_ctl *c);
int tt_ctl_pollfds(const struct tt_ctl *c, struct pollfd *p);

/* Handles what arrived, sends what is due, judges silences. 1 with a verdict (restart, stop,
 * lost, replace, shrink, spare-lost or go) for this node in v, 0 when nothing to act on. */
int tt_ctl_service(struct tt_ctl *c, struct tt_ctl_msg *v);

/* This node's workers failed (m: a fault). Node 0 decides at once (1 with the verdict in v,
 * also sent to every node); another node tells node 0 (0; the verdict comes through
 * tt_ctl_service), or 1 with a loss in v when its connection fails, or with a stop when node 0
 * ended in order (bye). 0 after a loss: this node stops already. */
int tt_ctl_fault(struct tt_ctl *c, const struct tt_ctl_msg *m, struct tt_ctl_msg *v);

/* This node's ranks' step times (n rows): node 0 puts them into c->steps, another node sends
 * them to node 0. */
void tt_ctl_steps(struct tt_ctl *c, const struct tt_step_row *rows, int n);

/* Node 0, its workers done (not stopped by a signal of its own): waits until every other node said bye (after its last step times)
 * or was lost, or until a termination signal arrives on sigfd (a signalfd, non-blocking). A fault that arrives now
 * stops every node: node 0 cannot restart with them. The step spans the slowest node's workers
 * anyway, so the wait does not lengthen it. Returns 1 with the first such stop, or loss of a
 * node with workers, in late (the job failed after node 0's own workers ended), else 0. */
int tt_ctl_drain(struct tt_ctl *c, int sigfd, struct tt_ctl_msg *late);

/* This node's workers stopped for round (a restart or a replace), its checks in pf (another
 * node's with its probe's net= and rtt=, tt_probe_run at c->server port c->port): node 0 keeps
 * them, another node sends them. The go, or the loss of a failing node, comes
 * through tt_ctl_service. */
void tt_ctl_health(struct tt_ctl *c, uint32_t round, const struct tt_preflight *pf);

/* Whether this node's coordinator ended in order (said bye): a spare standing by is done. */
int tt_ctl_coordinator_done(const struct tt_ctl *c);

/* Continued after a stop (a suspended job): the peers were stopped too, their silence no loss. */
void tt_ctl_resumed(struct tt_ctl *c);

/* Says bye to every peer still connected and closes everything. */
void tt_ctl_close(struct tt_ctl *c);

#endif

/* SPDX-License-Identifier: MIT */
/* probe.h — the network part of the preflight (preflight.h): every node but node 0 measures the
 * round trip and the bandwidth to node 0 over the address and port training uses (node 0's host,
 * MASTER_PORT: the census's), on a short-lived connection of its own before its census message.
 *
 * The connection is the node channel's (nodechan.h), so only a holder of the job key can be
 * measured or measure: the client says "probe NODE PINGS BYTES ROUNDS"; node 0's census loop hands the
 * proven connection to a thread of its own (it never waits on a probe), which serves the probes
 * one at a time, so that no two share node 0's link and each measures the path alone, and
 * answers "probe go" when it begins one. Then raw bytes: PINGS times one byte each way (the round
 * trip: the median), then ROUNDS times BYTES from the client and one byte back once they have
 * arrived (the bandwidth: the best round, as a busy node's client may lose the CPU in one). Each
 * probe is bounded by TT_PROBE_MS after its go; a node whose probe fails sends its census
 * message without network numbers (not measured, not judged).
 *
 * Before a restart the same probe runs again, to node 0's control port (ctl.h), whose control
 * loop hands it to a server of its own the same way. */
#ifndef TT_PROBE_H
#define TT_PROBE_H

#include <signal.h>
#include <stdint.h>

#include "nodechan.h"
#include "tt_err.h"

#define TT_PROBE_PINGS 16
#define TT_PROBE_BYTES (1u << 20)	/* one round of the bandwidth probe */
#define TT_PROBE_ROUNDS 4
#define TT_PROBE_MS 1000		/* one probe's time after node 0's go, on either side */
#define TT_PROBE_MAX_BYTES (64u << 20)	/* the most node 0 takes from one probe, all rounds */

/* Only for tests: a file; while it exists, the whole milliseconds in it (0..60000) are added to
 * each bandwidth round of this node's probe, within its TT_PROBE_MS: a slow link, or past that a
 * failing one, on one machine. */
#define TT_ENV_PREFLIGHT_TEST_NET_DELAY "TRAINRT_PREFLIGHT_TEST_NET_DELAY"

struct tt_probe_result {
	uint32_t net_mbps;	/* MB/s from this node to node 0 */
	uint32_t rtt_us;	/* the median round trip of one byte, microseconds (at least 1) */
};

/* ---- the other nodes' side ------------------------------------------------------------------- */

/* Probes node 0 (server:port, the census's key, id and stop) as node, retrying while node 0 is
 * not up until deadline (tt_now_ms()). 0 with r filled, or -1 with err. */
int tt_probe_run(const char *server, uint16_t port, const char *key, const char *id,
		 uint32_t node, const sigset_t *stop, long deadline, struct tt_probe_result *r,
		 tt_err *err);

/* ---- node 0's side --------------------------------------------------------------------------- */

struct tt_probe_server;

/* Whether a proven client's body asks for a probe. */
int tt_probe_is_request(const char *body);

/* The thread that serves the probes (key and id as the census's, alive until stopped). NULL with
 * err when it cannot start. */
struct tt_probe_server *tt_probe_server_start(const char *key, const char *id, tt_err *err);

/* Hands the proven connection k, whose body asks for a probe, to the server: k's fd and buffer
 * are the server's from then on, and k is left empty (fd -1, no buffer) for the next one. */
void tt_probe_server_take(struct tt_probe_server *ps, struct tt_nc_conn *k);

/* Ends the server: the probe it serves finishes (bounded), the queued ones are closed unserved;
 * joins the thread and frees ps. */
void tt_probe_server_stop(struct tt_probe_server *ps);

#endif

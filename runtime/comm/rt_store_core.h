/* SPDX-License-Identifier: MIT */
/* rt_store_core.h — the store server's protocol without sockets: each connection's buffers, the
 * handshake in which the server and then the rank prove they hold the job key, the limits on
 * connections that have not proved it yet, and the key-value commands. rt_store.c moves bytes
 * between these buffers and sockets; tests and the store fuzzer drive them directly.
 *
 * Wire format (native endianness; every rank runs on the same kind of host):
 *   request  = u32 magic "TRST", u32 cmd, u32 keylen, u32 vallen, key, value
 *   response = u32 status, u32 vallen, value
 * Handshake: the rank sends HELLO {version, world size, its nonce}; the server answers with its
 * nonce alone; the rank sends PROOF = HMAC(key, client role, version, world, both nonces); the
 * server checks it, admits the rank and only then answers with HMAC(key, server role, the same
 * transcript), which the rank checks before it trusts the store. So a client without the key
 * learns nothing it could test guesses of the secret against (it gets a nonce, then a refusal),
 * and a proof is never valid in the other direction or for another connection. What is left: a
 * process squatting the port before rank 0 binds it receives one rank's proof (trainrt(3)
 * SECURITY gives the numbers that make that safe with a secret of RT_TOKEN_MIN bytes). Until
 * admitted a connection may hold one handshake message
 * (64 bytes) of input and RT_STORE_HANDSHAKE_S seconds; at most RT_STORE_MAX_PENDING wait at once,
 * and at most world-size ranks are ever admitted. */
#ifndef RT_STORE_CORE_H
#define RT_STORE_CORE_H

#include "rt_token.h"
#include "tt_err.h"

#include <stddef.h>
#include <stdint.h>

#define RT_STORE_MAGIC 0x54525354u /* "TRST" */
#define RT_STORE_VERSION 5 /* 3: JOIN, which trainrt_init sends; 4: the rank proves itself first;
			    * 5: JOIN_NODE */
#define RT_STORE_MAX_KEY 255
#define RT_STORE_MAX_VAL (1u << 20)
#define RT_STORE_MAX_PENDING 256   /* connections not yet admitted, held at once */
#define RT_STORE_HANDSHAKE_S 5.0   /* time a connection has to complete the handshake */
#define RT_STORE_EVICT_AGE_S 0.25  /* at the cap, an older pending connection makes room; so the
				    * store never answers RETRY sooner after accepting */
#define RT_STORE_DRAIN_S 1.0	   /* a refused connection's input is discarded this long */
#define RT_STORE_MAX_REASON 1024   /* longest refusal message */

enum rt_store_cmd { RT_CMD_HELLO = 1, RT_CMD_SET = 2, RT_CMD_GET = 3, RT_CMD_ADD = 4, RT_CMD_PROOF = 5, RT_CMD_JOIN = 6,
		     RT_CMD_JOIN_NODE = 7 };
enum rt_store_status {
	RT_ST_OK = 0,
	RT_ST_REFUSED = 1, /* value: the reason; the server closes the connection */
	RT_ST_ERROR = 2,   /* value: the reason; this request failed, the connection stays */
	RT_ST_RETRY = 3,   /* the server is busy with other connections: connect again */
};

struct rt_store_req {
	uint32_t magic, cmd, keylen, vallen;
};

struct rt_store_rsp {
	uint32_t status, vallen;
};

struct rt_store_hello {
	uint32_t version, world_size;
	unsigned char nonce[RT_NONCE_LEN];
};

/* JOIN's value: key = the rendezvous' name. The first rank to join starts its clock: when some
 * rank has not joined timeout_s later, or a joined rank's connection closes first, every waiting
 * (and later) rank gets the same RT_ST_ERROR naming the ranks that did not come, or the one that
 * left; once all world-size ranks joined, each gets OK. */
struct rt_store_join {
	uint32_t rank, pad;
	double timeout_s;
};

/* JOIN_NODE's value, then a bit per rank of [first_rank, first_rank + count): a node leader
 * (rt_node.h) joins the rendezvous named by key for its node's ranks over its one connection. Its
 * first request joins with the ranks it gathered so far; later ones on the same connection add
 * ranks that came since (event ARRIVED) or fail the rendezvous for every rank, naming rank `who`
 * that left its leader or came to it twice. The store answers once, with the same verdict JOIN
 * gets (requests after it are ignored); a node's connection that closes before then fails the
 * rendezvous naming the leader and its node's ranks. */
enum rt_node_event { RT_NODE_ARRIVED = 0, RT_NODE_LEFT = 1, RT_NODE_TWICE = 2 };
struct rt_store_join_node {
	uint32_t first_rank, count, event, who;
	double timeout_s;
};

/* The server's answer to a hello: its nonce, nothing keyed. */
struct rt_store_challenge {
	unsigned char nonce[RT_NONCE_LEN];
};

/* What both proofs cover. */
struct rt_store_transcript {
	uint32_t version, world_size;
	unsigned char client_nonce[RT_NONCE_LEN], server_nonce[RT_NONCE_LEN];
};

#define RT_STORE_SERVER_ROLE "trainrt store: server proof v3"
#define RT_STORE_CLIENT_ROLE "trainrt store: client proof v3"

/* Both proofs of one handshake. */
int rt_store_proofs(const char *key, const struct rt_store_transcript *t, unsigned char server_mac[RT_MAC_LEN],
		    unsigned char client_mac[RT_MAC_LEN], tt_err *err);

typedef struct rt_store_core rt_store_core;
struct barrier;

enum rt_conn_stage { RT_CONN_HELLO, RT_CONN_PROOF, RT_CONN_ADMITTED };

/* One connection as the core sees it; the edge reads fd, out and the flags. */
typedef struct rt_store_conn {
	int fd;		  /* the edge's socket; the core never uses it */
	int stage;	  /* enum rt_conn_stage */
	int closing;	  /* refused: close once out is flushed (input is discarded meanwhile) */
	int evicted;	  /* out holds a RETRY: send what the socket takes at once, then close */
	int dead;	  /* closed: the edge closes fd; removed by rt_store_core_sweep */
	int dropped;	  /* rt_store_core_drop ran: no longer counted, waited for, or joined */
	int noticed;	  /* on the list rt_store_core_next_notice returns */
	unsigned watched; /* the edge's: the events its poller watches for */
	double opened;	  /* when accepted */
	double drain_end; /* closing and flushed: when to stop discarding input (0: not yet) */
	unsigned char pre[64]; /* input before admission: one handshake message at most */
	size_t pre_len;
	unsigned char *in; /* input after admission */
	size_t in_len, in_cap;
	unsigned char *out;
	size_t out_len, out_off, out_cap;
	char *wait_key; /* a GET parked until the key is set */
	struct barrier *join; /* a JOIN parked until the rendezvous completes or fails */
	uint32_t join_rank;
	struct barrier *node_join; /* the rendezvous this connection joined as a node leader */
	uint32_t node_count;	   /* ... for ranks [join_rank, join_rank + node_count) */
	rt_store_core *core;
	unsigned char expect[RT_MAC_LEN]; /* the rank's proof, computed when the challenge went out */
	unsigned char answer[RT_MAC_LEN]; /* the server's proof, sent once the rank's checked out */
} rt_store_conn;

/* A store for world_size ranks that prove knowledge of key (any string; see rt_token.h). */
rt_store_core *rt_store_core_new(const char *key, int world_size, tt_err *err);
/* Frees every connection's buffers (not their fds) and the table. */
void rt_store_core_free(rt_store_core *c);

/* Adds a connection accepted at now; NULL when out of memory. A connection's pointer stays valid
 * until the rt_store_core_sweep after it died. */
rt_store_conn *rt_store_core_open(rt_store_core *c, int fd, double now);
size_t rt_store_core_count(const rt_store_core *c);
rt_store_conn *rt_store_core_at(rt_store_core *c, size_t i);

/* Where the connection's next input goes and how much it may send now (0: nothing until its
 * output is flushed). -1: drop it (out of memory, or an admitted rank's input overflowed). */
int rt_store_core_room(rt_store_conn *k, unsigned char **buf, size_t *room);
/* n bytes arrived where rt_store_core_room said: handles every complete message. -1: drop it. */
int rt_store_core_received(rt_store_core *c, rt_store_conn *k, size_t n);
/* n bytes of output left; once all did, parked input is handled. Returns 1 when the connection
 * is closing and flushed (shut the writing side, discard input until RT_STORE_DRAIN_S), -1 to
 * drop it, else 0. */
int rt_store_core_sent(rt_store_core *c, rt_store_conn *k, size_t n, double now);

/* Connections that have not been admitted (the cap counts them). */
size_t rt_store_core_pending(const rt_store_core *c);
/* Whether one more connection may be accepted at now: below the cap, or one pending connection is
 * older than RT_STORE_EVICT_AGE_S and rt_store_core_make_room can evict it. */
int rt_store_core_can_admit(rt_store_core *c, double now);
/* Above the cap: evicts the oldest pending connection older than the eviction age. */
void rt_store_core_make_room(rt_store_core *c, double now);
/* Evicts pending connections past their handshake deadline and marks drained ones dead (the
 * edge closes them); returns when the next deadline falls (now + 3600 when none). */
double rt_store_core_expire(rt_store_core *c, double now);
/* The edge closed k (or lost it): k is dead, no longer counts against the cap, and a rendezvous it
 * waited in fails naming its rank. Idempotent; sweep does it for a connection marked dead. */
void rt_store_core_drop(rt_store_core *c, rt_store_conn *k);
/* Next connection the edge must look at since it last asked: output waiting to be sent, evicted
 * (send the RETRY, close) or dead (close); NULL when none. So the edge's work per round is what
 * happened, not the number of ranks. */
rt_store_conn *rt_store_core_next_notice(rt_store_core *c);
/* Connections dead and not yet swept. */
size_t rt_store_core_dead(const rt_store_core *c);
/* Frees dead connections (those marked dead by the caller are dropped first). */
void rt_store_core_sweep(rt_store_core *c);

#endif

/* SPDX-License-Identifier: MIT */
/* nodechan.h — an authenticated channel between the train-runs of one launch: node 0 listens,
 * every other node connects and proves it holds the job key (rt_token.h: the key libtrainrt's
 * store and links prove, derived the same way), node 0 proves it back, and each side's message
 * is bound to both fresh nonces, so a local user without the key can neither speak nor replay.
 * The census (census.h) is its first user; the fault-tolerance control plane extends it.
 *
 * One connection, one line each way after the handshake ('\n'-terminated, printable ASCII):
 *   client: "traintopo-nodechan 1 hello ID NC"     NC: the client's nonce, 64 hex digits
 *   server: "challenge NS"                         NS: the server's nonce
 *   client: "msg MAC BODY"                         MAC = HMAC(key, CLIENT role, transcript)
 *   server: "msg MAC BODY"                         MAC = HMAC(key, SERVER role, transcript)
 * where transcript = ID, NUL, NC, NS, SHA-256(BODY). The client proves first: a stranger that
 * connects to node 0's well-known port learns nothing it could test a guess of the secret
 * against; only a squatter holding the port before node 0 listens receives a client's proof
 * (the secret is then as strong as the token: 24 random bytes by default).
 *
 * Node 0 never gives a connection a node's slot before its proof checked out, gives each
 * unproven connection its own short deadline, and evicts the oldest unproven one when its table
 * is full: strangers (idle, garbage, wrong key) cost a table entry for a few seconds, never a
 * node's place. */
#ifndef TT_NODECHAN_H
#define TT_NODECHAN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "rt_token.h"
#include "tt_err.h"

#define TT_NC_MAGIC "traintopo-nodechan 1"
#define TT_NC_ID_MAX 128	   /* longest launch id, with its NUL */
#define TT_NC_BODY_MAX 65536	   /* longest message body, without its NUL */
#define TT_NC_LINE (TT_NC_BODY_MAX + 96) /* longest line, '\n' and NUL included */
#define TT_NC_PROVE_MS 5000	   /* an unproven connection's deadline on node 0 */
#define TT_NC_CONNECT_MS 2000	   /* one connection attempt of a node to node 0 */

/* ---- the lines (pure: tests/fuzz/fuzz_nodechan.c) ------------------------------------------- */

enum tt_nc_kind { TT_NC_HELLO, TT_NC_CHALLENGE, TT_NC_MSG };

struct tt_nc_line {
	enum tt_nc_kind kind;
	char id[TT_NC_ID_MAX];			/* hello */
	unsigned char nonce[RT_NONCE_LEN];	/* hello, challenge */
	unsigned char mac[RT_MAC_LEN];		/* msg */
	const char *body;			/* msg: into the parsed line, not NUL-terminated */
	size_t body_len;
};

/* Parses one line of len bytes (its '\n' not included) into out. 0, or -1 with err saying what
 * is wrong (any byte outside printable ASCII, an unknown kind, a bad field). */
int tt_nc_parse(const char *line, size_t len, struct tt_nc_line *out, tt_err *err);

/* The client's or server's proof of body over the transcript (see above). */
int tt_nc_mac(const char *key, int server, const char *id, const unsigned char nc[RT_NONCE_LEN],
	      const unsigned char ns[RT_NONCE_LEN], const char *body, size_t body_len,
	      unsigned char mac[RT_MAC_LEN], tt_err *err);

/* "msg MAC BODY\n" into buf (TT_NC_LINE bytes). -1 with err when body does not fit or is not
 * printable. */
int tt_nc_format_msg(char *buf, const char *key, int server, const char *id,
		     const unsigned char nc[RT_NONCE_LEN], const unsigned char ns[RT_NONCE_LEN],
		     const char *body, tt_err *err);

/* ---- node 0's side: one connection, non-blocking ---------------------------------------------- */

enum tt_nc_state { TT_NC_WAIT_HELLO, TT_NC_WAIT_PROOF, TT_NC_PROVEN };

struct tt_nc_conn {
	int fd;			/* -1: unused */
	enum tt_nc_state state;
	long deadline;		/* tt_now_ms(): an unproven connection is dropped then */
	char *buf;		/* TT_NC_LINE bytes once used */
	size_t len;
	unsigned char nc[RT_NONCE_LEN], ns[RT_NONCE_LEN];
	const char *body;	/* the proven client's message, NUL-terminated, in buf */
};

/* Takes an accepted (non-blocking) fd. */
int tt_nc_conn_open(struct tt_nc_conn *k, int fd, tt_err *err);

/* Reads what k's fd has and advances the handshake: 1 when the client's message has been proven
 * (in k->body), 0 for more to come, -1 with err for a stranger or a hang-up (close it). For a
 * proven connection: 0 while it is quiet, -1 once it hung up or said more (it has nothing more
 * to say). */
int tt_nc_conn_read(struct tt_nc_conn *k, const char *key, const char *id, tt_err *err);

/* Sends node 0's proven answer on a proven connection. */
int tt_nc_conn_send(struct tt_nc_conn *k, const char *key, const char *id, const char *body,
		    tt_err *err);

void tt_nc_conn_close(struct tt_nc_conn *k);

/* A listening socket (non-blocking) on port of every address (IPv6 with IPv4 mapped, else
 * IPv4); port 0: an ephemeral one (tt_nc_port tells which). what names it in err. */
int tt_nc_listen(uint16_t port, int backlog, const char *what, tt_err *err);

/* The local port of a socket, 0 when it cannot be told. */
uint16_t tt_nc_port(int fd);

/* A slot of conns[n] for a new connection: a free one, else the unproven one nearest its
 * deadline, closed (a flood of strangers cannot keep a node out when the table has room for
 * every node and more); NULL when every slot is proven. */
struct tt_nc_conn *tt_nc_free_slot(struct tt_nc_conn *conns, size_t n);

/* ---- the other nodes' side ------------------------------------------------------------------ */

struct tt_nc_client {
	int fd;
	const sigset_t *stop;	/* give up once one of these (blocked) signals is pending; NULL */
	unsigned char nc[RT_NONCE_LEN], ns[RT_NONCE_LEN];
};

/* Connects to host:port and says body, proven, retrying while nothing listens, a connection gets
 * no answer within TT_NC_CONNECT_MS, or one is dropped before node 0's challenge (node 0 not up
 * yet, or a stranger on the port) until deadline (tt_now_ms()); every attempt is a new socket. waiting(arg, seconds_left) is called about every notice_ms while it
 * retries (NULL: silent). 0 with cl connected, or -1 with err; cl->stop set by the caller. */
int tt_nc_client_say(struct tt_nc_client *cl, const char *host, uint16_t port, const char *key,
		     const char *id, const char *body, long deadline, long notice_ms,
		     void (*waiting)(void *arg, long seconds_left), void *arg, tt_err *err);

/* Reads node 0's proven answer into body (TT_NC_BODY_MAX + 1 bytes) before deadline. -1 with
 * err: no answer, a hang-up, or an answer without node 0's proof. */
int tt_nc_client_hear(struct tt_nc_client *cl, const char *key, const char *id, char *body,
		      long deadline, tt_err *err);

void tt_nc_client_close(struct tt_nc_client *cl);

/* Whether one of stop's signals is pending (they are blocked: train-run's signalfd takes them
 * later), without taking it; 0 for NULL. Other signals, such as the SIGCONT srun may send, do
 * not stop a wait. */
int tt_nc_stopped(const sigset_t *stop);

#endif

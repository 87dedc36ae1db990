/* SPDX-License-Identifier: MIT */
/* rt_link.h — the handshake of every TCP connection between two ranks: the tcp ring's links and
 * point-to-point connections. Each end listens on an address it publishes through the
 * (authenticated) store together with a fresh nonce. The dialer sends a proof that it holds the
 * job key: an HMAC over the link's transcript (which ring or world, its size, who dials whom and
 * both nonces); the listener checks it and answers with its own proof, which the dialer checks.
 * The key never crosses the wire, and a proof is worth nothing for another link or a later run,
 * so no other process can join a ring, feed it data, or take the place of a peer that died. */
#ifndef RT_LINK_H
#define RT_LINK_H

#include "comm_backend.h"
#include "rt_token.h"

/* A member as published in the store: where it listens and its nonce. */
struct rt_link_peer {
	char ip[64];
	int port;
	unsigned char nonce[RT_NONCE_LEN];
};

/* The IPv4 address this rank listens on for links (TRAINRT_SOCKET_IFNAME, see trainrt.h). */
int rt_link_address(const rt_world *w, char *ip, size_t len, tt_err *err);

/* Room for a member's published text (rt_link_text). */
#define RT_LINK_TEXT_MAX 160
/* Draws a fresh nonce into me and writes me (ip and port filled in) as published into text:
 * its length with the ending NUL, or 0 with err set. */
size_t rt_link_text(struct rt_link_peer *me, char *text, size_t cap, tt_err *err);
/* The same, published (ip and port filled in) under the store key
 * (already in the world's namespace). */
int rt_link_publish(const rt_world *w, const char *key, struct rt_link_peer *me, tt_err *err);
/* Reads member `name` (a rank, for messages) as published under key; waits until it is. */
int rt_link_lookup(const rt_world *w, const char *key, int name, struct rt_link_peer *p, tt_err *err);

/* One link: `tag` names the ring or world (domain separation), n its size, from dials to. */
struct rt_link {
	const char *tag;
	int n, from, to;
	const unsigned char *from_nonce, *to_nonce;
};

/* Dialer: sends its proof for l. */
int rt_link_offer(int fd, const char *key, const struct rt_link *l, double timeout, tt_err *err);
/* Dialer: reads the listener's answer and checks it; the message names `who` when it fails. */
int rt_link_check_answer(int fd, const char *key, const struct rt_link *l, const char *who, double timeout,
			 tt_err *err);

/* Listener: reads a dialer's proof (within the short handshake deadline), asks nonce_of for the
 * claimed dialer's nonce (it returns -1 for a member that may not dial here), checks the proof
 * against the link (tag, n, claimed from, to, nonces) and answers with its own. 0 with *from set;
 * -1 for anything else (a stranger, a forger, another job's stray rank), with nothing answered. */
int rt_link_accept(int fd, const char *key, const char *tag, int n, int to, const unsigned char *to_nonce,
		   int (*nonce_of)(void *ctx, int from, unsigned char nonce[RT_NONCE_LEN]), void *ctx,
		   double timeout, int *from);

#endif

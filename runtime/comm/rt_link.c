/* SPDX-License-Identifier: MIT */
/* rt_link.c — the mutually authenticated handshake of connections between ranks (see rt_link.h). */
#include "rt_link.h"
#include "rt_net.h"
#include "rt_store.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LINK_MAGIC 0x54524e48u
#define LINK_DIAL_ROLE "trainrt link: dialer proof v1"
#define LINK_ANSWER_ROLE "trainrt link: listener proof v1"
/* A dialer that has not proved itself by then is dropped (the real peer dials at once). */
#define LINK_HELLO_DEADLINE_S 5.0

/* What the dialer sends first, and the listener answers (from = the dialer). */
struct link_proof {
	uint32_t magic;
	int32_t from;
	unsigned char mac[RT_MAC_LEN];
};

/* What both proofs of a link cover. */
struct link_transcript {
	char tag[32];
	int32_t n, from, to;
	unsigned char from_nonce[RT_NONCE_LEN], to_nonce[RT_NONCE_LEN];
};

static int link_mac(const char *key, const char *role, const char *tag, int n, int from, const unsigned char *from_nonce,
		    int to, const unsigned char *to_nonce, unsigned char mac[RT_MAC_LEN], tt_err *err)
{
	struct link_transcript tr;

	memset(&tr, 0, sizeof(tr));
	snprintf(tr.tag, sizeof(tr.tag), "%s", tag);
	tr.n = n;
	tr.from = from;
	tr.to = to;
	memcpy(tr.from_nonce, from_nonce, RT_NONCE_LEN);
	memcpy(tr.to_nonce, to_nonce, RT_NONCE_LEN);
	return rt_token_mac(key, role, &tr, sizeof(tr), mac, err);
}

/* The address peers reach us at: the interface named by TRAINRT_SOCKET_IFNAME (or a plain
 * NCCL_SOCKET_IFNAME), else the one our store connection leaves from — unless that is loopback
 * only because MASTER_ADDR is a name this host maps to 127.0.1.1 (Debian's /etc/hosts), where
 * the first real interface is taken. */
int rt_link_address(const rt_world *w, char *ip, size_t len, tt_err *err)
{
	const char *ifn = getenv("TRAINRT_SOCKET_IFNAME");

	if (!ifn || !*ifn) {
		ifn = getenv("NCCL_SOCKET_IFNAME");
		if (ifn && ifn[0] == '^') /* exclusion lists are NCCL's business */
			ifn = NULL;
	}
	if (ifn && *ifn)
		return rt_net_iface_ip(ifn, ip, len, err);
	if (rt_store_open(w->store, err) != 0 || rt_net_local_ip(rt_store_fd(w->store), ip, len, err) != 0)
		return -1;
	if (strncmp(ip, "127.", 4) == 0 && w->master_is_name)
		return rt_net_iface_ip(NULL, ip, len, err);
	return 0;
}

size_t rt_link_text(struct rt_link_peer *me, char *text, size_t cap, tt_err *err)
{
	int n;

	if (rt_token_nonce(me->nonce, err) != 0)
		return 0;
	n = snprintf(text, cap, "%s %d ", me->ip, me->port);
	for (int i = 0; i < RT_NONCE_LEN && n >= 0 && (size_t)n < cap; i++)
		n += snprintf(text + n, cap - (size_t)n, "%02x", me->nonce[i]);
	if (n < 0 || (size_t)n >= cap) {
		tt_err_set(err, "the address '%s' is too long to publish", me->ip);
		return 0;
	}
	return (size_t)n + 1;
}

int rt_link_publish(const rt_world *w, const char *key, struct rt_link_peer *me, tt_err *err)
{
	char text[RT_LINK_TEXT_MAX];
	size_t len = rt_link_text(me, text, sizeof(text), err);

	return len == 0 ? -1 : rt_store_set(w->store, key, text, len, err);
}

int rt_link_lookup(const rt_world *w, const char *key, int name, struct rt_link_peer *p, tt_err *err)
{
	char text[RT_LINK_TEXT_MAX], hex[2 * RT_NONCE_LEN + 1];
	size_t len;

	if (rt_store_get(w->store, key, text, sizeof(text) - 1, &len, err) != 0)
		return -1;
	text[len < sizeof(text) ? len : sizeof(text) - 1] = '\0';
	if (sscanf(text, "%63s %d %64s", p->ip, &p->port, hex) != 3 || strlen(hex) != 2 * RT_NONCE_LEN)
		return tt_err_set(err, "malformed address '%s' published for rank %d", text, name);
	for (int i = 0; i < RT_NONCE_LEN; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return tt_err_set(err, "malformed nonce published for rank %d", name);
		p->nonce[i] = (unsigned char)v;
	}
	return 0;
}

int rt_link_offer(int fd, const char *key, const struct rt_link *l, double timeout, tt_err *err)
{
	struct link_proof p = { .magic = LINK_MAGIC, .from = l->from };

	if (link_mac(key, LINK_DIAL_ROLE, l->tag, l->n, l->from, l->from_nonce, l->to, l->to_nonce, p.mac, err) != 0)
		return -1;
	return rt_net_send_all(fd, &p, sizeof(p), timeout, err);
}

int rt_link_check_answer(int fd, const char *key, const struct rt_link *l, const char *who, double timeout,
			 tt_err *err)
{
	unsigned char want[RT_MAC_LEN];
	struct link_proof p;

	if (link_mac(key, LINK_ANSWER_ROLE, l->tag, l->n, l->from, l->from_nonce, l->to, l->to_nonce, want, err) != 0)
		return -1;
	if (rt_net_recv_all(fd, &p, sizeof(p), timeout, err) != 0)
		return tt_err_wrap(err, "waiting for %s to answer", who);
	if (p.magic != LINK_MAGIC || p.from != l->from || !rt_token_mac_equal(p.mac, want))
		return tt_err_set(err, "the process at %s failed to prove it holds this job's key: another process took "
				  "its place (it died and another user's process bound the port?)", who);
	return 0;
}

int rt_link_accept(int fd, const char *key, const char *tag, int n, int to, const unsigned char *to_nonce,
		   int (*nonce_of)(void *ctx, int from, unsigned char nonce[RT_NONCE_LEN]), void *ctx,
		   double timeout, int *from)
{
	unsigned char from_nonce[RT_NONCE_LEN], want[RT_MAC_LEN];
	struct link_proof p, mine;
	tt_err ignored;

	if (rt_net_recv_all(fd, &p, sizeof(p), LINK_HELLO_DEADLINE_S < timeout ? LINK_HELLO_DEADLINE_S : timeout,
			    &ignored) != 0 ||
	    p.magic != LINK_MAGIC || p.from < 0 || p.from >= n || p.from == to || nonce_of(ctx, p.from, from_nonce) != 0)
		return -1;
	if (link_mac(key, LINK_DIAL_ROLE, tag, n, p.from, from_nonce, to, to_nonce, want, &ignored) != 0 ||
	    !rt_token_mac_equal(p.mac, want))
		return -1;
	mine.magic = LINK_MAGIC;
	mine.from = p.from;
	if (link_mac(key, LINK_ANSWER_ROLE, tag, n, p.from, from_nonce, to, to_nonce, mine.mac, &ignored) != 0 ||
	    rt_net_send_all(fd, &mine, sizeof(mine), timeout, &ignored) != 0)
		return -1;
	*from = p.from;
	return 0;
}

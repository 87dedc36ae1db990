/* SPDX-License-Identifier: MIT */
/* rt_node.c — the rendezvous through node leaders (see rt_node.h): the node's socket, the
 * leader's loop over its followers and its store connection, and the follower. */
#include "rt_node.h"
#include "rt_net.h"
#include "rt_token.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#define NODE_ROLE "trainrt node socket v1"
#define HELLO_WAIT_S 1.0 /* a follower says its rank as soon as it is connected */

struct rt_node {
	int lfd;
	int node, first, size;
	int led; /* rt_node_lead or rt_node_refuse ran: the followers were told */
	int *peer; /* after a rendezvous that met: local rank l's connection, kept for rt_node_send/recv */
	char round[RT_STORE_MAX_KEY + 1];
};

/* The abstract socket name of node `node` in round of world (rt_node.h). */
static int node_address(const char *key, const char *world, const char *round, int node, struct sockaddr_un *a,
			socklen_t *alen, tt_err *err)
{
	char msg[2 * RT_STORE_MAX_KEY + 32];
	unsigned char mac[RT_MAC_LEN];
	int n;

	snprintf(msg, sizeof(msg), "%.255s\n%s\n%d", world, round, node);
	if (rt_token_mac(key, NODE_ROLE, msg, strlen(msg), mac, err) != 0)
		return -1;
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1, "trainrt-node-");
	for (int i = 0; i < 16; i++)
		n += snprintf(a->sun_path + 1 + n, sizeof(a->sun_path) - 1 - (size_t)n, "%02x", mac[i]);
	*alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	return 0;
}

/* Whether the process at the other end of fd runs as this user. */
static int same_user(int fd, uid_t *uid)
{
	struct ucred cred = { .uid = (uid_t)-1 };
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0)
		return 0;
	*uid = cred.uid;
	return cred.uid == geteuid();
}

rt_node *rt_node_listen(const char *key, const char *world, const char *round, int node, int first_rank, int local_size, tt_err *err)
{
	rt_node *n = calloc(1, sizeof(*n));
	struct sockaddr_un a;
	socklen_t alen;

	if (!n) {
		tt_err_set(err, "out of memory for the node leader");
		return NULL;
	}
	n->node = node;
	n->first = first_rank;
	n->size = local_size;
	n->peer = malloc((size_t)local_size * sizeof(*n->peer));
	if (!n->peer) {
		n->lfd = -1;
		tt_err_set(err, "out of memory for the node leader");
		goto fail;
	}
	for (int l = 0; l < local_size; l++)
		n->peer[l] = -1;
	snprintf(n->round, sizeof(n->round), "%s", round);
	n->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (n->lfd < 0) {
		tt_err_errno(err, "node leader (rank %d): cannot create its Unix socket", first_rank);
		goto fail;
	}
	if (node_address(key, world, round, node, &a, &alen, err) != 0)
		goto fail;
	if (bind(n->lfd, (struct sockaddr *)&a, alen) != 0) {
		if (errno == EADDRINUSE)
			tt_err_set(err, "node leader (rank %d): the socket of node %d for rendezvous '%s' is taken: another "
				   "LOCAL_RANK 0 of this job step runs on this node (was it launched twice?)", first_rank,
				   node, round);
		else
			tt_err_errno(err, "node leader (rank %d): cannot bind its Unix socket", first_rank);
		goto fail;
	}
	if (listen(n->lfd, local_size + 16) != 0) {
		tt_err_errno(err, "node leader (rank %d): cannot listen on its Unix socket", first_rank);
		goto fail;
	}
	return n;
fail:
	rt_node_close(n);
	return NULL;
}

void rt_node_close(rt_node *n)
{
	if (!n)
		return;
	if (n->lfd >= 0)
		close(n->lfd);
	for (int l = 0; n->peer && l < n->size; l++)
		if (n->peer[l] >= 0)
			close(n->peer[l]);
	free(n->peer);
	free(n);
}

/* Sends the verdict to a follower (which may be gone: nothing to do then). */
static void tell(int fd, int ok, const char *line)
{
	struct rt_node_verdict v = { .ok = (uint32_t)ok, .len = ok ? 0 : (uint32_t)strlen(line) };
	tt_err ignored;

	if (rt_net_send_all(fd, &v, sizeof(v), 1.0, &ignored) == 0)
		rt_net_send_all(fd, line, v.len, 1.0, &ignored);
}

/* The leader's view of its node during a rendezvous. */
struct gather {
	rt_node *n;
	rt_store *st;
	struct pollfd *p; /* [0] the listener, [1] the store, [1 + l] local rank l's connection */
	unsigned char *arrived, *sent; /* per local rank */
	int joined;		       /* the first update went to the store */
	double timeout, start;
};

/* Sends the store what changed since the last update: arrivals, or a rank that left or came twice. */
static int update(struct gather *g, uint32_t event, int who, tt_err *err)
{
	struct rt_store_join_node j = { .first_rank = (uint32_t)g->n->first, .count = (uint32_t)g->n->size,
					.event = event, .who = (uint32_t)who, .timeout_s = g->timeout };
	unsigned char *bits = calloc(((size_t)g->n->size + 7) / 8, 1);
	int rc;

	if (!bits)
		return tt_err_set(err, "out of memory");
	for (int l = 0; l < g->n->size && event == RT_NODE_ARRIVED; l++)
		if (g->arrived[l] && !g->sent[l]) {
			bits[l / 8] |= (unsigned char)(1u << (l % 8));
			g->sent[l] = 1;
		}
	rc = rt_store_join_node(g->st, g->n->round, &j, bits, err);
	free(bits);
	g->joined = 1;
	return rc;
}

/* A connection on the node's socket: a follower of this user saying its rank. Returns the rank
 * when it is new, -1 for a connection that was turned away, -2 - rank for one that came twice. */
static int admit(struct gather *g, int fd)
{
	struct rt_node_hello h;
	char line[RT_STORE_MAX_KEY + 256];
	tt_err err;
	uid_t uid;
	int l;

	if (!same_user(fd, &uid) || rt_net_recv_all(fd, &h, sizeof(h), HELLO_WAIT_S, &err) != 0 ||
	    h.magic != RT_NODE_MAGIC) {
		close(fd); /* another user's process, or not a trainrt rank: it learns nothing */
		return -1;
	}
	l = (int)h.rank - g->n->first;
	if (l <= 0 || l >= g->n->size) {
		snprintf(line, sizeof(line), "rank %u reached the leader of node %d, whose ranks are %d-%d (check RANK, "
			 "LOCAL_RANK and LOCAL_WORLD_SIZE)", h.rank, g->n->node, g->n->first, g->n->first + g->n->size - 1);
		tell(fd, 0, line);
		close(fd);
		return -1;
	}
	if (g->arrived[l]) {
		snprintf(line, sizeof(line), "rendezvous '%s': rank %u arrived twice (was RANK %u launched twice?)",
			 g->n->round, h.rank, h.rank);
		tell(fd, 0, line);
		close(fd);
		return -2 - (int)h.rank;
	}
	g->arrived[l] = 1;
	g->p[1 + l] = (struct pollfd){ .fd = fd, .events = POLLIN };
	return (int)h.rank;
}

/* Every connection waiting on the listener. Returns the event to report (ARRIVED when none but
 * arrivals) and its rank in *who. */
static uint32_t accept_all(struct gather *g, int *who)
{
	uint32_t event = RT_NODE_ARRIVED;
	int fd, r;

	while ((fd = accept4(g->p[0].fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
		if ((r = admit(g, fd)) <= -2 && event == RT_NODE_ARRIVED) {
			event = RT_NODE_TWICE;
			*who = -2 - r;
		}
	return event;
}

static int complete(const struct gather *g)
{
	for (int l = 0; l < g->n->size; l++)
		if (!g->arrived[l])
			return 0;
	return 1;
}

static int unsent(const struct gather *g)
{
	for (int l = 0; l < g->n->size; l++)
		if (g->arrived[l] && !g->sent[l])
			return 1;
	return 0;
}

/* The loop until the store's verdict: 0 with it in *ok and err, -1 when the leader failed. */
static int gather_loop(struct gather *g, int *ok, tt_err *err)
{
	double gather = g->timeout / 4 < RT_NODE_GATHER_S ? g->timeout / 4 : RT_NODE_GATHER_S;
	double start = g->start, gather_end = start + gather, verdict_by = 0;
	int np = 1 + g->n->size;

	for (;;) {
		double now = rt_now(), until;
		uint32_t event = RT_NODE_ARRIVED;
		int who = -1, n;

		if ((g->joined ? unsent(g) : complete(g) || now >= gather_end) && update(g, RT_NODE_ARRIVED, -1, err) != 0)
			return -1;
		if (g->joined && verdict_by == 0)
			verdict_by = now + g->timeout + 2 * RT_STORE_JOIN_GRACE_S;
		until = g->joined ? verdict_by : gather_end;
		if (now >= until)
			return tt_err_set(err, "rendezvous '%s': the store gave node %d's leader (rank %d) no verdict within "
					  "%.0f s (TRAINRT_TIMEOUT)", g->n->round, g->n->node, g->n->first, until - start);
		g->p[1].fd = g->joined ? rt_store_fd(g->st) : -1;
		n = poll(g->p, (nfds_t)np, (int)ceil((until - now) * 1000.0));
		if (n < 0 && errno != EINTR)
			return tt_err_errno(err, "node leader (rank %d): poll", g->n->first);
		if (n <= 0)
			continue;
		if (g->p[1].fd >= 0 && g->p[1].revents) {
			*ok = rt_store_verdict(g->st, g->n->round, err) == 0;
			return 0;
		}
		if (g->p[0].revents & POLLIN)
			event = accept_all(g, &who);
		for (int l = 1; l < g->n->size && event == RT_NODE_ARRIVED; l++) {
			char c;

			/* A follower sends nothing after its hello: input or a hang-up means it left. */
			if (g->p[1 + l].fd < 0 || !g->p[1 + l].revents ||
			    recv(g->p[1 + l].fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) < 0)
				continue;
			close(g->p[1 + l].fd);
			g->p[1 + l].fd = -1;
			event = RT_NODE_LEFT;
			who = g->n->first + l;
		}
		if (event != RT_NODE_ARRIVED &&
		    ((!g->joined && update(g, RT_NODE_ARRIVED, -1, err) != 0) || update(g, event, who, err) != 0))
			return -1;
	}
}

/* Hands the verdict to every follower connected, and closes them, or after a rendezvous that met
 * keeps them for the node's later exchanges. */
static void tell_all(struct gather *g, int ok, const char *line)
{
	for (int l = 1; l < g->n->size; l++)
		if (g->p[1 + l].fd >= 0) {
			tell(g->p[1 + l].fd, ok, line);
			if (ok)
				g->n->peer[l] = g->p[1 + l].fd;
			else
				close(g->p[1 + l].fd);
			g->p[1 + l].fd = -1;
		}
}

/* A failed rendezvous: the node's ranks that come after the verdict get it too, as a late rank
 * gets it from the store, until all came or the leader's timeout (from its start) ran out. */
static void linger(struct gather *g, const char *line)
{
	double until = g->start + g->timeout;
	int who;

	for (double now = rt_now(); !complete(g) && now < until; now = rt_now()) {
		if (poll(g->p, 1, (int)ceil((until - now) * 1000.0)) <= 0)
			continue;
		accept_all(g, &who);
		tell_all(g, 0, line);
	}
}

/* The leader's poll set and per-rank state for its node (gather_free frees them). */
static int gather_alloc(struct gather *g, tt_err *err)
{
	rt_node *n = g->n;

	g->p = calloc((size_t)n->size + 1, sizeof(*g->p));
	g->arrived = calloc((size_t)n->size, 1);
	g->sent = calloc((size_t)n->size, 1);
	if (!g->p || !g->arrived || !g->sent)
		return tt_err_set(err, "out of memory for the node leader");
	g->p[0] = (struct pollfd){ .fd = n->lfd, .events = POLLIN };
	for (int l = 0; l < n->size; l++)
		g->p[1 + l] = (struct pollfd){ .fd = -1, .events = POLLIN };
	g->arrived[0] = 1;
	return 0;
}

static void gather_free(struct gather *g)
{
	free(g->p);
	free(g->arrived);
	free(g->sent);
}

int rt_node_lead(rt_node *n, rt_store *st, double timeout_s, tt_err *err)
{
	struct gather g = { .n = n, .st = st, .timeout = timeout_s, .start = rt_now() };
	int ok = 0, rc = -1;

	n->led = 1;
	if (gather_alloc(&g, err) != 0)
		goto out;
	if (gather_loop(&g, &ok, err) == 0)
		rc = ok ? 0 : -1;
	/* The leader's own failure is news to its ranks too: the same line. */
	tell_all(&g, rc == 0, err->msg);
	if (rc != 0)
		linger(&g, err->msg);
out:
	gather_free(&g);
	return rc;
}

void rt_node_refuse(rt_node *n, const char *line, double timeout_s)
{
	struct gather g = { .n = n, .timeout = timeout_s, .start = rt_now() };
	tt_err err;

	if (n->led)
		return;
	n->led = 1;
	if (gather_alloc(&g, &err) == 0)
		linger(&g, line);
	gather_free(&g);
}

int rt_node_follow_start(const char *key, const char *world, const char *round, int node, int rank, int leader_rank, double timeout_s,
			 rt_node_gone_fn gone, void *ctx, int *fd, tt_err *err)
{
	struct rt_node_hello h = { .magic = RT_NODE_MAGIC, .rank = (uint32_t)rank };
	double start = rt_now(), deadline = start + timeout_s, probe = start + RT_NODE_LEADER_WAIT_S;
	struct sockaddr_un a;
	socklen_t alen;
	int backoff_ms = 10;
	uid_t uid = (uid_t)-1;

	*fd = -1;
	if (node_address(key, world, round, node, &a, &alen, err) != 0)
		return -1;
	for (;;) {
		*fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (*fd < 0)
			return tt_err_errno(err, "rank %d: cannot create a Unix socket for its node leader", rank);
		if (connect(*fd, (struct sockaddr *)&a, alen) == 0)
			break;
		close(*fd);
		*fd = -1;
		if (errno != ECONNREFUSED && errno != ENOENT && errno != EAGAIN && errno != EINTR)
			return tt_err_errno(err, "rank %d: cannot connect to its node leader, rank %d", rank, leader_rank);
		if (rt_now() >= deadline)
			return tt_err_set(err, "rendezvous '%s': rank %d found no node leader (rank %d, LOCAL_RANK 0) listening "
					  "within %.0f s (not started, or failed before it; TRAINRT_TIMEOUT)", round, rank,
					  leader_rank, timeout_s);
		if (gone && rt_now() >= probe) {
			if (gone(ctx))
				return tt_err_set(err, "rendezvous '%s': rank %d's node leader, rank %d (LOCAL_RANK 0), no longer runs on "
						  "this node and never listened: it exited or crashed before its start (its own "
						  "output says why); fix that and relaunch", round, rank, leader_rank);
			probe = rt_now() + 1.0;
		}
		usleep((useconds_t)backoff_ms * 1000);
		backoff_ms = backoff_ms * 2 > 200 ? 200 : backoff_ms * 2;
	}
	if (!same_user(*fd, &uid)) {
		close(*fd);
		*fd = -1;
		return tt_err_set(err, "rendezvous '%s': the socket of rank %d's node leader is held by uid %u, not this "
				  "user: another user's process squatting it; nothing was sent", round, rank, (unsigned)uid);
	}
	if (rt_net_send_all(*fd, &h, sizeof(h), timeout_s, err) != 0) {
		close(*fd);
		*fd = -1;
		return tt_err_wrap(err, "rank %d, saying its rank to its node leader (rank %d)", rank, leader_rank);
	}
	return 0;
}

int rt_node_follow_verdict(int fd, const char *round, int leader_rank, double timeout_s, int keep, tt_err *err)
{
	/* The leader waits for the store up to its timeout and grace after it joined. */
	double wait = timeout_s + RT_NODE_GATHER_S + 3 * RT_STORE_JOIN_GRACE_S;
	struct rt_node_verdict v;
	char line[RT_STORE_MAX_REASON + 512];
	int rc = -1;

	if (rt_net_recv_all(fd, &v, sizeof(v), wait, err) != 0) {
		tt_err_set(err, "rendezvous '%s': this node's leader, rank %d (LOCAL_RANK 0), closed its connection "
			   "before the verdict (crashed or killed?): the store names this node's ranks to the others",
			   round, leader_rank);
	} else if (v.ok) {
		rc = 0;
	} else if (v.len >= sizeof(line) || rt_net_recv_all(fd, line, v.len, 1.0, err) != 0) {
		tt_err_set(err, "rendezvous '%s': malformed verdict from this node's leader, rank %d", round, leader_rank);
	} else {
		line[v.len] = '\0';
		tt_err_set(err, "%s", line);
	}
	if (rc != 0 || !keep)
		close(fd);
	return rc;
}

int rt_node_follow(const char *key, const char *world, const char *round, int node, int rank, int leader_rank, double timeout_s,
		   rt_node_gone_fn gone, void *ctx, tt_err *err)
{
	int fd;

	if (rt_node_follow_start(key, world, round, node, rank, leader_rank, timeout_s, gone, ctx, &fd, err) != 0)
		return -1;
	return rt_node_follow_verdict(fd, round, leader_rank, timeout_s, 0, err);
}

int rt_node_peer(const rt_node *n, int local_rank)
{
	return n->peer[local_rank];
}

/* A frame's length word: the length in the low bits, the type (enum rt_node_frame) above them. */
#define FRAME_TYPE_SHIFT 30
#define FRAME_LEN_MASK ((1u << FRAME_TYPE_SHIFT) - 1)

int rt_node_send_frame(int fd, int type, const void *buf, size_t len, double timeout_s, tt_err *err)
{
	unsigned char msg[sizeof(uint32_t) + RT_NODE_NOTE_MAX];
	uint32_t n = (uint32_t)len | (uint32_t)type << FRAME_TYPE_SHIFT;

	if (len > RT_STORE_MAX_VAL || (type != RT_NODE_DATA && len > RT_NODE_NOTE_MAX))
		return tt_err_set(err, "a node message of %zu bytes is over its limit", len);
	if (type == RT_NODE_DATA)
		return rt_net_send_all(fd, &n, sizeof(n), timeout_s, err) != 0 || rt_net_send_all(fd, buf, len, timeout_s, err) != 0
		       ? -1 : 0;
	/* A note goes in one write, so the receiver's peek at its length word finds it whole. */
	memcpy(msg, &n, sizeof(n));
	if (len)
		memcpy(msg + sizeof(n), buf, len);
	return rt_net_send_all(fd, msg, sizeof(n) + len, timeout_s, err);
}

int rt_node_send(int fd, const void *buf, size_t len, double timeout_s, tt_err *err)
{
	return rt_node_send_frame(fd, RT_NODE_DATA, buf, len, timeout_s, err);
}

/* Waits up to timeout_s for the next frame's length word on fd and copies it into *n, leaving it
 * in the socket: 0, or -1 as rt_net_recv_all (the peer closed, or nothing came). */
static int peek_word(int fd, uint32_t *n, double timeout_s, tt_err *err)
{
	double deadline = rt_now() + timeout_s;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		double left = deadline - rt_now();
		ssize_t k;
		int r;

		if (left <= 0)
			return tt_err_set(err, "nothing arrived from the peer for %.0f s (link down, host dead, or the peer hangs; "
					  "TRAINRT_TIMEOUT)", timeout_s);
		r = poll(&p, 1, (int)ceil(left * 1000.0));
		if (r < 0 && errno != EINTR)
			return tt_err_errno(err, "poll on a node connection");
		if (r <= 0)
			continue;
		k = recv(fd, n, sizeof(*n), MSG_PEEK | MSG_DONTWAIT);
		if (k == (ssize_t)sizeof(*n))
			return 0;
		if (k == 0)
			return tt_err_set(err, "peer closed the connection (it died or failed; see its log)");
		if (k < 0 && errno != EAGAIN && errno != EINTR)
			return tt_err_errno(err, "receiving from peer (it probably died)");
		usleep(1000); /* part of the word: the rest is on its way */
	}
}

int rt_node_recv_frame(int fd, int *type, void *buf, size_t cap, size_t *len, double timeout_s, tt_err *err)
{
	uint32_t n;

	if (rt_net_recv_all(fd, &n, sizeof(n), timeout_s, err) != 0)
		return -1;
	*type = (int)(n >> FRAME_TYPE_SHIFT);
	n &= FRAME_LEN_MASK;
	if (n > cap)
		return tt_err_set(err, "a node message of %u bytes where at most %zu were expected", n, cap);
	if (rt_net_recv_all(fd, buf, n, timeout_s, err) != 0)
		return -1;
	*len = n;
	return 0;
}

int rt_node_recv(int fd, void *buf, size_t cap, size_t *len, double timeout_s, tt_err *err)
{
	uint32_t n;
	int type;

	/* A note (the other end's set-up ended) stays for the agreement that reads it. */
	if (peek_word(fd, &n, timeout_s, err) != 0)
		return -1;
	if (n >> FRAME_TYPE_SHIFT != RT_NODE_DATA)
		return tt_err_set(err, "%s", RT_NODE_ENDED);
	return rt_node_recv_frame(fd, &type, buf, cap, len, timeout_s, err);
}

/* The next note on fd, skipping data frames left over from an exchange one end gave up. */
int rt_node_recv_note(int fd, int *type, char *buf, size_t cap, double timeout_s, tt_err *err)
{
	double deadline = rt_now() + timeout_s;
	char skip[4096];
	size_t len;

	for (;;) {
		double left = deadline - rt_now();
		uint32_t n;

		if (left <= 0 || peek_word(fd, &n, left, err) != 0)
			return left <= 0 ? tt_err_set(err, "no word from the node's other end within %.0f s (TRAINRT_TIMEOUT)", timeout_s)
					 : -1;
		if (n >> FRAME_TYPE_SHIFT == RT_NODE_DATA) {
			if (rt_net_recv_all(fd, &n, sizeof(n), left, err) != 0)
				return -1;
			for (; n > 0; n -= (uint32_t)len) {
				len = n < sizeof(skip) ? n : sizeof(skip);
				if (rt_net_recv_all(fd, skip, len, left, err) != 0)
					return -1;
			}
			continue;
		}
		if (rt_node_recv_frame(fd, type, buf, cap - 1, &len, left, err) != 0)
			return -1;
		buf[len] = '\0';
		return 0;
	}
}

int rt_node_barrier(const rt_node *n, rt_store *st, const char *round, double timeout_s, tt_err *err)
{
	struct rt_store_join_node j = { .first_rank = (uint32_t)n->first, .count = (uint32_t)n->size,
					.event = RT_NODE_ARRIVED, .who = 0, .timeout_s = timeout_s };
	size_t nbits = ((size_t)n->size + 7) / 8;
	unsigned char *bits = calloc(nbits, 1);
	int rc;

	if (!bits)
		return tt_err_set(err, "out of memory");
	for (int l = 0; l < n->size; l++)
		if (l == 0 || n->peer[l] >= 0)
			bits[l / 8] |= (unsigned char)(1u << (l % 8));
	rc = rt_store_join_node(st, round, &j, bits, err) == 0 ? rt_store_verdict(st, round, err) : -1;
	free(bits);
	return rc;
}

int rt_node_goodbyes(const rt_node *n, double timeout_s)
{
	double until = rt_now() + timeout_s;
	struct pollfd p[n->size];
	int open = 0;

	for (int l = 1; l < n->size; l++)
		if (n->peer[l] >= 0)
			p[open++] = (struct pollfd){ .fd = n->peer[l], .events = POLLIN };
	while (open > 0) {
		double now = rt_now();

		if (now >= until)
			return -1;
		if (poll(p, (nfds_t)open, (int)ceil((until - now) * 1000.0)) < 0 && errno != EINTR)
			return -1;
		for (int i = open - 1; i >= 0; i--) {
			char c;
			ssize_t r = p[i].revents ? recv(p[i].fd, &c, 1, MSG_DONTWAIT) : -1;

			if (r == 0 || (r < 0 && p[i].revents && errno != EAGAIN && errno != EINTR))
				p[i] = p[--open]; /* closed: that follower said goodbye */
		}
	}
	return 0;
}

void rt_node_whom_init(struct rt_node_whom *w, int rank, int leader_rank)
{
	static const char *const names[] = { "MASTER_ADDR", "MASTER_PORT", "SLURM_JOB_ID", "SLURM_STEP_ID" };

	memset(w, 0, sizeof(*w));
	snprintf(w->want[w->n++], sizeof(w->want[0]), "RANK=%d", leader_rank);
	snprintf(w->mine, sizeof(w->mine), "RANK=%d", rank);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (getenv(names[i]))
			snprintf(w->want[w->n++], sizeof(w->want[0]), "%s=%.300s", names[i], getenv(names[i]));
}

int rt_node_env_has(const char *env, size_t len, const struct rt_node_whom *w, const char *mine)
{
	for (int i = 0; i < w->n; i++) {
		const char *want = i == 0 && mine ? mine : w->want[i];
		size_t wl = strlen(want);
		int found = 0;

		for (size_t at = 0; at < len && !found; at += strnlen(env + at, len - at) + 1)
			found = strnlen(env + at, len - at) == wl && memcmp(env + at, want, wl) == 0;
		if (!found)
			return 0;
	}
	return 1;
}

/* /proc/PID/environ (pid "self" or digits) of a process of this user into buf (cap bytes; a
 * longer one is cut): its length, or -1 when it cannot be read (another user's, gone). */
static ssize_t read_environ(const char *pid, char *buf, size_t cap)
{
	char path[64];
	struct stat st;
	size_t len = 0;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%s", pid);
	if (stat(path, &st) != 0 || st.st_uid != geteuid())
		return -1;
	snprintf(path, sizeof(path), "/proc/%s/environ", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	while (len < cap && ((r = read(fd, buf + len, cap - len)) > 0 || (r < 0 && errno == EINTR)))
		len += r > 0 ? (size_t)r : 0;
	close(fd);
	return (ssize_t)len;
}

int rt_node_leader_gone(void *ctx)
{
	const struct rt_node_whom *w = ctx;
	size_t cap = 1 << 20;
	char *buf = malloc(cap), self[24];
	struct dirent *e;
	ssize_t len;
	DIR *d = NULL;
	int gone = 0;

	if (!buf || getppid() <= 1 || (len = read_environ("self", buf, cap)) < 0 ||
	    !rt_node_env_has(buf, (size_t)len, w, w->mine) || !(d = opendir("/proc")))
		goto out; /* nobody can tell */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	gone = 1;
	while (gone && (e = readdir(d)))
		if (isdigit((unsigned char)e->d_name[0]) && strcmp(e->d_name, self) != 0 &&
		    (len = read_environ(e->d_name, buf, cap)) > 0 && rt_node_env_has(buf, (size_t)len, w, NULL))
			gone = 0;
out:
	if (d)
		closedir(d);
	free(buf);
	return gone;
}

void rt_node_up_line(char *out, size_t cap, int64_t ngone, int shown, const char *const *gone, int64_t nerrors,
		     const char *first)
{
	size_t n;

	if (ngone == 0) {
		snprintf(out, cap, "the backend's set-up failed: %s%s", first,
			 nerrors > 1 ? " (and other ranks reported problems too)" : "");
		return;
	}
	if (ngone == 1) {
		snprintf(out, cap, "the backend's set-up failed: %s ended during it (crashed or killed? its own output says "
			 "why); fix that and relaunch", gone[0]);
		return;
	}
	n = (size_t)snprintf(out, cap, "the backend's set-up failed: %lld ranks ended during it (crashed or killed? their "
			     "own output says why; fix that and relaunch):", (long long)ngone);
	for (int i = 0; i < shown && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%s %s", i ? ";" : "", gone[i]);
	if (ngone > shown && n < cap)
		snprintf(out + n, cap - n, "; and %lld more", (long long)(ngone - shown));
}

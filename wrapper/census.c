/* SPDX-License-Identifier: MIT */
/* census.c — the one exchange of worker counts between the nodes of a launch (see census.h). */
#include "census.h"
#include "tt_io.h"
#include "tt_parse.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define MAGIC "traintopo-census 1"

/* ---- the lines ------------------------------------------------------------------------------ */

int tt_census_hello(const struct tt_census *c, char *buf, size_t len)
{
	int n = snprintf(buf, len, MAGIC " %s %" PRIu32 " %" PRIu32 " %" PRIu32 "\n", c->id,
			 c->nnodes, c->node, c->count);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int tt_census_accept(const struct tt_census *c, const char *line, uint32_t *per_node,
		     unsigned char *seen, tt_err *err)
{
	char id[256];
	uint32_t nnodes, node, count;
	int used = 0;

	if (strncmp(line, MAGIC " ", sizeof(MAGIC)) != 0 ||
	    sscanf(line + sizeof(MAGIC), "%255s %" SCNu32 " %" SCNu32 " %" SCNu32 "%n", id, &nnodes,
		   &node, &count, &used) != 4 || (line[sizeof(MAGIC) + used] != '\n' &&
						  line[sizeof(MAGIC) + used] != '\0')) {
		tt_err_set(err, "a connection that is not a train-run of this launch");
		return 1;
	}
	if (strcmp(id, c->id) != 0) {
		tt_err_set(err, "a train-run of another launch (%s, this one is %s)", id, c->id);
		return 1;
	}
	if (nnodes != c->nnodes)
		return tt_err_set(err, "node %" PRIu32 " counts %" PRIu32 " nodes, node 0 counts %"
				  PRIu32, node, nnodes, c->nnodes);
	if (node == 0 || node >= c->nnodes)
		return tt_err_set(err, "a node says it is node %" PRIu32 ", outside 1..%" PRIu32, node,
				  c->nnodes - 1);
	if (seen[node])
		return tt_err_set(err, "two train-runs say they are node %" PRIu32
				  " (more than one task of the step on a node?)", node);
	if (count == 0)
		return tt_err_set(err, "node %" PRIu32 " runs no worker", node);
	seen[node] = 1;
	per_node[node] = count;
	return 0;
}

int tt_census_answer(const uint32_t *per_node, uint32_t nnodes, char *buf, size_t len)
{
	size_t used = 0;
	int n = snprintf(buf, len, "ok ");

	if (n < 0 || (size_t)n >= len)
		return -1;
	used = (size_t)n;
	for (uint32_t k = 0; k < nnodes; k++) {
		n = snprintf(buf + used, len - used, "%s%" PRIu32, k ? "," : "", per_node[k]);
		if (n < 0 || (size_t)n >= len - used)
			return -1;
		used += (size_t)n;
	}
	if (used + 2 > len)
		return -1;
	memcpy(buf + used, "\n", 2);
	return 0;
}

int tt_census_read_answer(const char *line, uint32_t nnodes, uint32_t *per_node, tt_err *err)
{
	const char *p = line + 3;

	if (strncmp(line, "error ", 6) == 0)
		return tt_err_set(err, "node 0 refused: %.*s", (int)strcspn(line + 6, "\n"), line + 6);
	if (strncmp(line, "ok ", 3) != 0)
		goto bad;
	for (uint32_t k = 0; k < nnodes; k++) {
		size_t len = strcspn(p, ",\n");
		long long v;

		if (tt_parse_int_span(p, len, 1, UINT32_MAX, &v) != 0 ||
		    p[len] != (k + 1 < nnodes ? ',' : '\n'))
			goto bad;
		per_node[k] = (uint32_t)v;
		p += len + 1;
	}
	return 0;
bad:
	return tt_err_set(err, "node 0 answered something that is not a list of %" PRIu32
			  " worker counts", nnodes);
}

/* ---- the sockets ---------------------------------------------------------------------------- */

static int left_ms(long deadline)
{
	long left = deadline - tt_now_ms();

	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* Appends what fd has to line (len used); 1 once a '\n' arrived, 0 for more, -1 on EOF/error or
 * an over-long line. */
static int read_line(int fd, char *line, size_t *len)
{
	ssize_t n = recv(fd, line + *len, TT_CENSUS_LINE - 1 - *len, 0);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return -1;
	*len += (size_t)n;
	line[*len] = '\0';
	if (memchr(line, '\n', *len))
		return 1;
	return *len >= TT_CENSUS_LINE - 1 ? -1 : 0;
}

/* A listening socket on port, every address (IPv6 with IPv4 mapped, else IPv4). */
static int listen_on(uint16_t port, int backlog, tt_err *err)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = htons(port),
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	int one = 1, zero = 0;
	int fd = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd >= 0) {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(fd, backlog) == 0)
			return fd;
		close(fd);
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return tt_err_errno(err, "node count exchange: socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0 || listen(fd, backlog) != 0) {
		tt_err_errno(err, "node count exchange: cannot listen on port %u (MASTER_PORT) on "
			     "node 0", port);
		close(fd);
		return -1;
	}
	return fd;
}

struct peer {
	int fd;
	size_t len;
	char *line;
	int done;	/* its hello was accepted */
};

static void drop_peer(struct peer *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
	p->len = 0;
}

/* Node 0: collects every other node's hello, answers them all, waits for them to close. */
static int serve(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	size_t npeers = c->nnodes - 1, i;
	struct peer *peers = calloc(npeers, sizeof(*peers));
	unsigned char *seen = calloc(c->nnodes, 1);
	struct pollfd *pfd = calloc(npeers + 1, sizeof(*pfd));
	long deadline = tt_now_ms() + c->timeout_s * 1000L;
	uint32_t heard = 0;
	char *answer = malloc(TT_CENSUS_LINE);
	int lfd = -1, rc = -1, failed = 0;

	if (!peers || !seen || !pfd || !answer) {
		tt_err_set(err, "node count exchange: out of memory for %zu nodes", npeers + 1);
		goto out;
	}
	for (i = 0; i < npeers; i++)
		peers[i].fd = -1;
	lfd = listen_on(c->port, (int)(npeers < 4096 ? npeers : 4096), err);
	if (lfd < 0)
		goto out;
	per_node[0] = c->count;
	seen[0] = 1;
	while (heard < npeers && !failed) {
		size_t n = 0;
		int ready;

		pfd[n++] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		for (i = 0; i < npeers; i++)
			if (peers[i].fd >= 0 && !peers[i].done)
				pfd[n++] = (struct pollfd){ .fd = peers[i].fd, .events = POLLIN };
		if (left_ms(deadline) == 0) {
			tt_err_set(err, "node count exchange: heard from %" PRIu32 " of the %" PRIu32
				   " other nodes within %d s: did train-run start on every node of the "
				   "step?", heard, c->nnodes - 1, c->timeout_s);
			goto out;
		}
		ready = poll(pfd, n, left_ms(deadline));
		if (ready < 0 && errno != EINTR) {
			tt_err_errno(err, "node count exchange: poll");
			goto out;
		}
		if (ready <= 0)
			continue;
		if (pfd[0].revents) {
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

			for (i = 0; fd >= 0 && i < npeers && peers[i].fd >= 0; i++)
				;
			if (fd >= 0 && i == npeers)
				close(fd);	/* more connections than nodes: a stranger */
			else if (fd >= 0) {
				peers[i].fd = fd;
				peers[i].line = peers[i].line ? peers[i].line : malloc(TT_CENSUS_LINE);
				if (!peers[i].line)
					drop_peer(&peers[i]);
			}
		}
		for (i = 0; i < npeers; i++) {
			tt_err why;
			int got;

			if (peers[i].fd < 0 || peers[i].done)
				continue;
			got = read_line(peers[i].fd, peers[i].line, &peers[i].len);
			if (got < 0) {
				drop_peer(&peers[i]);
				continue;
			}
			if (got == 0)
				continue;
			got = tt_census_accept(c, peers[i].line, per_node, seen, &why);
			if (got != 0) {
				/* Strangers (1) are turned away; a node of this launch that
				 * disagrees (-1) fails the launch on every node. */
				char msg[sizeof(why.msg) + 8];

				snprintf(msg, sizeof(msg), "error %s\n", why.msg);
				(void)tt_write_all(peers[i].fd, msg, strlen(msg), true);
				drop_peer(&peers[i]);
				if (got < 0) {
					tt_err_set(err, "node count exchange: %s", why.msg);
					failed = 1;
				}
				continue;
			}
			peers[i].done = 1;
			heard++;
		}
	}
	/* Every node has been heard: stop listening before anyone is answered. An answered node
	 * starts its workers at once, and a worker's store client dialling MASTER_PORT while this
	 * socket still listened would land in its queue and be reset when it closes: a fatal
	 * "closed the connection without answering the hello". Refused, it retries until rank 0's
	 * store listens. */
	close(lfd);
	lfd = -1;
	if (failed) {
		char msg[sizeof(err->msg) + 8];

		snprintf(msg, sizeof(msg), "error %s\n", err->msg);
		for (i = 0; i < npeers; i++)
			if (peers[i].fd >= 0)
				(void)tt_write_all(peers[i].fd, msg, strlen(msg), true);
	} else if (tt_census_answer(per_node, c->nnodes, answer, TT_CENSUS_LINE) != 0) {
		tt_err_set(err, "node count exchange: %" PRIu32 " nodes' counts do not fit in one "
			   "line", c->nnodes);
		failed = 1;
	} else {
		for (i = 0; i < npeers; i++)
			if (tt_write_all(peers[i].fd, answer, strlen(answer), true) != 0) {
				tt_err_set(err, "node count exchange: a node hung up before the answer");
				failed = 1;
			}
	}
	/* The clients close first: wait for their end of file (bounded), then close ours. */
	deadline = tt_now_ms() + 10000;
	for (i = 0; i < npeers; i++) {
		struct pollfd p = { .fd = peers[i].fd, .events = POLLIN };
		char sink[64];

		while (peers[i].fd >= 0 && poll(&p, 1, left_ms(deadline)) > 0 &&
		       recv(peers[i].fd, sink, sizeof(sink), 0) > 0)
			;
	}
	rc = failed ? -1 : 0;
out:
	if (lfd >= 0)
		close(lfd);
	for (i = 0; peers && i < npeers; i++) {
		drop_peer(&peers[i]);
		free(peers[i].line);
	}
	free(peers);
	free(seen);
	free(pfd);
	free(answer);
	return rc;
}

/* One attempt to connect to any address of node 0 before the deadline; -1 when none answers. */
static int connect_once(const struct addrinfo *ai, long deadline)
{
	for (; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		struct pollfd p;
		int soerr = 0;
		socklen_t len = sizeof(soerr);

		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			return fd;
		p = (struct pollfd){ .fd = fd, .events = POLLOUT };
		if (errno == EINPROGRESS && poll(&p, 1, left_ms(deadline)) == 1 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 && soerr == 0)
			return fd;
		close(fd);
	}
	return -1;
}

/* Other nodes: connect (retrying while node 0 is not listening yet), say hello, read the answer. */
static int ask(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	long deadline = tt_now_ms() + c->timeout_s * 1000L;
	char port[8], hello[512], *line = malloc(TT_CENSUS_LINE);
	size_t len = 0;
	int fd = -1, rc = -1, got = 0, gai;

	if (!line)
		return tt_err_set(err, "node count exchange: out of memory");
	snprintf(port, sizeof(port), "%u", c->port);
	gai = getaddrinfo(c->server, port, &hints, &ai);
	if (gai != 0) {
		tt_err_set(err, "node count exchange: cannot resolve node 0 '%s': %s", c->server,
			   gai_strerror(gai));
		goto out;
	}
	while ((fd = connect_once(ai, deadline)) < 0 && left_ms(deadline) > 0)
		poll(NULL, 0, 100);	/* node 0 is not listening yet: nothing to wait on but time */
	if (fd < 0) {
		tt_err_set(err, "node count exchange: node 0 (%s port %u) did not answer within %d s: "
			   "did train-run start there?", c->server, c->port, c->timeout_s);
		goto out;
	}
	if (tt_census_hello(c, hello, sizeof(hello)) != 0 || tt_write_all(fd, hello, strlen(hello), true) != 0) {
		tt_err_errno(err, "node count exchange: sending to node 0 (%s port %u)", c->server,
			     c->port);
		goto out;
	}
	while (got == 0) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (left_ms(deadline) == 0 || poll(&p, 1, left_ms(deadline)) == 0) {
			tt_err_set(err, "node count exchange: node 0 (%s port %u) did not send every "
				   "node's count within %d s", c->server, c->port, c->timeout_s);
			goto out;
		}
		got = read_line(fd, line, &len);
	}
	if (got < 0) {
		tt_err_set(err, "node count exchange: node 0 (%s port %u) hung up without an answer "
			   "(another program on that port?)", c->server, c->port);
		goto out;
	}
	rc = tt_census_read_answer(line, c->nnodes, per_node, err);
out:
	if (fd >= 0)
		close(fd);	/* first, so node 0's end of the port is not left in TIME_WAIT */
	if (ai)
		freeaddrinfo(ai);
	free(line);
	return rc;
}

int tt_census_run(const struct tt_census *c, uint32_t *per_node, tt_err *err)
{
	if (c->nnodes <= 1) {
		per_node[0] = c->count;
		return 0;
	}
	return c->node == 0 ? serve(c, per_node, err) : ask(c, per_node, err);
}

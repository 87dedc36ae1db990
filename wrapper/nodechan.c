/* SPDX-License-Identifier: MIT */
/* nodechan.c — the authenticated node channel of train-run (see nodechan.h). The key and the
 * HMACs are rt_token.c's, compiled into train-run as they are into libtrainrt; the body's
 * digest is OpenSSL's SHA-256. */
#include "nodechan.h"
#include "tt_io.h"

#include <errno.h>
#include <netdb.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#define HELLO TT_NC_MAGIC " hello "
#define CHALLENGE "challenge "
#define MSG "msg "
#define ROLE_CLIENT "traintopo nodechan client v1"
#define ROLE_SERVER "traintopo nodechan server v1"

/* ---- the lines ------------------------------------------------------------------------------ */

static int unhex(const char *p, size_t n, unsigned char *out)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;

		for (int j = 0; j < 2; j++) {
			char c = p[2 * i + j];

			if (c >= '0' && c <= '9')
				v = v * 16 + (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				v = v * 16 + (unsigned)(c - 'a' + 10);
			else
				return -1;
		}
		out[i] = (unsigned char)v;
	}
	return 0;
}

static void hex(const unsigned char *in, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int printable(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] < 0x20 || s[i] > 0x7e)
			return 0;
	return 1;
}

int tt_nc_parse(const char *line, size_t len, struct tt_nc_line *out, tt_err *err)
{
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!printable(line, len))
		return tt_err_set(err, "a line with a byte that is not printable ASCII");
	if (len >= sizeof(HELLO) - 1 && memcmp(line, HELLO, sizeof(HELLO) - 1) == 0) {
		const char *id = line + sizeof(HELLO) - 1;
		const char *sp = memchr(id, ' ', len - (size_t)(id - line));

		n = sp ? (size_t)(sp - id) : 0;
		if (n == 0 || n >= TT_NC_ID_MAX)
			return tt_err_set(err, "a hello without a launch id of 1..%d bytes", TT_NC_ID_MAX - 1);
		if ((size_t)(line + len - (sp + 1)) != 2 * RT_NONCE_LEN ||
		    unhex(sp + 1, RT_NONCE_LEN, out->nonce) != 0)
			return tt_err_set(err, "a hello without a %d-digit nonce", 2 * RT_NONCE_LEN);
		memcpy(out->id, id, n);
		out->kind = TT_NC_HELLO;
		return 0;
	}
	if (len >= sizeof(CHALLENGE) - 1 && memcmp(line, CHALLENGE, sizeof(CHALLENGE) - 1) == 0) {
		if (len != sizeof(CHALLENGE) - 1 + 2 * RT_NONCE_LEN ||
		    unhex(line + sizeof(CHALLENGE) - 1, RT_NONCE_LEN, out->nonce) != 0)
			return tt_err_set(err, "a challenge without a %d-digit nonce", 2 * RT_NONCE_LEN);
		out->kind = TT_NC_CHALLENGE;
		return 0;
	}
	if (len >= sizeof(MSG) - 1 && memcmp(line, MSG, sizeof(MSG) - 1) == 0) {
		const char *mac = line + sizeof(MSG) - 1;

		n = len - (sizeof(MSG) - 1);
		if (n < 2 * RT_MAC_LEN + 2 || mac[2 * RT_MAC_LEN] != ' ' ||
		    unhex(mac, RT_MAC_LEN, out->mac) != 0)
			return tt_err_set(err, "a message without a %d-digit proof and a body", 2 * RT_MAC_LEN);
		out->body = mac + 2 * RT_MAC_LEN + 1;
		out->body_len = n - 2 * RT_MAC_LEN - 1;
		if (out->body_len > TT_NC_BODY_MAX)
			return tt_err_set(err, "a message body longer than %d bytes", TT_NC_BODY_MAX);
		out->kind = TT_NC_MSG;
		return 0;
	}
	return tt_err_set(err, "a line that is not of the train-run node channel");
}

int tt_nc_mac(const char *key, int server, const char *id, const unsigned char nc[RT_NONCE_LEN],
	      const unsigned char ns[RT_NONCE_LEN], const char *body, size_t body_len,
	      unsigned char mac[RT_MAC_LEN], tt_err *err)
{
	unsigned char t[TT_NC_ID_MAX + 2 * RT_NONCE_LEN + 32];
	size_t idlen = strlen(id) + 1, used;
	unsigned int dlen = 0;

	if (idlen > TT_NC_ID_MAX)
		return tt_err_set(err, "internal error: a launch id of %zu bytes", idlen - 1);
	memcpy(t, id, idlen);
	memcpy(t + idlen, nc, RT_NONCE_LEN);
	memcpy(t + idlen + RT_NONCE_LEN, ns, RT_NONCE_LEN);
	used = idlen + 2 * RT_NONCE_LEN;
	if (EVP_Digest(body, body_len, t + used, &dlen, EVP_sha256(), NULL) != 1 || dlen != 32)
		return tt_err_set(err, "cannot compute a SHA-256 digest (OpenSSL failed)");
	return rt_token_mac(key, server ? ROLE_SERVER : ROLE_CLIENT, t, used + 32, mac, err);
}

int tt_nc_format_msg(char *buf, const char *key, int server, const char *id,
		     const unsigned char nc[RT_NONCE_LEN], const unsigned char ns[RT_NONCE_LEN],
		     const char *body, tt_err *err)
{
	size_t len = strlen(body);
	unsigned char mac[RT_MAC_LEN];

	if (len > TT_NC_BODY_MAX || !printable(body, len))
		return tt_err_set(err, "internal error: a node channel message of %zu bytes that is "
				  "not one printable line", len);
	if (tt_nc_mac(key, server, id, nc, ns, body, len, mac, err) != 0)
		return -1;
	memcpy(buf, MSG, sizeof(MSG) - 1);
	hex(mac, RT_MAC_LEN, buf + sizeof(MSG) - 1);
	buf[sizeof(MSG) - 1 + 2 * RT_MAC_LEN] = ' ';
	memcpy(buf + sizeof(MSG) + 2 * RT_MAC_LEN, body, len);
	memcpy(buf + sizeof(MSG) + 2 * RT_MAC_LEN + len, "\n", 2);
	return 0;
}

/* Appends what fd has to buf (*len used); 1 once a whole line is there, 0 for more, -1 on a
 * hang-up, an error or an over-long line. */
static int read_more(int fd, char *buf, size_t *len)
{
	ssize_t n = recv(fd, buf + *len, TT_NC_LINE - 1 - *len, 0);

	if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0)
		return -1;
	*len += (size_t)n;
	if (memchr(buf + *len - (size_t)n, '\n', (size_t)n))
		return 1;
	return *len >= TT_NC_LINE - 1 ? -1 : 0;
}

/* The first line of buf (len bytes, one '\n' in it), then what follows it moved to the front. */
static int take_line(char *buf, size_t *len, struct tt_nc_line *l, char *copy, tt_err *err)
{
	char *nl = memchr(buf, '\n', *len);
	size_t n = (size_t)(nl - buf);

	memcpy(copy, buf, n);
	copy[n] = '\0';
	memmove(buf, nl + 1, *len - n - 1);
	*len -= n + 1;
	return tt_nc_parse(copy, n, l, err);
}

/* ---- node 0's side -------------------------------------------------------------------------- */

int tt_nc_conn_open(struct tt_nc_conn *k, int fd, tt_err *err)
{
	if (!k->buf)
		k->buf = malloc(2 * TT_NC_LINE);	/* the line as read, and its parsed copy */
	if (!k->buf)
		return tt_err_set(err, "node channel: out of memory for a connection");
	k->fd = fd;
	k->state = TT_NC_WAIT_HELLO;
	k->deadline = tt_now_ms() + TT_NC_PROVE_MS;
	k->len = 0;
	k->body = NULL;
	return 0;
}

int tt_nc_conn_read(struct tt_nc_conn *k, const char *key, const char *id, tt_err *err)
{
	struct tt_nc_line l;
	char *copy = k->buf + TT_NC_LINE, line[16 + 2 * RT_NONCE_LEN];
	unsigned char want[RT_MAC_LEN];
	int got;

	if (k->state == TT_NC_PROVEN) {
		char sink[1];
		ssize_t n = recv(k->fd, sink, sizeof(sink), MSG_PEEK);

		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		return tt_err_set(err, n == 0 ? "hung up" : "said more than its one message");
	}
	got = read_more(k->fd, k->buf, &k->len);
	if (got <= 0)
		return got < 0 ? tt_err_set(err, "hung up or sent an over-long line before proving "
					    "it holds the job key") : 0;
	if (take_line(k->buf, &k->len, &l, copy, err) != 0)
		return -1;
	if (k->state == TT_NC_WAIT_HELLO) {
		if (l.kind != TT_NC_HELLO || k->len != 0)
			return tt_err_set(err, "did not start with a hello");
		if (strcmp(l.id, id) != 0)
			return tt_err_set(err, "a train-run of another launch (%s; this one is %s)", l.id, id);
		memcpy(k->nc, l.nonce, RT_NONCE_LEN);
		if (rt_token_nonce(k->ns, err) != 0)
			return -1;
		memcpy(line, CHALLENGE, sizeof(CHALLENGE) - 1);
		hex(k->ns, RT_NONCE_LEN, line + sizeof(CHALLENGE) - 1);
		strcat(line, "\n");
		/* A few dozen bytes into an empty socket buffer: never blocks. */
		if (tt_write_all(k->fd, line, strlen(line), true) != 0)
			return tt_err_errno(err, "hung up before the challenge");
		k->state = TT_NC_WAIT_PROOF;
		return 0;
	}
	if (l.kind != TT_NC_MSG || k->len != 0)
		return tt_err_set(err, "did not answer the challenge with one message");
	if (tt_nc_mac(key, 0, id, k->nc, k->ns, l.body, l.body_len, want, err) != 0)
		return -1;
	if (!rt_token_mac_equal(want, l.mac))
		return tt_err_set(err, "failed to prove it holds this job's key");
	memmove(k->buf, l.body, l.body_len);
	k->buf[l.body_len] = '\0';
	k->body = k->buf;
	k->state = TT_NC_PROVEN;
	return 1;
}

int tt_nc_conn_send(struct tt_nc_conn *k, const char *key, const char *id, const char *body,
		    tt_err *err)
{
	char *line = k->buf + TT_NC_LINE;

	if (k->state != TT_NC_PROVEN)
		return tt_err_set(err, "internal error: answering an unproven connection");
	if (tt_nc_format_msg(line, key, 1, id, k->nc, k->ns, body, err) != 0)
		return -1;
	if (tt_write_all(k->fd, line, strlen(line), true) != 0)
		return tt_err_errno(err, "hung up before the answer");
	return 0;
}

void tt_nc_conn_close(struct tt_nc_conn *k)
{
	if (k->fd >= 0)
		close(k->fd);
	k->fd = -1;
	k->len = 0;
	k->body = NULL;
}

int tt_nc_listen(uint16_t port, int backlog, const char *what, tt_err *err)
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
		return tt_err_errno(err, "%s: socket", what);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a4, sizeof(a4)) != 0 || listen(fd, backlog) != 0) {
		tt_err_errno(err, "%s: cannot listen on port %u on node 0", what, port);
		close(fd);
		return -1;
	}
	return fd;
}

uint16_t tt_nc_port(int fd)
{
	struct sockaddr_storage a;
	socklen_t len = sizeof(a);

	if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
		return 0;
	if (a.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&a)->sin6_port);
	if (a.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&a)->sin_port);
	return 0;
}

struct tt_nc_conn *tt_nc_free_slot(struct tt_nc_conn *conns, size_t n)
{
	struct tt_nc_conn *oldest = NULL;

	for (size_t i = 0; i < n; i++) {
		if (conns[i].fd < 0)
			return &conns[i];
		if (conns[i].state != TT_NC_PROVEN && (!oldest || conns[i].deadline < oldest->deadline))
			oldest = &conns[i];
	}
	if (oldest)
		tt_nc_conn_close(oldest);
	return oldest;
}

/* ---- the other nodes' side ------------------------------------------------------------------ */

static int left_ms(long deadline)
{
	long left = deadline - tt_now_ms();

	return left < 0 ? 0 : left > 1000000 ? 1000000 : (int)left;
}

/* One attempt to connect to each address of node 0, each bounded by TT_NC_CONNECT_MS and the
 * deadline: a connection whose SYN gets no answer (lost, or dropped by a full accept queue) is
 * otherwise left to the kernel's SYN retransmits, 1, 3, 7, 15 and 31 s after it, and a node 0
 * that listens from second 16 of a refusing node's 30 is never reached; the next attempt is a
 * fresh socket, from a fresh source port.
 * -1 with why (the last address's failure, as the kernel said it) when none is connected. */
static int connect_once(const struct addrinfo *ai, long deadline, tt_err *why)
{
	for (; ai; ai = ai->ai_next) {
		long until = tt_now_ms() + TT_NC_CONNECT_MS;
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
				ai->ai_protocol);
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		int soerr = 0, got;
		socklen_t len = sizeof(soerr);

		if (fd < 0) {
			tt_err_errno(why, "cannot make a socket");
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			return fd;
		if (errno != EINPROGRESS) {
			soerr = errno;
		} else {
			got = poll(&p, 1, left_ms(until < deadline ? until : deadline));
			if (got == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &len) == 0 &&
			    soerr == 0)
				return fd;
			if (got == 0) {
				close(fd);
				tt_err_set(why, "no answer to a connection within %d ms",
					   TT_NC_CONNECT_MS);
				continue;
			}
			if (got < 0)
				soerr = errno;
		}
		close(fd);
		if (soerr == ECONNREFUSED)
			tt_err_set(why, "connection refused: nothing listens there yet");
		else
			tt_err_set(why, "cannot connect: %s", strerror(soerr));
	}
	return -1;
}

int tt_nc_stopped(const sigset_t *stop)
{
	sigset_t pending;

	if (!stop || sigpending(&pending) != 0)
		return 0;
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(stop, sig) == 1 && sigismember(&pending, sig) == 1)
			return 1;
	return 0;
}

/* Waits up to ms for fd (-1: none) to be readable, looking at the pending signals every 200 ms;
 * 1 when one of stop's is pending, else 0. */
static int wait_for(int fd, const sigset_t *stop, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	for (;;) {
		int slice = stop && ms > 200 ? 200 : ms;

		if (tt_nc_stopped(stop))
			return 1;
		if (poll(&p, 1, slice) != 0 || slice == ms)
			return 0;
		ms -= slice;
	}
}

/* Reads one line from cl's fd before deadline into l (buf: 2 * TT_NC_LINE bytes). */
static int read_line(const struct tt_nc_client *cl, char *buf, struct tt_nc_line *l, long deadline,
		     tt_err *err)
{
	size_t len = 0;
	int got = 0;

	while (got == 0) {
		if (left_ms(deadline) == 0)
			return tt_err_set(err, "no answer in time");
		if (wait_for(cl->fd, cl->stop, left_ms(deadline)))
			return tt_err_set(err, "stopped by a signal");
		got = read_more(cl->fd, buf, &len);
	}
	if (got < 0)
		return tt_err_set(err, "hung up");
	if (take_line(buf, &len, l, buf + TT_NC_LINE, err) != 0)
		return -1;
	return len == 0 ? 0 : tt_err_set(err, "said more than one line");
}

/* One connection's hello, challenge and proven message: 0, or -1 with err (the caller retries). */
static int say_once(struct tt_nc_client *cl, const char *key, const char *id, const char *body,
		    long deadline, char *buf, tt_err *err)
{
	struct tt_nc_line l;
	int n;

	if (rt_token_nonce(cl->nc, err) != 0)
		return -1;
	n = snprintf(buf, TT_NC_LINE, HELLO "%s ", id);
	hex(cl->nc, RT_NONCE_LEN, buf + n);
	strcat(buf, "\n");
	if (tt_write_all(cl->fd, buf, strlen(buf), true) != 0)
		return tt_err_errno(err, "hung up at the hello");
	/* The challenge comes within TT_NC_PROVE_MS or the listener is no node 0 of ours. */
	if (read_line(cl, buf, &l, deadline < tt_now_ms() + TT_NC_PROVE_MS ? deadline :
		      tt_now_ms() + TT_NC_PROVE_MS, err) != 0)
		return tt_err_wrap(err, "waiting for the challenge");
	if (l.kind != TT_NC_CHALLENGE)
		return tt_err_set(err, "answered the hello with something other than a challenge");
	memcpy(cl->ns, l.nonce, RT_NONCE_LEN);
	if (tt_nc_format_msg(buf, key, 0, id, cl->nc, cl->ns, body, err) != 0)
		return -1;
	if (tt_write_all(cl->fd, buf, strlen(buf), true) != 0)
		return tt_err_errno(err, "hung up before our message");
	return 0;
}

int tt_nc_client_say(struct tt_nc_client *cl, const char *host, uint16_t port, const char *key,
		     const char *id, const char *body, long deadline, long notice_ms,
		     void (*waiting)(void *arg, long seconds_left), void *arg, tt_err *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai = NULL;
	char sport[8], *buf = malloc(2 * TT_NC_LINE);
	long notice = tt_now_ms() + notice_ms;
	tt_err why;
	int gai, rc = -1;
	unsigned tries = 0;

	cl->fd = -1;
	why.msg[0] = '\0';
	if (!buf)
		return tt_err_set(err, "node channel: out of memory");
	snprintf(sport, sizeof(sport), "%u", port);
	gai = getaddrinfo(host, sport, &hints, &ai);
	if (gai != 0) {
		tt_err_set(err, "cannot resolve node 0's host '%s': %s", host, gai_strerror(gai));
		goto out;
	}
	for (;;) {
		tries++;
		cl->fd = connect_once(ai, deadline, &why);
		if (cl->fd >= 0 && say_once(cl, key, id, body, deadline, buf, &why) == 0) {
			rc = 0;
			break;
		}
		tt_nc_client_close(cl);
		if (left_ms(deadline) == 0) {
			tt_err_set(err, "node 0 (%s port %u) did not take our message in time (%u "
				   "attempt%s; last: %s)", host, port, tries, tries == 1 ? "" : "s",
				   why.msg);
			break;
		}
		if (waiting && notice_ms > 0 && tt_now_ms() >= notice) {
			waiting(arg, left_ms(deadline) / 1000);
			notice = tt_now_ms() + notice_ms;
		}
		/* Node 0 is not listening yet: nothing to wait on but time, or a signal. */
		if (wait_for(-1, cl->stop, 100)) {
			tt_err_set(err, "stopped by a signal while waiting for node 0 (%s port %u)", host, port);
			break;
		}
	}
out:
	if (ai)
		freeaddrinfo(ai);
	free(buf);
	return rc;
}

int tt_nc_client_hear(struct tt_nc_client *cl, const char *key, const char *id, char *body,
		      long deadline, tt_err *err)
{
	char *buf = malloc(2 * TT_NC_LINE);
	unsigned char want[RT_MAC_LEN];
	struct tt_nc_line l;
	int rc = -1;

	if (!buf)
		return tt_err_set(err, "node channel: out of memory");
	if (read_line(cl, buf, &l, deadline, err) != 0)
		goto out;
	if (l.kind != TT_NC_MSG) {
		tt_err_set(err, "answered with something other than a message");
		goto out;
	}
	if (tt_nc_mac(key, 1, id, cl->nc, cl->ns, l.body, l.body_len, want, err) != 0)
		goto out;
	if (!rt_token_mac_equal(want, l.mac)) {
		tt_err_set(err, "answered without proving it holds this job's key");
		goto out;
	}
	memcpy(body, l.body, l.body_len);
	body[l.body_len] = '\0';
	rc = 0;
out:
	free(buf);
	return rc;
}

void tt_nc_client_close(struct tt_nc_client *cl)
{
	if (cl->fd >= 0)
		close(cl->fd);	/* first, so node 0's end of the port is not left in TIME_WAIT */
	cl->fd = -1;
}

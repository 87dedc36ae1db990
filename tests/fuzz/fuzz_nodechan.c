/* SPDX-License-Identifier: MIT */
/* fuzz_nodechan.c — the node channel's and the census's parsers (wrapper/nodechan.c, census.c)
 * under libFuzzer. The input is, at once:
 *  - lines for tt_nc_parse: a parsed line's fields lie inside it (a message's body is the line's
 *    tail, a hello's id is one non-empty token);
 *  - a census body and a census answer: what parses is well-formed (a host is one token, a
 *    node count and an answer agree, the preflight words read back the same once written);
 *  - a control plane message (ctl.h): what parses formats back to a message that parses the
 *    same; as a line of a connection it never checks out, since it does not hold the key;
 *  - the byte stream a stranger sends to node 0's side of a connection (tt_nc_conn_read over a
 *    socketpair; the first line, then the rest after node 0's answer): whatever it sends, it is
 *    never proven, since it does not hold the key. */
#include "census.h"
#include "ctl.h"
#include "nodechan.h"

#include "fuzz_util.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void lines(const char *text, size_t size)
{
	const char *p = text, *end = text + size;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct tt_nc_line l;
		tt_err err;

		if (tt_nc_parse(p, len, &l, &err) == 0) {
			FUZZ_CHECK(l.kind == TT_NC_HELLO || l.kind == TT_NC_CHALLENGE || l.kind == TT_NC_MSG);
			if (l.kind == TT_NC_MSG)
				FUZZ_CHECK(l.body >= p && l.body + l.body_len == p + len);
			if (l.kind == TT_NC_HELLO)
				FUZZ_CHECK(l.id[0] && !strchr(l.id, ' ') && strlen(l.id) < TT_NC_ID_MAX);
		} else {
			FUZZ_CHECK(err.msg[0] != '\0');
		}
		p += len + 1;
	}
}

static void census(const char *text)
{
	const struct tt_census c = { .id = "1.2", .key = "k", .nnodes = 4, .count = 1, .host = "n0" };
	struct tt_census_said s;
	uint32_t per_node[4] = { 1, 0, 0, 0 };
	unsigned char seen[4] = { 1, 0, 0, 0 };
	char hosts[4][TT_CENSUS_HOST] = { "" };
	struct tt_census_swap swap;
	uint16_t port = 0;
	tt_err err;

	if (tt_census_parse(text, &s, &err) == 0) {
		struct tt_preflight again;
		char words[TT_PF_FAIL + 64];

		FUZZ_CHECK(s.host[0] && !strchr(s.host, ' '));
		/* The preflight words parsed say the same when written again. */
		FUZZ_CHECK(tt_preflight_format(&s.pf, words, sizeof(words)) == 0 &&
			   tt_preflight_parse(words, &again, &err) == 0 &&
			   again.mem_mbps == s.pf.mem_mbps && again.net_mbps == s.pf.net_mbps &&
			   again.rtt_us == s.pf.rtt_us && !strcmp(again.gpu_fail, s.pf.gpu_fail) &&
			   !strcmp(again.boot_id, s.pf.boot_id));
		if (tt_census_accept(&c, &s, per_node, seen, hosts, &err) == 0)
			FUZZ_CHECK(s.node > 0 && s.node < 4 && seen[s.node] && per_node[s.node] == s.count &&
				   s.count > 0 && !s.reason[0]);
	}
	if (tt_census_read_answer(text, 4, per_node, &port, &swap, &err) == 0) {
		for (int k = 0; k < 4; k++)
			FUZZ_CHECK(per_node[k] > 0 && (port > 0 || !strstr(text, " ctl ")));
		FUZZ_CHECK(!swap.node || (swap.node < 4 && swap.spare > 0 && swap.spare < 4 &&
					  swap.node != swap.spare && swap.host[0] && swap.line[0]));
	}
}

static void control(const char *data, size_t size)
{
	static const unsigned char nc[RT_NONCE_LEN], ns[RT_NONCE_LEN];
	struct tt_ctl_msg m, again;
	uint64_t seq, seq2;
	char body[TT_CTL_WHAT + TT_CTL_HOST + 64];
	tt_err err;

	if (tt_ctl_parse(data, size, &seq, &m, &err) == 0) {
		FUZZ_CHECK(seq > 0 && !strchr(m.host, ' '));
		FUZZ_CHECK(tt_ctl_format(&m, seq, body, sizeof(body)) == 0);
		FUZZ_CHECK(tt_ctl_parse(body, strlen(body), &seq2, &again, &err) == 0);
		FUZZ_CHECK(seq2 == seq && again.kind == m.kind && again.round == m.round &&
			   again.node == m.node && again.rank == m.rank &&
			   again.p50_us == m.p50_us && again.p99_us == m.p99_us &&
			   again.samples == m.samples && strcmp(again.host, m.host) == 0 && strcmp(again.what, m.what) == 0);
	}
	for (uint64_t want = 1; want < 3; want++)
		FUZZ_CHECK(tt_ctl_open("k", "1.2", nc, ns, (int)want - 1, want, data, size, &m, &err) != 0);
}

static void stranger(const uint8_t *data, size_t size)
{
	struct tt_nc_conn k = { .fd = -1 };
	int sv[2];
	tt_err err;

	if (size > 100000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return;
	/* Room in the socket buffers for the whole input. */
	{
		int big = 1 << 20;

		setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
		setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	}
	/* The first line, then (once node 0's side has answered it) the rest and end of file, as
	 * a stranger that waits for the challenge would send them. */
	{
		const uint8_t *nl = memchr(data, '\n', size);
		size_t first = nl ? (size_t)(nl - data) + 1 : size;
		int got = 0;

		fcntl(sv[0], F_SETFL, O_NONBLOCK);
		if (tt_nc_conn_open(&k, sv[0], &err) != 0 ||
		    write(sv[1], data, first) != (ssize_t)first) {
			close(sv[0]);
			goto out;
		}
		for (int i = 0; i < 1000 && got == 0 && k.state == TT_NC_WAIT_HELLO; i++)
			got = tt_nc_conn_read(&k, "fuzz:key", "1.2", &err);
		if (got == 0 && (size == first || write(sv[1], data + first, size - first) ==
				 (ssize_t)(size - first))) {
			shutdown(sv[1], SHUT_WR);
			for (int i = 0; i < 1000 && got == 0; i++)
				got = tt_nc_conn_read(&k, "fuzz:key", "1.2", &err);
		}
		FUZZ_CHECK(got != 1 && k.state != TT_NC_PROVEN);
		tt_nc_conn_close(&k);
	}
out:
	free(k.buf);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);

	lines((const char *)data, size);
	census(text);
	control((const char *)data, size);
	stranger(data, size);
	free(text);
	return 0;
}

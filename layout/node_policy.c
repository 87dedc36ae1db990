/* SPDX-License-Identifier: MIT */
/* node_policy.c — the topology probe's report: writer and strict parser (format in node_policy.h). */
#include "node_policy.h"
#include "tt_cpuset.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER "train-topo-probe 1"

void tt_node_policy_add_note(struct tt_node_policy *p, const char *note)
{
	if (p->nnotes < TT_NODE_MAX_NOTES)
		snprintf(p->notes[p->nnotes++], sizeof(p->notes[0]), "%s", note);
}

/* A value the report can carry as one word: printable, no space. */
static int is_word(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if ((unsigned char)*s <= ' ' || *s == 0x7f)
			return 0;
	return 1;
}

/* Text with every control character (newlines included) turned into a space. */
static void flatten(const char *in, char *out, size_t len)
{
	size_t i = 0;

	for (; *in && i + 1 < len; in++)
		out[i++] = ((unsigned char)*in < ' ' || *in == 0x7f) ? ' ' : *in;
	out[i] = '\0';
}

int tt_node_policy_format(const struct tt_node_policy *p, struct tt_strbuf *sb, tt_err *err)
{
	char list[CPU_SETSIZE * 6];	/* the longest list: every other CPU */
	char note[TT_NODE_NOTE_LEN];

	if ((p->socket_ifname[0] && !is_word(p->socket_ifname)) || (p->ib_hca[0] && !is_word(p->ib_hca)))
		return tt_err_set(err, "NCCL_SOCKET_IFNAME '%s' or NCCL_IB_HCA '%s' holds a space or a control "
				  "character", p->socket_ifname, p->ib_hca);
	if (p->ngpus < 0 || p->ngpus > TT_GPU_MAX)
		return tt_err_set(err, "%d GPUs: a report carries 0 to %d", p->ngpus, TT_GPU_MAX);
	tt_sb_printf(sb, HEADER "\n");
	if (p->socket_ifname[0])
		tt_sb_printf(sb, "nccl_socket_ifname %s\n", p->socket_ifname);
	if (p->ib_hca[0])
		tt_sb_printf(sb, "nccl_ib_hca %s\n", p->ib_hca);
	for (int i = 0; i < p->ngpus; i++) {
		if (tt_cpuset_to_list(&p->cpus[i], list, sizeof(list)) != 0)
			return tt_err_set(err, "the CPU list of GPU %d does not fit", i);
		tt_sb_printf(sb, "gpu %d %s\n", i, list);
	}
	for (int i = 0; i < p->nnotes && i < TT_NODE_PROBE_NOTES; i++) {
		flatten(p->notes[i], note, sizeof(note));
		if (note[0])
			tt_sb_printf(sb, "warning %s\n", note);
	}
	tt_sb_printf(sb, "end\n");
	if (tt_sb_failed(sb))
		return tt_err_set(err, "out of memory writing the topology probe report");
	return 0;
}

size_t tt_node_policy_format_error(const char *msg, char *buf, size_t len)
{
	const size_t frame = sizeof(HEADER "\nerror \n");	/* with the NUL */
	char text[sizeof(((tt_err *)0)->msg)];
	int n;

	if (len < frame + 1)
		return 0;
	flatten(msg && *msg ? msg : "failed without saying why", text, sizeof(text));
	n = snprintf(buf, len, HEADER "\nerror %.*s\n", (int)(len - frame), text);
	return n < 0 ? 0 : (size_t)n;
}

/* Copies a one-word value into dst (size len); -1 when it is not one or does not fit. */
static int word_into(const char *value, char *dst, size_t len)
{
	if (!is_word(value) || strlen(value) >= len)
		return -1;
	strcpy(dst, value);
	return 0;
}

/* One "gpu I LIST" value (after "gpu "): I must be the next index. */
static int parse_gpu(const char *value, struct tt_node_policy *p, int line, tt_err *err)
{
	const char *list = strchr(value, ' ');
	char want[16];
	tt_err why;

	snprintf(want, sizeof(want), "%d", p->ngpus);
	if (!list || (size_t)(list - value) != strlen(want) || strncmp(value, want, strlen(want)) != 0)
		return tt_err_set(err, "topology probe report line %d: 'gpu %.40s' is not GPU %d (GPUs are "
				  "numbered 0, 1, ... in order)", line, value, p->ngpus);
	if (p->ngpus == TT_GPU_MAX)
		return tt_err_set(err, "topology probe report line %d: more than %d GPUs", line, TT_GPU_MAX);
	if (tt_cpuset_from_list(list + 1, &p->cpus[p->ngpus], &why) != 0)
		return tt_err_set(err, "topology probe report line %d: GPU %d: %s", line, p->ngpus, why.msg);
	p->ngpus++;
	return 0;
}

/* Applies one line "name value" (name and value split at the first space). 0 to go on, 1 for
 * end, 2 for error (err holds the probe's message), -1 with err for a line that is wrong. */
static int parse_line(char *s, int line, struct tt_node_policy *p, int *seen_ifname, int *seen_hca,
		      tt_err *err)
{
	char *value = strchr(s, ' ');

	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			return tt_err_set(err, "topology probe report line %d: a control character", line);
	if (strcmp(s, "end") == 0)
		return 1;
	if (!value)
		return tt_err_set(err, "topology probe report line %d: '%.60s' is not 'name value'", line, s);
	*value++ = '\0';
	if (strcmp(s, "error") == 0) {
		tt_err_set(err, "%s", *value ? value : "the topology probe failed without saying why");
		return 2;
	}
	if (strcmp(s, "nccl_socket_ifname") == 0 || strcmp(s, "nccl_ib_hca") == 0) {
		int ifname = s[5] == 's';
		int *seen = ifname ? seen_ifname : seen_hca;

		if ((*seen)++)
			return tt_err_set(err, "topology probe report line %d: %s given twice", line, s);
		if (ifname ? word_into(value, p->socket_ifname, sizeof(p->socket_ifname))
			   : word_into(value, p->ib_hca, sizeof(p->ib_hca)))
			return tt_err_set(err, "topology probe report line %d: %s '%.80s' is empty, holds a "
					  "space or is too long", line, s, value);
		return 0;
	}
	if (strcmp(s, "gpu") == 0)
		return parse_gpu(value, p, line, err);
	if (strcmp(s, "warning") == 0) {
		if (p->nnotes == TT_NODE_PROBE_NOTES)
			return tt_err_set(err, "topology probe report line %d: more than %d warnings", line,
					  TT_NODE_PROBE_NOTES);
		if (!*value || strlen(value) >= TT_NODE_NOTE_LEN)
			return tt_err_set(err, "topology probe report line %d: a warning of %zu characters "
					  "(1 to %d)", line, strlen(value), TT_NODE_NOTE_LEN - 1);
		tt_node_policy_add_note(p, value);
		return 0;
	}
	return tt_err_set(err, "topology probe report line %d: unknown name '%.40s' (nccl_socket_ifname, "
			  "nccl_ib_hca, gpu, warning, end, error)", line, s);
}

int tt_node_policy_parse(const char *text, size_t len, struct tt_node_policy *p, tt_err *err)
{
	int line = 1, seen_ifname = 0, seen_hca = 0, rc = -1;
	char *copy, *s, *nl;

	memset(p, 0, sizeof(*p));
	if (len == 0)
		return tt_err_set(err, "topology probe report is empty (the probe wrote nothing)");
	if (len > TT_NODE_REPORT_MAX || memchr(text, '\0', len))
		return tt_err_set(err, "topology probe report of %zu bytes is longer than %d or holds a NUL "
				  "byte", len, TT_NODE_REPORT_MAX);
	if (text[len - 1] != '\n')
		return tt_err_set(err, "topology probe report does not end with a complete line (the probe "
				  "stopped while writing?)");
	copy = malloc(len + 1);
	if (!copy)
		return tt_err_set(err, "out of memory reading the topology probe report");
	memcpy(copy, text, len);
	copy[len] = '\0';
	nl = strchr(copy, '\n');
	*nl = '\0';
	if (strcmp(copy, HEADER) != 0) {
		tt_err_set(err, "topology probe report line 1: '%.40s' is not '" HEADER "' (a probe of "
			   "another traintopo version?)", copy);
		goto out;
	}
	for (s = nl + 1; *s; s = nl + 1) {
		int r;

		line++;
		nl = strchr(s, '\n');
		*nl = '\0';
		r = parse_line(s, line, p, &seen_ifname, &seen_hca, err);
		if (r == 0)
			continue;
		if (r > 0 && nl[1])
			tt_err_set(err, "topology probe report line %d: more lines after the last ('end' or "
				   "'error')", line + 1);
		else if (r == 1)
			rc = 0;
		goto out;
	}
	tt_err_set(err, "topology probe report ends after line %d without 'end' or 'error' (the probe "
		   "stopped early?)", line);
out:
	free(copy);
	return rc;
}

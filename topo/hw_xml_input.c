/* SPDX-License-Identifier: MIT */
/* hw_xml_input.c — an hwloc XML export checked before it is loaded for real: hwloc 2.x cannot
 * import 3.x files and says only "cannot import"; it reads a CPU set word of fewer than 8 hex
 * digits as a whole 32-bit word (so a typo silently shifts CPUs between NUMA nodes); and libhwloc
 * 2.9 dies with SIGSEGV on some malformed files (`<!DOCTYPEo><topology>`), so a child process
 * parses the file first and a crash there becomes an error line. */
#include "hw_sources.h"

#include <errno.h>
#include <hwloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Exports of the biggest machines are a few MB; anything far beyond is not an export. */
#define TT_HWLOC_XML_MAX_BYTES (256L << 20)

static char *read_whole(const char *path, tt_err *err)
{
	FILE *f = fopen(path, "r");
	char *text = NULL;
	size_t used = 0, cap = 0;

	if (!f) {
		tt_err_errno(err, "cannot open hwloc XML '%s'", path);
		return NULL;
	}
	for (;;) {
		size_t got;

		if (used + 1 >= cap) {
			char *bigger = cap >= TT_HWLOC_XML_MAX_BYTES ? NULL : realloc(text, cap ? 2 * cap : 65536);

			if (!bigger && cap >= TT_HWLOC_XML_MAX_BYTES)
				tt_err_set(err, "hwloc XML '%s' is over %ld MiB: not an hwloc export", path,
					   TT_HWLOC_XML_MAX_BYTES >> 20);
			else if (!bigger)
				tt_err_set(err, "out of memory reading hwloc XML '%s'", path);
			if (!bigger)
				goto fail;
			text = bigger;
			cap = cap ? 2 * cap : 65536;
		}
		got = fread(text + used, 1, cap - used - 1, f);
		used += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) { /* a directory, for one */
		tt_err_errno(err, "cannot read hwloc XML '%s'", path);
		goto fail;
	}
	fclose(f);
	text[used] = '\0';
	return text;
fail:
	fclose(f);
	free(text);
	return NULL;
}

static int line_of(const char *text, const char *at)
{
	int line = 1;

	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

/* hwloc prints each 32-bit word of a set as "0x" and 8 hex digits, a zero word as "0x0" or as
 * nothing between two commas, and an infinite set with a leading "0xf...f". Returns NULL when
 * value is fine, else the bad word. */
static const char *bad_set_word(const char *value, size_t len, char *word, size_t wlen)
{
	for (size_t start = 0; start <= len;) {
		size_t end = start, digits = 0;

		while (end < len && value[end] != ',')
			end++;
		snprintf(word, wlen, "%.*s", (int)(end - start), value + start);
		if (strncmp(word, "0x", 2) == 0)
			digits = strspn(word + 2, "0123456789abcdefABCDEF");
		if (strcmp(word, "0x0") != 0 && !(start > 0 && !word[0]) &&
		    !(start == 0 && strcmp(word, "0xf...f") == 0) &&
		    (digits != 8 || word[10] != '\0'))
			return word;
		start = end + 1;
	}
	return NULL;
}

/* The value of attribute name inside the tag [tag, end), or NULL. */
static const char *attr_in(const char *tag, const char *end, const char *name, size_t *len)
{
	size_t n = strlen(name);

	for (const char *p = tag; p && p + n + 2 < end; p = strchr(p + 1, ' ')) {
		const char *q;

		if (p >= end)
			break;
		if (strncmp(p + 1, name, n) != 0 || p[1 + n] != '=' || p[2 + n] != '"')
			continue;
		p += 3 + n;
		q = memchr(p, '"', (size_t)(end - p));
		if (!q)
			return NULL;
		*len = (size_t)(q - p);
		return p;
	}
	return NULL;
}

static int check_sets(const char *path, const char *text, tt_err *err)
{
	static const char *const sets[] = { "cpuset", "complete_cpuset", "allowed_cpuset",
					    "nodeset", "complete_nodeset", "allowed_nodeset" };

	for (const char *tag = strstr(text, "<object "); tag; tag = strstr(tag + 1, "<object ")) {
		const char *end = strchr(tag, '>');

		if (!end)
			break;
		for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
			char word[64], type[32] = "?", os[16] = "?";
			const char *v, *t;
			size_t len, tlen;

			v = attr_in(tag, end, sets[s], &len);
			if (!v || !bad_set_word(v, len, word, sizeof(word)))
				continue;
			if ((t = attr_in(tag, end, "type", &tlen)))
				snprintf(type, sizeof(type), "%.*s", (int)tlen, t);
			if ((t = attr_in(tag, end, "os_index", &tlen)))
				snprintf(os, sizeof(os), "%.*s", (int)tlen, t);
			return tt_err_set(err, "hwloc XML '%s' line %d: object %s os_index=%s has %s word "
					  "'%s', not 8 hex digits (hwloc would read it as a whole 32-bit word): "
					  "fix the file or export it again with `lstopo --of xml`",
					  path, line_of(text, v), type, os, sets[s], word);
		}
	}
	return 0;
}

/* Loads the file with libhwloc in a child; 0 when it loads, -1 (err set) when it does not or
 * libhwloc crashes on it. The parent's load then cannot crash on the same bytes. */
static int child_loads(const char *path, tt_err *err)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return tt_err_errno(err, "cannot fork to check hwloc XML '%s'", path);
	if (pid == 0) {
		hwloc_topology_t t;
		int ok;

		/* Die by the signal itself, also under a sanitizer that would report and exit 1. */
		signal(SIGSEGV, SIG_DFL);
		signal(SIGBUS, SIG_DFL);
		signal(SIGABRT, SIG_DFL);
		ok = hwloc_topology_init(&t) == 0 && hwloc_topology_set_xml(t, path) == 0 &&
		     hwloc_topology_load(t) == 0;
		_exit(ok ? 0 : 1);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return tt_err_errno(err, "waiting for the check of hwloc XML '%s'", path);
	if (WIFSIGNALED(status))
		return tt_err_set(err, "hwloc XML '%s' crashes libhwloc (%s): the file is malformed; "
				  "export it again with `lstopo --of xml`", path, strsignal(WTERMSIG(status)));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return tt_err_set(err, "hwloc XML '%s' is malformed or not an hwloc 2.x topology: "
				  "check the file or export it again with `lstopo --of xml`", path);
	return 0;
}

int tt_hwloc_xml_check(const char *path, tt_err *err)
{
	char *text = read_whole(path, err);
	int rc = -1;

	if (!text)
		return -1;
	if (!text[0])
		tt_err_set(err, "hwloc XML '%s' is empty: export one with `lstopo --of xml FILE`", path);
	else if (strstr(text, "<topology version=\"3"))
		tt_err_set(err, "hwloc XML '%s' is in hwloc 3.x format, which hwloc 2.x cannot "
			   "import: export it again with hwloc 2.x (`lstopo --of xml`)", path);
	else if (check_sets(path, text, err) == 0)
		rc = child_loads(path, err);
	free(text);
	return rc;
}

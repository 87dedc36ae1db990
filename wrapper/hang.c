/* SPDX-License-Identifier: MIT */
/* hang.c — /proc reads and the clock for hang detection (see hang.h). */
#include "hang.h"

#include <stdio.h>
#include <string.h>

char tt_hang_proc_state(pid_t pid)
{
	char path[64], buf[512], *paren;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "PID (COMM) S ...": COMM may hold spaces and parentheses, the state follows the last ')'. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] ? paren[2] : '?';
}

void tt_hang_kernel_stack(pid_t pid, char *out, size_t len)
{
	char path[64], line[256];
	size_t used = 0;
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/stack", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	/* Lines are "[<0>] do_signal_stop+0x1b3/0x1f0": keep the function name. */
	while (fgets(line, sizeof(line), f) && used + 1 < len) {
		char *fn = strstr(line, "] ");
		size_t flen;
		int n;

		if (!fn)
			continue;
		fn += 2;
		flen = strcspn(fn, "+\n");
		n = snprintf(out + used, len - used, "%s%.*s", used ? " < " : "", (int)flen, fn);
		if (n < 0)
			break;
		used = used + (size_t)n < len ? used + (size_t)n : len - 1;
	}
	fclose(f);
}

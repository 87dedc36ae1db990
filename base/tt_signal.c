/* SPDX-License-Identifier: MIT */
/* tt_signal.c — the signal table (see tt_signal.h). */
#include "tt_signal.h"

#include <stddef.h>
#include <stdio.h>
#include <strings.h>

enum {
	CHECKPOINT = 1,		/* a user may name it as the checkpoint signal */
	TERMINATION = 2,	/* ends the group: forwarded, then SIGKILL after the grace period */
	WHOLE_GROUP = 4,	/* always to the worker's whole process group */
};

static const struct {
	const char *name;
	int signo;
	unsigned flags;
} table[] = {
	{ "USR1", SIGUSR1, CHECKPOINT },
	{ "USR2", SIGUSR2, CHECKPOINT },
	{ "HUP", SIGHUP, CHECKPOINT | TERMINATION | WHOLE_GROUP },
	{ "INT", SIGINT, CHECKPOINT | TERMINATION | WHOLE_GROUP },
	{ "TERM", SIGTERM, CHECKPOINT | TERMINATION | WHOLE_GROUP },
	{ "URG", SIGURG, CHECKPOINT },
	{ "QUIT", SIGQUIT, TERMINATION | WHOLE_GROUP },
	{ "CONT", SIGCONT, WHOLE_GROUP },
	{ "ALRM", SIGALRM, 0 },
	{ "XCPU", SIGXCPU, 0 },
};

#define NSIGNALS (sizeof(table) / sizeof(table[0]))

static unsigned flags_of(int signo)
{
	for (size_t i = 0; i < NSIGNALS; i++)
		if (table[i].signo == signo)
			return table[i].flags | 0x100;	/* 0x100: in the table at all */
	return 0;
}

int tt_signal_by_name(const char *name)
{
	const char *bare = strncasecmp(name, "SIG", 3) == 0 ? name + 3 : name;

	for (size_t i = 0; i < NSIGNALS; i++)
		if ((table[i].flags & CHECKPOINT) && strcasecmp(bare, table[i].name) == 0)
			return table[i].signo;
	return -1;
}

const char *tt_signal_name(int signo)
{
	for (size_t i = 0; i < NSIGNALS; i++)
		if (table[i].signo == signo)
			return table[i].name;
	return NULL;
}

void tt_signal_checkpoint_names(char *buf, size_t len)
{
	size_t used = 0, left = 0, i;

	for (i = 0; i < NSIGNALS; i++)
		left += (table[i].flags & CHECKPOINT) != 0;
	buf[0] = '\0';
	for (i = 0; i < NSIGNALS && used < len; i++) {
		if (!(table[i].flags & CHECKPOINT))
			continue;
		left--;
		used += (size_t)snprintf(buf + used, len - used, "%s%s", table[i].name,
					 left > 1 ? ", " : left == 1 ? " or " : "");
	}
}

void tt_signal_forwarded_set(sigset_t *set)
{
	for (size_t i = 0; i < NSIGNALS; i++)
		sigaddset(set, table[i].signo);
}

int tt_signal_is_forwarded(int signo)
{
	return flags_of(signo) != 0;
}

int tt_signal_is_termination(int signo)
{
	return (flags_of(signo) & TERMINATION) != 0;
}

int tt_signal_to_whole_group(int signo)
{
	return (flags_of(signo) & WHOLE_GROUP) != 0;
}

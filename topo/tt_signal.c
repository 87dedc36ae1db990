/* tt_signal.c — see tt_signal.h. */
#include "tt_signal.h"

#include <signal.h>
#include <stddef.h>
#include <strings.h>

int tt_signal_by_name(const char *name)
{
	static const struct {
		const char *name;
		int signo;
	} signals[] = {
		{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "HUP", SIGHUP },
		{ "INT", SIGINT },   { "TERM", SIGTERM }, { "URG", SIGURG },
	};
	const char *bare = strncasecmp(name, "SIG", 3) == 0 ? name + 3 : name;

	for (size_t i = 0; i < sizeof(signals) / sizeof(signals[0]); i++)
		if (strcasecmp(bare, signals[i].name) == 0)
			return signals[i].signo;
	return -1;
}

/* SPDX-License-Identifier: MIT */
/* tt_ckpt_exit.c — the checkpoint exit status from the environment (see tt_ckpt_exit.h). */
#include "tt_ckpt_exit.h"

#include <errno.h>
#include <stdlib.h>

int tt_ckpt_exit_parse(const char *value, tt_err *err)
{
	char *end;
	long n;

	if (!value || !*value)
		return TT_CKPT_EXIT_DEFAULT;
	errno = 0;
	n = strtol(value, &end, 10);
	if (end == value || *end || errno || n < 1 || n > 125)
		return tt_err_set(err, TT_ENV_CKPT_EXIT "='%s': want an exit status from 1 to 125 (default %d), or "
				  "unset it", value, TT_CKPT_EXIT_DEFAULT);
	return (int)n;
}

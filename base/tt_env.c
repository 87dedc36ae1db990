/* SPDX-License-Identifier: MIT */
/* tt_env.c — the two stock environment readers (see tt_env.h). */
#include "tt_env.h"

#include <stdlib.h>
#include <string.h>

const char *tt_env_process(void *ctx, const char *name)
{
	(void)ctx;
	return getenv(name);
}

const char *tt_env_array(void *ctx, const char *name)
{
	char *const *env = ctx;
	size_t len = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, len) == 0 && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

const char *tt_env_none(void *ctx, const char *name)
{
	(void)ctx;
	(void)name;
	return NULL;
}

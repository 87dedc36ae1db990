/* SPDX-License-Identifier: MIT */
/* tt_env.h — how traintopo reads environment variables without caring whose environment it is.
 * The SPANK plugin reads the task's environment with spank_getenv, train-run its own with getenv,
 * tests a fixed array: every facts gatherer takes one tt_getenv_fn and its ctx. */
#ifndef TT_ENV_H
#define TT_ENV_H

/* Returns the value of name, or NULL when it is unset. The string need only stay valid until
 * the next call: gatherers copy or parse a value before asking for another, so an adapter over
 * spank_getenv may return one buffer it reuses. */
typedef const char *(*tt_getenv_fn)(void *ctx, const char *name);

/* tt_getenv_fn over the process environment (getenv); ctx is ignored. */
const char *tt_env_process(void *ctx, const char *name);

/* tt_getenv_fn over a NULL-terminated array of "NAME=VALUE" strings passed as ctx
 * (char *const *); the first match wins. For tests and for callers holding an envp. */
const char *tt_env_array(void *ctx, const char *name);

/* tt_getenv_fn of an empty environment: every name is unset. */
const char *tt_env_none(void *ctx, const char *name);

#endif

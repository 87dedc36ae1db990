/* rt_token.h — the per-job admission token that the store and the TCP ring demand from every
 * connection, so other jobs and other users can neither join a job's rendezvous nor inject data.
 * Token = "<SLURM_JOB_ID or 'nojob'>:<secret>"; the secret comes from TRAINRT_TOKEN, else from
 * TRAINRT_TOKEN_FILE, else from ~/.config/trainrt/token (created 0600 with random bytes). */
#ifndef RT_TOKEN_H
#define RT_TOKEN_H

#include "tt_err.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define RT_TOKEN_MAX 256

/* Loads the secret as described above and composes the token into tok (RT_TOKEN_MAX bytes). */
int rt_token_load(char *tok, tt_err *err);

/* Composes the token from a secret and a job id (NULL = "nojob"); -1 when it does not fit. */
int rt_token_compose(char *tok, size_t len, const char *secret, const char *jobid, tt_err *err);

/* A secret file is acceptable when it is a regular file owned by uid and neither group nor
 * others can read or write it. */
int rt_token_file_ok(const struct stat *st, uid_t uid, const char *path, tt_err *err);

/* FNV-1a of the token: names derived from it (shm segments) never reveal the secret. */
uint64_t rt_token_hash(const char *tok);

/* Compares two tokens in time independent of where they differ. */
int rt_token_equal(const char *a, const char *b);

#endif

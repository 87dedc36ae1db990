/* rt_token.c — loading and comparing the job's admission token (see rt_token.h). */
#include "rt_token.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

int rt_token_compose(char *tok, size_t len, const char *secret, const char *jobid, tt_err *err)
{
	int n;

	if (!secret || !*secret)
		return tt_err_set(err, "the job secret is empty: set TRAINRT_TOKEN or fill the token file");
	n = snprintf(tok, len, "%s:%s", jobid && *jobid ? jobid : "nojob", secret);
	if (n < 0 || (size_t)n >= len)
		return tt_err_set(err, "the job secret is too long (%zu bytes; at most %d)", strlen(secret),
				  RT_TOKEN_MAX - 32);
	return 0;
}

int rt_token_file_ok(const struct stat *st, uid_t uid, const char *path, tt_err *err)
{
	if (!S_ISREG(st->st_mode))
		return tt_err_set(err, "token file %s is not a regular file", path);
	if (st->st_uid != uid)
		return tt_err_set(err, "token file %s is owned by uid %u, not by you (uid %u): remove it",
				  path, (unsigned)st->st_uid, (unsigned)uid);
	if (st->st_mode & 077)
		return tt_err_set(err, "token file %s is accessible to others (mode %03o): chmod 600 %s",
				  path, (unsigned)(st->st_mode & 0777), path);
	return 0;
}

/* Writes a fresh random secret to path through a temporary file and link(), so concurrent
 * first runs on a shared home agree on one secret and nobody reads a half-written file. */
static int create_secret(const char *path, tt_err *err)
{
	unsigned char raw[24];
	char hex[sizeof(raw) * 2 + 2], tmp[4096];
	int fd, rc = -1;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return tt_err_errno(err, "cannot draw random bytes for %s", path);
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(hex + 2 * i, 3, "%02x", raw[i]);
	strcat(hex, "\n");
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return tt_err_errno(err, "cannot create %s", tmp);
	if (write(fd, hex, strlen(hex)) != (ssize_t)strlen(hex) || fsync(fd) != 0) {
		tt_err_errno(err, "cannot write %s", tmp);
		goto fail;
	}
	if (link(tmp, path) != 0 && errno != EEXIST) {
		tt_err_errno(err, "cannot create %s", path);
		goto fail;
	}
	rc = 0;
fail:
	close(fd);
	unlink(tmp);
	return rc;
}

static int read_secret(const char *path, int create, char *secret, size_t len, tt_err *err)
{
	struct stat st;
	ssize_t n;
	int fd;

	if (create && stat(path, &st) != 0 && errno == ENOENT) {
		char dir[4096];
		char *slash;

		snprintf(dir, sizeof(dir), "%s", path);
		slash = strrchr(dir, '/');
		if (slash) {
			*slash = '\0';
			char *parent = strrchr(dir, '/');
			if (parent) {
				*parent = '\0';
				mkdir(dir, 0700);
				*parent = '/';
			}
			mkdir(dir, 0700);
		}
		if (create_secret(path, err) != 0)
			return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return tt_err_errno(err, "cannot open token file %s (set TRAINRT_TOKEN or TRAINRT_TOKEN_FILE)", path);
	if (fstat(fd, &st) != 0 || rt_token_file_ok(&st, getuid(), path, err) != 0) {
		close(fd);
		return -1;
	}
	n = read(fd, secret, len - 1);
	close(fd);
	if (n < 0)
		return tt_err_errno(err, "cannot read token file %s", path);
	secret[n] = '\0';
	secret[strcspn(secret, "\r\n")] = '\0';
	return 0;
}

int rt_token_load(char *tok, tt_err *err)
{
	const char *env = getenv("TRAINRT_TOKEN");
	const char *file = getenv("TRAINRT_TOKEN_FILE");
	const char *jobid = getenv("SLURM_JOB_ID");
	char secret[RT_TOKEN_MAX];
	char path[4096];

	if (env && *env)
		return rt_token_compose(tok, RT_TOKEN_MAX, env, jobid, err);
	if (file && *file) {
		if (read_secret(file, 0, secret, sizeof(secret), err) != 0)
			return -1;
	} else {
		const char *home = getenv("HOME");

		if (!home || !*home)
			return tt_err_set(err, "no job secret: set TRAINRT_TOKEN (or TRAINRT_TOKEN_FILE, or HOME for ~/.config/trainrt/token)");
		snprintf(path, sizeof(path), "%s/.config/trainrt/token", home);
		if (read_secret(path, 1, secret, sizeof(secret), err) != 0)
			return -1;
	}
	return rt_token_compose(tok, RT_TOKEN_MAX, secret, jobid, err);
}

uint64_t rt_token_hash(const char *tok)
{
	uint64_t h = 1469598103934665603ull;

	for (; *tok; tok++) {
		h ^= (unsigned char)*tok;
		h *= 1099511628211ull;
	}
	return h;
}

int rt_token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = la != lb;

	for (size_t i = 0; i < la && i < lb; i++)
		diff |= (unsigned char)(a[i] ^ b[i]);
	return diff == 0;
}

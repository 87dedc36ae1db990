/* SPDX-License-Identifier: MIT */
/* rt_token.c — the user's secret, the per-job key derived from it, and the proofs made with the
 * key (see rt_token.h). All cryptography is OpenSSL's: HKDF, HMAC-SHA256, RAND_bytes, CRYPTO_memcmp. */
#include "rt_token.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#define KEY_SALT "trainrt job key v2"

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
		return tt_err_errno(err, "cannot create the job secret %s (no writable home, as in a "
				    "container? set TRAINRT_TOKEN or TRAINRT_TOKEN_FILE)", tmp);
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

int rt_token_derive(char key[RT_KEY_TEXT], const char *secret, const char *jobid, const char *stepid,
		    tt_err *err)
{
	unsigned char raw[32];
	char info[160];
	EVP_KDF *kdf = NULL;
	EVP_KDF_CTX *ctx = NULL;
	OSSL_PARAM params[5];
	int rc = -1;

	if (!secret || !*secret)
		return tt_err_set(err, "the job secret is empty: set TRAINRT_TOKEN or fill the token file");
	if (strlen(secret) >= RT_TOKEN_MAX)
		return tt_err_set(err, "the job secret is too long (%zu bytes; at most %d)", strlen(secret),
				  RT_TOKEN_MAX - 1);
	snprintf(info, sizeof(info), "job=%.64s step=%.64s", jobid && *jobid ? jobid : "none",
		 stepid && *stepid ? stepid : "none");
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
	params[1] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)secret, strlen(secret));
	params[2] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)KEY_SALT, strlen(KEY_SALT));
	params[3] = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, info, strlen(info));
	params[4] = OSSL_PARAM_construct_end();
	kdf = EVP_KDF_fetch(NULL, "HKDF", NULL);
	ctx = kdf ? EVP_KDF_CTX_new(kdf) : NULL;
	if (!ctx || EVP_KDF_derive(ctx, raw, sizeof(raw), params) != 1) {
		tt_err_set(err, "cannot derive the job key: OpenSSL's HKDF failed (is libcrypto 3 installed?)");
		goto out;
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(key + 2 * i, 3, "%02x", raw[i]);
	rc = 0;
out:
	OPENSSL_cleanse(raw, sizeof(raw));
	EVP_KDF_CTX_free(ctx);
	EVP_KDF_free(kdf);
	return rc;
}

/* A secret shorter than RT_TOKEN_MIN bytes is refused: whoever sees one proof made with a key
 * derived from it can test guesses offline, and a word falls to a dictionary in a fraction of a
 * second. file: the token file it came from (NULL: TRAINRT_TOKEN), for the message. */
static int check_strength(const char *secret, const char *file, tt_err *err)
{
	size_t n = strlen(secret);

	if (n >= RT_TOKEN_MIN)
		return 0;
	return tt_err_set(err, "%s%s holds %zu byte%s of secret, fewer than the %d required (a short secret can be "
			  "guessed offline): generate one with 'head -c 24 /dev/urandom | base64'",
			  file ? "token file " : "TRAINRT_TOKEN", file ? file : "", n, n == 1 ? "" : "s", RT_TOKEN_MIN);
}

int rt_token_load(char key[RT_KEY_TEXT], tt_err *err)
{
	const char *env = getenv("TRAINRT_TOKEN");
	const char *file = getenv("TRAINRT_TOKEN_FILE");
	const char *jobid = getenv("SLURM_JOB_ID");
	const char *stepid = getenv("SLURM_STEP_ID");
	char secret[RT_TOKEN_MAX];
	char path[4096];
	int rc;

	if (!stepid || !*stepid)
		stepid = getenv("SLURM_STEPID");
	if (env && *env)
		return check_strength(env, NULL, err) ? -1 : rt_token_derive(key, env, jobid, stepid, err);
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
		file = path;
	}
	rc = check_strength(secret, file, err) ? -1 : rt_token_derive(key, secret, jobid, stepid, err);
	OPENSSL_cleanse(secret, sizeof(secret));
	return rc;
}

int rt_token_nonce(unsigned char nonce[RT_NONCE_LEN], tt_err *err)
{
	if (RAND_bytes(nonce, RT_NONCE_LEN) != 1)
		return tt_err_set(err, "cannot draw a random nonce (OpenSSL RAND_bytes failed)");
	return 0;
}

int rt_token_mac(const char *key, const char *role, const void *msg, size_t len, unsigned char mac[RT_MAC_LEN],
		 tt_err *err)
{
	size_t rlen = strlen(role) + 1;
	unsigned char buf[512];
	unsigned int outlen = RT_MAC_LEN;

	if (rlen + len > sizeof(buf))
		return tt_err_set(err, "internal error: a %zu-byte proof message is longer than %zu bytes", len,
				  sizeof(buf) - rlen);
	memcpy(buf, role, rlen);
	memcpy(buf + rlen, msg, len);
	if (!HMAC(EVP_sha256(), key, (int)strlen(key), buf, rlen + len, mac, &outlen) || outlen != RT_MAC_LEN)
		return tt_err_set(err, "cannot compute an HMAC-SHA256 proof (OpenSSL failed)");
	return 0;
}

int rt_token_mac_equal(const unsigned char a[RT_MAC_LEN], const unsigned char b[RT_MAC_LEN])
{
	return CRYPTO_memcmp(a, b, RT_MAC_LEN) == 0;
}

int rt_token_label(const char *key, uint64_t *label, tt_err *err)
{
	unsigned char mac[RT_MAC_LEN];
	uint64_t v;

	if (rt_token_mac(key, "trainrt public label v1", "", 0, mac, err) != 0)
		return -1;
	memcpy(&v, mac, sizeof(v));
	*label = v;
	return 0;
}

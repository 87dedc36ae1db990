/* SPDX-License-Identifier: MIT */
/* rt_token.h — the job's key and the proofs made with it. Every rank derives the same per-job key
 * from the user's secret and the Slurm job and step ids (HKDF-SHA256), and every connection between
 * ranks proves knowledge of that key with HMAC-SHA256 over fresh nonces and a role label (OpenSSL's
 * libcrypto), so neither the secret nor the key ever crosses the wire and one job's key tells
 * nothing about another job's. The secret comes from TRAINRT_TOKEN, else TRAINRT_TOKEN_FILE, else
 * ~/.config/trainrt/token (created 0600 with random bytes). */
#ifndef RT_TOKEN_H
#define RT_TOKEN_H

#include "tt_err.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#define RT_TOKEN_MAX 256 /* longest secret, with its NUL */
#define RT_TOKEN_MIN 16	 /* shortest secret rt_token_load accepts, in bytes */
#define RT_KEY_TEXT 65	 /* a per-job key: 64 hex digits and a NUL */
#define RT_NONCE_LEN 32
#define RT_MAC_LEN 32

/* Loads the secret as described above and derives this job's key (job SLURM_JOB_ID, step
 * SLURM_STEP_ID; "none" when unset) into key. A secret of fewer than RT_TOKEN_MIN bytes is
 * refused, saying how to generate one. */
int rt_token_load(char key[RT_KEY_TEXT], tt_err *err);

/* key = hex(HKDF-SHA256(secret, salt "trainrt job key v2", info "job=<jobid> step=<stepid>")). */
int rt_token_derive(char key[RT_KEY_TEXT], const char *secret, const char *jobid, const char *stepid,
		    tt_err *err);

/* A secret file is acceptable when it is a regular file owned by uid and neither group nor
 * others can read or write it. */
int rt_token_file_ok(const struct stat *st, uid_t uid, const char *path, tt_err *err);

/* Fills a fresh random nonce (OpenSSL's CSPRNG). */
int rt_token_nonce(unsigned char nonce[RT_NONCE_LEN], tt_err *err);

/* HMAC-SHA256 keyed with key (any string: a derived key, or a test's) over role, a NUL, then msg.
 * Each direction of each protocol uses its own role, so one side's proof is never the other's. */
int rt_token_mac(const char *key, const char *role, const void *msg, size_t len, unsigned char mac[RT_MAC_LEN],
		 tt_err *err);

/* Compares two MACs in time independent of where they differ; 1 when equal. */
int rt_token_mac_equal(const unsigned char a[RT_MAC_LEN], const unsigned char b[RT_MAC_LEN]);

/* A 64-bit label derived from the key (an HMAC, so it reveals nothing about it), for names other
 * processes can see, such as the node's shared-memory segment. */
int rt_token_label(const char *key, uint64_t *label, tt_err *err);

#endif

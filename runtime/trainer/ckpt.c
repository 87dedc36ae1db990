/* SPDX-License-Identifier: MIT */
/* ckpt.c — checkpoint files: atomic writes, CRC checks, discovery, re-slicing load, pruning
 * and removal of torn directories (see ckpt.h). Every operation goes through the descriptor of a
 * checked root (see open_root) and of checked step directories (open_step): nothing is reached
 * through a symbolic link another user could plant, and nothing outside the root is removed. */
#include "ckpt.h"
#include "tt_file.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define RANK_MAGIC "TTCKPT01"
#define META_HEADER "traintopo-checkpoint 1\n"
#define MAX_WORLD 65536

typedef struct rank_header {
	char magic[8];
	uint32_t rank, world, n_blocks, reserved;
} rank_header;

void tt_ckpt_meta_free(tt_ckpt_meta *m)
{
	free(m->crc);
	m->crc = NULL;
}

/* The one spelling of a step directory's name. */
static void step_name(char *out, size_t len, long step)
{
	snprintf(out, len, "step-%08ld", step);
}

void tt_ckpt_step_dir(char *out, size_t len, const char *root, long step)
{
	char name[32];

	step_name(name, sizeof(name), step);
	snprintf(out, len, "%s/%s", root, name);
}

/* "uid N (name)" for messages. */
static void owner_name(uid_t uid, char *out, size_t len)
{
	struct passwd *pw = getpwuid(uid);

	if (pw)
		snprintf(out, len, "%s (uid %u)", pw->pw_name, (unsigned)uid);
	else
		snprintf(out, len, "uid %u", (unsigned)uid);
}

/* A checkpoint directory (the root or a step directory) is ours alone: owned by this user and not
 * writable by group or others, else another user could plant a step (their weights are resumed)
 * or files that pruning then trips over. */
static int check_dir(int fd, const char *path, tt_err *err)
{
	struct stat st;
	char who[128];

	if (fstat(fd, &st) != 0)
		return tt_err_errno(err, "cannot inspect checkpoint directory %s", path);
	owner_name(st.st_uid, who, sizeof(who));
	if (st.st_uid != geteuid())
		return tt_err_set(err, "checkpoint directory %s belongs to %s, not to you: refusing to use it (another user "
				  "could plant or redirect checkpoints there); give a --ckpt-dir of your own", path, who);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return tt_err_set(err, "checkpoint directory %s (owner %s) is writable by %s: refusing to use it (another "
				  "user could plant checkpoints there); run 'chmod go-w %s' or give another --ckpt-dir", path,
				  who, st.st_mode & S_IWOTH ? "everyone" : "its group", path);
	return 0;
}

/* Describes why name in dirfd could not be opened as a directory without following a link. */
static int refuse_entry(int dirfd, const char *name, const char *path, tt_err *err)
{
	struct stat st;
	char who[128];

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
		owner_name(st.st_uid, who, sizeof(who));
		return tt_err_set(err, "checkpoint directory %s is a symbolic link (owner %s): refusing to follow it (it "
				  "could redirect checkpoints and pruning elsewhere); give the real directory as --ckpt-dir",
				  path, who);
	}
	return tt_err_errno(err, "cannot open checkpoint directory %s (check --ckpt-dir)", path);
}

/* Opens the checkpoint root path component by component. A symbolic link on the way is followed
 * only when root or this user owns it (the rule fs.protected_symlinks applies in sticky
 * directories, applied everywhere: it is no defence to rely on a sysctl); the root itself must not
 * be a link at all, and must pass check_dir. With create, a missing root is made (mode 0755 less
 * the umask; its parent must exist). Returns the descriptor; -2 when it does not exist (and
 * !create); -1 on error. */
static int open_root(const char *root, int create, tt_err *err)
{
	char todo[PATH_MAX], next[PATH_MAX];
	int fd, links = 0;
	char *p;

	if (snprintf(todo, sizeof(todo), "%s", root) >= (int)sizeof(todo) || !*root)
		return tt_err_set(err, "checkpoint directory '%s' is empty or too long (check --ckpt-dir)", root);
	fd = open(root[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tt_err_errno(err, "cannot open the start of checkpoint directory %s", root);
	p = todo;
	for (;;) {
		char *comp, *rest;
		struct stat st;
		int last, nfd;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		rest = strchr(p, '/');
		if (rest)
			*rest++ = '\0';
		else
			rest = p + strlen(p);
		p = rest;
		while (*rest == '/')
			rest++;
		last = !*rest;
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno != ENOENT || !last || !create) {
				int missing = errno == ENOENT && !create;

				if (!missing)
					tt_err_errno(err, "cannot reach checkpoint directory %s (at '%s')", root, comp);
				close(fd);
				return missing ? -2 : -1;
			}
			if (mkdirat(fd, comp, 0755) != 0 && errno != EEXIST) {
				tt_err_errno(err, "cannot create checkpoint directory %s (check --ckpt-dir)", root);
				close(fd);
				return -1;
			}
		} else if (S_ISLNK(st.st_mode) && !last) {
			char who[128], target[PATH_MAX];
			ssize_t n;

			owner_name(st.st_uid, who, sizeof(who));
			if (st.st_uid != 0 && st.st_uid != geteuid()) {
				tt_err_set(err, "checkpoint directory %s goes through '%s', a symbolic link of %s: refusing to "
					   "follow another user's link; give a path without it as --ckpt-dir", root, comp, who);
				close(fd);
				return -1;
			}
			n = readlinkat(fd, comp, target, sizeof(target) - 1);
			if (n <= 0 || ++links > 40) {
				tt_err_set(err, "checkpoint directory %s: cannot resolve the link '%s'", root, comp);
				close(fd);
				return -1;
			}
			target[n] = '\0';
			if (snprintf(next, sizeof(next), "%s/%s", target, rest) >= (int)sizeof(next)) {
				tt_err_set(err, "checkpoint directory %s is too long once its links are resolved", root);
				close(fd);
				return -1;
			}
			memcpy(todo, next, sizeof(todo));
			p = todo;
			if (target[0] == '/') {
				close(fd);
				fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (fd < 0)
					return tt_err_errno(err, "cannot open / to resolve checkpoint directory %s", root);
			}
			continue;
		}
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (nfd < 0) {
			if (last)
				refuse_entry(fd, comp, root, err);
			else
				tt_err_errno(err, "cannot reach checkpoint directory %s (at '%s')", root, comp);
			close(fd);
			return -1;
		}
		close(fd);
		fd = nfd;
	}
	if (check_dir(fd, root, err) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Opens step directory `step` under the root descriptor rfd (made when create), never through a
 * link, and checks it like the root. -2: it is not there (or not a directory); -1: refused. */
static int open_step(int rfd, const char *root, long step, int create, char *dir, size_t dir_len, tt_err *err)
{
	char name[32];
	int fd;

	step_name(name, sizeof(name), step);
	tt_ckpt_step_dir(dir, dir_len, root, step);
	if (create && mkdirat(rfd, name, 0755) != 0 && errno != EEXIST)
		return tt_err_errno(err, "cannot create checkpoint directory %s (check --ckpt-dir)", dir);
	fd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;

		if (errno == ENOENT || (errno == ENOTDIR && fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
					!S_ISLNK(st.st_mode))) {
			tt_err_errno(err, "cannot open %s", dir);
			return -2;
		}
		return refuse_entry(rfd, name, dir, err);
	}
	if (check_dir(fd, dir, err) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int tt_ckpt_prepare(const char *root, long step, tt_err *err)
{
	char dir[4096];
	int rfd = open_root(root, 1, err), sfd;

	if (rfd < 0)
		return -1;
	sfd = open_step(rfd, root, step, 1, dir, sizeof(dir), err);
	close(rfd);
	if (sfd < 0)
		return -1;
	close(sfd);
	return 0;
}

int tt_ckpt_check_root(const char *root, tt_err *err)
{
	int rfd = open_root(root, 1, err);

	if (rfd < 0)
		return -1;
	close(rfd);
	return 0;
}

/* The checked root and step directory of a write or read: *rfd and *sfd (close both). */
static int open_both(const char *root, long step, int *rfd, int *sfd, char *dir, size_t dir_len, tt_err *err)
{
	*sfd = -1;
	*rfd = open_root(root, 0, err);
	if (*rfd == -2)
		tt_err_set(err, "checkpoint directory %s does not exist", root);
	if (*rfd < 0)
		return -1;
	*sfd = open_step(*rfd, root, step, 0, dir, dir_len, err);
	if (*sfd < 0) {
		close(*rfd);
		*rfd = -1;
		return -1;
	}
	return 0;
}

static void close_both(int rfd, int sfd)
{
	if (sfd >= 0)
		close(sfd);
	if (rfd >= 0)
		close(rfd);
}

/* CRC32 of len bytes continuing sum (zlib takes at most 4 GiB per call: fed in pieces). */
static uLong crc_more(uLong sum, const void *data, size_t len)
{
	const Bytef *p = data;

	while (len > 0) {
		uInt part = len > (1u << 30) ? (1u << 30) : (uInt)len;

		sum = crc32(sum, p, part);
		p += part;
		len -= part;
	}
	return sum;
}

static uint32_t crc_of(const void *data, size_t len)
{
	return (uint32_t)crc_more(crc32(0L, Z_NULL, 0), data, len);
}

/* Writes the chunks and their CRC32 as a trailer, computing the CRC piece by piece just before
 * each piece is written (the data is hot in cache for the copy, and the disk flushes the previous
 * pieces meanwhile). *crc receives the CRC. */
static int write_with_crc(int dirfd, const char *name, const char *path, const tt_chunk *c, int n, uint32_t *crc,
			  tt_err *err)
{
	const size_t piece = (size_t)4 << 20;
	uLong sum = crc32(0L, Z_NULL, 0);
	tt_file_out f;

	if (tt_file_openat(&f, dirfd, name, path, err) != 0)
		return -1;
	for (int i = 0; i < n; i++) {
		const unsigned char *p = c[i].data;

		for (size_t off = 0; off < c[i].len; off += piece) {
			size_t len = c[i].len - off < piece ? c[i].len - off : piece;

			sum = crc_more(sum, p + off, len);
			if (tt_file_write(&f, p + off, len, err) != 0)
				goto fail;
		}
	}
	*crc = (uint32_t)sum;
	if (tt_file_write(&f, crc, sizeof(*crc), err) != 0)
		goto fail;
	return tt_file_commit(&f, err);
fail:
	tt_file_abort(&f);
	return -1;
}

int tt_ckpt_write_rank(const char *root, long step, int rank, const tt_shard_plan *plan, const float *p,
		       const float *m, const float *v, uint32_t *crc, tt_err *err)
{
	char dir[4096], path[4200], name[32];
	rank_header h = { .rank = (uint32_t)rank, .world = (uint32_t)plan->world, .n_blocks = (uint32_t)plan->n_blocks };
	uint64_t lens[TT_SHARD_MAX_BLOCKS];
	size_t s = tt_shard_total(plan) * sizeof(float);
	tt_chunk c[5];
	int rfd, sfd, rc;

	memcpy(h.magic, RANK_MAGIC, 8);
	for (int b = 0; b < plan->n_blocks; b++)
		lens[b] = plan->block_len[b];
	c[0] = (tt_chunk){ &h, sizeof(h) };
	c[1] = (tt_chunk){ lens, sizeof(uint64_t) * plan->n_blocks };
	c[2] = (tt_chunk){ p, s };
	c[3] = (tt_chunk){ m, s };
	c[4] = (tt_chunk){ v, s };
	if (open_both(root, step, &rfd, &sfd, dir, sizeof(dir), err))
		return -1;
	snprintf(name, sizeof(name), "rank-%05d.bin", rank);
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		rc = tt_err_set(err, "checkpoint path under %s is too long", dir);
	else
		rc = write_with_crc(sfd, name, path, c, 5, crc, err);
	close_both(rfd, sfd);
	return rc;
}

int tt_ckpt_write_meta(const char *root, const tt_ckpt_meta *meta, tt_err *err)
{
	char dir[4096], path[4200], *text = NULL, tail[64];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	tt_chunk c[2];
	int rc, rfd, sfd;

	if (!f)
		return tt_err_errno(err, "cannot format checkpoint metadata");
	fprintf(f, META_HEADER "step %ld\nworld %d\nzero %d\nseed %llu\nbatch %ld\nlayers %s\nlayout %d %d %d\n",
		meta->step, meta->world, meta->zero, (unsigned long long)meta->seed, meta->batch, meta->layers,
		meta->layout.dp, meta->layout.tp, meta->layout.pp);
	for (int r = 0; r < meta->world; r++)
		fprintf(f, "rank_crc %d %08x\n", r, meta->crc[r]);
	fclose(f);
	c[0] = (tt_chunk){ text, len };
	snprintf(tail, sizeof(tail), "meta_crc %08x\n", crc_of(text, len));
	c[1] = (tt_chunk){ tail, strlen(tail) };
	if (open_both(root, meta->step, &rfd, &sfd, dir, sizeof(dir), err)) {
		free(text);
		return -1;
	}
	if (snprintf(path, sizeof(path), "%s/meta.txt", dir) >= (int)sizeof(path))
		rc = tt_err_set(err, "checkpoint path under %s is too long", dir);
	else
		rc = tt_file_write_chunks_at(sfd, "meta.txt", path, c, 2, err);
	close_both(rfd, sfd);
	free(text);
	return rc;
}

/* Whole file name in dirfd (path: its name in messages) into a malloc'd buffer; a link or
 * anything but a regular file is refused (O_NONBLOCK: a FIFO does not hang the open). */
static int slurp(int dirfd, const char *name, const char *path, char **buf, size_t *len, tt_err *err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	FILE *f;
	long n;

	*buf = NULL;
	if (fd < 0)
		return tt_err_errno(err, "cannot open %s", path);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return tt_err_set(err, "%s is not a regular file", path);
	}
	f = fdopen(fd, "rb");
	if (!f) {
		close(fd);
		return tt_err_errno(err, "cannot open %s", path);
	}
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return tt_err_errno(err, "cannot size %s", path);
	}
	*buf = malloc((size_t)n + 1);
	if (!*buf || fread(*buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(*buf);
		*buf = NULL;
		return tt_err_set(err, "cannot read the %ld bytes of %s", n, path);
	}
	fclose(f);
	(*buf)[n] = '\0';
	*len = (size_t)n;
	return 0;
}

static int parse_meta(const char *path, char *text, size_t len, tt_ckpt_meta *m, tt_err *err)
{
	char *tail = NULL, *line, *save = NULL;
	unsigned crc_want;
	unsigned long long seed = 0;
	int seen = 0, layout = 0;

	/* The last line is "meta_crc X" over everything before it. */
	if (len < 2)
		return tt_err_set(err, "%s is empty", path);
	for (size_t i = len - 1; i > 0; i--)
		if (text[i - 1] == '\n') {
			tail = text + i;
			break;
		}
	if (!tail || sscanf(tail, "meta_crc %x", &crc_want) != 1)
		return tt_err_set(err, "%s has no meta_crc line; it is torn", path);
	if (crc_of(text, (size_t)(tail - text)) != crc_want)
		return tt_err_set(err, "%s fails its CRC check; it is corrupt", path);
	*tail = '\0';
	if (strncmp(text, META_HEADER, strlen(META_HEADER)) != 0)
		return tt_err_set(err, "%s is not a traintopo checkpoint (version 1) metadata file", path);
	for (line = strtok_r(text + strlen(META_HEADER), "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		int r;
		unsigned c;

		if (sscanf(line, "step %ld", &m->step) == 1)
			seen |= 1;
		else if (sscanf(line, "world %d", &m->world) == 1) {
			if (m->world < 1 || m->world > MAX_WORLD || m->crc)
				return tt_err_set(err, "%s: bad world line '%s'", path, line);
			m->crc = calloc((size_t)m->world, sizeof(uint32_t));
			if (!m->crc)
				return tt_err_set(err, "%s: out of memory", path);
			seen |= 2;
		} else if (sscanf(line, "zero %d", &m->zero) == 1)
			seen |= 4;
		else if (sscanf(line, "seed %llu", &seed) == 1)
			seen |= 8;
		else if (sscanf(line, "batch %ld", &m->batch) == 1)
			seen |= 16;
		else if (sscanf(line, "layers %255s", m->layers) == 1)
			seen |= 32;
		else if (sscanf(line, "layout %d %d %d", &m->layout.dp, &m->layout.tp, &m->layout.pp) == 3)
			layout = 1;
		else if (sscanf(line, "rank_crc %d %x", &r, &c) == 2 && m->crc && r >= 0 && r < m->world) {
			m->crc[r] = c;
			seen |= 64;
		} else
			return tt_err_set(err, "%s: unknown line '%s'", path, line);
	}
	m->seed = seed;
	if (seen != 127)
		return tt_err_set(err, "%s lacks required fields; it was written by another tool", path);
	if (!layout) /* written before 3D layouts: data parallelism over every rank */
		m->layout = (tt_plan3d){ m->world, 1, 1 };
	if (m->layout.dp < 1 || m->layout.tp < 1 || m->layout.pp < 1 ||
	    (long)m->layout.dp * m->layout.tp * m->layout.pp != m->world)
		return tt_err_set(err, "%s: layout %dx%dx%d does not make its world of %d ranks", path, m->layout.dp,
				  m->layout.tp, m->layout.pp, m->world);
	return 0;
}

static int check_rank_file(int sfd, const char *stepdir, int r, uint32_t crc_want, tt_err *err)
{
	char path[4200], name[32], *buf;
	size_t len;
	uint32_t trailer;
	int rc = -1;

	snprintf(name, sizeof(name), "rank-%05d.bin", r);
	snprintf(path, sizeof(path), "%s/%s", stepdir, name);
	if (slurp(sfd, name, path, &buf, &len, err))
		return -1;
	if (len < sizeof(rank_header) + 4) {
		tt_err_set(err, "%s is truncated", path);
		goto out;
	}
	memcpy(&trailer, buf + len - 4, 4);
	if (crc_of(buf, len - 4) != trailer ||
	    trailer != crc_want) {
		tt_err_set(err, "%s fails its CRC check (torn or corrupt)", path);
		goto out;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* tt_ckpt_validate on the open step directory sfd (named stepdir). */
static int validate_at(int sfd, const char *stepdir, tt_ckpt_meta *meta, tt_err *err)
{
	char path[4200], *text;
	size_t len;
	int rc;

	memset(meta, 0, sizeof(*meta));
	snprintf(path, sizeof(path), "%s/meta.txt", stepdir);
	if (slurp(sfd, "meta.txt", path, &text, &len, err))
		return -1;
	rc = parse_meta(path, text, len, meta, err);
	free(text);
	for (int r = 0; rc == 0 && r < meta->world; r++)
		rc = check_rank_file(sfd, stepdir, r, meta->crc[r], err);
	if (rc)
		tt_ckpt_meta_free(meta);
	return rc;
}

int tt_ckpt_validate(const char *root, long step, tt_ckpt_meta *meta, tt_err *err)
{
	char dir[4096];
	int rfd, sfd, rc;

	memset(meta, 0, sizeof(*meta));
	if (open_both(root, step, &rfd, &sfd, dir, sizeof(dir), err))
		return -1;
	rc = validate_at(sfd, dir, meta, err);
	close_both(rfd, sfd);
	return rc;
}

static int cmp_desc(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b;

	return (x < y) - (x > y);
}

/* Steps of all step-NNNNNNNN entries under root (exactly as step_name spells them, so each
 * step names one entry), newest first. */
static int list_steps(int rfd, const char *root, long **steps, int *n, tt_err *err)
{
	int dfd = dup(rfd);
	DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *e;
	int cap = 0;

	*steps = NULL;
	*n = 0;
	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return tt_err_errno(err, "cannot list checkpoint directory %s", root);
	}
	rewinddir(d); /* the duplicate shares the root descriptor's position */
	while ((e = readdir(d))) {
		char name[32];
		long s;
		char extra;

		if (sscanf(e->d_name, "step-%ld%c", &s, &extra) != 1 || s < 0)
			continue;
		step_name(name, sizeof(name), s);
		if (strcmp(name, e->d_name) != 0)
			continue;
		if (*n == cap) {
			long *grown = realloc(*steps, sizeof(long) * (size_t)(cap = cap ? 2 * cap : 16));

			if (!grown) {
				closedir(d);
				free(*steps);
				*steps = NULL;
				return tt_err_set(err, "out of memory listing %s", root);
			}
			*steps = grown;
		}
		(*steps)[(*n)++] = s;
	}
	closedir(d);
	qsort(*steps, (size_t)*n, sizeof(long), cmp_desc);
	return 0;
}

/* Appends "<what> DIR: why" as a line to buf (NULL: nothing). */
static void add_line(char *buf, size_t len, const char *what, const char *dir, const char *why)
{
	size_t used;

	if (!buf || !len)
		return;
	used = strlen(buf);
	if (used < len)
		snprintf(buf + used, len - used, "%s %s: %s\n", what, dir, why);
}

/* The checked root (its descriptor, which the caller closes) and its step numbers in *steps
 * (freed by the caller). -2 when the root does not exist (nothing to find, remove or prune),
 * -1 with err otherwise. */
static int open_steps(const char *root, long **steps, int *n, tt_err *err)
{
	int rfd = open_root(root, 0, err);

	if (rfd < 0)
		return rfd;
	if (list_steps(rfd, root, steps, n, err)) {
		close(rfd);
		return -1;
	}
	return rfd;
}

int tt_ckpt_find_latest(const char *root, tt_ckpt_meta *meta, char *warn, size_t warn_len, tt_err *err)
{
	long *steps;
	int n, found = 0, rfd;

	if (warn && warn_len)
		warn[0] = '\0';
	rfd = open_steps(root, &steps, &n, err);
	if (rfd < 0)
		return rfd == -2 ? 0 : -1;
	for (int i = 0; i < n && !found; i++) {
		char dir[4096];
		tt_err why;
		int sfd = open_step(rfd, root, steps[i], 0, dir, sizeof(dir), &why);

		/* A step directory that is a link or another user's is refused, not skipped: resuming
		 * from an older checkpoint would hide that someone tampered with the root. */
		if (sfd == -1) {
			*err = why;
			found = -1;
			break;
		}
		if (sfd >= 0 && validate_at(sfd, dir, meta, &why) == 0)
			found = 1;
		else
			add_line(warn, warn_len, "skipping", dir, why.msg);
		if (sfd >= 0)
			close(sfd);
	}
	free(steps);
	close(rfd);
	return found;
}

/* Checks saved rank file r (len bytes in buf) against the part it holds under the saved layout
 * and its slicing over saved_dp ranks; *arr gets its three arrays of *total floats each. */
static int check_rank_buf(const char *path, const char *buf, size_t len, int r, int saved_dp, const tt_part *saved,
			  const float **arr, size_t *total, tt_err *err)
{
	size_t head = sizeof(rank_header) + sizeof(uint64_t) * (size_t)saved->n_layers, want;
	rank_header h;
	uint64_t lens[TT_MLP_MAX_LAYERS];

	*total = 0;
	if (len < head)
		return tt_err_set(err, "%s is truncated", path);
	memcpy(&h, buf, sizeof(h));
	memcpy(lens, buf + sizeof(h), sizeof(uint64_t) * (size_t)saved->n_layers);
	if (memcmp(h.magic, RANK_MAGIC, 8) || h.rank != (uint32_t)r || h.world != (uint32_t)saved_dp ||
	    h.n_blocks != (uint32_t)saved->n_layers)
		return tt_err_set(err, "%s: header does not match the model (%d layers on its stage) or meta.txt; was the "
				  "checkpoint written for another --layers?", path, saved->n_layers);
	for (int b = 0; b < saved->n_layers; b++) {
		if (lens[b] != saved->len[b])
			return tt_err_set(err, "%s: layer %d has %llu parameters, the model %zu; the checkpoint belongs "
					  "to another --layers", path, saved->layer[b].global, (unsigned long long)lens[b],
					  saved->len[b]);
		*total += (saved->len[b] + (size_t)saved_dp - 1) / (size_t)saved_dp;
	}
	want = head + 3 * sizeof(float) * *total + 4;
	if (len != want)
		return tt_err_set(err, "%s is %zu bytes, expected %zu", path, len, want);
	*arr = (const float *)(buf + head);
	return 0;
}

/* Puts the elements of saved rank file (part `saved`, data-parallel slice saved_rank of saved_dp)
 * that this rank keeps into p, m, v: element -> whole layer -> this part -> this rank's slice. */
static void scatter_rank(const tt_mlp *model, const tt_part *saved, int saved_dp, int saved_rank, const float *arr,
			 size_t total, const tt_part *part, const tt_shard_plan *plan, float *p, float *m, float *v)
{
	int first = part->layer[0].global;
	size_t src_off = 0;

	for (int b0 = 0; b0 < saved->n_layers; b0++) {
		size_t s0 = (saved->len[b0] + (size_t)saved_dp - 1) / (size_t)saved_dp, lo0 = (size_t)saved_rank * s0;
		size_t hi0 = lo0 + s0 < saved->len[b0] ? lo0 + s0 : saved->len[b0];
		int b1 = saved->layer[b0].global - first;

		if (b1 >= 0 && b1 < part->n_layers) {
			size_t lo1 = (size_t)plan->rank * plan->shard_len[b1], hi1 = lo1 + plan->shard_len[b1];

			for (size_t e0 = lo0; e0 < hi0; e0++) {
				long e1 = tt_part_from_model(model, part, b1, tt_part_to_model(model, saved, b0, e0));
				size_t src = src_off + e0 - lo0, dst;

				if (e1 < 0 || (size_t)e1 < lo1 || (size_t)e1 >= hi1)
					continue;
				dst = plan->shard_off[b1] + (size_t)e1 - lo1;
				p[dst] = arr[src];
				m[dst] = arr[total + src];
				v[dst] = arr[2 * total + src];
			}
		}
		src_off += s0;
	}
}

int tt_ckpt_load_part(const char *root, const tt_ckpt_meta *meta, const tt_mlp *model, const tt_part *part,
		      const tt_shard_plan *plan, float *p, float *m, float *v, tt_err *err)
{
	char dir[4096];
	size_t total = tt_shard_total(plan);
	int first = part->layer[0].global, last = first + part->n_layers - 1, rfd, sfd, rc = -1;

	memset(p, 0, sizeof(float) * total);
	memset(m, 0, sizeof(float) * total);
	memset(v, 0, sizeof(float) * total);
	if (open_both(root, meta->step, &rfd, &sfd, dir, sizeof(dir), err))
		return -1;
	if (tt_plan3d_check(&meta->layout, meta->world, model, meta->batch, 1, err) != 0) {
		tt_err_wrap(err, "%s/meta.txt: its layout does not fit the model", dir);
		goto out;
	}
	for (int r = 0; r < meta->world; r++) {
		tt_coords c = tt_plan3d_coords(&meta->layout, r);
		tt_part saved;
		char path[4200], name[32], *buf;
		const float *arr = NULL;
		size_t len, saved_total;
		int sfirst, bad;

		tt_part_build(&saved, model, &meta->layout, c);
		sfirst = saved.layer[0].global;
		if (sfirst > last || sfirst + saved.n_layers - 1 < first)
			continue; /* another stage's layers */
		snprintf(name, sizeof(name), "rank-%05d.bin", r);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (slurp(sfd, name, path, &buf, &len, err))
			goto out;
		bad = check_rank_buf(path, buf, len, r, meta->layout.dp, &saved, &arr, &saved_total, err);
		if (!bad)
			scatter_rank(model, &saved, meta->layout.dp, c.dp, arr, saved_total, part, plan, p, m, v);
		free(buf);
		if (bad)
			goto out;
	}
	rc = 0;
out:
	close_both(rfd, sfd);
	return rc;
}

/* Removes root/name, a step directory, through the root's descriptor rfd and without following a
 * symbolic link anywhere: a step-* that is a link is removed as a link (its target is untouched),
 * a step directory's entries are unlinked as they are (links as links), one holding a directory
 * is left alone with an error (it is not a checkpoint), and one another user owns or may write
 * is refused like any foreign checkpoint directory. */
static int remove_step(int rfd, const char *root, const char *name, tt_err *err)
{
	int dfd = -1, rc = -1;
	struct dirent *e;
	struct stat st;
	char dir[4200];
	DIR *d = NULL;

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	if (fstatat(rfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return tt_err_errno(err, "cannot inspect %s", dir);
	if (!S_ISDIR(st.st_mode)) { /* a link or a file named like a step: only the name goes */
		if (unlinkat(rfd, name, 0) != 0)
			return tt_err_errno(err, "cannot remove %s", dir);
		return 0;
	}
	dfd = openat(rfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return tt_err_errno(err, "cannot open old checkpoint %s for removal", dir);
	if (check_dir(dfd, dir, err) != 0)
		goto out;
	if (!(d = fdopendir(dfd))) {
		tt_err_errno(err, "cannot open old checkpoint %s for removal", dir);
		goto out;
	}
	dfd = -1; /* owned by d now */
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			tt_err_errno(err, "cannot inspect %s/%s", dir, e->d_name);
			goto out;
		}
		if (S_ISDIR(st.st_mode)) {
			tt_err_set(err, "%s holds a directory (%s), so it is not a checkpoint: left alone", dir, e->d_name);
			goto out;
		}
		if (unlinkat(dirfd(d), e->d_name, 0) != 0) {
			tt_err_errno(err, "cannot remove %s/%s", dir, e->d_name);
			goto out;
		}
	}
	if (unlinkat(rfd, name, AT_REMOVEDIR) != 0) {
		tt_err_errno(err, "cannot remove old checkpoint directory %s", dir);
		goto out;
	}
	rc = 0;
out:
	if (d)
		closedir(d);
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* Whether step directory `step` under rfd holds a valid checkpoint (why: the reason it does not;
 * a link or a foreign directory is never valid). */
static int valid_step(int rfd, const char *root, long step, tt_err *why)
{
	char dir[4096];
	tt_ckpt_meta meta;
	int sfd = open_step(rfd, root, step, 0, dir, sizeof(dir), why), rc;

	if (sfd < 0)
		return 0;
	rc = validate_at(sfd, dir, &meta, why) == 0;
	if (rc)
		tt_ckpt_meta_free(&meta);
	close(sfd);
	return rc;
}

int tt_ckpt_remove_torn(const char *root, long from_step, char *note, size_t note_len, tt_err *err)
{
	long *steps;
	int n, rc = 0, rfd;

	if (note && note_len)
		note[0] = '\0';
	rfd = open_steps(root, &steps, &n, err);
	if (rfd < 0)
		return rfd == -2 ? 0 : -1;
	for (int i = 0; i < n && rc == 0; i++) {
		char dir[4096], name[32];
		tt_err why;

		if (steps[i] < from_step || valid_step(rfd, root, steps[i], &why))
			continue;
		tt_ckpt_step_dir(dir, sizeof(dir), root, steps[i]);
		step_name(name, sizeof(name), steps[i]);
		rc = remove_step(rfd, root, name, err);
		if (rc == 0)
			add_line(note, note_len, "removed torn checkpoint", dir, why.msg);
	}
	free(steps);
	close(rfd);
	return rc;
}

int tt_ckpt_prune(const char *root, int keep, tt_err *err)
{
	long *steps;
	int n, kept = 0, rc = 0, rfd;

	if (keep <= 0)
		return 0;
	rfd = open_steps(root, &steps, &n, err);
	if (rfd < 0)
		return rfd == -2 ? 0 : -1;
	for (int i = 0; i < n && rc == 0; i++) {
		char name[32];
		tt_err why;

		if (kept < keep) {
			/* Torn directories newer than the kept ones may still be being written: leave them. */
			kept += valid_step(rfd, root, steps[i], &why);
			continue;
		}
		step_name(name, sizeof(name), steps[i]);
		rc = remove_step(rfd, root, name, err);
	}
	free(steps);
	close(rfd);
	return rc;
}

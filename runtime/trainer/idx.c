/* SPDX-License-Identifier: MIT */
/* idx.c — IDX (MNIST format) reading through zlib's gzread (see idx.h). Memory follows the data
 * actually present, never what a header claims: a plain file's size is checked against the header
 * before anything is allocated, and a gzip'd one is read into a buffer that grows as data comes. */
#include "idx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#define TT_IDX_MAX_BYTES ((size_t)1 << 34)

static int read_exact(gzFile f, void *buf, size_t len, const char *path, const char *what, tt_err *err)
{
	uint8_t *p = buf;

	while (len > 0) {
		unsigned chunk = len > (1u << 30) ? (1u << 30) : (unsigned)len;
		int got = gzread(f, p, chunk);
		int zerr;

		if (got < 0)
			return tt_err_set(err, "%s: cannot read the %s: %s", path, what, gzerror(f, &zerr));
		if (got == 0)
			return tt_err_set(err, "%s: file ends inside the %s; the download is truncated, fetch it again",
					  path, what);
		p += got;
		len -= (size_t)got;
	}
	return 0;
}

static int trailing_bytes(const char *path, size_t n_bytes, tt_err *err)
{
	return tt_err_set(err, "%s: trailing bytes after the %zu-byte tensor the header announces; the file is corrupt",
			  path, n_bytes);
}

/* A plain (not gzip'd) file must hold exactly the header and the data it announces. */
static int check_plain_size(const char *path, off_t file_size, size_t header, size_t n_bytes, tt_err *err)
{
	if ((uint64_t)file_size < header + (uint64_t)n_bytes)
		return tt_err_set(err, "%s: file ends inside the IDX data (the header announces %zu bytes, the file holds "
				  "%lld); the download is truncated, fetch it again", path, n_bytes,
				  (long long)file_size - (long long)header);
	if ((uint64_t)file_size > header + (uint64_t)n_bytes)
		return trailing_bytes(path, n_bytes, err);
	return 0;
}

/* Reads the n_bytes of data, growing the buffer only as bytes arrive (doubling from 1 MiB). */
static int read_data(gzFile f, tt_idx *out, const char *path, tt_err *err)
{
	size_t cap = out->n_bytes < ((size_t)1 << 20) ? out->n_bytes : (size_t)1 << 20, got = 0;

	out->data = malloc(cap);
	if (!out->data)
		return tt_err_set(err, "%s: cannot allocate %zu bytes for the tensor", path, cap);
	while (got < out->n_bytes) {
		if (got == cap) {
			size_t grown = cap * 2 < out->n_bytes ? cap * 2 : out->n_bytes;
			uint8_t *p = realloc(out->data, grown);

			if (!p)
				return tt_err_set(err, "%s: cannot allocate %zu bytes for the tensor", path, grown);
			out->data = p;
			cap = grown;
		}
		if (read_exact(f, out->data + got, cap - got, path, "IDX data", err))
			return -1;
		got = cap;
	}
	return 0;
}

int tt_idx_read(const char *path, tt_idx *out, tt_err *err)
{
	uint8_t magic[4], extra;
	struct stat st;
	gzFile f;
	int rc = -1, fd;

	memset(out, 0, sizeof(*out));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tt_err_errno(err, "cannot open IDX file %s", path);
	if (fstat(fd, &st) != 0 || !(f = gzdopen(fd, "rb"))) {
		tt_err_errno(err, "cannot read IDX file %s", path);
		close(fd);
		return -1;
	}
	if (read_exact(f, magic, 4, path, "IDX header", err))
		goto fail;
	if (magic[0] || magic[1] || magic[2] != 0x08 || magic[3] < 1 || magic[3] > TT_IDX_MAX_DIMS) {
		tt_err_set(err, "%s: not an unsigned-byte IDX file (magic %02x%02x%02x%02x, want 000008 then 1..%d "
			   "dimensions)", path, magic[0], magic[1], magic[2], magic[3], TT_IDX_MAX_DIMS);
		goto fail;
	}
	out->n_dims = magic[3];
	out->n_bytes = 1;
	for (int i = 0; i < out->n_dims; i++) {
		uint8_t be[4];

		if (read_exact(f, be, 4, path, "IDX dimensions", err))
			goto fail;
		out->dims[i] = (uint32_t)be[0] << 24 | (uint32_t)be[1] << 16 | (uint32_t)be[2] << 8 | be[3];
		if (out->dims[i] == 0 || out->n_bytes > TT_IDX_MAX_BYTES / out->dims[i]) {
			tt_err_set(err, "%s: dimension %d is %u, which is empty or too large; the header is corrupt",
				   path, i, out->dims[i]);
			goto fail;
		}
		out->n_bytes *= out->dims[i];
	}
	if (gzdirect(f) && S_ISREG(st.st_mode) &&
	    check_plain_size(path, st.st_size, 4 + 4 * (size_t)out->n_dims, out->n_bytes, err))
		goto fail;
	if (read_data(f, out, path, err))
		goto fail;
	if (gzread(f, &extra, 1) != 0) {
		trailing_bytes(path, out->n_bytes, err);
		goto fail;
	}
	rc = 0;
fail:
	gzclose(f);
	if (rc)
		tt_idx_free(out);
	return rc;
}

void tt_idx_free(tt_idx *t)
{
	free(t->data);
	t->data = NULL;
}

/* idx.c — IDX (MNIST format) reading through zlib's gzread (see idx.h). */
#include "idx.h"

#include <stdlib.h>
#include <string.h>
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

/* The header's size is only a claim: the buffer grows with the data actually read (1 MiB, then
 * doubling), so a corrupt header cannot make the reader allocate gigabytes before the file ends. */
static int read_tensor(gzFile f, tt_idx *out, const char *path, tt_err *err)
{
	size_t have = 0, cap = 0;

	while (have < out->n_bytes) {
		size_t part;

		if (have == cap) {
			size_t grown = cap ? 2 * cap : (size_t)1 << 20;
			uint8_t *bigger;

			if (grown > out->n_bytes)
				grown = out->n_bytes;
			bigger = realloc(out->data, grown);
			if (!bigger)
				return tt_err_set(err, "%s: cannot allocate %zu bytes for the tensor", path, grown);
			out->data = bigger;
			cap = grown;
		}
		part = cap - have;
		if (read_exact(f, out->data + have, part, path, "IDX data", err))
			return -1;
		have += part;
	}
	return 0;
}

int tt_idx_read(const char *path, tt_idx *out, tt_err *err)
{
	uint8_t magic[4], extra;
	gzFile f;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	f = gzopen(path, "rb");
	if (!f)
		return tt_err_errno(err, "cannot open IDX file %s", path);
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
	if (read_tensor(f, out, path, err))
		goto fail;
	if (gzread(f, &extra, 1) != 0) {
		tt_err_set(err, "%s: trailing bytes after the %zu-byte tensor the header announces; the file is corrupt",
			   path, out->n_bytes);
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

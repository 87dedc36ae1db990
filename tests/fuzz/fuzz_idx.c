/* SPDX-License-Identifier: MIT */
/* fuzz_idx.c — IDX tensors, plain or gzip'd (runtime/trainer/idx): the input is the file. A tensor that
 * is read must hold exactly the bytes its dimensions announce; a bad header or a short file is an
 * error with a message, never a huge allocation or a read past the data. */
#include "idx.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	int fd = fuzz_memfile(data, size, path, sizeof(path));
	tt_idx t;
	tt_err err = { "" };
	volatile uint8_t touched;

	if (tt_idx_read(path, &t, &err) == 0) {
		size_t product = 1;

		FUZZ_CHECK(t.n_dims >= 1 && t.n_dims <= TT_IDX_MAX_DIMS && t.data);
		for (int i = 0; i < t.n_dims; i++)
			product *= t.dims[i];
		FUZZ_CHECK(product == t.n_bytes && t.n_bytes > 0);
		/* Read both ends: ASan or valgrind catch a buffer shorter than n_bytes. */
		touched = t.data[0] ^ t.data[t.n_bytes - 1];
		tt_idx_free(&t);
	} else {
		FUZZ_CHECK(err.msg[0] != '\0' && t.data == NULL);
	}
	close(fd);
	(void)touched;
	return 0;
}

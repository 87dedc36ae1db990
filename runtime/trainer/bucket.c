/* SPDX-License-Identifier: MIT */
/* bucket.c — reverse-order gradient bucket assignment (see bucket.h). */
#include "bucket.h"

int tt_bucket_plan(const size_t *off, int n_layers, size_t elem_size, size_t first_cap, size_t cap, tt_bucket *out,
		   int max_out)
{
	int n = 0;
	int hi = n_layers - 1;

	for (int l = n_layers - 1; l >= 0; l--) {
		size_t bytes = (off[hi + 1] - off[l]) * elem_size;
		size_t limit = n == 0 ? first_cap : cap;

		if (bytes >= limit || l == 0) {
			if (n == max_out)
				return -1;
			out[n].lo_layer = l;
			out[n].hi_layer = hi;
			out[n].off = off[l];
			out[n].len = off[hi + 1] - off[l];
			n++;
			hi = l - 1;
		}
	}
	return n;
}

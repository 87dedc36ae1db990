/* SPDX-License-Identifier: MIT */
/* fuzz_sweep_grid.c — sweep files (sweep/sweep_grid): the input is the file's text. A grid that
 * parses must have as many points as the product of its axes, give a shell-safe value for every
 * axis at every point asked, and map its own point numbers back to themselves; an error is one
 * line (it names one line of the file). */
#include "sweep_grid.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), number[32];
	const char *last_line = strrchr(text, '\n');
	struct sweep_grid grid;
	tt_err err = { "" };
	long product = 1, index;

	if (sweep_grid_parse(text, "fuzz.sweep", &grid, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0' && strchr(err.msg, '\n') == NULL);
		FUZZ_CHECK(grid.naxes == 0 && grid.axes == NULL);
		goto out;
	}
	for (size_t a = 0; a < grid.naxes; a++) {
		FUZZ_CHECK(grid.axes[a].nvalues > 0 && grid.axes[a].key[0]);
		product *= (long)grid.axes[a].nvalues;
	}
	FUZZ_CHECK(product == grid.npoints && grid.npoints <= SWEEP_MAX_POINTS);
	for (long probe = 0; probe < 3; probe++) {
		long point = probe == 0 ? 0 : probe == 1 ? grid.npoints - 1 : (long)(size % (size_t)grid.npoints);

		for (size_t a = 0; a < grid.naxes; a++) {
			const char *v = sweep_grid_value(&grid, point, a);

			FUZZ_CHECK(v && v[0] && strspn(v, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
						       "0123456789._+-:/,") == strlen(v));
		}
		snprintf(number, sizeof(number), "%ld", point);
		FUZZ_CHECK(sweep_grid_index(&grid, number, &index, &err) == 0 && index == point);
	}
	snprintf(number, sizeof(number), "%ld", grid.npoints);
	FUZZ_CHECK(sweep_grid_index(&grid, number, &index, &err) != 0);
	/* The last line of the input as an array task id: any text. */
	if (sweep_grid_index(&grid, last_line ? last_line + 1 : text, &index, &err) == 0)
		FUZZ_CHECK(index >= 0 && index < grid.npoints);
	sweep_grid_free(&grid);
out:
	free(text);
	return 0;
}

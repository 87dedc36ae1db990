/* SPDX-License-Identifier: MIT */
/* fuzz_sweep_summary.c — train-mlp's JSON summary as train-sweep reads it (sweep/sweep_summary):
 * the input is the file's text. A summary that parses must have a NUL-terminated CRC field,
 * non-negative counts and a history array as long as it says; an error has a message and leaves
 * nothing allocated. */
#include "sweep_summary.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct sweep_summary sum;
	tt_err err = { "" };

	if (sweep_summary_parse(text, &sum, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0' && sum.history == NULL && sum.nhistory == 0);
		goto out;
	}
	FUZZ_CHECK(memchr(sum.weights_crc32, '\0', sizeof(sum.weights_crc32)) != NULL);
	FUZZ_CHECK((sum.nhistory == 0) == (sum.history == NULL));
	/* Counts stay counts (an out-of-range double cast to long is undefined; x86 gives LONG_MIN). */
	FUZZ_CHECK(sum.steps >= 0 && sum.world_size >= 0);
	for (size_t i = 0; i < sum.nhistory; i++)
		FUZZ_CHECK(sum.history[i].step >= 0);
	sweep_summary_free(&sum);
out:
	free(text);
	return 0;
}

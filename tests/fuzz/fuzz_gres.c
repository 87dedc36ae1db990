/* SPDX-License-Identifier: MIT */
/* fuzz_gres.c — the GPUs of a node from Slurm's GRES variables (layout/gres): the input is an
 * environment, one NAME=VALUE per line. Whatever list is accepted must survive a join and a
 * re-parse unchanged (it goes back into CUDA_VISIBLE_DEVICES), and no lookup may leave the list. */
#include "gres.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct tt_gpu_list visible, again;
	static char joined[TT_GPU_MAX * TT_GPU_ID_LEN];
	char *text = fuzz_cstr(data, size), checked[160], small[24];
	size_t checked_len = size % sizeof(checked), first, count;
	int n;
	char **env = fuzz_split(text, "\n", NULL, &n);
	tt_err err = { "" };
	bool bound;

	if (tt_gres_node_gpus(tt_env_array, env, &visible, checked, checked_len, &err) != 0) {
		FUZZ_CHECK(err.msg[0] != '\0');
		goto out;
	}
	FUZZ_CHECK(visible.n <= TT_GPU_MAX);
	FUZZ_CHECK(tt_gpu_list_join(&visible, 0, visible.n, joined, sizeof(joined), &err) == 0);
	FUZZ_CHECK(tt_gpu_list_parse("joined", joined, &again, &err) == 0 && again.n == visible.n);
	for (size_t i = 0; i < visible.n; i++) {
		int node = tt_gres_node_index(tt_env_array, env, &visible, visible.id[i]);

		FUZZ_CHECK(strcmp(again.id[i], visible.id[i]) == 0);
		FUZZ_CHECK(node >= -1 && node < TT_GPU_MAX);
	}
	/* A slice into a buffer too small for most lists: an error, never an overflow. */
	first = visible.n ? data[0] % (visible.n + 1) : 0;
	count = visible.n - first;
	if (tt_gpu_list_join(&visible, first, count, small, sizeof(small), &err) == 0)
		FUZZ_CHECK(strlen(small) < sizeof(small));
	if (tt_gres_bound_per_task(tt_env_array, env, &visible, &bound, &err) != 0)
		FUZZ_CHECK(err.msg[0] != '\0');
	for (char **e = env; *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq)
			FUZZ_CHECK(tt_gres_node_index(tt_env_array, env, &visible, eq + 1) < TT_GPU_MAX);
	}
out:
	free(env);
	free(text);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* fuzz_train_opts.c — train-mlp's command line (runtime/trainer/train_opts) and its --layers spec
 * (runtime/trainer/mlp): the input is the argument list, one argument per line, after argv[0]. Parsing the
 * same list twice must give the same answer (getopt keeps state between calls), an error must name
 * an argument, accepted options must be usable numbers, and an accepted --layers must describe at
 * least one layer. */
#include "mlp.h"
#include "train_opts.h"

#include "fuzz_util.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	int argc, rc[2];
	char **argv = fuzz_split(text, "\n", "train-mlp", &argc);
	char **copy = fuzz_vector_copy(argv, argc);
	tt_train_opts o[2];
	tt_err err[2] = { { "" }, { "" } };
	tt_mlp model;

	rc[0] = tt_train_opts_parse(&o[0], argc, argv, &err[0]);
	rc[1] = tt_train_opts_parse(&o[1], argc, copy, &err[1]);
	FUZZ_CHECK(rc[0] == rc[1] && strcmp(err[0].msg, err[1].msg) == 0);
	/* An error names what the user wrote, never the program's own name (argv[0]). */
	if (rc[0] < 0) {
		FUZZ_CHECK(err[0].msg[0] != '\0');
		FUZZ_CHECK(!strstr(err[0].msg, "'train-mlp'") || memmem(data, size, "train-mlp", 9));
	}
	if (rc[0] != 0)
		goto out;
	FUZZ_CHECK(o[0].layers && o[0].data && o[0].batch >= 1 && o[0].accum >= 1 && o[0].batch % o[0].accum == 0);
	FUZZ_CHECK(isfinite(o[0].lr) && isfinite(o[0].weight_decay) && o[0].bucket_mb > 0);
	FUZZ_CHECK(o[0].beta1 >= 0 && o[0].beta1 < 1 && o[0].beta2 >= 0 && o[0].beta2 < 1);
	FUZZ_CHECK(o[0].zero >= 0 && o[0].zero <= 3 && o[0].signal > 0);
	if (tt_mlp_parse(&model, o[0].layers, &err[0]) == 0)
		FUZZ_CHECK(model.n_layers >= 1 && model.n_layers <= TT_MLP_MAX_LAYERS && model.n_params > 0);
	else
		FUZZ_CHECK(err[0].msg[0] != '\0');
out:
	free(copy);
	free(argv);
	free(text);
	return 0;
}

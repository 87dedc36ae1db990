/* SPDX-License-Identifier: MIT */
/* fuzz_options.c — train-run's command line (wrapper/options): the input is the argument list,
 * one argument per line, after argv[0]. Parsing the same list twice must give the same answer
 * (getopt keeps state between calls), an error must name an argument, accepted numbers must lie
 * in their documented ranges, and PROGRAM must be part of argv. */
#include "options.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	int argc, rc[2];
	char **argv = fuzz_split(text, "\n", "train-run", &argc);
	char **copy = fuzz_vector_copy(argv, argc);
	struct tt_run_opts opts[2];
	tt_err err[2] = { { "" }, { "" } };

	rc[0] = tt_run_parse_args(&opts[0], argc, argv, &err[0]);
	rc[1] = tt_run_parse_args(&opts[1], argc, copy, &err[1]);
	FUZZ_CHECK(rc[0] == rc[1] && strcmp(err[0].msg, err[1].msg) == 0);
	if (rc[0] != 0) {
		/* An error names what the user wrote, never the program's own name (argv[0]). */
		FUZZ_CHECK(err[0].msg[0] != '\0');
		FUZZ_CHECK(!strstr(err[0].msg, "'train-run'") || memmem(data, size, "train-run", 9));
		goto out;
	}
	FUZZ_CHECK(opts[0].argc == opts[1].argc && opts[0].nproc == opts[1].nproc);
	FUZZ_CHECK(opts[0].argc >= 0 && opts[0].argc < argc && opts[0].argv[opts[0].argc] == NULL);
	if (opts[0].help || opts[0].version)
		goto out;
	FUZZ_CHECK(opts[0].argc >= 1 && opts[0].argv[0] != NULL);
	FUZZ_CHECK(opts[0].nproc_mode != TT_NPROC_COUNT || opts[0].nproc >= 1);
	FUZZ_CHECK(opts[0].master_port >= 0 && opts[0].master_port <= 65535);
	FUZZ_CHECK(opts[0].grace_s >= 0 && opts[0].max_restarts >= 0);
	(void)tt_run_wants_python(&opts[0]);
out:
	free(copy);
	free(argv);
	free(text);
	return 0;
}

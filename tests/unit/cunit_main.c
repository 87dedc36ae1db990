/* SPDX-License-Identifier: MIT */
/* cunit_main.c — shared main() for the CUnit test programs (see cunit_main.h). */
#include "cunit_main.h"

#include <CUnit/Basic.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *tt_test_srcdir(void)
{
	const char *dir = getenv("TT_TEST_SRCDIR");

	return dir && *dir ? dir : ".";
}

const char *tt_test_shared_dir(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("TT_SHARED_DIR");
	struct stat st;

	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else
		snprintf(path, sizeof(path), "%s/../shared", tt_test_srcdir());
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		return NULL;
	return path;
}

static char skip_reasons[2048];
static unsigned int skips;

void tt_test_skip(const char *fmt, ...)
{
	size_t used = strlen(skip_reasons);
	char why[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	printf("\n  SKIP: %s ", why);
	snprintf(skip_reasons + used, sizeof(skip_reasons) - used, "%s%s", skips ? "; " : "", why);
	skips++;
}

long tt_test_proc_kib(int pid, const char *field)
{
	char path[64], line[256];
	size_t len = strlen(field);
	long kib = -1;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/status", pid);
	else
		snprintf(path, sizeof(path), "/proc/self/status");
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, field, len) == 0 && line[len] == ':')
			kib = atol(line + len + 1);
	if (f)
		fclose(f);
	return kib;
}

int main(void)
{
	unsigned int failures, suites_failed;

	if (CU_initialize_registry() != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: cannot initialise the registry: %s\n", CU_get_error_msg());
		return 2;
	}
	if (tt_register_suites() != 0 || CU_get_error() != CUE_SUCCESS) {
		fprintf(stderr, "CUnit: cannot register suites: %s\n", CU_get_error_msg());
		CU_cleanup_registry();
		return 2;
	}
	CU_basic_set_mode(CU_BRM_NORMAL);
	CU_basic_run_tests();
	failures = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
	/* A suite whose setup failed ran none of its tests: that is a failure, never a pass. */
	suites_failed = CU_get_number_of_suites_failed();
	CU_cleanup_registry();
	if (suites_failed)
		fprintf(stderr, "FAIL: %u suite setup(s) failed, so their tests did not run\n", suites_failed);
	if (failures || suites_failed)
		return 1;
	if (skips) {
		printf("SKIP: %s\n", skip_reasons);
		return 77;
	}
	return 0;
}

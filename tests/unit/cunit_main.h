/* SPDX-License-Identifier: MIT */
/* cunit_main.h — the one main() every CUnit test program shares.
 * A test program defines tt_register_suites() (add its suites to the registry, return 0 or -1);
 * cunit_main.c runs them in CUnit's basic mode, prints CUnit's summary and exits 1 on any failed
 * assertion or test and on any suite whose setup failed (its tests never ran), else 77 (automake's
 * SKIP) when a test called tt_test_skip, else 0. TT_TEST_SRCDIR (set by make check) points at the
 * source tree for fixtures. */
#ifndef TT_CUNIT_MAIN_H
#define TT_CUNIT_MAIN_H

#include <CUnit/CUnit.h>

int tt_register_suites(void);

/* Directory of the source tree (fixtures live under tests/fixtures). */
const char *tt_test_srcdir(void);

/* Ends nothing by itself: records that the calling test could not check what it names, with the
 * reason (printf format), and prints it; the test returns right after. The program then exits 77
 * with every reason on a "SKIP:" line, unless something failed. */
void tt_test_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A "Name: N kB" field of /proc/PID/status (VmRSS, VmSize, ...) in KiB; pid 0 is this process.
 * -1 when it cannot be read. */
long tt_test_proc_kib(int pid, const char *field);

/* ../shared beside the checkout when present, else NULL (tests then skip that part). */
const char *tt_test_shared_dir(void);

#endif

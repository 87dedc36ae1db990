/* cunit_main.h — the one main() every CUnit test program shares.
 * A test program defines tt_register_suites() (add its suites to the registry, return 0 or -1);
 * cunit_main.c runs them in CUnit's basic mode, prints CUnit's summary and exits non-zero on any
 * failure. TT_TEST_SRCDIR (set by make check) points at the source tree for fixtures. */
#ifndef TT_CUNIT_MAIN_H
#define TT_CUNIT_MAIN_H

#include <CUnit/CUnit.h>

int tt_register_suites(void);

/* Directory of the source tree (fixtures live under tests/fixtures). */
const char *tt_test_srcdir(void);

/* A "Name: N kB" field of /proc/PID/status (VmRSS, VmSize, ...) in KiB; pid 0 is this process.
 * -1 when it cannot be read. */
long tt_test_proc_kib(int pid, const char *field);

/* ../shared beside the checkout when present, else NULL (tests then skip that part). */
const char *tt_test_shared_dir(void);

#endif

/* cunit_main.h — the one main() every CUnit test program shares.
 * A test program defines tt_register_suites() (add its suites to the registry, return 0 or -1,
 * or TT_TEST_SKIP after printing "SKIP: why" when the whole program cannot run here);
 * cunit_main.c runs them in CUnit's basic mode, prints CUnit's summary and exits non-zero on any
 * failure. TT_TEST_SRCDIR (set by make check) points at the source tree for fixtures. */
#ifndef TT_CUNIT_MAIN_H
#define TT_CUNIT_MAIN_H

#include <CUnit/CUnit.h>

/* automake's exit status for a skipped test. */
#define TT_TEST_SKIP 77

int tt_register_suites(void);

/* Directory of the source tree (fixtures live under tests/fixtures). */
const char *tt_test_srcdir(void);

/* ../shared beside the checkout when present, else NULL (tests then skip that part). */
const char *tt_test_shared_dir(void);

#endif

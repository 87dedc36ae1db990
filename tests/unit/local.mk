# tests/unit/: CUnit programs, one per module, all sharing cunit_main.c. `make check` runs them.
AM_TESTS_ENVIRONMENT = TT_TEST_SRCDIR='$(abs_top_srcdir)'; export TT_TEST_SRCDIR;
UNIT_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
UNIT_LDADD = libtopo.la $(CUNIT_LIBS)

check_PROGRAMS += tests/unit/test_err
tests_unit_test_err_SOURCES = tests/unit/test_err.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_err_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_err_LDADD = $(UNIT_LDADD)

TESTS += $(check_PROGRAMS)

# libtrainrt communication: pure kernels/store, and forked multi-rank worlds (comm_harness).
check_PROGRAMS += tests/unit/test_comm
tests_unit_test_comm_SOURCES = tests/unit/test_comm.c tests/unit/comm_harness.c \
	tests/unit/comm_harness.h tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_comm_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_comm_LDADD = libtrainrt.la $(UNIT_LDADD) -lm
check_PROGRAMS += tests/unit/test_rt_reduce tests/unit/test_rt_store
tests_unit_test_rt_reduce_SOURCES = tests/unit/test_rt_reduce.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_reduce_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_reduce_LDADD = libtrainrt.la $(UNIT_LDADD) -lm
tests_unit_test_rt_store_SOURCES = tests/unit/test_rt_store.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_rt_store_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_rt_store_LDADD = libtrainrt.la $(UNIT_LDADD)

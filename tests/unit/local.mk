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

# trainer: model math, optimizer, data, bucket/shard plans, checkpoints
TRAIN_UNIT_LDADD = libtrainmodel.la $(UNIT_LDADD)
check_PROGRAMS += tests/unit/test_mlp tests/unit/test_adamw tests/unit/test_idx tests/unit/test_dpplan \
	tests/unit/test_ckpt tests/unit/test_train_opts
tests_unit_test_mlp_SOURCES = tests/unit/test_mlp.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_mlp_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_mlp_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_adamw_SOURCES = tests/unit/test_adamw.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_adamw_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_adamw_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_idx_SOURCES = tests/unit/test_idx.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_idx_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_idx_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_dpplan_SOURCES = tests/unit/test_dpplan.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_dpplan_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_dpplan_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_ckpt_SOURCES = tests/unit/test_ckpt.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_ckpt_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_ckpt_LDADD = $(TRAIN_UNIT_LDADD)
tests_unit_test_train_opts_SOURCES = tests/unit/test_train_opts.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_train_opts_CFLAGS = $(UNIT_CFLAGS)
tests_unit_test_train_opts_LDADD = $(TRAIN_UNIT_LDADD)
check_PROGRAMS += tests/unit/test_dp
tests_unit_test_dp_SOURCES = tests/unit/test_dp.c tests/unit/cunit_main.c tests/unit/cunit_main.h
tests_unit_test_dp_CFLAGS = $(UNIT_CFLAGS) $(OPENBLAS_CFLAGS)
tests_unit_test_dp_LDADD = libtrainrt.la libtrainmodel.la $(UNIT_LDADD) -lm

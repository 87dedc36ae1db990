# tests/fuzz/: the store's libFuzzer target (the fuzzing framework's local.mk holds the others and
# FUZZ_LDADD; its seeds are in corpus/store/, the inputs that once crashed it in regress/store/).
FUZZ_TARGETS += store
check_PROGRAMS += tests/fuzz/fuzz_store
tests_fuzz_fuzz_store_SOURCES = tests/fuzz/fuzz_store.c
tests_fuzz_fuzz_store_LDADD = $(FUZZ_LDADD) libtrainrt.la libtopo.la

# SPDX-License-Identifier: MIT
# tests/fuzz/: libFuzzer harnesses, one per parser (fuzz_NAME.c defines LLVMFuzzerTestOneInput),
# with seed inputs in corpus/NAME/ and every input that once crashed it in regress/NAME/.
#   make fuzz                  builds the harnesses with clang -fsanitize=fuzzer,address,undefined
#                              in fuzz-build/ and runs each FUZZ_SECONDS (default 60) from its
#                              corpus; crashes land in fuzz-crashes/NAME/ and make fails
#   make fuzz-smoke            the same, 5 seconds each (scripts/test.sh, so CI, runs it)
#   make fuzz FUZZ_TARGETS='hostlist gres'   only those
#   make check                 replays every corpus and regression input (gcc, no libFuzzer)
# A new target NAME: tests/fuzz/fuzz_NAME.c, at least one seed in corpus/NAME/, optionally a
# libFuzzer dictionary NAME.dict (add it to FUZZ_DICTS), and these four lines (the libraries it
# tests after FUZZ_LDADD):
#   FUZZ_TARGETS += NAME
#   check_PROGRAMS += tests/fuzz/fuzz_NAME
#   tests_fuzz_fuzz_NAME_SOURCES = tests/fuzz/fuzz_NAME.c tests/fuzz/fuzz_util.h
#   tests_fuzz_fuzz_NAME_LDADD = $(FUZZ_LDADD) libttbase.la
FUZZ_TARGETS =
FUZZ_SECONDS = 60
FUZZ_SMOKE_SECONDS = 5

# Without --enable-fuzzing each harness is linked with replay_main.c, a check program that runs it
# on its corpus and regression inputs; with it, libFuzzer supplies main().
if FUZZING
FUZZ_LDADD = $(FUZZER_LINK)
else
check_LTLIBRARIES += libfuzzreplay.la
libfuzzreplay_la_SOURCES = tests/fuzz/replay_main.c
libfuzzreplay_la_CPPFLAGS = $(AM_CPPFLAGS) -DTT_FUZZ_SRCDIR='"$(abs_top_srcdir)"'
FUZZ_LDADD = libfuzzreplay.la
endif
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus tests/fuzz/regress $(FUZZ_DICTS)

FUZZ_TARGETS += hostlist
check_PROGRAMS += tests/fuzz/fuzz_hostlist
tests_fuzz_fuzz_hostlist_SOURCES = tests/fuzz/fuzz_hostlist.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_hostlist_LDADD = $(FUZZ_LDADD) libttlayout.la libttbase.la

FUZZ_TARGETS += gres
check_PROGRAMS += tests/fuzz/fuzz_gres
tests_fuzz_fuzz_gres_SOURCES = tests/fuzz/fuzz_gres.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_gres_LDADD = $(FUZZ_LDADD) libttlayout.la libttbase.la

FUZZ_TARGETS += layout
check_PROGRAMS += tests/fuzz/fuzz_layout
tests_fuzz_fuzz_layout_SOURCES = tests/fuzz/fuzz_layout.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_layout_LDADD = $(FUZZ_LDADD) libttlayout.la libttbase.la

FUZZ_TARGETS += plugin_config
check_PROGRAMS += tests/fuzz/fuzz_plugin_config
tests_fuzz_fuzz_plugin_config_SOURCES = tests/fuzz/fuzz_plugin_config.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_plugin_config_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/spank
tests_fuzz_fuzz_plugin_config_LDADD = $(FUZZ_LDADD) libttspank.la libttlayout.la libttbase.la

FUZZ_TARGETS += node_policy
check_PROGRAMS += tests/fuzz/fuzz_node_policy
tests_fuzz_fuzz_node_policy_SOURCES = tests/fuzz/fuzz_node_policy.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_node_policy_LDADD = $(FUZZ_LDADD) libttlayout.la libttbase.la

if BUILD_SWEEP
FUZZ_TARGETS += sweep_grid
check_PROGRAMS += tests/fuzz/fuzz_sweep_grid
tests_fuzz_fuzz_sweep_grid_SOURCES = tests/fuzz/fuzz_sweep_grid.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_sweep_grid_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sweep
tests_fuzz_fuzz_sweep_grid_LDADD = $(FUZZ_LDADD) libsweep.la libttbase.la

FUZZ_TARGETS += sweep_summary
check_PROGRAMS += tests/fuzz/fuzz_sweep_summary
tests_fuzz_fuzz_sweep_summary_SOURCES = tests/fuzz/fuzz_sweep_summary.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_sweep_summary_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sweep
tests_fuzz_fuzz_sweep_summary_LDADD = $(FUZZ_LDADD) libsweep.la libttbase.la
endif

if BUILD_LAUNCHER
FUZZ_TARGETS += options
check_PROGRAMS += tests/fuzz/fuzz_options
tests_fuzz_fuzz_options_SOURCES = tests/fuzz/fuzz_options.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_options_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/wrapper
tests_fuzz_fuzz_options_LDADD = $(FUZZ_LDADD) libwrapper.la libttlayout.la libttbase.la

FUZZ_TARGETS += nodechan
check_PROGRAMS += tests/fuzz/fuzz_nodechan
tests_fuzz_fuzz_nodechan_SOURCES = tests/fuzz/fuzz_nodechan.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_nodechan_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/wrapper -I$(top_srcdir)/runtime/comm
tests_fuzz_fuzz_nodechan_LDADD = $(FUZZ_LDADD) libwrapper.la libttlayout.la libttbase.la
endif

if BUILD_TRAINER
FUZZ_TARGETS += train_opts
check_PROGRAMS += tests/fuzz/fuzz_train_opts
tests_fuzz_fuzz_train_opts_SOURCES = tests/fuzz/fuzz_train_opts.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_train_opts_LDADD = $(FUZZ_LDADD) libtrainmodel.la libttbase.la

FUZZ_TARGETS += idx
check_PROGRAMS += tests/fuzz/fuzz_idx
tests_fuzz_fuzz_idx_SOURCES = tests/fuzz/fuzz_idx.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_idx_LDADD = $(FUZZ_LDADD) libtrainmodel.la libttbase.la

FUZZ_TARGETS += ckpt
check_PROGRAMS += tests/fuzz/fuzz_ckpt
tests_fuzz_fuzz_ckpt_SOURCES = tests/fuzz/fuzz_ckpt.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_ckpt_LDADD = $(FUZZ_LDADD) libtrainmodel.la libttbase.la
endif

if BUILD_TOPO
FUZZ_TARGETS += hwloc
check_PROGRAMS += tests/fuzz/fuzz_hwloc
tests_fuzz_fuzz_hwloc_SOURCES = tests/fuzz/fuzz_hwloc.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_hwloc_LDADD = $(FUZZ_LDADD) libtthw.la libttbase.la
endif

if BUILD_TRAINRT
FUZZ_TARGETS += store
check_PROGRAMS += tests/fuzz/fuzz_store
tests_fuzz_fuzz_store_SOURCES = tests/fuzz/fuzz_store.c tests/fuzz/fuzz_util.h
tests_fuzz_fuzz_store_LDADD = $(FUZZ_LDADD) libtrainrt_core.la libttbase.la
endif

# ---- make fuzz ---------------------------------------------------------------------------------
FUZZ_DICTS = tests/fuzz/node_policy.dict tests/fuzz/gres.dict tests/fuzz/layout.dict tests/fuzz/options.dict tests/fuzz/train_opts.dict \
	tests/fuzz/plugin_config.dict
FUZZ_RUN = $(top_srcdir)/tests/fuzz/run.sh --seconds $(FUZZ_SECONDS) --srcdir $(abs_top_srcdir) \
	--crashes $(FUZZ_CRASHES) --work $(abs_top_builddir)/fuzz-work $(FUZZ_TARGETS)
FUZZ_CRASHES = $(abs_top_builddir)/fuzz-crashes
if FUZZING
# This tree is the instrumented one: build the harnesses and run them here.
fuzz:
	@progs=; for t in $(FUZZ_TARGETS); do progs="$$progs tests/fuzz/fuzz_$$t$(EXEEXT)"; done; \
	  $(MAKE) $(AM_MAKEFLAGS) $$progs
	$(FUZZ_RUN)
else
# A normal tree: configure a copy of the sources in fuzz-build/ with clang --enable-fuzzing once,
# then build and run there (only what changed is copied and rebuilt on later runs).
fuzz:
	@if test -z "$(FUZZ_CC)"; then echo "make fuzz: $(FUZZ_MISSING); then run configure again" >&2; exit 1; fi
	mkdir -p fuzz-build/src
	dest=$(abs_top_builddir)/fuzz-build/src; $(TT_COPY_TREE)
	cd fuzz-build/src && if test ! -f Makefile; then \
	  autoreconf -fi >/dev/null 2>&1 && \
	  ./configure CC="$(FUZZ_CC)" --enable-fuzzing --enable-werror --without-cuda >/dev/null; fi
	cd fuzz-build/src && $(MAKE) $(AM_MAKEFLAGS) fuzz FUZZ_SECONDS='$(FUZZ_SECONDS)' \
	  FUZZ_TARGETS='$(FUZZ_TARGETS)' FUZZ_CRASHES='$(FUZZ_CRASHES)'
endif
fuzz-smoke:
	$(MAKE) $(AM_MAKEFLAGS) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)
.PHONY: fuzz fuzz-smoke

# SPDX-License-Identifier: MIT
# wrapper/: train-run, the GRES-aware launcher. Its pure logic (process table and exit policy,
# output line splitting, option parsing, the node channel, the heartbeat rules) is a convenience
# library the unit tests link too. The node channel proves the job key as libtrainrt does:
# rt_token.c, the key's derivation and proofs, is compiled in here from runtime/comm/ (not
# copied), without the rest of libtrainrt_core (PMIx, OpenBLAS, CUDA), so train-run needs only
# libcrypto more.
WRAPPER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/wrapper -I$(top_srcdir)/runtime/comm
if BUILD_LAUNCHER
noinst_LTLIBRARIES += libwrapper.la
libwrapper_la_SOURCES = \
	wrapper/proctable.h wrapper/proctable.c \
	wrapper/output.h wrapper/output.c \
	wrapper/options.h wrapper/options.c \
	wrapper/nodechan.h wrapper/nodechan.c \
	wrapper/census.h wrapper/census.c \
	wrapper/preflight.h wrapper/preflight.c \
	wrapper/probe.h wrapper/probe.c \
	wrapper/ctl.h wrapper/ctl.c \
	wrapper/heartbeat.h wrapper/heartbeat.c \
	wrapper/steps.h wrapper/steps.c \
	runtime/comm/rt_token.h runtime/comm/rt_token.c
libwrapper_la_CPPFLAGS = $(WRAPPER_CPPFLAGS)
libwrapper_la_CFLAGS = $(AM_CFLAGS) $(CRYPTO_CFLAGS)
libwrapper_la_LIBADD = $(CRYPTO_LIBS) $(PTHREAD_LIBS)

bin_PROGRAMS += train-run
train_run_SOURCES = wrapper/train_run.c \
	wrapper/supervise.h wrapper/supervise.c \
	wrapper/spawn.h wrapper/spawn.c \
	wrapper/hang.h wrapper/hang.c \
	wrapper/signals.h wrapper/signals.c
train_run_CPPFLAGS = $(WRAPPER_CPPFLAGS)
# libttrelay: the relay's process-tree rules (is the plugin's relay above train-run?).
train_run_LDADD = libwrapper.la libttrelay.la libtthw.la libttlayout.la libttbase.la

# End-to-end tests of the built train-run on this machine (no Slurm needed).
TESTS += tests/wrapper/train_run.sh
# Heartbeats, hang detection and restart, the step-time report, end to end.
TESTS += tests/wrapper/hang.sh
# The control plane between nodes: one restart decision, a lost node's verdict, end to end.
TESTS += tests/wrapper/ft.sh
endif
dist_noinst_SCRIPTS += tests/wrapper/train_run.sh tests/wrapper/commands.sh tests/wrapper/hang.sh \
	tests/wrapper/ft.sh
EXTRA_DIST += tests/wrapper/lsan.supp

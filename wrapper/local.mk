# SPDX-License-Identifier: MIT
# wrapper/: train-run, the GRES-aware launcher. Its pure logic (process table and exit policy,
# output line splitting, option parsing) is a convenience library the unit tests link too.
WRAPPER_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/wrapper
if BUILD_LAUNCHER
noinst_LTLIBRARIES += libwrapper.la
libwrapper_la_SOURCES = \
	wrapper/proctable.h wrapper/proctable.c \
	wrapper/output.h wrapper/output.c \
	wrapper/options.h wrapper/options.c \
	wrapper/census.h wrapper/census.c \
	wrapper/heartbeat.h wrapper/heartbeat.c
libwrapper_la_CPPFLAGS = $(WRAPPER_CPPFLAGS)

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
endif
dist_noinst_SCRIPTS += tests/wrapper/train_run.sh tests/wrapper/commands.sh tests/wrapper/hang.sh
EXTRA_DIST += tests/wrapper/lsan.supp

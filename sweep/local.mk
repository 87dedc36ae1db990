# SPDX-License-Identifier: MIT
# sweep/: train-sweep: the grid of a hyperparameter sweep (one parser for sweep.sh and the report) and the
# ranked report of a sweep directory. Its pure modules are a convenience library the unit tests link.
# train_opts.c: train-mlp's own option parser checks a train-mlp grid (sweep_check.h).
SWEEP_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/sweep -I$(top_srcdir)/runtime/trainer
if BUILD_SWEEP
noinst_LTLIBRARIES += libsweep.la
libsweep_la_SOURCES = sweep/sweep_grid.h sweep/sweep_grid.c sweep/sweep_io.h sweep/sweep_io.c \
	sweep/sweep_summary.h sweep/sweep_summary.c sweep/sweep_report.h sweep/sweep_report.c \
	sweep/sweep_check.h sweep/sweep_check.c runtime/trainer/train_opts.h runtime/trainer/train_opts.c
libsweep_la_CPPFLAGS = $(SWEEP_CPPFLAGS)
bin_PROGRAMS += train-sweep
train_sweep_SOURCES = sweep/train_sweep.c
train_sweep_CPPFLAGS = $(SWEEP_CPPFLAGS)
train_sweep_LDADD = libsweep.la libttbase.la -lm
# train-sweep and sweep.sh end to end without Slurm (a stand-in srun).
TESTS += tests/sweep/train_sweep_cli.sh
endif
dist_noinst_SCRIPTS += tests/sweep/train_sweep_cli.sh

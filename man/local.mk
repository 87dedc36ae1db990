# SPDX-License-Identifier: MIT
# man/: manual pages, each installed with the part it documents (all are in the tarball).
if BUILD_PLUGIN
dist_man_MANS += man/train_topo.8
endif
if BUILD_TOPO
dist_man_MANS += man/train-topo.1
endif
if BUILD_LAUNCHER
dist_man_MANS += man/train-run.1
endif
if BUILD_TRAINRT
dist_man_MANS += man/trainrt.3 man/trainrt-bench.1
endif
if BUILD_TRAINER
dist_man_MANS += man/train-mlp.1
endif
if BUILD_SWEEP
dist_man_MANS += man/train-sweep.1
endif
EXTRA_DIST += man/train_topo.8 man/train-topo.1 man/train-run.1 man/trainrt.3 man/trainrt-bench.1 \
	man/train-mlp.1 man/train-sweep.1

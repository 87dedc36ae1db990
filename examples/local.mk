# SPDX-License-Identifier: MIT
# examples/: programs that follow traintopo's protocol, for users to copy (installed with the
# sbatch templates): a PyTorch DDP trainer with the checkpoint stop and the sweep result line.
examplesdir = $(pkgdatadir)/examples
if BUILD_LAUNCHER
dist_examples_DATA = examples/pytorch_ddp.py
# The example through train-run on this machine: checkpoint on SIGUSR1, resume, equal losses.
TESTS += tests/examples/pytorch_ddp.sh
endif
EXTRA_DIST += examples/pytorch_ddp.py
dist_noinst_SCRIPTS += tests/examples/pytorch_ddp.sh

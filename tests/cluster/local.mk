# SPDX-License-Identifier: MIT
# tests/cluster/: the embedded Slurm test cluster and its integration tests (run by scripts/test.sh,
# not by make check: they need root and a cluster); shipped in the tarball.
EXTRA_DIST += tests/cluster

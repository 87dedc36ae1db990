#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# install-deps.sh — installs, with apt-get, everything traintopo needs to build, test and run its
# embedded test cluster on Debian 12. Idempotent: does nothing when all packages are present.
set -euo pipefail
packages=(
	# build
	gcc make autoconf automake libtool pkg-config
	# the Debian packages (make deb; scripts/test.sh installs them on the test cluster)
	dpkg-dev debhelper
	# libraries
	libslurm-dev libhwloc-dev libibverbs-dev ibverbs-providers libpmix-dev libcunit1-dev
	libopenblas-dev zlib1g-dev libssl-dev
	# the embedded test cluster and commands the tests use
	slurmctld slurmd slurm-client munge iproute2 util-linux procps hwloc-nox
	# Slurm releases built from ../shared for the cluster tests (scripts/build-slurm.sh; json-c for
	# Slurm's serializer/json, which its OCI containers need)
	libmunge-dev libjson-c-dev
	# data and plots for the trainer and sweep reports
	dataset-fashion-mnist gnuplot-nox
	# PyTorch: the env contract's first consumer (cluster tests) and the benchmarks' peer
	python3-torch
	# Open MPI: the shared-memory point-to-point and all-reduce peer of make bench-comm and
	# make bench-before-after (bench/mpi_*.c, built with mpicc)
	libopenmpi-dev openmpi-bin
	# linting every shell file (make check: tests/unit/shellcheck.sh)
	shellcheck
	# Slurm's OCI containers on the test cluster (cluster.sh up --oci, t_containers.sh)
	crun
	# memory checking (make check-valgrind)
	valgrind
	# fuzzing (make fuzz, make fuzz-smoke): clang and its libFuzzer runtime (libclang_rt.fuzzer,
	# in libclang-rt-14-dev on Debian 12, which libclang-rt-dev pulls in)
	clang libclang-rt-dev
)
missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	echo "install-deps: all ${#packages[@]} packages present"
	exit 0
fi
[ "$(id -u)" = 0 ] || { echo "install-deps: run as root to install: ${missing[*]}" >&2; exit 1; }
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"

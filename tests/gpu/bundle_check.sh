#!/bin/sh
# SPDX-License-Identifier: MIT
# bundle_check.sh — make gpu-bundle's folder is what a bare GPU machine can run: bundle.sh builds
# it (under its size cap), every library its programs load resolves into the bundle except glibc,
# the GCC runtime and CUDA's own (cudart, cuBLAS, NCCL), the programs start from it (versions),
# hwloc's PCI plugin is there for train-topo, and run.sh lists its steps. Skips when this build
# has no GPU path (configure found no CUDA).
set -eu
src=${TT_TEST_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
build=$(pwd)
grep -q '^#define TT_HAVE_CUDA 1' "$build/config.h" || { echo "SKIP: this build has no GPU path (configure found no CUDA)"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
b=$tmp/gpu-bundle
sh "$src/tests/gpu/bundle.sh" "$build" "$src" "$b" || fail "bundle.sh failed"
for p in train-mlp trainrt-bench train-topo mlp_check nccl_check; do
	[ -x "$b/bin/$p" ] || fail "bin/$p missing"
	[ "$(head -c 4 "$b/bin/$p" | tail -c 3)" = ELF ] || fail "bin/$p is not an ELF program (a libtool wrapper?)"
done
[ -f "$b/lib/hwloc/hwloc_pci.so" ] || fail "hwloc's PCI plugin is missing"
system='^(linux-vdso|/lib64/ld-linux|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libnccl)'
outside=$(for f in "$b"/bin/* "$b"/lib/hwloc/*; do LD_LIBRARY_PATH=$b/lib ldd "$f"; done |
	awk '$2 == "=>" { print $1, $3 }' | grep -Ev "$system" | grep -v " $b/lib/" | sort -u || true)
[ -z "$outside" ] || fail "libraries resolved outside the bundle: $outside"
LD_LIBRARY_PATH=$b/lib "$b/bin/nccl_check" --versions | grep -Eq '^nccl [0-9]+\.[0-9]+\.[0-9]+ \(built with' ||
	fail "nccl_check --versions does not run from the bundle"
LD_LIBRARY_PATH=$b/lib "$b/bin/train-topo" --version >/dev/null || fail "train-topo does not run from the bundle"
LD_LIBRARY_PATH=$b/lib "$b/bin/trainrt-bench" --version >/dev/null || fail "trainrt-bench does not run from the bundle"
[ "$(sh "$b/run.sh" --list | wc -l)" -ge 10 ] || fail "run.sh --list from the bundle"
port=$(sh "$b/launch_local.sh" --free-port) && [ "$port" -ge 10000 ] ||
	fail "the bundle's launch_local.sh --free-port (run.sh's ports) gave '$port'"
echo "gpu bundle: $(du -sm "$b" | cut -f1) MiB, self-contained but for glibc, the GCC runtime and CUDA's libraries"

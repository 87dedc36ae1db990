#!/bin/sh
# SPDX-License-Identifier: MIT
# bundle.sh — packs what tests/gpu/run.sh needs on a bare GPU machine into one folder (make
# gpu-bundle): the built programs (the ELF files from .libs, not libtool's wrappers), libtrainrt,
# and every shared library they load that such a machine may lack (hwloc and its PCI plugin,
# libibverbs, PMIx, OpenBLAS, ...), found with ldd. Left out: glibc, the GCC runtime (libstdc++,
# libgcc_s: the machine's are newer and CUDA's libraries need them) and CUDA's own libraries
# (cudart, cuBLAS, NCCL), which come from the machine's CUDA or, for NCCL, its PyTorch
# environment (run.sh's preflight finds them). Fails when the folder would pass MAX_MB.
# usage: bundle.sh BUILDDIR SRCDIR OUTDIR
set -eu
build=$1 src=$2 out=$3
max_mb=${MAX_MB:-56}
die() {
	echo "bundle.sh: $*" >&2
	exit 1
}
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib/hwloc"
# A program linking libtrainrt.so is a libtool wrapper with the ELF file in .libs/; one linking
# only convenience libraries is the ELF file itself.
for p in train-mlp trainrt-bench train-topo tests/gpu/mlp_check tests/gpu/nccl_check; do
	elf=$build/$(dirname "$p")/.libs/$(basename "$p")
	[ -f "$elf" ] || elf=$build/$p
	[ -f "$elf" ] || die "$build/$p is missing: build with CUDA first (make; configure's summary must say GPU step yes)"
	cp "$elf" "$out/bin/"
done
cp "$src/tests/gpu/run.sh" "$out/run.sh"
cp "$src/tests/trainer/launch_local.sh" "$out/launch_local.sh" # run.sh's port rule
chmod +x "$out/run.sh" "$out/bin/"*
# hwloc finds PCI devices (the GPUs train-topo puts into NCCL's topology file) through a plugin.
hwloc_plugins=$(pkg-config --variable=libdir hwloc 2>/dev/null || echo /usr/lib/x86_64-linux-gnu)/hwloc
[ -f "$hwloc_plugins/hwloc_pci.so" ] && cp "$hwloc_plugins/hwloc_pci.so" "$out/lib/hwloc/"
cp -L "$build/.libs/libtrainrt.so.0" "$out/lib/"

# Shared libraries a bare CUDA machine may lack: everything ldd resolves, less the excluded.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libstdc\+\+|libgcc_s|libcudart|libcublas|libcublasLt|libnccl|libcuda\.)'
for f in "$out/bin/"* "$out/lib/hwloc/"*; do
	LD_LIBRARY_PATH="$build/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ldd "$f" 2>/dev/null
done | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u | while read -r name path; do
	echo "$name" | grep -Eq "$skip" && continue
	[ "$name" = libtrainrt.so.0 ] && continue
	cp -L "$path" "$out/lib/$name"
done
missing=$(for f in "$out/bin/"*; do LD_LIBRARY_PATH="$out/lib" ldd "$f"; done | grep 'not found' | grep -Ev "$skip" || true)
[ -z "$missing" ] || die "libraries still missing from the bundle: $missing"
{
	echo "built: $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n)"
	echo "commit: $(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "versions: $("$build/tests/gpu/nccl_check" --versions 2>/dev/null || echo unknown)"
	# shellcheck disable=SC2010 # the names are the sonames copied above (no blanks); hwloc/ is a folder
	echo "libraries: $(ls "$out/lib" | grep -v '^hwloc$' | xargs)"
} >"$out/MANIFEST"
mb=$(du -sm "$out" | cut -f1)
[ "$mb" -le "$max_mb" ] || die "$out is $mb MiB, over $max_mb MiB (the device tool carries 64 MiB with the tree)"
# shellcheck disable=SC2010 # as above: counts the copied sonames, not the hwloc/ folder
echo "bundle.sh: $out: $(ls "$out/bin" | wc -l) programs, $(ls "$out/lib" | grep -vc '^hwloc$') libraries, $mb MiB"

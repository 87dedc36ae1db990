#!/bin/bash
# SPDX-License-Identifier: MIT
# plugin_deps.sh — what srun, sbatch and salloc load with the SPANK plugin on a login node: the
# plugin needs libc only (readelf -d: no hwloc, libibverbs, CUDA, Slurm library), has no RUNPATH,
# exports the SPANK entry points (train_topo.map), all of them and nothing else, and the libraries
# ldd resolves for it hold none of those either.
set -eu
so=$(pwd)/.libs/train_topo.so
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v readelf >/dev/null 2>&1 || { echo "SKIP: readelf not found (install binutils)"; exit 77; }
[ -f "$so" ] || fail "$so missing: build first"
needed=$(readelf -d "$so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | xargs)
# A build configured with --enable-sanitizers links every object with ASan/UBSan's runtimes.
sanitized=no
grep -q '^TT_LDFLAGS = .*-fsanitize=' Makefile 2>/dev/null && sanitized=yes
for lib in $needed; do
	case $lib in
	libc.so.*) ;;
	libasan.so.* | libubsan.so.*) [ $sanitized = yes ] ||
		fail "train_topo.so needs $lib but this build is not configured with --enable-sanitizers" ;;
	*) fail "train_topo.so needs $lib (NEEDED: $needed); the plugin must need libc only" ;;
	esac
done
! readelf -d "$so" | grep -Eq '\((RPATH|RUNPATH)\)' || fail "train_topo.so has a RUNPATH"
# Every SPANK entry point the plugin defines is one Slurm can find: a slurm_spank_* function or
# variable left local by the version script would never be called.
defined=$(nm --defined-only "$so" | awk '$3 ~ /^slurm_spank_/ {print $3}' | sort -u)
exported=$(nm -D --defined-only "$so" | awk '$3 ~ /^slurm_spank_/ {print $3}' | sort -u)
[ -n "$defined" ] || fail "nm finds no slurm_spank_* symbol in $so (stripped?)"
hidden=$(comm -23 <(echo "$defined") <(echo "$exported") | xargs)
[ -z "$hidden" ] || fail "train_topo.so defines but does not export $hidden (spank/train_topo.map)"
extra=$(nm -D --defined-only "$so" |
	awk '$3 !~ /^(slurm_spank_.*|plugin_(name|type|version)|spank_plugin_version)$/ {print $3}' | xargs)
[ -z "$extra" ] || fail "train_topo.so exports $extra besides Slurm's entry points (spank/train_topo.map)"
loaded=$(ldd "$so" 2>/dev/null | awk '{print $1}' | xargs)
case " $loaded " in
*hwloc* | *ibverbs* | *cuda* | *nccl* | *slurm*) fail "ldd train_topo.so loads $loaded" ;;
esac
echo "train_topo.so: NEEDED $needed; ldd: $loaded"

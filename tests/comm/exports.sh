#!/bin/sh
# SPDX-License-Identifier: MIT
# exports.sh — libtrainrt.so as a CPU-only node gets it: it exports the trainrt_* functions of
# trainrt.h and nothing else (nm -D: only those and the version node), needs no CUDA library and
# no RUNPATH (readelf -d), calls no CUDA or NCCL function directly (nm -D: none undefined), and,
# with CUDA's libraries hidden (a mount namespace over their directories), TRAINRT_BACKEND=nccl
# fails with one line naming the library while auto mode runs.
set -eu
build=$(pwd)
lib=$build/.libs/libtrainrt.so
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
command -v nm >/dev/null 2>&1 && command -v readelf >/dev/null 2>&1 ||
	{ echo "SKIP: nm and readelf not found (install binutils)"; exit 77; }
[ -f "$lib" ] || fail "$lib missing: build first"

# nm -D names each symbol with its version ("trainrt_init@@TRAINRT_0"); the version node is an A.
syms=$(nm -D --defined-only "$lib" | sed 's/@.*//')
others=$(echo "$syms" | awk '$3 !~ /^trainrt_/ && !($2 == "A" && $3 ~ /^TRAINRT_[0-9]+$/)')
[ -z "$others" ] || fail "libtrainrt.so exports more than trainrt_*: $others"
n=$(echo "$syms" | grep -c ' T trainrt_')
# Every function trainrt.h declares is exported, and nothing it does not declare.
declared=$(sed -n 's/^[a-z][a-z0-9_ *]*\b\(trainrt_[a-z0-9_]*\)(.*/\1/p' "${TT_TEST_SRCDIR:-.}/runtime/comm/trainrt.h" | sort -u)
exported=$(echo "$syms" | awk '$2 == "T" {print $3}' | sort -u)
[ "$declared" = "$exported" ] || fail "trainrt.h and libtrainrt.so differ: $(printf '%s\n' "$declared" "$exported" | sort | uniq -u | xargs)"

# The nccl backend calls CUDA and NCCL through rt_cuda.h's table: a call that bypasses it would be
# an undefined symbol here, found by no linker (libtrainrt needs none of their libraries) and
# fatal only when the backend first runs it.
direct=$(nm -D --undefined-only "$lib" | awk '$2 ~ /^(cuda|cu[A-Z]|nccl)/ {print $2}' | xargs)
[ -z "$direct" ] || fail "libtrainrt.so calls CUDA or NCCL directly, not through rt_cuda.h's table: $direct"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | xargs)
case " $needed " in
*libcuda* | *libnccl* | *libcublas*) fail "libtrainrt.so links CUDA: NEEDED $needed" ;;
esac
! readelf -d "$lib" | grep -Eq '\((RPATH|RUNPATH)\)' || fail "libtrainrt.so has a RUNPATH: $(readelf -d "$lib" | grep -E 'RPATH|RUNPATH')"
echo "libtrainrt.so: $n trainrt_* functions exported, nothing else; NEEDED $needed"

grep -q '^#define TT_HAVE_NCCL 1' "$build/config.h" || { echo "SKIP: built without the nccl backend (no CUDA headers)"; exit 77; }
[ "$(id -u)" = 0 ] && command -v unshare >/dev/null 2>&1 ||
	{ echo "SKIP: hiding CUDA's libraries needs root and unshare (util-linux)"; exit 77; }
soname=$(sed -n 's/^#define TT_CUDART_SONAME "\(.*\)"/\1/p' "$build/config.h")
fallback=$(sed -n 's/^#define TT_CUDA_LIBDIR "\(.*\)"/\1/p' "$build/config.h")
dirs=$( (/sbin/ldconfig -p | awk -v s="$soname" '$1 == s {print $NF}' | xargs -r -n1 dirname
	[ -d "$fallback" ] && cd "$fallback" && pwd -P) | sort -u | xargs)
out=$(unshare --mount sh -c '
	for d in $1; do mount -t tmpfs none "$d" || exit 3; done
	TRAINRT_BACKEND=nccl "$2/trainrt-bench" --local 1 -b 4 -e 4 -n 1 -w 0 2>&1' hide "$dirs" "$build") && rc=0 || rc=$?
[ $rc -ne 3 ] || { echo "SKIP: cannot mount over $dirs in a mount namespace"; exit 77; }
[ $rc -ne 0 ] || fail "TRAINRT_BACKEND=nccl ran with CUDA's libraries hidden: $out"
echo "$out" | grep -q "the nccl backend needs $soname (the CUDA runtime), which cannot be loaded" ||
	fail "TRAINRT_BACKEND=nccl with CUDA hidden did not name $soname: $out"
unshare --mount sh -c '
	for d in $1; do mount -t tmpfs none "$d" || exit 3; done
	"$2/trainrt-bench" --local 2 -b 4 -e 64 -n 2 -w 0' hide "$dirs" "$build" >"$build/exports-auto.out" 2>&1 ||
	{ cat "$build/exports-auto.out"; rm -f "$build/exports-auto.out"; fail "auto mode failed with CUDA's libraries hidden"; }
rm -f "$build/exports-auto.out"
echo "with $dirs hidden: nccl refused naming $soname, auto ran"

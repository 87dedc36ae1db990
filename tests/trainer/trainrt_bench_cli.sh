#!/bin/sh
# SPDX-License-Identifier: MIT
# trainrt_bench_cli.sh — trainrt-bench's command line: every bad value is refused with exit 2 and
# a message naming it (sizes that overflow, a largest size below one element, LOCAL_WORLD_SIZE
# that is 0 or not a number under --local, sendrecv on an odd number of ranks), -h/-V, and 2-rank
# --local runs over shared memory (all-reduce, and sendrecv between two fake nodes) whose rows
# are all correct (#wrong 0) and cover -b..-e; --memcpy with --copiers at its limit.
set -eu
build=$(pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}
bench=$build/trainrt-bench

# refused WANT_MESSAGE [ENV=VALUE...] -- ARGS...: exit 2, nothing on stdout, the message on stderr.
refused() {
	want=$1
	shift
	rc=0
	env "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] && [ ! -s "$tmp/out" ] && grep -qF -- "$want" "$tmp/err" ||
		fail "$* -> rc $rc, stdout '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")' (want: $want)"
}
refused "-e 0: the largest size must hold at least one float element (4 bytes)" "$bench" -b 0 -e 0
refused "-e 1: the largest size must hold at least one float element" "$bench" -e 1
refused "-b '99999999999999999999G' is larger than 1T" "$bench" -b 99999999999999999999G
refused "-e '1025G' is larger than 1T" "$bench" -e 1025G
refused "-b 'abc' is not a size" "$bench" -b abc
refused "-b 'nan' is not a size" "$bench" -b nan
refused "-b 1048576 is larger than -e 1024" "$bench" -b 1M -e 1K
refused "-f '1' is not a factor above 1" "$bench" -f 1
refused "-n '0' is not an integer in [1, 1000000]" "$bench" -n 0
refused "-w 'x' is not an integer" "$bench" -w x
refused "--local 'two' is not an integer in [1, 256]" "$bench" --local two
refused "--local 2: LOCAL_WORLD_SIZE='0' is not a rank count in [1, 2]" LOCAL_WORLD_SIZE=0 "$bench" --local 2
refused "--local 2: LOCAL_WORLD_SIZE='abc' is not a rank count in [1, 2]" LOCAL_WORLD_SIZE=abc "$bench" --local 2
refused "--local 3: LOCAL_WORLD_SIZE=2 does not divide it" LOCAL_WORLD_SIZE=2 "$bench" --local 3
refused "--rendezvous '0' is not an integer" "$bench" --rendezvous 0
refused "--copiers '0' is not an integer in [1, 256]" "$bench" --memcpy 1K --copiers 0
refused "--copiers '257' is not an integer in [1, 256]" "$bench" --memcpy 1K --copiers 257
refused "--copiers goes with --memcpy BYTES" "$bench" --copiers 2
refused "--memcpy '0': give at least one byte" "$bench" --memcpy 0
refused "unknown option '--nope'" "$bench" --nope
refused "-o needs a value" "$bench" -o
refused "unexpected argument 'extra'" "$bench" extra
refused "-o sendrecv pairs rank r with r + n/2, so it needs an even number of ranks, not 3" "$bench" --local 3 -o sendrecv

"$bench" --help >"$tmp/out" && grep -q '^usage: trainrt-bench' "$tmp/out" || fail "--help"
"$bench" -h >"$tmp/out" && grep -q -- '-V|--version' "$tmp/out" || fail "-h"
"$bench" --version >"$tmp/out" && grep -Eq '^trainrt-bench \(traintopo\) [0-9]' "$tmp/out" || fail "--version: $(cat "$tmp/out")"

# 2 ranks over shared memory, 8 bytes (2 floats) to 2K by 4: 4 rows, every element right.
TRAINRT_BACKEND=shm TRAINRT_TIMEOUT=30 "$bench" --local 2 -b 8 -e 2K -f 4 -n 2 -w 1 >"$tmp/out" 2>"$tmp/err" ||
	fail "--local 2: $(cat "$tmp/err")"
grep -q '^# trainrt-bench: allreduce, 2 ranks (2 per node), backend shm' "$tmp/out" || fail "header: $(cat "$tmp/out")"
rows=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $8 }' | xargs)
[ "$rows" = "8:0 32:0 128:0 512:0 2048:0" ] || fail "rows (size:#wrong) '$rows'"

# sendrecv between two fake nodes (hierarchical backend: the pair talks over TCP).
LOCAL_WORLD_SIZE=1 TRAINRT_TIMEOUT=30 "$bench" --local 2 -o sendrecv -b 8 -e 2K -f 4 -n 2 -w 1 >"$tmp/out" 2>"$tmp/err" ||
	fail "--local 2 -o sendrecv: $(cat "$tmp/err")"
grep -q '^# trainrt-bench: sendrecv, 2 ranks (1 per node), backend hier' "$tmp/out" || fail "header: $(cat "$tmp/out")"
rows=$(grep -v '^#' "$tmp/out" | awk '{ print $1 ":" $8 }' | xargs)
[ "$rows" = "8:0 32:0 128:0 512:0 2048:0" ] || fail "sendrecv rows (size:#wrong) '$rows'"
# --memcpy with 256 copiers (the limit): one line, the sum the copiers' shares add up to.
"$bench" --memcpy 4K --copiers 256 >"$tmp/out" 2>"$tmp/err" || fail "--memcpy 4K --copiers 256: $(cat "$tmp/err")"
awk '$1 == "memcpy" && $2 == 4096 && $4 == 256 && $11 == "GB/s" && $12 == "each" && $6 > 0 &&
	($6 / $4 - $10) < 0.006 && ($10 - $6 / $4) < 0.006 { ok++ } END { exit !(ok == 1 && NR == 1) }' "$tmp/out" ||
	fail "--memcpy 4K --copiers 256: '$(cat "$tmp/out")'"
echo "trainrt-bench command line: all checks passed"

#!/bin/sh
# SPDX-License-Identifier: MIT
# ckpt.sh — `make bench-ckpt`: checkpoint write throughput against the disk's own, in one run on
# the same directory: bench/ckpt-write (one rank file of MIB MiB and meta.txt the way train-mlp
# writes them: CRC32, temporary file, fsync, rename, fsync of the directory) against
# `dd if=/dev/zero of=FILE bs=1M count=MIB conv=fsync`. The two alternate (order flipped each
# round), page cache dropped of the previous files by removing them and syncing; medians of RUNS.
# Prints both and the ratio that BENCHMARKS.md "## Checkpoints" records (goal >= 0.8).
# usage: ckpt.sh [MIB [RUNS]]   (CKPT_BENCH_DIR: the directory, default ./ckpt-bench.PID)
set -u
WRITER=${CKPT_WRITE:-./bench/ckpt-write}
MIB=${1:-1024}
RUNS=${2:-7}
DIR=${CKPT_BENCH_DIR:-$(pwd)/ckpt-bench.$$}
mkdir -p "$DIR" || exit 1
trap 'rm -rf "$DIR"' EXIT
now() { date +%s.%N; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

run_dd() {
	t0=$(now)
	dd if=/dev/zero of="$DIR/dd.bin" bs=1M count="$MIB" conv=fsync status=none || exit 1
	t1=$(now)
	echo "$t0 $t1" | awk -v mib="$MIB" '{ printf "%.1f\n", mib * 1048576 / ($2 - $1) / 1e6 }' >>"$DIR/dd.mbs"
	rm -f "$DIR/dd.bin"
	sync
}
run_ours() {
	"$WRITER" "$DIR/ck" "$MIB" "$1" | sed -n 's/.*: \([0-9.]*\) MB\/s$/\1/p' >>"$DIR/ours.mbs" || exit 1
	rm -rf "$DIR/ck"
	sync
}

echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); directory $DIR on $(df -P "$DIR" | awk 'NR == 2 { print $1 }')"
: >"$DIR/dd.mbs"
: >"$DIR/ours.mbs"
sync
for i in $(seq 1 "$RUNS"); do
	if [ $((i % 2)) -eq 1 ]; then run_dd; run_ours "$i"; else run_ours "$i"; run_dd; fi
done
dd_mbs=$(median <"$DIR/dd.mbs")
ours_mbs=$(median <"$DIR/ours.mbs")
echo "dd conv=fsync, $MIB MiB: median $dd_mbs MB/s (runs: $(tr '\n' ' ' <"$DIR/dd.mbs"))"
echo "checkpoint write, $MIB MiB: median $ours_mbs MB/s (runs: $(tr '\n' ' ' <"$DIR/ours.mbs"))"
echo "ratio checkpoint / dd: $(echo "$ours_mbs $dd_mbs" | awk '{ printf "%.2f", $1 / $2 }') (goal >= 0.8)"

#!/bin/sh
# SPDX-License-Identifier: MIT
# topo.sh — live node discovery + NCCL topology XML (`train-topo nccl-xml -o FILE`) against
# hwloc's own exporter (`lstopo-no-graphics --of xml FILE`) on this machine, runs interleaved,
# median wall time of each. Usage: bench/topo.sh [TRAIN_TOPO] [RUNS]  (run by `make bench-topo`).
set -eu
tt=${1:-./train-topo}
runs=${2:-31}
out=$(mktemp -d /tmp/tt-bench-topo.XXXXXX)
trap 'rm -rf "$out"' EXIT
command -v lstopo-no-graphics >/dev/null || { echo "bench-topo: lstopo-no-graphics missing (apt-get install hwloc-nox)" >&2; exit 1; }

ms() { # ms COMMAND...: wall milliseconds of one run, 3 decimals
	t0=$(date +%s%N)
	"$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "$t0 $t1" | awk '{ printf "%.3f\n", ($2 - $1) / 1e6 }'
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# One warm-up each, so both start from the same page cache.
"$tt" nccl-xml -o "$out/t.xml"
lstopo-no-graphics -f --of xml "$out/l.xml"
i=0
while [ $i -lt "$runs" ]; do
	ms "$tt" nccl-xml -o "$out/t.xml" >>"$out/tt.ms"
	ms lstopo-no-graphics -f --of xml "$out/l.xml" >>"$out/lstopo.ms"
	i=$((i + 1))
done
t=$(median <"$out/tt.ms")
l=$(median <"$out/lstopo.ms")
echo "bench-topo: $runs runs each, interleaved, on $(nproc) CPUs ($(uname -m), hwloc $(lstopo-no-graphics --version | awk '{print $2}'))"
echo "bench-topo: train-topo nccl-xml (live discovery + NCCL XML): median $t ms"
echo "bench-topo: lstopo-no-graphics --of xml:                     median $l ms"
echo "$t $l" | awk '{ printf "bench-topo: ratio train-topo / lstopo = %.2f (goal: <= 1.00 and <= 50 ms)\n", $1 / $2 }'

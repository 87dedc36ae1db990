#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# tcp.sh — `make bench-tcp`: libtrainrt's TCP all-reduce between two test-cluster nodes (one rank
# per node, TRAINRT_BACKEND=tcp, 64 MiB float32) against one raw TCP stream between the same two
# nodes (bench/tcp-stream), in one run. Brings the cluster up when it is not.
# usage: bench/tcp.sh [BUILDDIR]
set -euo pipefail
build=$(cd "${1:-.}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../tests/cluster/cluster.sh
if ! "$cluster" status >/dev/null 2>&1; then
	"$cluster" up --nodes 2 --plugin "$build/.libs/train_topo.so" --share "$build" >/dev/null
	trap '"$cluster" down >/dev/null' EXIT
fi
export SLURM_CONF=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf
size=$((64 * 1024 * 1024))
echo "machine: $(nproc) CPUs, nodes are network namespaces joined by veth + bridge"
raw=()
for _ in 1 2 3; do
	r=$(srun -N2 --ntasks-per-node=1 bash -c '
		if [ "$SLURM_NODEID" = 0 ]; then exec "$0" recv 29111; else exec "$0" send node1 29111 $((1024 * 1024 * 1024)); fi' \
		"$build/bench/tcp-stream" | grep -E '^[0-9.]+$')
	raw+=("$r")
done
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
raw_med=$(printf '%s\n' "${raw[@]}" | median)
echo "raw TCP stream node2 -> node1, 1 GiB, 3 runs: ${raw[*]} GB/s (median $raw_med)"
ours=()
for _ in 1 2 3; do
	out=$(TRAINRT_BACKEND=tcp srun -N2 --ntasks-per-node=1 --train-topo=env \
		"$build/trainrt-bench" -o allreduce -b $size -e $size -n 10 -w 3)
	echo "$out" | grep -q '^#' || { echo "$out"; exit 1; }
	ours+=("$(echo "$out" | awk '!/^#/ {if ($8 != 0) exit 1; print $7}')")
done
ours_med=$(printf '%s\n' "${ours[@]}" | median)
echo "trainrt tcp all-reduce, 2 ranks (1 per node), 64 MiB float32, 3 runs: busbw ${ours[*]} GB/s (median $ours_med), #wrong 0"
awk -v b="$ours_med" -v r="$raw_med" 'BEGIN {printf "ratio (medians): %.2f x raw stream\n", b / r}'

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugin.sh — what train_topo.so adds to a step's start: `srun -N2 --ntasks-per-node=8 true` with
# and without --train-topo (modes env and full) on the embedded test cluster, interleaved runs,
# medians in ms. Brings the cluster up with the freshly built plugin when it is not up.
# usage: bench/plugin.sh [PLUGIN.so] [RUNS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugin=${1:-$here/../.libs/train_topo.so}
runs=${2:-21}
cluster=$here/../tests/cluster/cluster.sh
started=0
if ! "$cluster" status >/dev/null 2>&1; then
	"$cluster" up --nodes 2 --plugin "$plugin" >/dev/null
	started=1
	trap '"$cluster" down >/dev/null' EXIT
else
	"$cluster" plugin "$plugin" >/dev/null
fi
export SLURM_CONF=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf

ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

declare -A times
variants=("off" "env" "full")
srun -N2 --ntasks-per-node=8 true	# warm-up
for _ in $(seq 1 "$runs"); do
	for v in "${variants[@]}"; do
		t0=$(ms)
		if [ "$v" = off ]; then srun -N2 --ntasks-per-node=8 true; else srun -N2 --ntasks-per-node=8 --train-topo="$v" true; fi
		times[$v]+="$(( $(ms) - t0 ))"$'\n'
	done
done
base=$(printf '%s' "${times[off]}" | median)
echo "srun -N2 --ntasks-per-node=8 true, $runs interleaved runs each, median ms ($(nproc) CPUs, $(uname -m)):"
for v in "${variants[@]}"; do
	m=$(printf '%s' "${times[$v]}" | median)
	awk -v v="--train-topo=$v" -v m="$m" -v b="$base" 'BEGIN {printf "  %-22s %7.1f ms   added %+6.1f ms\n", v, m, m - b}'
done | sed 's/--train-topo=off /(no --train-topo)/'
[ "$started" = 0 ] || echo "(cluster started for this run and brought down again)"

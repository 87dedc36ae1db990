#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# plugin_scale.sh — train_topo.so on a big embedded cluster (one namespace and slurmd per node):
# step launch, `srun -N N --ntasks-per-node=8 true` inside one held allocation, without
# --train-topo and with env and full, for each N of SIZES (interleaved runs, medians), after checking
# that a full step on every node gave its N*8 tasks ranks 0..N*8-1 exactly once and each a topology
# file; then what one topology probe (`train-topo probe`, as the plugin runs it) costs on a node.
# Brings the cluster up with the largest N (and the plugin) when it is not up that large.
# On a machine without an NVIDIA GPU (a live probe writes no topology file there) the probe reads
# the 8-GPU fixture (hwloc_xml=, --input), so the file is written and its cost is measured.
# usage: bench/plugin_scale.sh [PLUGIN.so | -] [RUNS] [SIZES]   (defaults: the build's, 11, "8 16 32 64")
#   PLUGIN -: the running cluster's plugin as it is (its probe: the build tree's it runs, else
#   train-topo on PATH), as the cluster tests do with an installed package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
plugin=${1:-$here/../.libs/train_topo.so}
runs=${2:-11}
sizes=${3:-8 16 32 64}
tasks_per_node=8
probe_runs=20
cluster=$here/../tests/cluster/cluster.sh
fixture=$(cd "$here/../tests/fixtures/topo" && pwd)/dual-pcie-8gpu.xml
plugin_args="" probe_input=()
if ! grep -qx 0x10de /sys/bus/pci/devices/*/vendor 2>/dev/null; then
	plugin_args="hwloc_xml=$fixture" probe_input=(--input "$fixture")
fi
state=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}
export SLURM_CONF=$state/etc/slurm.conf

die() { echo "plugin_scale: error: $*" >&2; exit 1; }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

max=0
for n in $sizes; do
	case $n in '' | *[!0-9]* | 0) die "SIZES: '$n' is not a node count" ;; esac
	[ "$n" -le "$max" ] || max=$n
done

job="" started=0
cleanup() {
	[ -z "$job" ] || scancel "$job" 2>/dev/null || true
	[ "$started" = 0 ] || "$cluster" down >/dev/null
}
trap cleanup EXIT
if "$cluster" status >/dev/null 2>&1 && [ "$(sinfo -h -N -o %N | sort -u | wc -l)" -ge "$max" ]; then
	[ "$plugin" = - ] || "$cluster" plugin "$plugin" --args "$plugin_args" >/dev/null
elif [ "$plugin" = - ]; then
	die "PLUGIN -: no cluster of $max nodes or more is up (tests/cluster/cluster.sh up --nodes $max)"
else
	t0=$(ms)
	started=1
	"$cluster" up --nodes "$max" --plugin "$plugin" --plugin-args "$plugin_args" >/dev/null
	echo "cluster of $max nodes up in $(( ($(ms) - t0) / 1000 )) s; daemons' resident memory (MiB):"
	ps -eo rss,comm,args | awk -v state="$state" '$2 ~ /^(slurmd|munged|slurmctld)$/ && index($0, state) {
		s[$2] += $1; c[$2]++ }
		END {for (k in s) printf "  %-9s x%-3d %6.0f total, %5.1f each\n", k, c[k], s[k] / 1024, s[k] / 1024 / c[k]}'
fi
probe=$(cat "$state/lib/probe" 2>/dev/null || command -v train-topo) ||
	die "no train-topo: the cluster's plugin is no build tree's and none is on PATH"

# One allocation of every node for all steps: the steps time launch, not scheduling.
job=$(salloc -N "$max" --ntasks-per-node="$tasks_per_node" --no-shell -J "${SALLOC_JOB_NAME:-plugin-scale}" 2>&1 |
	sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
[ -n "$job" ] || die "salloc -N $max gave no allocation"
step() { # NODES MODE CMD...: one step of NODES nodes, MODE off = no --train-topo
	local n=$1 mode=$2
	shift 2
	if [ "$mode" = off ]; then
		srun --jobid="$job" -N"$n" --ntasks-per-node="$tasks_per_node" "$@"
	else
		srun --jobid="$job" -N"$n" --ntasks-per-node="$tasks_per_node" --train-topo="$mode" "$@"
	fi
}

# Until slurmctld released the last step's nodes (their slurmds report its end after srun exits):
# a step created before waits in srun's retry loop, which is not launch time.
steps_gone() {
	local deadline=$((SECONDS + 30))
	while [ -n "$(squeue -h -s -j "$job" -o %i)" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
}

# Correctness first: every rank once, one world size, a topology file in every task.
total=$((max * tasks_per_node))
out=$(step "$max" full bash -c 'echo "$RANK $WORLD_SIZE ${NCCL_TOPO_FILE:+file}"')
if [ "$(wc -l <<<"$out")" != "$total" ] ||
	[ "$(awk '{print $1}' <<<"$out" | sort -n | uniq)" != "$(seq 0 $((total - 1)))" ]; then
	die "a full step on $max nodes did not give ranks 0..$((total - 1)) once each"
fi
[ "$(awk '{print $2, $3}' <<<"$out" | sort -u)" = "$total file" ] ||
	die "a full step on $max nodes: not every task had WORLD_SIZE=$total and NCCL_TOPO_FILE"
echo "checked: srun -N$max --ntasks-per-node=$tasks_per_node --train-topo=full: ranks 0..$((total - 1)) once each, WORLD_SIZE and NCCL_TOPO_FILE in all $total tasks"

echo
echo "srun -N N --ntasks-per-node=$tasks_per_node true in one allocation, $runs interleaved runs each, median ms ($(nproc) CPUs, $(uname -m), Slurm $(slurmd -V | awk '{print $2}')):"
echo "| nodes | tasks | no --train-topo | env | full | full/none | full-env per node |"
echo "|---|---|---|---|---|---|---|"
declare -A times
for n in $sizes; do
	for mode in off env full; do step "$n" "$mode" true; done	# warm-up
	for _ in $(seq 1 "$runs"); do
		for mode in off env full; do
			steps_gone
			t0=$(ms)
			step "$n" "$mode" true
			times[$n.$mode]+="$(( $(ms) - t0 ))"$'\n'
		done
	done
	off=$(printf '%s' "${times[$n.off]}" | median)
	env=$(printf '%s' "${times[$n.env]}" | median)
	full=$(printf '%s' "${times[$n.full]}" | median)
	awk -v n="$n" -v t=$((n * tasks_per_node)) -v o="$off" -v e="$env" -v f="$full" \
		'BEGIN {printf "| %d | %d | %.0f | %.0f | %.0f | %.2f | %.1f |\n", n, t, o, e, f, f / o, (f - e) / n}'
done

# The probe as the plugin runs it (user_init forks it once per node per step): inside a node,
# writing into that node's /tmp; wall time of each run, and the CPU time all runs took.
echo
echo "train-topo probe ${probe_input[*]} inside node1, $probe_runs runs:"
"$cluster" exec --node node1 -- bash -c '
	probe=$1 runs=$2 d=$(mktemp -d) walls=""
	shift 2
	TIMEFORMAT="%3U %3S"
	cpu=$( { time for i in $(seq 1 "$runs"); do
		t0=$(date +%s%N); "$probe" probe "$@" -o "$d/topo.xml" >/dev/null
		[ -s "$d/topo.xml" ] || { echo "plugin_scale: error: the probe wrote no topology file" >&2; exit 1; }
		echo $(( ($(date +%s%N) - t0) / 1000 )) >>"$d/walls"; done; } 2>&1)
	rm -f "$d/topo.xml"
	sort -n "$d/walls" | awk -v cpu="$cpu" -v runs="$runs" "{a[NR] = \$1}
		END {split(cpu, c, \" \"); printf \"  wall median %.1f ms (min %.1f, max %.1f); CPU %.1f ms per probe (user+sys)\n\",
			a[int((NR + 1) / 2)] / 1000, a[1] / 1000, a[NR] / 1000, (c[1] + c[2]) * 1000 / runs}"
	rm -rf "$d"' probe-cost "$probe" "$probe_runs" "${probe_input[@]}"
[ "$started" = 0 ] || echo "(cluster started for this run and brought down again)"

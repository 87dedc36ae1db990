#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# ports.sh — MASTER_PORT of co-resident jobs: K jobs (8, 16) held together on node1 of the test
# cluster, each runs one step that prints the plugin's MASTER_PORT (Slurm's reserved port under the
# cluster's MpiParams=ports) and the formula's port for the same job and step (train-run with
# SLURM_STEP_RESV_PORTS unset: what a site without MpiParams=ports gets); then the formula's
# collision rates from bench/port-collisions beside the birthday estimate.
# usage: bench/ports.sh BUILDDIR [ROUNDS]   (needs the cluster lock; brings the cluster up if down)
set -euo pipefail
build=$(cd "${1:?usage: bench/ports.sh BUILDDIR [ROUNDS]}" && pwd)
rounds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
cluster=$here/../tests/cluster/cluster.sh
if ! "$cluster" status >/dev/null 2>&1; then
	"$cluster" up --nodes 2 --plugin "$build/.libs/train_topo.so" --share "$build" >/dev/null
	trap '"$cluster" down >/dev/null' EXIT
fi
eval "$("$cluster" env)"
dir=$(mktemp -d "${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/jobs/ports.XXXXXX")
chmod 1777 "$dir"

echo "co-resident jobs on node1 of the test cluster (Slurm $("$cluster" release)), one step each:"
for k in 8 16; do
	for round in $(seq 1 "$rounds"); do
		run=$dir/k$k-r$round
		mkdir -p "$run"
		ids=()
		for _ in $(seq 1 "$k"); do
			# Each job waits until all k hold node1 together, then reports its step's ports.
			ids+=("$(sbatch --parsable -J ttest-ports -w node1 -N1 -n1 --output=/dev/null --wrap "
				touch $run/ready.\$SLURM_JOB_ID
				until [ \$(ls $run | grep -c '^ready') -ge $k ]; do sleep 0.2; done
				srun -n1 --train-topo=env bash -c 'echo \"\$SLURM_JOB_ID \$MASTER_PORT \$(unset SLURM_STEP_RESV_PORTS; $build/train-run --nproc-per-node 1 -- printenv MASTER_PORT)\"' >$run/port.\$SLURM_JOB_ID
				sleep 1")")
		done
		deadline=$((SECONDS + 120))
		while [ -n "$(squeue -h -j "$(IFS=,; echo "${ids[*]}")" 2>/dev/null)" ] && [ $SECONDS -lt $deadline ]; do
			sleep 0.5
		done
		scancel "${ids[@]}" 2>/dev/null || true
		cat "$run"/port.* >"$run/all"
		awk -v k="$k" -v r="$round" '{ plugin[$2]++; formula[$3]++; n++; ids = ids (ids ? "," : "") $1 }
			END {
				for (p in plugin) np++
				for (p in formula) nf++
				printf "  %2d jobs (ids %s), round %d: %d reported; plugin (reserved) ports: %d distinct; formula ports: %d distinct\n", k, ids, r, n, np, nf
			}' "$run/all"
	done
done
rm -rf "$dir"
echo "the formula (tt_master_port, default range) over many job-id sets:"
for k in 8 16 32; do
	"$build/bench/port-collisions" "$k" 100000 100000 1
	"$build/bench/port-collisions" "$k" 100000 1000 1
	"$build/bench/port-collisions" "$k" 100000 1000 4
done

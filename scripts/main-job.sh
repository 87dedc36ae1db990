#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# main-job.sh — the README's first command: installs dependencies, builds and installs traintopo,
# uses the site's Slurm when one answers (else brings up the embedded test cluster), submits
# `sbatch --nodes=2 --gres=gpu:8 sbatch-templates/job.sh`, waits for it and shows its output.
# The embedded cluster is brought down afterwards unless TT_KEEP_CLUSTER=1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh
make install >/dev/null
ldconfig
plugin="$(make -s print-spankdir)/train_topo.so"

started_cluster=0
if [ -z "${SLURM_CONF:-}" ] && ! timeout 5 scontrol ping >/dev/null 2>&1; then
	echo "main-job: no Slurm cluster answers here: starting the embedded test cluster"
	tests/cluster/cluster.sh up --nodes 2 --plugin "$plugin" --share "$top"
	export SLURM_CONF=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf
	started_cluster=1
	if [ "${TT_KEEP_CLUSTER:-0}" != 1 ]; then
		trap '"$top/tests/cluster/cluster.sh" down >/dev/null' EXIT
	fi
fi

workdir=${TT_JOB_DIR:-/var/tmp/traintopo-job}
mkdir -p "$workdir"
cd "$workdir"
echo "main-job: sbatch --nodes=2 --gres=gpu:8 $top/sbatch-templates/job.sh  (in $workdir)"
job=$(sbatch --parsable --nodes=2 --gres=gpu:8 "$top/sbatch-templates/job.sh")
echo "main-job: submitted job $job; waiting for it to finish"
while [ -n "$(squeue -h -j "$job" -o %t 2>/dev/null)" ]; do sleep 2; done
state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
out=$(ls -t "$workdir"/*"$job"*.out 2>/dev/null | head -n1 || true)
echo "main-job: job $job ended ${state:-(state no longer known)}; output ${out:-not found}:"
echo
[ -z "$out" ] || cat "$out"
[ "$started_cluster" = 0 ] || [ "${TT_KEEP_CLUSTER:-0}" != 1 ] ||
	echo "main-job: the test cluster is still up: export SLURM_CONF=$SLURM_CONF; stop it with tests/cluster/cluster.sh down"
[ "$state" = COMPLETED ]

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# main-job.sh — the README's first command: installs the build dependencies (Debian packages, with
# apt-get), builds traintopo in this checkout, uses the site's Slurm when one answers (else brings
# up the embedded test cluster with this build's plugin), submits
# `sbatch --nodes=2 --gres=gpu:8 sbatch-templates/job.sh` with this build's commands first on PATH,
# prints the job's output as it comes and how the job ended.
#
# Installs nothing of traintopo outside the checkout, so nothing it leaves changes what a later
# `scripts/test.sh` or a package install runs: the commands run from the build tree (libtool's
# wrappers find its libtrainrt.so), the test cluster loads a copy of the build's plugin from its
# state dir. It leaves the job's files in TT_JOB_DIR (default /var/tmp/traintopo-job) and the
# stopped cluster's state in TT_CLUSTER_DIR (default /var/lib/traintopo-cluster); remove both with
# `rm -rf` when done. The embedded cluster is brought down afterwards unless TT_KEEP_CLUSTER=1.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
scripts/install-deps.sh
scripts/build.sh
echo "main-job: built in $top; nothing installed outside it (commands run from the build tree)"
export PATH="$top:$top/sbatch-templates:$PATH"

started_cluster=0
if [ -z "${SLURM_CONF:-}" ] && ! timeout 5 scontrol ping >/dev/null 2>&1; then
	echo "main-job: no Slurm cluster answers here: starting the embedded test cluster"
	tests/cluster/cluster.sh up --nodes 2 --plugin "$top/.libs/train_topo.so" --share "$top"
	export SLURM_CONF=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf
	started_cluster=1
	if [ "${TT_KEEP_CLUSTER:-0}" != 1 ]; then
		trap '"$top/tests/cluster/cluster.sh" down >/dev/null' EXIT
	fi
elif ! sbatch --help 2>&1 | grep -q -- '--train-topo'; then
	echo "main-job: this site's Slurm has no --train-topo option: install the plugin on its nodes" \
		"(README, \"For site admins\"), or run without SLURM_CONF where no Slurm answers to use the embedded cluster" >&2
	exit 1
fi

workdir=${TT_JOB_DIR:-/var/tmp/traintopo-job}
mkdir -p "$workdir"
cd "$workdir"
echo "main-job: sbatch --nodes=2 --gres=gpu:8 $top/sbatch-templates/job.sh  (in $workdir)"
job=$(sbatch --parsable --nodes=2 --gres=gpu:8 "$top/sbatch-templates/job.sh")
job=${job%%;*}
echo "main-job: submitted job $job; its output follows as it comes"
echo

# The job's output file (job.sh names it %x-%j.out), and how much of it is shown.
out="" shown=0
show_new_output() {
	local size
	[ -n "$out" ] || out=$(ls -t "$workdir"/*"-$job.out" 2>/dev/null | head -n1 || true)
	[ -n "$out" ] && [ -f "$out" ] || return 0
	size=$(stat -c %s "$out")
	[ "$size" -gt "$shown" ] || return 0
	tail -c +"$((shown + 1))" "$out" | head -c "$((size - shown))"
	shown=$size
}
while [ -n "$(squeue -h -j "$job" -o %t 2>/dev/null)" ]; do
	show_new_output
	sleep 2
done
show_new_output
state=$(scontrol show job "$job" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
echo
echo "main-job: job $job ended ${state:-(state no longer known)}; output ${out:-not found}"
[ "$started_cluster" = 0 ] || [ "${TT_KEEP_CLUSTER:-0}" != 1 ] ||
	echo "main-job: the test cluster is still up: export SLURM_CONF=$SLURM_CONF; stop it with tests/cluster/cluster.sh down"
[ "$state" = COMPLETED ]

#!/bin/sh
# SPDX-License-Identifier: MIT
# preflight.sh — what train-run's --preflight (issue #29: GPU device files, memory bandwidth, a
# TCP probe to node 0) adds to a launch of 2 and of 8 nodes, all on this machine over loopback
# (node 0 on 127.0.0.1), each node running `true`: the whole launch with the preflight (the
# default) against the same launch with --preflight=off (the peer: the census alone), runs
# interleaved, medians of RUNS wall times; then each node's own cost and numbers from one run
# with TRAINRT_PREFLIGHT_VERBOSE=1. No GPU is checked here (no NVIDIA driver).
# Usage: preflight.sh PATH/TO/train-run [RUNS]   (make bench-preflight runs it). About 30 s.
set -eu
TRAIN_RUN=$1
RUNS=${2:-11}
HERE=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-preflight.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES TRAINRT_PREFLIGHT_VERBOSE
export TRAINRT_TOKEN=bench-preflight-secret-0123456789

# One launch of $1 nodes with train-run options $2 (a single word); prints its milliseconds.
launch_ms() {
	port=$(sh "$HERE/../tests/trainer/launch_local.sh" --free-port)
	t0=$(date +%s%N)
	n=0
	while [ $n -lt "$1" ]; do
		timeout 60 "$TRAIN_RUN" "$2" --nnodes "$1" --node-rank $n --rdzv-endpoint "127.0.0.1:$port" \
			--nproc-per-node 1 -- true 2>>"$WORK/err" &
		n=$((n + 1))
	done
	wait
	echo $((($(date +%s%N) - t0) / 1000000))
}

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "machine: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%Y-%m-%d %H:%M') UTC"
echo "| nodes | --preflight (default) | --preflight=off | added |"
echo "|---|---|---|---|"
for nodes in 2 8; do
	: >"$WORK/on"
	: >"$WORK/off"
	launch_ms "$nodes" --preflight=off >/dev/null	# warm-up
	i=0
	while [ $i -lt "$RUNS" ]; do
		launch_ms "$nodes" --preflight >>"$WORK/on"
		launch_ms "$nodes" --preflight=off >>"$WORK/off"
		i=$((i + 1))
	done
	on=$(median <"$WORK/on")
	off=$(median <"$WORK/off")
	echo "| $nodes | $on ms | $off ms | $(awk -v a="$on" -v b="$off" 'BEGIN { printf "+%d ms", a - b }') |"
done
if grep -q "failed preflight\|not judged" "$WORK/err"; then
	echo "note: some runs failed or skipped a check:"
	grep "failed preflight\|not judged" "$WORK/err" | sort | uniq -c
fi
for nodes in 2 8; do
	echo "each node, one run of $nodes (TRAINRT_PREFLIGHT_VERBOSE=1):"
	: >"$WORK/err"
	TRAINRT_PREFLIGHT_VERBOSE=1 launch_ms "$nodes" --preflight >/dev/null
	sort "$WORK/err"
done

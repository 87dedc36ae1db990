#!/bin/sh
# SPDX-License-Identifier: MIT
# ft_resubmit.sh — the Slurm way of recovering from a crash, the peer row "requeue.sh" of
# bench/ft_cluster.sh: a new job. Submits sbatch-templates/requeue.sh (sbatch --wait, 2 nodes x 2
# GPUs, TRAIN_CKPT_DIR=CKPT) with PROGRAM ARGS as its program, prints the job's output as Slurm
# writes it, and when the job ends otherwise than COMPLETED submits it once more, resuming from
# the same checkpoints. What a crash costs when the job's end is what reports it and a script
# resubmits at once: the template's failure line, sbatch --wait noticing the end, a new job
# scheduled and started, the program resuming. On this test cluster the queue is empty; on a
# busy one the new job waits its turn as well.
# Usage: ft_resubmit.sh JOBNAME CKPT PROGRAM ARGS...  (train-run in PATH on every node)
set -u
name=$1 ckpt=$2
shift 2
templates=$(cd "$(dirname "$0")/../sbatch-templates" && pwd)
mkdir -p "$ckpt"
for run in 1 2; do
	out=$ckpt.job$run.out
	: >"$out"
	tail -F -n +1 "$out" 2>/dev/null &
	tailer=$!
	TRAIN_CKPT_DIR=$ckpt timeout 600 sbatch --wait --parsable -J "$name" -N2 --gres=gpu:2 --output="$out" \
		"$templates/requeue.sh" "$@" >/dev/null
	rc=$?
	sleep 0.5 # the last lines of the job's output
	kill "$tailer" 2>/dev/null
	[ "$rc" -ne 0 ] || exit 0
	echo "ft_resubmit: job run $run ended, sbatch --wait exit $rc"
	[ "$run" = 2 ] || echo "ft_resubmit: resubmitting from $ckpt"
done
exit 1

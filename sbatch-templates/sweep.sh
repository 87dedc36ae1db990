#!/bin/bash
# SPDX-License-Identifier: MIT
# sweep.sh — a hyperparameter sweep as a Slurm job array: array task N runs grid point N of a
# sweep file (see example.sweep) and leaves its results in the sweep directory. Your program gets
# the point's values as flags, --key value for every line of the sweep file (and in the
# environment as TRAIN_SWEEP_KEY=value, for programs that read it):
#
#     train-sweep size --program python3 my.sweep              # prints the range, e.g. 0-5
#     sbatch --array=0-5 sbatch-templates/sweep.sh my.sweep python3 train.py --epochs 3
#     sbatch --array=0-5%2 sbatch-templates/sweep.sh my.sweep python3 train.py  # 2 at a time
#     train-sweep report sweep-<array job id>                # ranked table, report.csv, report.png
#
# With no program the demo trainer train-mlp runs each point (the grid is checked against its
# options: train-sweep size my.sweep). Or have Slurm write the report when the last point ends:
#     id=$(sbatch --parsable --array=0-5 sbatch-templates/sweep.sh my.sweep python3 train.py)
#     sbatch --dependency=afterany:$id --wrap "train-sweep report sweep-$id"
#
# The result a point is ranked by, from any program: one line of JSON,
#     {"metric": "val_loss", "value": 0.31, "goal": "min"}        (goal: "max" or "min")
# written by rank 0 to the file $TRAIN_TOPO_RESULT_FILE names, or printed on its own line as
#     TRAIN_RESULT {"metric": "val_loss", "value": 0.31, "goal": "min"}
# (the last such line of the point's log counts). train-mlp's summary is its result (test
# accuracy, max). Per point N the sweep directory gets point-N.params (its values), point-N.log
# (output), point-N.exit (exit code), point-N.result, point-N.json (train-mlp's summary) and
# ckpt-N/ (checkpoints; TRAIN_CKPT_DIR for your program); grid.sweep is the sweep file the points
# came from. A task id outside the grid fails the task with the grid's range. 120 s before the
# time limit the task checkpoints (exit $TRAIN_TOPO_CKPT_EXIT, 99, see job.sh): the task ends
# COMPLETED with point-N.exit holding that status, and resubmitting that task id resumes it
# (sbatch --array=N with the same TRAIN_SWEEP_DIR).
#
# Knobs (environment variables; defaults in brackets):
#   TRAIN_SWEEP_DIR  results of all points    [$SLURM_SUBMIT_DIR/sweep-$SLURM_ARRAY_JOB_ID]
#   TRAIN_RUN_ARGS   more train-run options   []
# and, for train-mlp only:
#   TRAIN_LAYERS     model widths             [784,256,10]
#   TRAIN_DATA       IDX directory or "synthetic"  [/usr/share/datasets/fashion-mnist]
#   TRAIN_EPOCHS     passes over the data     [1]
#   TRAIN_BATCH      global batch per step    [256]
#   TRAIN_LR         peak AdamW learning rate [0.002]
#   TRAIN_MAX_STEPS  stop after N steps, 0 = no limit  [0]
#   TRAIN_DEVICE     cpu, gpu or auto         [auto]
#   TRAIN_EXTRA      more train-mlp options (before the point's own)  []
#SBATCH --job-name=sweep
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:1
#SBATCH --time=01:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --output=%x-%A_%a.out
#SBATCH --train-topo=full
set -euo pipefail

sweep_file=${1:?usage: sbatch --array=RANGE sweep.sh SWEEPFILE [PROGRAM ARGS...] (RANGE from: train-sweep size SWEEPFILE)}
shift
# The program the grid is checked against: train-mlp's options, or another program's syntax only.
check=(--program "${1:-train-mlp}")
if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
	range=$(train-sweep size "${check[@]}" "$sweep_file") || exit 2
	echo "sweep.sh: not an array task: submit with sbatch --array=$range sweep.sh $sweep_file${*:+ $*}" >&2
	exit 2
fi
point=$SLURM_ARRAY_TASK_ID
args=$(train-sweep point "${check[@]}" "$sweep_file" "$point" 2>/dev/null) ||
	{ train-sweep point "${check[@]}" "$sweep_file" "$point" >/dev/null; exit 2; }
dir=${TRAIN_SWEEP_DIR:-$SLURM_SUBMIT_DIR/sweep-$SLURM_ARRAY_JOB_ID}
mkdir -p "$dir"

# Every task records the grid (write to a temp file, then rename, so readers never see half of
# it), and refuses a directory that another sweep file made: its point numbers mean other values.
if [ -f "$dir/grid.sweep" ] && ! cmp -s "$sweep_file" "$dir/grid.sweep"; then
	echo "sweep.sh: $dir/grid.sweep differs from $sweep_file: this directory belongs to another sweep; set TRAIN_SWEEP_DIR" >&2
	exit 2
fi
tmp=$(mktemp "$dir/.grid.XXXXXX")
cp "$sweep_file" "$tmp" && mv -f "$tmp" "$dir/grid.sweep"
tmp=$(mktemp "$dir/.params.XXXXXX")
train-sweep point --params "${check[@]}" "$sweep_file" "$point" 2>/dev/null >"$tmp" && mv -f "$tmp" "$dir/point-$point.params"
rm -f "$dir/point-$point.exit" "$dir/point-$point.json" "$dir/point-$point.result"
export TRAIN_TOPO_RESULT_FILE=$dir/point-$point.result TRAIN_CKPT_DIR=$dir/ckpt-$point
# The values in the environment too: lr=3e-4 becomes TRAIN_SWEEP_LR=3e-4.
while IFS='=' read -r key value; do
	key=$(printf '%s' "$key" | tr 'a-z-' 'A-Z_')
	export "TRAIN_SWEEP_$key=$value"
done <"$dir/point-$point.params"

# $args is split into words on purpose: train-sweep allows no blanks or glob characters in values.
set -f
# shellcheck disable=SC2206 # TRAIN_EXTRA and $args are split on purpose (set -f above)
if [ $# -gt 0 ]; then
	program=("$@" $args)
else
	program=(train-mlp --layers "${TRAIN_LAYERS:-784,256,10}" --data "${TRAIN_DATA:-/usr/share/datasets/fashion-mnist}"
		--epochs "${TRAIN_EPOCHS:-1}" --batch "${TRAIN_BATCH:-256}" --lr "${TRAIN_LR:-0.002}"
		--max-steps "${TRAIN_MAX_STEPS:-0}" --device "${TRAIN_DEVICE:-auto}" --log-every 20 ${TRAIN_EXTRA:-} $args
		--ckpt-dir "$TRAIN_CKPT_DIR" --summary "$dir/point-$point.json")
fi
set +f
echo "sweep point $point on $SLURM_JOB_NODELIST: ${program[*]} (output in $dir/point-$point.log)"

# The checkpoint signal must not end this shell (the relay hands it to the step too): note it.
signalled=0
trap 'signalled=1; echo "sweep.sh: checkpoint signal: point $point checkpoints and stops"' USR1
# shellcheck disable=SC2086 # TRAIN_RUN_ARGS is split into train-run's options on purpose
srun --kill-on-bad-exit=1 train-run --tag-output ${TRAIN_RUN_ARGS:-} -- "${program[@]}" >"$dir/point-$point.log" 2>&1 &
pid=$!
# A trapped signal ends `wait` early; wait again until the step really ended.
while :; do
	wait "$pid" && rc=0 || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done

# train-run exits 0 after a checkpoint stop; a program started without it exits with the status.
ckpt=${TRAIN_TOPO_CKPT_EXIT:-99}
checkpointed=0
if { [ "$rc" -eq 0 ] && [ "$signalled" -eq 1 ]; } || [ "$rc" -eq "$ckpt" ]; then
	checkpointed=1
	rc=$ckpt
fi
# A program that printed its result rather than writing the file: the last TRAIN_RESULT line.
if [ "$rc" -eq 0 ] && [ ! -s "$TRAIN_TOPO_RESULT_FILE" ]; then
	result=$(sed -n 's/^\(\[rank 0\] \)\{0,1\}TRAIN_RESULT //p' "$dir/point-$point.log" | tail -n 1)
	if [ -n "$result" ]; then
		tmp=$(mktemp "$dir/.result.XXXXXX")
		printf '%s\n' "$result" >"$tmp" && mv -f "$tmp" "$TRAIN_TOPO_RESULT_FILE"
	fi
fi
tmp=$(mktemp "$dir/.exit.XXXXXX")
echo "$rc" >"$tmp" && mv -f "$tmp" "$dir/point-$point.exit"
if [ "$checkpointed" -eq 1 ]; then
	echo "point $point checkpointed in $TRAIN_CKPT_DIR: sbatch --array=$point again with TRAIN_SWEEP_DIR=$dir to resume"
	exit 0
fi
case $rc in
0) echo "point $point done: $dir/point-$point.$([ $# -gt 0 ] && echo result || echo json)" ;;
*) echo "point $point failed with exit code $rc: see $dir/point-$point.log" ;;
esac
exit "$rc"

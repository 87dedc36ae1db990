#!/bin/bash
# SPDX-License-Identifier: MIT
# sweep.sh — a hyperparameter sweep as a Slurm job array: array task N trains grid point N of a
# sweep file (see example.sweep) and leaves its results in the sweep directory.
#
#     train-sweep size my.sweep                              # prints the range, e.g. 0-5
#     sbatch --array=0-5 sbatch-templates/sweep.sh my.sweep
#     sbatch --array=0-5%2 sbatch-templates/sweep.sh my.sweep  # at most 2 points at a time
#     train-sweep report sweep-<array job id>                # ranked table, report.csv, report.png
#
# Or have Slurm write the report when the last point ends, whatever became of each:
#     id=$(sbatch --parsable --array=0-5 sbatch-templates/sweep.sh my.sweep)
#     sbatch --dependency=afterany:$id --wrap "train-sweep report sweep-$id"
#
# train-sweep holds the one grid parser: `train-sweep point my.sweep N` gives point N's train-mlp
# options, which override the base options below. A task id outside the grid fails the task with
# the grid's range. Per point N the sweep directory gets point-N.params (its values),
# point-N.log (training output), point-N.exit (exit code), point-N.json (train-mlp's summary) and
# ckpt-N/ (checkpoints); grid.sweep is the sweep file the points came from. 120 s before the time
# limit the task checkpoints and exits 99; resubmitting that task id resumes it
# (sbatch --array=N with the same TRAIN_SWEEP_DIR).
#
# Knobs (environment variables; defaults in brackets):
#   TRAIN_SWEEP_DIR  results of all points    [$SLURM_SUBMIT_DIR/sweep-$SLURM_ARRAY_JOB_ID]
#   TRAIN_LAYERS     model widths             [784,256,10]
#   TRAIN_DATA       IDX directory or "synthetic"  [/usr/share/datasets/fashion-mnist]
#   TRAIN_EPOCHS     passes over the data     [1]
#   TRAIN_BATCH      global batch per step    [256]
#   TRAIN_LR         peak AdamW learning rate [0.002]
#   TRAIN_MAX_STEPS  stop after N steps, 0 = no limit  [0]
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

sweep_file=${1:?usage: sbatch --array=RANGE sweep.sh SWEEPFILE (RANGE from: train-sweep size SWEEPFILE)}
if [ -z "${SLURM_ARRAY_TASK_ID:-}" ]; then
	range=$(train-sweep size "$sweep_file") || exit 2
	echo "sweep.sh: not an array task: submit with sbatch --array=$range sweep.sh $sweep_file" >&2
	exit 2
fi
point=$SLURM_ARRAY_TASK_ID
args=$(train-sweep point "$sweep_file" "$point") || exit 2
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
train-sweep point --params "$sweep_file" "$point" >"$tmp" && mv -f "$tmp" "$dir/point-$point.params"
rm -f "$dir/point-$point.exit" "$dir/point-$point.json"

echo "sweep point $point on $SLURM_JOB_NODELIST: $args (output in $dir/point-$point.log)"

# The checkpoint signal must not end this shell: the plugin's relay hands it to the step.
trap 'echo "sweep.sh: checkpoint signal: point $point checkpoints and stops"' USR1
# $args is split into words on purpose: train-sweep allows no blanks or glob characters in values.
set -f
# shellcheck disable=SC2086 # TRAIN_EXTRA and $args are split on purpose (set -f above)
srun --kill-on-bad-exit=1 train-run --tag-output -- \
	train-mlp --layers "${TRAIN_LAYERS:-784,256,10}" --data "${TRAIN_DATA:-/usr/share/datasets/fashion-mnist}" \
	--epochs "${TRAIN_EPOCHS:-1}" --batch "${TRAIN_BATCH:-256}" --lr "${TRAIN_LR:-0.002}" \
	--max-steps "${TRAIN_MAX_STEPS:-0}" --log-every 20 ${TRAIN_EXTRA:-} $args \
	--ckpt-dir "$dir/ckpt-$point" --summary "$dir/point-$point.json" >"$dir/point-$point.log" 2>&1 &
set +f
pid=$!
# A trapped signal ends `wait` early; wait again until the step really ended.
while :; do
	wait "$pid" && rc=0 || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done

tmp=$(mktemp "$dir/.exit.XXXXXX")
echo "$rc" >"$tmp" && mv -f "$tmp" "$dir/point-$point.exit"
case $rc in
0) echo "point $point done: $dir/point-$point.json" ;;
99) echo "point $point checkpointed in $dir/ckpt-$point: sbatch --array=$point again with TRAIN_SWEEP_DIR=$dir to resume" ;;
*) echo "point $point failed with exit code $rc: see $dir/point-$point.log" ;;
esac
exit "$rc"

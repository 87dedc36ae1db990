#!/bin/bash
# SPDX-License-Identifier: MIT
# requeue.sh — training longer than one time limit: checkpoint before the limit, requeue, resume.
#
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/requeue.sh
#
# 120 s before the time limit the batch step gets SIGUSR1 (--signal=B:USR1@120); the plugin's
# relay passes it to every train-mlp worker, which agree on a step, write one checkpoint and exit
# 99. This script then puts the job back in the queue (scontrol requeue, allowed by --requeue).
# The job keeps its id, so the requeued run finds the same checkpoint directory and train-mlp
# resumes from the newest valid checkpoint there; SLURM_RESTART_COUNT counts the requeues. After
# TRAIN_MAX_REQUEUES requeues the job ends with exit 99 instead (resubmit with the same
# TRAIN_CKPT_DIR to go on). Resuming is bit-identical at the same number of ranks.
#
# Knobs (environment variables; defaults in brackets), as in job.sh plus:
#   TRAIN_MAX_REQUEUES  requeues before giving up           [3]
#   TRAIN_LAYERS   model widths                        [784,256,10]
#   TRAIN_DATA     IDX directory or "synthetic"        [/usr/share/datasets/fashion-mnist]
#   TRAIN_EPOCHS   passes over the data                [1]
#   TRAIN_BATCH    global batch per step               [256]
#   TRAIN_LR       peak AdamW learning rate            [0.002]
#   TRAIN_MAX_STEPS  stop after N steps, 0 = no limit  [0]
#   TRAIN_CKPT_DIR checkpoints                         [$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID]
#   TRAIN_SUMMARY  JSON summary                        [$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json]
#   TRAIN_EXTRA    more train-mlp options              []
#SBATCH --job-name=train-mlp
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --time=01:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out
#SBATCH --train-topo=full
set -euo pipefail

max_requeues=${TRAIN_MAX_REQUEUES:-3}
restarts=${SLURM_RESTART_COUNT:-0}
ckpt_dir=${TRAIN_CKPT_DIR:-$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID}
summary=${TRAIN_SUMMARY:-$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json}
case $max_requeues in
'' | *[!0-9]*)
	echo "requeue.sh: TRAIN_MAX_REQUEUES='$max_requeues' is not a whole number (e.g. 3)" >&2
	exit 2
	;;
esac
# 0755 whatever the umask: train-mlp refuses a checkpoint directory others may write into.
(umask 022 && mkdir -p "$ckpt_dir")
echo "job $SLURM_JOB_ID run $((restarts + 1)) (requeued $restarts of at most $max_requeues times) on $SLURM_JOB_NODELIST"

# The checkpoint signal must not end this shell: the plugin's relay hands it to the step.
trap 'echo "requeue.sh: checkpoint signal: the workers checkpoint and stop"' USR1
# shellcheck disable=SC2086 # TRAIN_EXTRA is split into train-mlp's options on purpose
srun --kill-on-bad-exit=1 train-run --tag-output -- \
	train-mlp --layers "${TRAIN_LAYERS:-784,256,10}" --data "${TRAIN_DATA:-/usr/share/datasets/fashion-mnist}" \
	--epochs "${TRAIN_EPOCHS:-1}" --batch "${TRAIN_BATCH:-256}" --lr "${TRAIN_LR:-0.002}" \
	--max-steps "${TRAIN_MAX_STEPS:-0}" --ckpt-dir "$ckpt_dir" --summary "$summary" --log-every 20 \
	${TRAIN_EXTRA:-} &
pid=$!
# A trapped signal ends `wait` early; wait again until the step really ended.
while :; do
	wait "$pid" && rc=0 || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done

case $rc in
0) echo "done after $restarts requeue(s): summary in $summary" ;;
99)
	if [ "$restarts" -ge "$max_requeues" ]; then
		echo "checkpointed in $ckpt_dir, but the job was requeued $restarts times (TRAIN_MAX_REQUEUES=$max_requeues): submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume"
		exit 99
	fi
	echo "checkpointed in $ckpt_dir: requeueing job $SLURM_JOB_ID to resume"
	# Slurm ends this script and queues the job again under the same id.
	scontrol requeue "$SLURM_JOB_ID" && exit 0
	echo "requeue.sh: scontrol requeue $SLURM_JOB_ID failed: submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume" >&2
	exit 99
	;;
*) echo "training failed with exit code $rc" ;;
esac
exit "$rc"

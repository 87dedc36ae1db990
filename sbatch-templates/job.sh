#!/bin/bash
# SPDX-License-Identifier: MIT
# job.sh — data-parallel training on every GPU of the allocation, the traintopo way:
#
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/job.sh
#
# srun starts one train-run per node (--train-topo gives it the rank layout, GPUs and the NCCL
# topology); train-run starts one train-mlp worker per allocated GPU and passes signals on.
# The seeds' SimpleModel (784-256-10) learns Fashion-MNIST. 120 s before the time limit the batch
# step gets SIGUSR1; the plugin's relay passes it to srun and on to every worker, which agree on a
# step, write one checkpoint and exit 99. Submitting again with the same TRAIN_CKPT_DIR resumes.
#
# Knobs (environment variables; defaults in brackets):
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
#SBATCH --output=%x-%j.out
#SBATCH --train-topo
set -euo pipefail

layers=${TRAIN_LAYERS:-784,256,10}
data=${TRAIN_DATA:-/usr/share/datasets/fashion-mnist}
epochs=${TRAIN_EPOCHS:-1}
batch=${TRAIN_BATCH:-256}
lr=${TRAIN_LR:-0.002}
max_steps=${TRAIN_MAX_STEPS:-0}
ckpt_dir=${TRAIN_CKPT_DIR:-$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID}
summary=${TRAIN_SUMMARY:-$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json}
# 0755 whatever the umask: train-mlp refuses a checkpoint directory others may write into.
(umask 022 && mkdir -p "$ckpt_dir")

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: $SLURM_JOB_NUM_NODES nodes, GPUs per node: ${SLURM_GPUS_ON_NODE:-?}"
echo "train-mlp --layers $layers --data $data --epochs $epochs --batch $batch --lr $lr"

# Who is where: every rank with its node and GPU, from the same layout the trainers get.
srun train-run -- bash -c 'echo "rank $RANK of $WORLD_SIZE on $(hostname): local rank $LOCAL_RANK, GPU $CUDA_VISIBLE_DEVICES, CPUs $(taskset -cp $$ | sed "s/.*: //")"' | sort -n -k2

# In the background with `wait`, so bash handles the checkpoint signal at once (a foreground
# srun would delay it); --kill-on-bad-exit ends every node's workers when one fails.
# shellcheck disable=SC2086 # TRAIN_EXTRA is split into train-mlp's options on purpose
srun --kill-on-bad-exit=1 train-run -- \
	train-mlp --layers "$layers" --data "$data" --epochs "$epochs" --batch "$batch" --lr "$lr" \
	--max-steps "$max_steps" --ckpt-dir "$ckpt_dir" --summary "$summary" --log-every 20 \
	${TRAIN_EXTRA:-} &
wait $! && rc=0 || rc=$?

# The variant without train-run: srun starts one task per GPU itself and the plugin gives each
# task its rank and GPU:
#   srun --ntasks-per-node=8 --kill-on-bad-exit=1 train-mlp --layers "$layers" --data "$data" ...

case $rc in
0) echo "done: summary in $summary" ;;
99) echo "checkpointed on the signal in $ckpt_dir: submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume" ;;
*) echo "training failed with exit code $rc" ;;
esac
exit "$rc"

#!/bin/bash
# SPDX-License-Identifier: MIT
# job.sh — data-parallel training on every GPU of the allocation, the traintopo way. Your program:
#
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/job.sh python3 train.py --lr 3e-4
#
# or, with no arguments, the demo trainer train-mlp (the seeds' SimpleModel, 784-256-10, learns
# Fashion-MNIST on the GPUs when CUDA is usable: --device auto):
#
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/job.sh
#
# srun starts one train-run per node (--train-topo gives it the rank layout, GPUs and the NCCL
# topology); train-run starts one worker per allocated GPU with RANK, LOCAL_RANK, WORLD_SIZE,
# MASTER_ADDR/MASTER_PORT and its GPU, as torchrun would, so `init_process_group()` from the
# environment works unchanged. One launcher per node rather than one srun task per GPU: train-run
# binds each worker to its GPU's CPUs and NICs, passes the checkpoint signal on once, takes the
# checkpoint exit for a clean stop (srun would record a task's 99 as a failure) and can restart
# the node's workers (train-run --max-restarts).
#
# The checkpoint protocol, for any program: 120 s before the time limit the batch step gets
# SIGUSR1; the plugin's relay passes it to srun and on to every worker. The worker saves and exits
# with $TRAIN_TOPO_CKPT_EXIT (99; every worker has the variable); train-run prints one
# "checkpointed" line per node and exits 0, so the job ends COMPLETED. Submitting again with the
# same TRAIN_CKPT_DIR resumes (requeue.sh does it for you). Any other status is a failure.
#
# Knobs (environment variables; defaults in brackets):
#   TRAIN_CKPT_DIR checkpoints, exported to your program  [$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID]
#   TRAIN_RUN_ARGS more train-run options, e.g. --max-restarts 2  []
#   TRAIN_SPARES   nodes that stand by as spares (sbatch --no-kill -N n+K)  [0]
#   TRAIN_MIN_NODES  go on with fewer nodes, down to this many, when a node is lost and no
#                  spare is left (train-run --nnodes MIN:N; sbatch --no-kill; your program must
#                  resume at a changed WORLD_SIZE: train-mlp does)  [the job's node count]
# and, for train-mlp only:
#   TRAIN_LAYERS   model widths                        [784,256,10]
#   TRAIN_DATA     IDX directory or "synthetic"        [/usr/share/datasets/fashion-mnist]
#   TRAIN_EPOCHS   passes over the data                [1]
#   TRAIN_BATCH    global batch per step               [256]
#   TRAIN_LR       peak AdamW learning rate            [0.002]
#   TRAIN_MAX_STEPS  stop after N steps, 0 = no limit  [0]
#   TRAIN_DEVICE   cpu, gpu or auto                    [auto]
#   TRAIN_SUMMARY  JSON summary                        [$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json]
#   TRAIN_EXTRA    more train-mlp options              []
#SBATCH --job-name=train
#SBATCH --nodes=2
#SBATCH --ntasks-per-node=1
#SBATCH --gres=gpu:8
#SBATCH --time=01:00:00
#SBATCH --signal=B:USR1@120
#SBATCH --output=%x-%j.out
#SBATCH --train-topo
set -euo pipefail

ckpt_dir=${TRAIN_CKPT_DIR:-$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID}
export TRAIN_CKPT_DIR=$ckpt_dir
summary=${TRAIN_SUMMARY:-$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json}
# 0755 whatever the umask: train-mlp refuses a checkpoint directory others may write into.
(umask 022 && mkdir -p "$ckpt_dir")
if [ $# -gt 0 ]; then
	program=("$@")
else
	program=(train-mlp --layers "${TRAIN_LAYERS:-784,256,10}" --data "${TRAIN_DATA:-/usr/share/datasets/fashion-mnist}"
		--epochs "${TRAIN_EPOCHS:-1}" --batch "${TRAIN_BATCH:-256}" --lr "${TRAIN_LR:-0.002}"
		--max-steps "${TRAIN_MAX_STEPS:-0}" --device "${TRAIN_DEVICE:-auto}" --ckpt-dir "$ckpt_dir"
		--summary "$summary" --log-every 20)
	# shellcheck disable=SC2206 # TRAIN_EXTRA is split into train-mlp's options on purpose
	program+=(${TRAIN_EXTRA:-})
fi

echo "job $SLURM_JOB_ID on $SLURM_JOB_NODELIST: $SLURM_JOB_NUM_NODES nodes, GPUs per node: ${SLURM_GPUS_ON_NODE:-?}"
echo "program: ${program[*]}"

# Who is where: every rank with its node and GPU, from the same layout the workers get.
srun train-run -- bash -c 'echo "rank $RANK of $WORLD_SIZE on $(hostname): local rank $LOCAL_RANK, GPU $CUDA_VISIBLE_DEVICES, CPUs $(taskset -cp $$ | sed "s/.*: //")"' | sort -n -k2

# A node lost during the run (its train-run killed, its node down) is named by every train-run
# (man 1 train-run, FAULT TOLERANCE) in this file, one host a line; node 0's train-run writes
# its exit status, the launch's outcome, in the other (see below).
lost_file=$ckpt_dir/lost-nodes.$SLURM_JOB_ID
outcome_file=$ckpt_dir/outcome.$SLURM_JOB_ID
rm -f "$lost_file" "$outcome_file"
export TRAIN_TOPO_EXCLUDE_FILE=$lost_file TRAIN_TOPO_OUTCOME_FILE=$outcome_file

# The checkpoint signal must not end this shell (the relay hands it to the step too): note it.
signalled=0
trap 'signalled=1; echo "job.sh: checkpoint signal: the workers checkpoint and stop"' USR1
# In the background with `wait`, so bash handles the signal at once (a foreground srun would
# delay it); --kill-on-bad-exit ends every node's workers when one node fails.
# Spares (TRAIN_SPARES=K): the last K nodes stand by to take a lost node's place (train-run
# --spares, man 1 train-run, FAULT TOLERANCE). The step must outlive a lost node then: srun
# --no-kill instead of --kill-on-bad-exit, and submit the job with sbatch --no-kill.
# Fewer nodes (TRAIN_MIN_NODES=M): the same, with train-run --nnodes M:N (FAULT TOLERANCE, Fewer
# nodes).
step_opts=(--kill-on-bad-exit=1)
spares=()
if [ "${TRAIN_SPARES:-0}" != 0 ]; then
	step_opts=(--no-kill)
	spares=(--spares "$TRAIN_SPARES")
fi
if [ -n "${TRAIN_MIN_NODES:-}" ] && [ "$TRAIN_MIN_NODES" != "$SLURM_JOB_NUM_NODES" ]; then
	step_opts=(--no-kill)
	spares+=(--nnodes "$TRAIN_MIN_NODES:$SLURM_JOB_NUM_NODES")
fi
# shellcheck disable=SC2086 # TRAIN_RUN_ARGS is split into train-run's options on purpose
srun "${step_opts[@]}" train-run "${spares[@]}" ${TRAIN_RUN_ARGS:-} -- "${program[@]}" &
pid=$!
# A trapped signal ends `wait` early; wait again until the step really ended.
while :; do
	wait "$pid" && rc=0 || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done

# The variant without train-run: srun starts one task per GPU itself and the plugin gives each
# task its rank and GPU (a task's checkpoint exit then ends the step FAILED):
#   srun --ntasks-per-node=8 --kill-on-bad-exit=1 python3 train.py ...

# A lost node's train-run fails the step (srun reports its status) although the others went on
# without it when a spare took its place or the world shrank: then node 0's train-run, which
# decided that, has the launch's outcome.
went_on=
if [ "$rc" -ne 0 ] && [ -s "$lost_file" ] && [ "$(cat "$outcome_file" 2>/dev/null)" = 0 ]; then
	lost=$(sort -u "$lost_file" | paste -sd, -)
	went_on=" ($lost was lost and the job went on without it: exclude it next time, sbatch --exclude=$lost)"
	rc=0
fi

# train-run exits 0 after a checkpoint stop; a program started without it exits with the status.
if { [ "$rc" -eq 0 ] && [ "$signalled" -eq 1 ]; } || [ "$rc" -eq "${TRAIN_TOPO_CKPT_EXIT:-99}" ]; then
	echo "checkpointed on the signal in $ckpt_dir$went_on: submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume"
	exit 0
fi
case $rc in
0) if [ $# -gt 0 ]; then echo "done: $*$went_on"; else echo "done: summary in $summary$went_on"; fi ;;
*) echo "training failed with exit code $rc" ;;
esac
exit "$rc"

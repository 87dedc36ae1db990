#!/bin/bash
# SPDX-License-Identifier: MIT
# requeue.sh — training longer than one time limit: checkpoint before the limit, requeue, resume.
# Your program, or with no arguments the demo trainer train-mlp:
#
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/requeue.sh python3 train.py --lr 3e-4
#     sbatch --nodes=2 --gres=gpu:8 sbatch-templates/requeue.sh
#
# One train-run per node starts one worker per GPU (see job.sh for why). 120 s before the time
# limit the batch step gets SIGUSR1 (--signal=B:USR1@120); the plugin's relay passes it to every
# worker, which saves a checkpoint and exits with $TRAIN_TOPO_CKPT_EXIT (99; every worker has the
# variable). train-run takes that for a clean stop (one line per node, exit 0), and this script
# puts the job back in the queue (scontrol requeue, allowed by --requeue): it ends REQUEUED, never
# FAILED. The job keeps its id, so the requeued run finds the same checkpoint directory
# (TRAIN_CKPT_DIR, exported to your program) and resumes from the newest valid checkpoint there;
# SLURM_RESTART_COUNT counts the requeues. A crash (any other status, or a signal) is a failure
# and is not requeued. After TRAIN_MAX_REQUEUES requeues the job stops instead (resubmit with the
# same TRAIN_CKPT_DIR to go on). train-mlp resumes bit-identically at the same number of ranks.
# A node lost during the run (train-run's control plane names it) ends the job; the last line
# then gives the sbatch command that resumes from the checkpoints without that node.
# Slurm itself may log "slurmstepd: error: *** JOB N ON node CANCELLED AT ... DUE TO JOB REQUEUE ***"
# (newer releases: "[TIMESTAMP] error: ...") when the requeue ends this script before it exited:
# that line is the requeue, not a failure.
#
# Knobs (environment variables; defaults in brackets):
#   TRAIN_MAX_REQUEUES  requeues before giving up           [3]
#   TRAIN_CKPT_DIR checkpoints, exported to your program  [$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID]
#   TRAIN_RUN_ARGS more train-run options              []
#   TRAIN_SPARES   nodes that stand by as spares (sbatch --no-kill -N n+K)  [0]
#   TRAIN_MIN_NODES  go on with fewer nodes, down to this many, when a node is lost and no
#                  spare is left (train-run --nnodes MIN:N; sbatch --no-kill; your program must
#                  resume at a changed WORLD_SIZE: train-mlp does)  [the job's node count]
# and, for train-mlp only, as in job.sh:
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
#SBATCH --requeue
#SBATCH --open-mode=append
#SBATCH --output=%x-%j.out
#SBATCH --train-topo=full
set -euo pipefail

max_requeues=${TRAIN_MAX_REQUEUES:-3}
restarts=${SLURM_RESTART_COUNT:-0}
ckpt_dir=${TRAIN_CKPT_DIR:-$SLURM_SUBMIT_DIR/checkpoints/$SLURM_JOB_ID}
export TRAIN_CKPT_DIR=$ckpt_dir
summary=${TRAIN_SUMMARY:-$SLURM_SUBMIT_DIR/train-mlp-$SLURM_JOB_ID.json}
case $max_requeues in
'' | *[!0-9]*)
	echo "requeue.sh: TRAIN_MAX_REQUEUES='$max_requeues' is not a whole number (e.g. 3)" >&2
	exit 2
	;;
esac
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
# 0755 whatever the umask: train-mlp refuses a checkpoint directory others may write into.
(umask 022 && mkdir -p "$ckpt_dir")
echo "job $SLURM_JOB_ID run $((restarts + 1)) (requeued $restarts of at most $max_requeues times) on $SLURM_JOB_NODELIST"
echo "program: ${program[*]}"

# A node lost during the run (its train-run killed, its node down): every train-run stops and
# names it here (man 1 train-run, FAULT TOLERANCE), one host a line.
# Node 0's train-run writes its exit status, the launch's outcome, in the other (see below).
lost_file=$ckpt_dir/lost-nodes.$SLURM_JOB_ID
outcome_file=$ckpt_dir/outcome.$SLURM_JOB_ID
rm -f "$lost_file" "$outcome_file"
export TRAIN_TOPO_EXCLUDE_FILE=$lost_file TRAIN_TOPO_OUTCOME_FILE=$outcome_file

# The checkpoint signal must not end this shell (the relay hands it to the step too): note it.
signalled=0
trap 'signalled=1; echo "requeue.sh: checkpoint signal: the workers checkpoint and stop"' USR1
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
srun "${step_opts[@]}" train-run --tag-output "${spares[@]}" ${TRAIN_RUN_ARGS:-} -- "${program[@]}" &
pid=$!
# A trapped signal ends `wait` early; wait again until the step really ended.
while :; do
	wait "$pid" && rc=0 || rc=$?
	kill -0 "$pid" 2>/dev/null || break
done

# A lost node's train-run fails the step (srun reports its status) although the others went on
# without it when a spare took its place or the world shrank: then node 0's train-run, which
# decided that, has the launch's outcome.
# resume_without HOSTS: the command that resumes from the checkpoints without HOSTS (and without
# the nodes this job excludes already). Slurm changes the excluded nodes of a pending job only
# ("Job is no longer pending execution"), so a running job cannot requeue itself elsewhere.
resume_without() {
	local excluded
	excluded=$(scontrol show job "$SLURM_JOB_ID" 2>/dev/null | sed -n 's/.*ExcNodeList=\([^ ]*\).*/\1/p')
	[ "$excluded" != "(null)" ] || excluded=""
	echo "resume without them: TRAIN_CKPT_DIR=$ckpt_dir sbatch --nodes=$SLURM_JOB_NUM_NODES --exclude=${excluded:+$excluded,}$1 requeue.sh${program_args:+ $program_args}"
}
program_args=
[ $# -eq 0 ] || program_args=${program[*]}
went_on=
if [ "$rc" -ne 0 ] && [ -s "$lost_file" ] && [ "$(cat "$outcome_file" 2>/dev/null)" = 0 ]; then
	lost=$(sort -u "$lost_file" | paste -sd, -)
	went_on=" ($lost was lost and the job went on without it: exclude it next time, sbatch --exclude=$lost)"
	rc=0
fi

# train-run exits 0 after a checkpoint stop; a program started without it exits with the status.
if { [ "$rc" -eq 0 ] && [ "$signalled" -eq 1 ]; } || [ "$rc" -eq "${TRAIN_TOPO_CKPT_EXIT:-99}" ]; then
	if [ "$restarts" -ge "$max_requeues" ]; then
		echo "checkpointed in $ckpt_dir, but the job was requeued $restarts times (TRAIN_MAX_REQUEUES=$max_requeues): submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume"
		exit 0
	fi
	if [ -n "$went_on" ]; then
		# A requeued job keeps its nodes, the lost one too: resubmit without it instead.
		echo "checkpointed in $ckpt_dir$went_on; not requeued: $(resume_without "$lost")"
		exit 0
	fi
	echo "checkpointed in $ckpt_dir: requeueing job $SLURM_JOB_ID to resume"
	# Slurm ends this script and queues the job again under the same id.
	scontrol requeue "$SLURM_JOB_ID" && exit 0
	echo "requeue.sh: scontrol requeue $SLURM_JOB_ID failed: submit again with TRAIN_CKPT_DIR=$ckpt_dir to resume" >&2
	exit 1
fi
# A lost node that ended the launch: resubmit without it.
if [ "$rc" -ne 0 ] && [ -s "$lost_file" ]; then
	lost=$(sort -u "$lost_file" | paste -sd, -)
	echo "requeue.sh: node(s) $lost lost; $(resume_without "$lost")" >&2
fi
case $rc in
0) echo "done after $restarts requeue(s)$([ $# -gt 0 ] || echo ": summary in $summary")$went_on" ;;
*) echo "training failed with exit code $rc" ;;
esac
exit "$rc"

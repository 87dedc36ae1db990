#!/bin/sh
# SPDX-License-Identifier: MIT
# pytorch_ddp.sh — examples/pytorch_ddp.py through train-run on this machine, two gloo ranks: an
# uninterrupted run; a run that gets SIGUSR1 and checkpoints (train-run: exit 0, one
# 'checkpointed' line, no 'stopping'); its resume, past a corrupt newer checkpoint, prints the same
# loss at every step as the uninterrupted run; the result line and TRAIN_TOPO_RESULT_FILE.
# Exit 77 (SKIP) without a python3 that has torch (Debian: python3-torch).
set -u
TRAIN_RUN=${TRAIN_RUN:-$(pwd)/train-run}
EXAMPLE=${TT_TEST_SRCDIR:-.}/examples/pytorch_ddp.py
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pytorch-ddp-test.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
py=
for p in python3 /usr/bin/python3; do
	if "$p" -c 'import torch.distributed' 2>/dev/null; then py=$p; break; fi
done
[ -n "$py" ] || { echo "SKIP: no python3 with torch (install python3-torch)"; exit 77; }
cd "$WORK" || exit 1
args="--steps 30 --log-every 1 --samples 1024"
losses() { cat "$@" | grep -o '^pytorch_ddp: step [0-9]* loss .*' | sed 's/^pytorch_ddp: //'; }

# shellcheck disable=SC2086 # $args is a list of options, split on purpose
timeout 120 "$TRAIN_RUN" --nproc-per-node 2 -- "$py" "$EXAMPLE" $args --ckpt-dir ref >ref.out 2>&1 ||
	fail "uninterrupted run: $(tail -n 5 ref.out)"
[ "$(losses ref.out | wc -l)" -eq 30 ] || fail "uninterrupted run: not 30 loss lines: $(cat ref.out)"
grep -q '^TRAIN_RESULT {"metric": "val_loss", "value": [0-9.]*, "goal": "min"' ref.out || fail "no TRAIN_RESULT line: $(cat ref.out)"

# No timeout(1) here: the signal goes to train-run itself. 30 steps of 0.2 s bound the run.
# shellcheck disable=SC2086 # $args is a list of options, split on purpose
"$TRAIN_RUN" --nproc-per-node 2 -- "$py" "$EXAMPLE" $args --ckpt-dir run --sleep-per-step 0.2 >run1.out 2>&1 &
pid=$!
i=0
until grep -q '^pytorch_ddp: step 5 ' run1.out 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 600 ] || { kill "$pid"; fail "the interrupted run did not reach step 5: $(cat run1.out)"; }
	sleep 0.1
done
kill -USR1 "$pid"
wait "$pid"
rc=$?
[ $rc -eq 0 ] || fail "checkpoint stop: train-run exit $rc, want 0: $(cat run1.out)"
[ "$(grep -c 'checkpointed; requeue or resubmit to resume' run1.out)" -eq 1 ] || fail "not one checkpointed line: $(cat run1.out)"
grep -q 'stopping\|SIGKILL\|SIGTERM' run1.out && fail "a checkpoint stop reads like a failure: $(cat run1.out)"
[ "$(ls run/step-*.pt | wc -l)" -eq 1 ] || fail "not one checkpoint: $(ls run)"
step=$(ls run/step-*.pt | sed 's/.*step-0*\([0-9]*\)\.pt/\1/')
[ "$step" -lt 30 ] || fail "checkpointed at step $step: the run had ended"
# A torn newer checkpoint (a save cut short by a node failure) is skipped with a line.
head -c 100 "run/step-$(printf %08d "$step").pt" >run/step-00000029.pt

# shellcheck disable=SC2086 # $args is a list of options, split on purpose
TRAIN_TOPO_RESULT_FILE=$WORK/result.json timeout 120 "$TRAIN_RUN" --nproc-per-node 2 -- "$py" "$EXAMPLE" $args \
	--ckpt-dir run >run2.out 2>&1 || fail "resumed run: $(tail -n 5 run2.out)"
grep -q '^pytorch_ddp: skipping checkpoint run/step-00000029.pt' run2.out || fail "the torn checkpoint was not skipped: $(cat run2.out)"
grep -q "^pytorch_ddp: resumed from run/step-$(printf %08d "$step").pt at step $step" run2.out || fail "no resume: $(cat run2.out)"
losses run1.out run2.out | sort -u -k2n >resumed.txt
losses ref.out >ref.txt
cmp -s ref.txt resumed.txt || fail "resumed losses differ: $(diff ref.txt resumed.txt)"
grep -q '^{"metric": "val_loss", "value": [0-9.]*, "goal": "min"' result.json || fail "TRAIN_TOPO_RESULT_FILE: $(cat result.json)"
echo "ok: checkpoint at step $step on SIGUSR1 (train-run exit 0, one line), resume past a torn checkpoint, 30 equal losses"

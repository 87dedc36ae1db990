#!/bin/sh
# SPDX-License-Identifier: MIT
# resume.sh — an interrupted and resumed train-mlp run ends bit-identical to an uninterrupted one:
# SIGUSR1 mid-run -> checkpoint at the next step boundary -> exit 99; a torn newer checkpoint
# directory is skipped with a warning; the rerun resumes model, AdamW state and data position.
# Also: --ckpt-every with --keep prunes old checkpoints; a checkpoint of another --layers, --batch or
# --seed is refused; a checkpoint directory another user could have planted (world-writable,
# another user's, or a symbolic link) or one that cannot be made is refused before training, with
# one line naming it; --signal USR2 --on-signal checkpoint checkpoints and trains on to the same
# weights as the uninterrupted run.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
tmp=$(mktemp -d /tmp/tt-resume-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; [ -f "$tmp/b1.log" ] && cat "$tmp/b1.log"; exit 1; }
export OPENBLAS_NUM_THREADS=1
unset RANK WORLD_SIZE PMIX_RANK
args="--layers 64,256,256,10 --data synthetic --synthetic-samples 4096,256 --batch 32 --epochs 10 --lr 0.002 --warmup 20 --seed 11 --log-every 20"

$TRAIN_MLP $args --summary "$tmp/a.json" 2>"$tmp/a.log" || fail "uninterrupted run failed: $(cat "$tmp/a.log")"

# signal_at_step_40 SIG LOG ARGS...: runs train-mlp with ARGS, sends SIG once LOG shows step 40,
# and leaves the run's exit status in rc.
signal_at_step_40() {
	sig=$1 log=$2
	shift 2
	$TRAIN_MLP "$@" 2>"$log" &
	pid=$!
	i=0
	until grep -q "^train-mlp: step 40/" "$log" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -gt 600 ] && { kill "$pid"; fail "no progress line within 30 s"; }
		sleep 0.05
	done
	kill -"$sig" "$pid"
	wait "$pid"
	rc=$?
}

# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
signal_at_step_40 USR1 "$tmp/b1.log" $args --ckpt-dir "$tmp/ck" --summary "$tmp/b.json"
[ "$rc" -eq 99 ] || fail "interrupted run exited $rc, want 99 (did it finish before the signal?)"
grep -q "checkpoint of step" "$tmp/b1.log" || fail "no checkpoint message"
[ -f "$tmp/b.json" ] && fail "summary written by an interrupted run"

# A newer but torn checkpoint (meta.txt never written: a run killed while writing it) is skipped,
# and removed with a line saying so, so only whole checkpoints remain.
mkdir -p "$tmp/ck/step-99999999"
echo garbage >"$tmp/ck/step-99999999/rank-00000.bin"
$TRAIN_MLP $args --ckpt-dir "$tmp/ck" --ckpt-every 100 --keep 2 --summary "$tmp/b.json" 2>"$tmp/b2.log" ||
	fail "resumed run failed: $(cat "$tmp/b2.log")"
grep -q "removed torn checkpoint .*step-99999999: .*meta.txt" "$tmp/b2.log" ||
	fail "torn checkpoint not reported: $(cat "$tmp/b2.log")"
grep -q "resumed from" "$tmp/b2.log" || fail "did not resume: $(cat "$tmp/b2.log")"

a=$(sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$tmp/a.json")
b=$(sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$tmp/b.json")
[ -n "$a" ] && [ "$a" = "$b" ] || fail "weights differ: uninterrupted $a, resumed $b"
acc_a=$(sed -n 's/.*"test_accuracy": \(.*\),/\1/p' "$tmp/a.json")
acc_b=$(sed -n 's/.*"test_accuracy": \(.*\),/\1/p' "$tmp/b.json")
[ "$acc_a" = "$acc_b" ] || fail "test accuracy differs: $acc_a vs $acc_b"

# --ckpt-every 100 over 1280 steps with --keep 2 leaves steps 1100 and 1200.
kept=$(cd "$tmp/ck" && ls -d step-* | tr '\n' ' ')
[ "$kept" = "step-00001100 step-00001200 " ] || fail "--keep 2 left: $kept"

# Another model shape, global batch or seed must not load this checkpoint.
rm -rf "$tmp/ck/step-99999999"
for other in "--layers 64,128,10 --batch 32 --seed 11" "--layers 64,256,256,10 --batch 64 --seed 11" \
	"--layers 64,256,256,10 --batch 32 --seed 12"; do
	# shellcheck disable=SC2086 # $other is train-mlp's options, split on purpose
	if $TRAIN_MLP $other --data synthetic --synthetic-samples 4096,256 --epochs 10 --ckpt-dir "$tmp/ck" 2>"$tmp/c.log"; then
		fail "a checkpoint was accepted by a run with $other"
	fi
	grep -q "was written with --layers 64,256,256,10 --batch 32 --seed 11" "$tmp/c.log" ||
		fail "unclear refusal for $other: $(cat "$tmp/c.log")"
done

# --signal USR2 --on-signal checkpoint: one checkpoint at the next step boundary, then training
# goes on and ends with exit 0 and the uninterrupted run's weights.
# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
signal_at_step_40 USR2 "$tmp/e.log" $args --signal USR2 --on-signal checkpoint --ckpt-dir "$tmp/ck2" --summary "$tmp/e.json"
[ "$rc" -eq 0 ] || fail "--on-signal checkpoint run exited $rc, want 0: $(cat "$tmp/e.log")"
[ "$(ls -d "$tmp"/ck2/step-* 2>/dev/null | wc -l)" -eq 1 ] || fail "want one checkpoint after USR2: $(ls "$tmp/ck2")"
e=$(sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$tmp/e.json")
[ "$e" = "$a" ] || fail "weights after a checkpoint-and-continue $e differ from the uninterrupted run's $a"
# refused_before_training WHAT WANT DIR: train-mlp --ckpt-dir DIR fails before its first step
# with one line matching WANT.
refused_before_training() {
	# shellcheck disable=SC2086 # $args is a list of options, split on purpose
	if $TRAIN_MLP $args --ckpt-dir "$3" 2>"$tmp/r.log"; then
		fail "$1 --ckpt-dir was used"
	fi
	grep -q "^train-mlp: step " "$tmp/r.log" && fail "$1 --ckpt-dir refused only after training: $(cat "$tmp/r.log")"
	[ "$(wc -l <"$tmp/r.log")" -eq 1 ] || fail "$1 --ckpt-dir: want one line: $(cat "$tmp/r.log")"
	grep -q "$2" "$tmp/r.log" || fail "$1 --ckpt-dir: unclear refusal: $(cat "$tmp/r.log")"
}
chmod 0777 "$tmp/ck"
refused_before_training "a world-writable" "checkpoint directory $tmp/ck .* is writable by everyone" "$tmp/ck"
chmod 0755 "$tmp/ck"
chown 65534 "$tmp/ck" 2>/dev/null && [ "$(id -u)" -eq 0 ] &&
	refused_before_training "another user's" "checkpoint directory $tmp/ck belongs to .*uid 65534" "$tmp/ck"
chown "$(id -u)" "$tmp/ck"
ln -s "$tmp/ck" "$tmp/ck-link"
refused_before_training "a linked" "checkpoint directory $tmp/ck-link is a symbolic link" "$tmp/ck-link"
refused_before_training "an impossible" "cannot create checkpoint directory /proc/tt-ckpt" /proc/tt-ckpt

echo "resume: bit-identical (weights crc32 $a, test accuracy $acc_a)"

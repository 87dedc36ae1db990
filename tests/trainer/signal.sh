#!/bin/sh
# SPDX-License-Identifier: MIT
# signal.sh — checkpoint-on-signal across ranks: SIGUSR1 reaches only rank 1 of 2, yet both ranks
# checkpoint the same step (agreed at the step boundary) and exit 99; resuming on 2 ranks ends
# bit-identical to an uninterrupted 2-rank run; resuming the same checkpoint on 4 ranks under
# ZeRO-3 (re-sliced shards) also completes, with the same test accuracy to within 1%.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-signal-XXXXXX)
pids=""
# shellcheck disable=SC2154 # p is the loop's own variable inside the trap's string (shellcheck does not see it assigned)
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "== $f"; cat "$f"; done; exit 1; }
export OPENBLAS_NUM_THREADS=1 TRAINRT_TIMEOUT=60 TRAINRT_TOKEN=signal-test-secret-$$
unset RANK WORLD_SIZE PMIX_RANK
args="--layers 64,256,256,10 --data synthetic --synthetic-samples 4096,256 --batch 32 --epochs 10 --lr 0.002 --warmup 20 --seed 4 --log-every 20"
crc() { sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$1"; }
acc() { sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' "$1"; }

"$here/launch_local.sh" 2 $TRAIN_MLP $args --summary "$tmp/a.json" 2>"$tmp/a.log" || fail "uninterrupted run"

port=$("$here/launch_local.sh" --free-port)
for r in 0 1; do
	RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
		$TRAIN_MLP $args --ckpt-dir "$tmp/ck" --summary "$tmp/b.json" 2>"$tmp/b$r.log" &
	pids="$pids $!"
	eval "pid$r=$!"
done
i=0
until grep -q "step 40/" "$tmp/b0.log" 2>/dev/null; do
	i=$((i + 1))
	[ "$i" -gt 600 ] && fail "no progress within 30 s"
	sleep 0.05
done
# shellcheck disable=SC2154 # pid0 and pid1 are set by the eval in the loop above
kill -USR1 "$pid1"
# shellcheck disable=SC2154 # pid0, too, is set by that eval
wait "$pid0"
rc0=$?
wait "$pid1"
rc1=$?
pids=""
[ "$rc0" -eq 99 ] && [ "$rc1" -eq 99 ] || fail "ranks exited $rc0 and $rc1, want 99 and 99"
[ "$(ls -d "$tmp"/ck/step-* | wc -l)" -eq 1 ] || fail "want exactly one checkpoint: $(ls "$tmp/ck")"
grep -q "^world 2$" "$tmp"/ck/step-*/meta.txt || fail "checkpoint metadata lacks world 2"
# One step-* directory (checked above): the glob names one file, or stays unexpanded when it is missing.
for f in "$tmp"/ck/step-*/rank-00001.bin; do [ -f "$f" ] || fail "rank 1 wrote no shard"; done

"$here/launch_local.sh" 2 $TRAIN_MLP $args --ckpt-dir "$tmp/ck" --summary "$tmp/c.json" 2>"$tmp/c.log" || fail "resume on 2 ranks"
grep -q "resumed from" "$tmp/c.log" || fail "2-rank rerun did not resume"
[ "$(crc "$tmp/a.json")" = "$(crc "$tmp/c.json")" ] || fail "resumed weights $(crc "$tmp/c.json") != uninterrupted $(crc "$tmp/a.json")"

"$here/launch_local.sh" 4 $TRAIN_MLP $args --zero 3 --ckpt-dir "$tmp/ck" --keep 0 --summary "$tmp/d.json" 2>"$tmp/d.log" ||
	fail "resume on 4 ranks with ZeRO-3"
grep -q "written under layout 2x1x1 (DPxTPxPP, 2 ranks), resuming under 4x1x1 (4 ranks)" "$tmp/d.log" || fail "no note about the world size change"
awk -v a="$(acc "$tmp/a.json")" -v d="$(acc "$tmp/d.json")" 'BEGIN { x = a - d; exit !(x < 0.01 && x > -0.01) }' ||
	fail "4-rank ZeRO-3 resume accuracy $(acc "$tmp/d.json") far from $(acc "$tmp/a.json")"
echo "signal: both ranks checkpointed step $(sed -n 's/^step //p' "$tmp"/ck/step-*/meta.txt | head -1); resume bit-identical ($(crc "$tmp/a.json")); 4-rank ZeRO-3 resume accuracy $(acc "$tmp/d.json")"

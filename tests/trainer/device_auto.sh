#!/bin/sh
# SPDX-License-Identifier: MIT
# device_auto.sh — train-mlp --device auto: the GPU when CUDA is usable, else the CPU with exactly
# one line saying why (rank 0's only, on two ranks too), and the CPU whenever the options are
# beyond the GPU path (--zero 1), whatever the machine.
set -u
TRAIN_MLP=$(cd "$(dirname "${TRAIN_MLP:-./train-mlp}")" && pwd)/$(basename "${TRAIN_MLP:-./train-mlp}")
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-device-auto-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OPENBLAS_NUM_THREADS=1 TRAINRT_TIMEOUT=60
unset RANK WORLD_SIZE PMIX_RANK
args="--layers 16,8,4 --data synthetic --synthetic-samples 256,64 --batch 16 --max-steps 2 --device auto"
device() { sed -n 's/.*"device": "\([^"]*\)".*/\1/p' "$1"; }

$TRAIN_MLP $args --summary "$tmp/one.json" >/dev/null 2>"$tmp/one.err" || fail "one rank: $(cat "$tmp/one.err")"
lines=$(grep -c '^train-mlp: --device auto: using the CPU: ' "$tmp/one.err")
case $(device "$tmp/one.json") in
cpu*) [ "$lines" -eq 1 ] || fail "on the CPU with $lines reason lines: $(cat "$tmp/one.err")" ;;
*) [ "$lines" -eq 0 ] || fail "on the GPU, yet a CPU line: $(cat "$tmp/one.err")" ;;
esac
"$here/launch_local.sh" 2 $TRAIN_MLP $args --summary "$tmp/two.json" >/dev/null 2>"$tmp/two.err" ||
	fail "two ranks: $(tail -n 3 "$tmp/two.err")"
[ "$(grep -c -- '--device auto: using the CPU' "$tmp/two.err")" -eq "$lines" ] ||
	fail "two ranks: not rank 0's line alone: $(cat "$tmp/two.err")"
$TRAIN_MLP $args --zero 1 --summary "$tmp/zero.json" >/dev/null 2>"$tmp/zero.err" || fail "--zero 1: $(cat "$tmp/zero.err")"
grep -q '^train-mlp: --device auto: using the CPU: the GPU path is DDP only' "$tmp/zero.err" ||
	fail "--zero 1 does not say why it is on the CPU: $(cat "$tmp/zero.err")"
case $(device "$tmp/zero.json") in cpu*) ;; *) fail "--zero 1 ran on $(device "$tmp/zero.json")" ;; esac
echo "ok: --device auto chose $(device "$tmp/one.json") with $lines reason line(s); --zero 1 the CPU with its reason"

#!/bin/sh
# SPDX-License-Identifier: MIT
# summary.sh — train-mlp refuses a --summary it could not write before it trains (a directory, a
# missing directory, an empty name), on one rank and on two (rank 0 checks, every rank stops), and
# `--summary -` writes the JSON to standard output instead of a file named '-'.
set -u
TRAIN_MLP=$(cd "$(dirname "${TRAIN_MLP:-./train-mlp}")" && pwd)/$(basename "${TRAIN_MLP:-./train-mlp}")
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-summary-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
export OPENBLAS_NUM_THREADS=1 TRAINRT_TIMEOUT=60
unset RANK WORLD_SIZE PMIX_RANK
args="--layers 16,8,4 --data synthetic --synthetic-samples 256,64 --batch 16 --epochs 2 --log-every 1"

# refused BAD WANT [LAUNCH...]: the run fails with WANT and never reaches a training step.
refused() {
	bad=$1 want=$2
	shift 2
	"$@" $TRAIN_MLP $args --summary "$bad" >"$tmp/out" 2>"$tmp/err" && fail "--summary '$bad' was accepted"
	grep -q -- "$want" "$tmp/err" || fail "--summary '$bad': unclear message: $(cat "$tmp/err")"
	grep -q "step 1/" "$tmp/err" && fail "--summary '$bad' was refused only after training: $(cat "$tmp/err")"
	return 0
}
refused "$tmp" "is a directory: give a file name such as $tmp/summary.json"
refused /nonexistent/x "directory /nonexistent does not exist"
refused "" "want a file name, or - for standard output"
refused /nonexistent/x "directory /nonexistent does not exist" "$here/launch_local.sh" 2

(cd "$tmp" && $TRAIN_MLP $args --summary - >stdout.json 2>err) || fail "--summary - failed: $(cat "$tmp/err")"
[ -e "$tmp/-" ] && fail "--summary - wrote a file named '-'"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["steps"] == 32, d["steps"]' "$tmp/stdout.json" ||
	fail "standard output is not the summary: $(cat "$tmp/stdout.json")"
echo "summary: bad places refused before training on 1 and 2 ranks; '-' is standard output"

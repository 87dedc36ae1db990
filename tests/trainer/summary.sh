#!/bin/sh
# SPDX-License-Identifier: MIT
# summary.sh — train-mlp refuses a --summary it could not write before it trains (a directory, a
# missing directory, an empty name, a FIFO, a symbolic link), on one rank and on two (rank 0
# checks, every rank stops), and a WORLD_SIZE that is no number of ranks before it joins (atoi
# truncated 99999999999); `--summary -` writes the JSON to standard output instead of a file named '-', and the step traffic
# it reports is the ring all-reduce's.
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
mkfifo "$tmp/fifo"
refused "$tmp/fifo" "is a FIFO, not a regular file"
ln -s "$tmp/elsewhere.json" "$tmp/link.json"
refused "$tmp/link.json" "is a symbolic link, not a regular file"
for w in 99999999999 12abc 0; do
	rc=0
	# shellcheck disable=SC2086 # $args is a list of options, split on purpose
	WORLD_SIZE=$w RANK=0 timeout 20 $TRAIN_MLP $args 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 2 ] && grep -qF "WORLD_SIZE='$w' is not a world size" "$tmp/err" ||
		fail "WORLD_SIZE=$w -> rc $rc: $(cat "$tmp/err")"
done

(cd "$tmp" && $TRAIN_MLP $args --summary - >stdout.json 2>err) || fail "--summary - failed: $(cat "$tmp/err")"
[ -e "$tmp/-" ] && fail "--summary - wrote a file named '-'"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["steps"] == 32, d["steps"]' "$tmp/stdout.json" ||
	fail "standard output is not the summary: $(cat "$tmp/stdout.json")"
# bytes_sent_per_step: all ranks' traffic per step. Data parallelism alone runs one ring all-reduce
# of the model's float32 gradients ((16*8+8) + (8*4+4) = 172 of --layers 16,8,4) per step, each of
# the p ranks sending 2(p-1)/p of them: 2(p-1) * 172 * 4 bytes in all, none on one rank.
for p in 1 4; do
	"$here/launch_local.sh" $p $TRAIN_MLP $args --summary "$tmp/dp$p.json" >/dev/null 2>"$tmp/dp$p.err" ||
		fail "$p ranks failed: $(tail -3 "$tmp/dp$p.err")"
	got=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bytes_sent_per_step"])' "$tmp/dp$p.json")
	[ "$got" = $((2 * (p - 1) * 172 * 4)) ] || fail "$p ranks: bytes_sent_per_step $got, want $((2 * (p - 1) * 172 * 4))"
done
echo "summary: bad places refused before training on 1 and 2 ranks; '-' is standard output; bytes per step = 2(p-1) x gradients"

#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.sh — 3D parallelism does not change the math. For every factorization of 8 ranks into
# data x tensor x pipeline parallel (DPxTPxPP) the per-step losses equal the 1-rank run with the same
# global batch, seed and micro-batches, with and without --recompute; recompute and the GPipe
# schedule are bit-identical to the plain 1F1B run of the same layout; pipeline parallelism alone
# (1x1x8) is bit-identical to one rank; ZeRO stages inside the data-parallel groups agree too.
# Checkpoints: a run resumed under its own layout ends bit-identical to the uninterrupted one; a
# checkpoint written under one layout resumes under others (resharded), with a note naming both.
# Bad layouts are refused before any rendezvous with their numbers. Ranks are processes on this
# machine joined through the env contract on 127.0.0.1 (launch_local.sh).
#
# Tolerance: tensor parallelism splits each pair's inner sums over T ranks and adds the partial
# sums in an all-reduce, and data parallelism sums gradients over replicas: float32 additions in
# another order, each rounding within 2^-24 relative, so losses agree to rounding, not bit for bit:
# |loss - reference| <= 1e-4 * max(1, |reference|) per step (observed: <= 1e-6 over 8 steps), the
# bound equivalence.sh uses for data parallelism. Layouts that only cut the layers into stages
# change no sum at all: exact.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-parallel-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 TRAINRT_TIMEOUT=60
unset RANK WORLD_SIZE PMIX_RANK
# 8 layers of widths divisible by 8 (every T up to 8 splits them; 8 layers allow up to 8 stages).
args="--layers 16,32x6,8 --data synthetic --synthetic-samples 512,64 --batch 32 --max-steps 8 --lr 0.01 --seed 5 --log-every 1 --accum 2"
fail() { echo "FAIL: $*"; exit 1; }

run() { # name world extra-args...
	name=$1 world=$2
	shift 2
	if ! "$here/launch_local.sh" "$world" $TRAIN_MLP $args --summary "$tmp/$name.json" "$@" 2>"$tmp/$name.log"; then
		echo "FAIL: $name (world $world $*) failed:"
		tail -20 "$tmp/$name.log"
		exit 1
	fi
}

losses() { sed -n 's/.*"step": \([0-9]*\), "loss": \([^,]*\),.*/\1 \2/p' "$1"; }
crc() { sed -n 's/.*"weights_crc32": "\(.*\)".*/\1/p' "$tmp/$1.json"; }

compare() { # name reference: the steps name logged (a resumed run: the last ones) against reference's
	losses "$tmp/$2.json" >"$tmp/ref.txt"
	losses "$tmp/$1.json" >"$tmp/got.txt"
	[ "$(wc -l <"$tmp/ref.txt")" -eq 8 ] || fail "$2 logged $(wc -l <"$tmp/ref.txt") losses, want 8"
	[ -s "$tmp/got.txt" ] || fail "$1 logged no loss"
	join "$tmp/ref.txt" "$tmp/got.txt" >"$tmp/both.txt"
	[ "$(wc -l <"$tmp/both.txt")" -eq "$(wc -l <"$tmp/got.txt")" ] || fail "$1 logged steps $2 did not"
	awk -v name="$1" '
		{ d = $2 - $3; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (m < 1) m = 1;
		  r = d / m; if (r > worst) worst = r; if (d > 1e-4 * m) { bad = 1; print "FAIL: " name " step " $1 ": " $3 " vs " $2 } }
		END { printf "%-26s max relative loss difference %.2e (%d steps)\n", name, worst, NR; exit bad }' "$tmp/both.txt" || exit 1
}

same_crc() { # a b why
	[ "$(crc "$1")" = "$(crc "$2")" ] || fail "$1 ($(crc "$1")) and $2 ($(crc "$2")) differ: $3"
}

run ref 1
for lay in 8x1x1 4x2x1 4x1x2 2x2x2 1x2x4 2x4x1 1x8x1 1x1x8 2x1x4 1x4x2; do
	tp=$(echo "$lay" | cut -dx -f2)
	pp=$(echo "$lay" | cut -dx -f3)
	run "$lay" 8 --tp "$tp" --pp "$pp"
	compare "$lay" ref
	run "$lay-recompute" 8 --tp "$tp" --pp "$pp" --recompute
	compare "$lay-recompute" ref
	same_crc "$lay-recompute" "$lay" "recomputing activations must not change a bit"
	grep -q "layout $lay (DPxTPxPP)" "$tmp/$lay.log" || fail "$lay: no layout line: $(head -3 "$tmp/$lay.log")"
done
same_crc 1x1x8 ref "pipeline stages alone change no sum"
run 2x2x2-gpipe 8 --tp 2 --pp 2 --schedule gpipe
same_crc 2x2x2-gpipe 2x2x2 "GPipe and 1F1B run the same backward order"
for z in 1 2 3; do
	run "2x2x2-zero$z" 8 --tp 2 --pp 2 --zero "$z"
	compare "2x2x2-zero$z" ref
done
run 2x1x4-zero3-recompute 8 --pp 4 --zero 3 --recompute
compare 2x1x4-zero3-recompute ref

# Checkpoints: written under 2x2x2 at steps 4 and 8; step 8 removed, the rerun resumes at 4.
run ck-full 8 --tp 2 --pp 2 --ckpt-dir "$tmp/ck" --ckpt-every 4
grep -q "^layout 2 2 2$" "$tmp/ck/step-00000004/meta.txt" || fail "meta.txt lacks the layout: $(cat "$tmp/ck/step-00000004/meta.txt")"
rm -rf "$tmp/ck/step-00000008"
cp -r "$tmp/ck" "$tmp/ck2"
cp -r "$tmp/ck" "$tmp/ck3"
run ck-same 8 --tp 2 --pp 2 --ckpt-dir "$tmp/ck"
grep -q "resumed from .*step-00000004" "$tmp/ck-same.log" || fail "did not resume: $(tail -3 "$tmp/ck-same.log")"
same_crc ck-same ck-full "resuming under the same layout must be exact"
run ck-reshard 8 --tp 4 --pp 1 --ckpt-dir "$tmp/ck2"
grep -q "written under layout 2x2x2 (DPxTPxPP, 8 ranks), resuming under 2x4x1 (8 ranks): resharded" "$tmp/ck-reshard.log" ||
	fail "no resharding note: $(grep -i note "$tmp/ck-reshard.log")"
compare ck-reshard ck-full
run ck-fewer 4 --pp 2 --ckpt-dir "$tmp/ck3"
grep -q "resuming under 2x1x2 (4 ranks): resharded" "$tmp/ck-fewer.log" || fail "no resharding note on 4 ranks"
compare ck-fewer ck-full

# Bad layouts are refused before joining: rank 3 of 8 alone (rank 0 never comes) must not wait.
refused() { # want-message args...
	want=$1
	shift
	rc=0
	RANK=3 WORLD_SIZE=8 LOCAL_RANK=3 LOCAL_WORLD_SIZE=8 MASTER_ADDR=127.0.0.1 MASTER_PORT=1 \
		timeout 20 $TRAIN_MLP $args "$@" >"$tmp/r.out" 2>"$tmp/r.err" || rc=$?
	[ "$rc" -eq 2 ] && grep -qF -- "$want" "$tmp/r.err" || fail "$* -> rc $rc, '$(cat "$tmp/r.err")' (want: $want)"
}
refused "--tp 3 x --pp 1 = 3 ranks per data-parallel replica does not divide the world of 8 ranks" --tp 3
refused "--pp 4 does not divide the 9 layers of the model" --pp 4 --layers 16,32x7,8
refused "--tp 8 does not divide the 12 outputs of layer 0 (16->12)" --tp 8 --layers 16,12,32x5,8
refused "--batch 36 does not split into 4 data-parallel replicas x 2 micro-batches" --tp 2 --batch 36
refused "the GPU path is data parallelism only" --tp 2 --device gpu
echo "parallel: every layout within 1e-4 of one rank; recompute, GPipe and stages alone exact; checkpoints resume and reshard"

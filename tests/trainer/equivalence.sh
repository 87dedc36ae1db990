#!/bin/sh
# SPDX-License-Identifier: MIT
# equivalence.sh — data parallelism does not change the math: the same global batch and seed give
# the same per-step loss trajectory on 1, 2 and 4 ranks, under DDP and ZeRO-1/2/3, with gradient
# accumulation, and with a tiny DDP bucket size (one bucket per layer). Ranks are processes on this
# machine joined through the env contract on 127.0.0.1 (launch_local.sh).
# Tolerance: float32 sums run in a different order on different world sizes (per-rank partial sums,
# reduction order), so losses agree to rounding, not bit for bit: |loss - reference| <= 1e-4 * max(1, |reference|)
# per step. Same world size and stage repeated is bit-identical (weights CRC32 equal), and so are
# ZeRO stages 0-3 at one world size (2 and 4 ranks): sharding changes who updates which slice, not
# the arithmetic, so their final weights CRC32 must be equal.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
here=$(dirname "$0")
tmp=$(mktemp -d /tmp/tt-equiv-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1 TRAINRT_TIMEOUT=60
unset RANK WORLD_SIZE PMIX_RANK
# 11 and 5 do not divide the layer sizes by 2 or 4, so shard padding is exercised.
args="--layers 11,24,16,5 --data synthetic --synthetic-samples 512,64 --batch 32 --max-steps 12 --lr 0.01 --seed 5 --log-every 1"

run() { # name world extra-args...
	name=$1 world=$2
	shift 2
	if ! "$here/launch_local.sh" "$world" $TRAIN_MLP $args --summary "$tmp/$name.json" "$@" 2>"$tmp/$name.log"; then
		echo "FAIL: $name (world $world $*) failed:"
		cat "$tmp/$name.log"
		exit 1
	fi
}

crc() { # the final weights CRC32 of a run
	sed -n 's/.*"weights_crc32": "\(.*\)".*/\1/p' "$tmp/$1.json"
}

losses() { # the step losses of a summary, one per line
	sed -n 's/.*"loss": \([^,]*\),.*/\1/p' "$1"
}

compare() { # name reference
	losses "$tmp/$2.json" >"$tmp/ref.txt"
	losses "$tmp/$1.json" >"$tmp/got.txt"
	[ "$(wc -l <"$tmp/ref.txt")" -eq 12 ] || { echo "FAIL: $2 logged $(wc -l <"$tmp/ref.txt") losses, want 12"; exit 1; }
	if ! paste "$tmp/ref.txt" "$tmp/got.txt" | awk -v name="$1" '
		{ d = $1 - $2; if (d < 0) d = -d; m = $1 < 0 ? -$1 : $1; if (m < 1) m = 1;
		  r = d / m; if (r > worst) worst = r; if ($2 == "" || d > 1e-4 * m) { bad = 1; print "FAIL: " name " step " NR ": " $2 " vs " $1 } }
		END { printf "%s: max relative loss difference %.2e\n", name, worst; exit bad }'; then
		exit 1
	fi
}

run w1 1
run w1_again 1
[ -n "$(crc w1)" ] && [ "$(crc w1)" = "$(crc w1_again)" ] ||
	{ echo "FAIL: two identical 1-rank runs differ ($(crc w1), $(crc w1_again))"; exit 1; }
for z in 0 1 2 3; do
	run "w2z$z" 2 --zero "$z"
	compare "w2z$z" w1
	run "w4z$z" 4 --zero "$z"
	compare "w4z$z" w1
done
for w in 2 4; do
	for z in 1 2 3; do
		[ -n "$(crc "w${w}z0")" ] && [ "$(crc "w${w}z$z")" = "$(crc "w${w}z0")" ] ||
			{ echo "FAIL: $w ranks: ZeRO-$z weights crc32 $(crc "w${w}z$z") != ZeRO-0 (DDP) $(crc "w${w}z0")"; exit 1; }
	done
	echo "ZeRO 0-3 on $w ranks: identical weights (crc32 $(crc "w${w}z0"))"
done
run w2z0_again 2 --zero 0
[ "$(crc w2z0)" = "$(crc w2z0_again)" ] || { echo "FAIL: two identical 2-rank runs differ ($(crc w2z0), $(crc w2z0_again))"; exit 1; }
run w2accum 2 --accum 4
compare w2accum w1
run w4z3accum 4 --zero 3 --accum 2
compare w4z3accum w1
run w2tiny 2 --bucket-mb 0.0001
compare w2tiny w1
# An epoch is floor(samples / global batch) steps: the last incomplete batch is dropped
# (100 samples, batch 32, 2 epochs: 3 + 3 steps).
"$here/launch_local.sh" 2 $TRAIN_MLP --layers 11,24,16,5 --data synthetic --synthetic-samples 100,16 --batch 32 \
	--epochs 2 --seed 5 --summary "$tmp/drop.json" 2>"$tmp/drop.log" || { echo "FAIL: 100-sample run failed:"; cat "$tmp/drop.log"; exit 1; }
steps=$(sed -n 's/.*"steps": \([0-9]*\).*/\1/p' "$tmp/drop.json")
[ "$steps" = 6 ] || { echo "FAIL: 100 samples, batch 32, 2 epochs ran $steps steps, want 6"; exit 1; }
echo "equivalence: all trajectories within 1e-4"

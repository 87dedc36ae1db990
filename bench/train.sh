#!/bin/sh
# SPDX-License-Identifier: MIT
# train.sh — `make bench-train`: train-mlp data-parallel throughput against PyTorch DDP (gloo) in
# the same run, same model / global batch / AdamW / threads per rank, synthetic data in memory;
# scaling from 1 to 2 ranks and its ceiling without communication (two independent 1-rank runs
# at half the batch, at the same time: what 2 ranks' compute alone allows); and how close the step gets to OpenBLAS's sgemm peak. Bounded to
# well under a minute; one OpenBLAS/torch thread per rank (TT_BENCH_THREADS to change).
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
SGEMM_PEAK=${SGEMM_PEAK:-./bench/sgemm-peak}
BENCH=${TRAINRT_BENCH:-./trainrt-bench}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
launch="$here/../tests/trainer/launch_local.sh"
threads=${TT_BENCH_THREADS:-1}
tmp=$(mktemp -d /tmp/tt-bench-train-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
unset RANK WORLD_SIZE PMIX_RANK

field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
per_step() { awk -v t="$(field "$tmp/t.json" "$1")" -v n="$steps" 'BEGIN { printf "%.3f", t / n * 1e3 }'; }

peak=$($SGEMM_PEAK 512 1 | awk '{print $2}')
echo "machine: $(getconf _NPROCESSORS_ONLN) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); $threads thread(s) per rank"
echo "OpenBLAS sgemm 512^3 peak, $threads thread(s): $peak GFLOP/s"
printf "%-10s %5s %6s %14s %14s %8s %10s %12s\n" model batch world train-mlp/s torch-ddp/s ratio gemm-share GFLOP/s/rank
# model global-batch steps synthetic-samples
for cfg in "784,256,10 256 300 8192,256" "1000x10 64 24 256,64"; do
	set -- $cfg
	layers=$1 batch=$2 steps=$3 samples=$4
	for world in 1 2; do
		"$launch" "$world" $TRAIN_MLP --layers "$layers" --data synthetic --synthetic-samples "$samples" \
			--batch "$batch" --max-steps "$steps" --epochs 1000 --log-every 100000 \
			--summary "$tmp/t.json" 2>"$tmp/t.log" || { cat "$tmp/t.log"; exit 1; }
		ours=$(field "$tmp/t.json" samples_per_sec)
		params=$(field "$tmp/t.json" parameters)
		share=$(awk -v c="$(field "$tmp/t.json" compute_seconds_rank0)" -v t="$(field "$tmp/t.json" train_seconds)" \
			'BEGIN { printf "%.2f", c / t }')
		gflops=$(awk -v s="$ours" -v p="$params" -v w="$world" 'BEGIN { printf "%.1f", 6 * p * s / w / 1e9 }')
		theirs=-
		ratio=-
		if [ "$world" -gt 1 ] && $PYTHON -c "import torch" 2>/dev/null; then
			theirs=$($PYTHON "$here/torch_ddp.py" --layers "$layers" --batch "$batch" --world "$world" \
				--steps "$steps" --threads "$threads" 2>"$tmp/p.log" | awk '{print $2}')
			[ -n "$theirs" ] || { cat "$tmp/p.log"; exit 1; }
			ratio=$(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')
		fi
		printf "%-10s %5s %6s %14s %14s %8s %10s %12s\n" "$layers" "$batch" "$world" "$ours" "$theirs" "$ratio" "$share" "$gflops"
		# per step on rank 0, ms: step, compute (forward, backward, AdamW), waiting in collectives
		if [ "$world" -eq 1 ]; then
			one=$ours step1=$(per_step train_seconds) compute1=$(per_step compute_seconds_rank0)
		else
			step2=$(per_step train_seconds) compute2=$(per_step compute_seconds_rank0) wait2=$(per_step comm_wait_seconds_rank0)
		fi
	done
	awk -v a="$ours" -v b="$one" -v l="$layers" 'BEGIN { printf "%s: scaling 1 -> 2 ranks %.2fx\n", l, a / b }'
	# What bounds the scaling: the gradient all-reduce alone (the same bytes, trainrt-bench) against
	# the time rank 0 waits in it during training; the rest of the wait is the other rank's lag.
	ar=$(timeout 60 "$BENCH" --local 2 -b $((params * 4)) -e $((params * 4)) -n 50 -w 5 | awk '!/^#/ { printf "%.3f", $5 / 1e3 }')
	echo "$layers per step (ms, rank 0): world 1 $step1 (compute $compute1); world 2 $step2 = compute $compute2 + waiting $wait2 (the all-reduce alone ${ar:-n/a}) + other $(awk -v s="$step2" -v c="$compute2" -v w="$wait2" 'BEGIN { printf "%.3f", s - c - w }'); ideal with that all-reduce $(awk -v s="$step1" -v c="$compute2" -v a="${ar:-0}" 'BEGIN { printf "%.2fx", s / (c + a) }')"
	# The ceiling without communication: two independent runs of half the batch side by side (each
	# rank's share of a data-parallel step, with the same contention for the memory system).
	for h in 1 2; do
		"$launch" 1 $TRAIN_MLP --layers "$layers" --data synthetic --synthetic-samples "$samples" \
			--batch $((batch / 2)) --max-steps "$steps" --epochs 1000 --log-every 100000 \
			--summary "$tmp/h$h.json" 2>"$tmp/h$h.log" &
	done
	wait
	awk -v a="$(field "$tmp/h1.json" samples_per_sec)" -v b="$(field "$tmp/h2.json" samples_per_sec)" -v o="$one" \
		-v l="$layers" -v h=$((batch / 2)) 'BEGIN { printf "%s: two 1-rank runs of batch %d at once: %.0f samples/s together, a 1 -> 2 rank ceiling of %.2fx without communication\n", l, h, a + b, (a + b) / o }'
done
echo "gemm-share: forward+backward+AdamW time / step time on rank 0; GFLOP/s/rank: 6 x parameters x samples/s / world"

echo "ZeRO stages, 1000x10, batch 64, 4 ranks: samples/s and peak RSS per rank (MB)"
for z in 0 1 2 3; do
	"$launch" 4 $TRAIN_MLP --layers 1000x10 --data synthetic --synthetic-samples 256,64 --batch 64 --max-steps 24 \
		--epochs 1000 --log-every 100000 --zero "$z" --summary "$tmp/z.json" 2>"$tmp/z.log" || { cat "$tmp/z.log"; exit 1; }
	rss=$(sed -n 's/.*"peak_rss_bytes": \[\(.*\)\].*/\1/p' "$tmp/z.json" |
		awk -F', ' '{ for (i = 1; i <= NF; i++) printf "%s%.0f", (i > 1 ? " / " : ""), $i / 1e6 }')
	echo "zero $z: $(field "$tmp/z.json" samples_per_sec) samples/s, peak RSS $rss MB, weights crc32 $(sed -n 's/.*"weights_crc32": "\(.*\)".*/\1/p' "$tmp/z.json")"
done

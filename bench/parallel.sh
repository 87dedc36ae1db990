#!/bin/sh
# SPDX-License-Identifier: MIT
# parallel.sh — `make bench-parallel`: train-mlp under 3D layouts on this machine (ranks on
# 127.0.0.1): per layout samples/s, peak RSS per rank, bytes sent per step (measured by libtrainrt,
# trainrt_bytes_sent, against the closed form below) and the pipeline bubble (measured: time blocked
# on neighbouring stages over time in the schedule; theory (p-1)/(m+p-1)); activation recomputation's
# memory; and the peers measured in the same run: a minimal PyTorch pipeline (torch.distributed
# send/recv over gloo, GPipe, bench/torch_pipeline.py) against train-mlp's pipeline, and PyTorch DDP
# against train-mlp's data parallelism (bench/torch_ddp.py). One OpenBLAS/torch thread per rank
# (TT_BENCH_THREADS to change); synthetic data in memory. A few minutes on 2 cores.
#
# Bytes per step, summed over ranks, counted as a ring moves them (an all-reduce of B bytes on n
# ranks: 2(n-1)/n*B per rank), for micro-batches of b = batch/(D*M) samples, M per step:
#   TP: per replica, micro-batch and layer pair (column l, row l+1) of a stage: 2(T-1)*4*b*d[l+2]
#       forward (+ the same again with --recompute), 2(T-1)*4*b*d[l] backward unless l = 0;
#   PP: per replica, micro-batch, stage boundary (width d) and TP rank: 2 * 4*b*d (activation
#       forward, its gradient back);
#   DP: per part (T*P of them) 2(D-1)*4*sum of its layers' lengths padded to a multiple of D.
set -u
TRAIN_MLP=${TRAIN_MLP:-./train-mlp}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
launch="$here/../tests/trainer/launch_local.sh"
threads=${TT_BENCH_THREADS:-1}
tmp=$(mktemp -d /tmp/tt-bench-par-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads TRAINRT_TIMEOUT=120
unset RANK WORLD_SIZE PMIX_RANK

layers=512x8
dims="512 512 512 512 512 512 512 512 512"
batch=128
micro=4
steps=20

field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }
rss() { # max and mean peak RSS over ranks, MB
	sed -n 's/.*"peak_rss_bytes": \[\(.*\)\].*/\1/p' "$1" |
		awk -F', ' '{ m = 0; s = 0; for (i = 1; i <= NF; i++) { s += $i; if ($i > m) m = $i } printf "%.0f/%.0f", m / 1e6, s / NF / 1e6 }'
}

# computed D T P M recompute: the closed form above.
computed() {
	echo "$dims" | awk -v D="$1" -v T="$2" -v P="$3" -v M="$4" -v rc="$5" -v B="$batch" '{
		n = NF - 1; for (i = 0; i <= n; i++) d[i] = $(i + 1)
		per = n / P; b = B / (D * M); tp = 0; pp = 0; dp = 0
		for (s = 0; s < P; s++) {
			for (i = 0; i < per; i++) {
				l = s * per + i; in_ = d[l]; out = d[l + 1]
				kind = (T == 1 || (i == per - 1 && per % 2)) ? "full" : (i % 2 ? "row" : "col")
				if (kind == "col") {
					tp += 2 * (T - 1) * 4 * b * (d[l + 2] * (1 + rc) + (l > 0 ? in_ : 0))
					len = out / T * in_ + out / T
				} else if (kind == "row") {
					len = out * (in_ / T) + out
				} else {
					len = out * in_ + out
				}
				dp += T * 2 * (D - 1) * 4 * (int((len + D - 1) / D) * D)
			}
			if (s < P - 1)
				pp += 2 * 4 * b * d[(s + 1) * per] * T
		}
		printf "%.0f", tp * D * M + pp * D * M + dp
	}'
}

echo "machine: $(getconf _NPROCESSORS_ONLN) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); $threads thread(s) per rank"
echo "model $layers ($(echo "$dims" | wc -w) widths), global batch $batch, $micro micro-batches per step, $steps steps, synthetic data"
printf "%-8s %5s %-9s %10s %12s %14s %14s %9s %8s\n" layout ranks extra samples/s "RSS MB max/avg" bytes/step bytes-computed bubble theory
for cfg in "2 1 1 -" "1 2 1 -" "1 1 2 -" "1 1 2 gpipe" "4 1 1 -" "2 2 1 -" "2 1 2 -" "1 2 2 -" "1 4 1 -" "1 1 4 -" \
	"1 1 4 gpipe" "1 1 4 recompute"; do
	set -- $cfg
	D=$1 T=$2 P=$3 extra=$4 world=$(($1 * $2 * $3)) rc=0
	opts="--tp $T --pp $P"
	[ "$extra" = gpipe ] && opts="$opts --schedule gpipe"
	[ "$extra" = recompute ] && { opts="$opts --recompute"; rc=1; }
	"$launch" "$world" $TRAIN_MLP --layers "$layers" --data synthetic --synthetic-samples 4096,64 --batch "$batch" \
		--accum "$micro" --max-steps "$steps" --epochs 1000 --log-every 5 $opts --summary "$tmp/p.json" \
		2>"$tmp/p.log" || { tail -20 "$tmp/p.log"; exit 1; }
	printf "%-8s %5s %-9s %10s %12s %14s %14s %9s %8s\n" "${D}x${T}x${P}" "$world" "$extra" \
		"$(field "$tmp/p.json" steady_samples_per_sec)" "$(rss "$tmp/p.json")" \
		"$(field "$tmp/p.json" bytes_sent_per_step)" "$(computed "$D" "$T" "$P" "$micro" "$rc")" \
		"$(field "$tmp/p.json" bubble_measured)" "$(field "$tmp/p.json" bubble_theory)"
done

echo "activation recomputation, one rank, 256x16 (16 layers of 256), batch 4096 (activations dominate):"
for extra in "" --recompute; do
	"$launch" 1 $TRAIN_MLP --layers 256x16 --data synthetic --synthetic-samples 8192,64 --batch 4096 --max-steps 3 \
		--log-every 100 $extra --summary "$tmp/r.json" 2>"$tmp/r.log" || { tail -20 "$tmp/r.log"; exit 1; }
	echo "  ${extra:-no recompute}: peak RSS $(rss "$tmp/r.json" | cut -d/ -f1) MB, $(field "$tmp/r.json" samples_per_sec) samples/s, weights crc32 $(sed -n 's/.*"weights_crc32": "\(.*\)".*/\1/p' "$tmp/r.json")"
done

if $PYTHON -c "import torch.distributed" 2>/dev/null; then
	echo "peers in the same run (samples/s): a PyTorch pipeline (GPipe, gloo send/recv) and PyTorch DDP (gloo)"
	for P in 2 4; do
		theirs=$($PYTHON "$here/torch_pipeline.py" --layers "$layers" --batch "$batch" --micro "$micro" --stages "$P" \
			--steps "$steps" --threads "$threads" 2>"$tmp/t.log" | awk '{print $2}')
		[ -n "$theirs" ] || { cat "$tmp/t.log"; exit 1; }
		for sched in gpipe 1f1b; do
			"$launch" "$P" $TRAIN_MLP --layers "$layers" --data synthetic --synthetic-samples 4096,64 --batch "$batch" \
				--accum "$micro" --max-steps "$steps" --epochs 1000 --log-every 100000 --pp "$P" --schedule "$sched" \
				--summary "$tmp/q.json" 2>"$tmp/q.log" || { tail -20 "$tmp/q.log"; exit 1; }
			ours=$(field "$tmp/q.json" samples_per_sec)
			echo "  pipeline of $P stages: train-mlp $sched $ours, torch gpipe $theirs, ratio $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
		done
	done
	theirs=$($PYTHON "$here/torch_ddp.py" --layers "$layers" --batch "$batch" --world 2 --steps "$steps" \
		--threads "$threads" 2>"$tmp/t.log" | awk '{print $2}')
	[ -n "$theirs" ] || { cat "$tmp/t.log"; exit 1; }
	"$launch" 2 $TRAIN_MLP --layers "$layers" --data synthetic --synthetic-samples 4096,64 --batch "$batch" \
		--max-steps "$steps" --epochs 1000 --log-every 100000 --summary "$tmp/q.json" 2>"$tmp/q.log" ||
		{ tail -20 "$tmp/q.log"; exit 1; }
	ours=$(field "$tmp/q.json" samples_per_sec)
	echo "  data parallel on 2 ranks: train-mlp $ours, torch DDP $theirs, ratio $(awk -v a="$ours" -v b="$theirs" 'BEGIN { printf "%.2f", a / b }')"
else
	echo "peers: no PyTorch for $PYTHON (apt-get install python3-torch)"
fi
echo "samples/s: steady rate (median interval after the first); RSS: peak resident set of each rank;"
echo "bytes/step: all ranks' step traffic per step as counted by libtrainrt; bubble: mean over ranks."

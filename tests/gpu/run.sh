#!/bin/sh
# run.sh — the GPU checks, for a machine with NVIDIA GPUs (under 10 minutes on one H100/H200).
# From the repository root: sh tests/gpu/run.sh. Builds with CUDA, then:
#  1. mlp_check: train-mlp's bf16 GPU math against the float32 CPU reference, layer by layer and
#     over 60 training steps, plus a checkpoint round trip;
#  2. nccl_check as one rank per visible GPU (every collective x dtype x op x size), auto -> nccl;
#  3. train-mlp --device gpu as a libtrainrt job (NCCL, one rank per GPU): accuracy, a checkpoint
#     resume that must end bit-identical, and throughput with MFU on a large MLP;
#  4. trainrt-bench all-reduce sizes over NCCL, then the CPU unit tests on the machine's cores.
# MFU = train_flops_per_sample x samples/s / peak dense bf16 FLOP/s; PEAK_TFLOPS overrides the
# table below (H100/H200 SXM: 989, A100: 312).
set -eu
CUDA=${CUDA:-/usr/local/cuda}
say() { printf 'gpu-check: %s\n' "$*"; }
json() { sed -n "s/.*\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -n1; }
tmp=$(mktemp -d /tmp/tt-gpu-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

nvidia-smi -L
ngpu=$(nvidia-smi -L | grep -c '^GPU')
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
say "$ngpu GPU(s): $gpu_name"
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure --with-cuda="$CUDA" >/dev/null
grep -q '^#define TT_HAVE_CUDA 1' config.h || { say "configure did not enable CUDA"; exit 1; }
make -j"$(nproc)" >/dev/null

# 1. GPU math against the CPU reference.
timeout 300 tests/gpu/mlp_check || { say "GPU math FAILED"; exit 1; }

# 2. NCCL collectives, one rank per GPU.
port=$(tests/trainer/launch_local.sh --free-port)
pids=""
for r in $(seq 0 $((ngpu - 1))); do
	RANK=$r WORLD_SIZE=$ngpu LOCAL_RANK=$r LOCAL_WORLD_SIZE=$ngpu MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
	TRAINRT_TOKEN=gpu-check TRAINRT_BACKEND=nccl TRAINRT_TIMEOUT=60 \
		timeout 300 tests/gpu/nccl_check &
	pids="$pids $!"
done
fail=0
for p in $pids; do wait "$p" || fail=1; done
[ $fail = 0 ] || { say "NCCL collectives FAILED"; exit 1; }
say "NCCL collectives passed on $ngpu rank(s)"
# auto must pick nccl when a GPU is visible.
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$(tests/trainer/launch_local.sh --free-port) \
	TRAINRT_TOKEN=gpu-check TRAINRT_BACKEND=auto timeout 120 tests/gpu/nccl_check || { say "auto did not choose nccl"; exit 1; }

# 3. train-mlp on the GPU(s) as a libtrainrt job: the gradients go through NCCL even on one GPU.
export TRAINRT_TIMEOUT=120 OPENBLAS_NUM_THREADS=4
job() { n=$1; shift; timeout 300 tests/trainer/launch_local.sh "$n" ./train-mlp --device gpu "$@"; }
if [ -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
	data="--data /usr/share/datasets/fashion-mnist --epochs 3"
	want_acc=0.85
else
	data="--data synthetic --synthetic-samples 65536,4096 --epochs 3"
	want_acc=0.80
fi
# shellcheck disable=SC2086
job 1 --layers 784,256,10 $data --batch 128 --lr 0.001 --seed 1 --log-every 200 --summary "$tmp/acc.json" \
	2>"$tmp/acc.log" || { cat "$tmp/acc.log"; say "GPU training FAILED"; exit 1; }
grep -q "(nccl), .*bf16" "$tmp/acc.log" || { cat "$tmp/acc.log"; say "train-mlp did not run on the GPU over NCCL"; exit 1; }
acc=$(json test_accuracy "$tmp/acc.json")
say "784-256-10 on $(json device "$tmp/acc.json"): test accuracy $acc (want >= $want_acc), $(json samples_per_sec "$tmp/acc.json") samples/s"
awk -v a="$acc" -v w="$want_acc" 'BEGIN { exit !(a >= w) }' || { say "accuracy too low"; exit 1; }
if [ "$ngpu" -ge 2 ]; then
	# shellcheck disable=SC2086
	job "$ngpu" --layers 784,256,10 $data --batch 128 --lr 0.001 --seed 1 --log-every 200 \
		--summary "$tmp/accn.json" 2>"$tmp/accn.log" || { cat "$tmp/accn.log"; say "$ngpu-GPU training FAILED"; exit 1; }
	say "$ngpu GPUs: test accuracy $(json test_accuracy "$tmp/accn.json") (1 GPU: $acc)"
fi

# A run resumed from its step-25 checkpoint ends with the same weights as the uninterrupted run.
resume_args="--layers 256,512,512,10 --data synthetic --synthetic-samples 8192,512 --batch 128 --epochs 1 --seed 5 --log-every 1000"
# shellcheck disable=SC2086
job 1 $resume_args --ckpt-dir "$tmp/ck" --ckpt-every 25 --keep 0 --summary "$tmp/full.json" 2>"$tmp/full.log" ||
	{ cat "$tmp/full.log"; say "checkpointing run FAILED"; exit 1; }
for d in "$tmp"/ck/step-*; do [ "$(basename "$d")" = step-00000025 ] || rm -rf "$d"; done
# shellcheck disable=SC2086
job 1 $resume_args --ckpt-dir "$tmp/ck" --summary "$tmp/resumed.json" 2>"$tmp/resumed.log" ||
	{ cat "$tmp/resumed.log"; say "resumed run FAILED"; exit 1; }
grep -q "resumed from" "$tmp/resumed.log" || { cat "$tmp/resumed.log"; say "did not resume"; exit 1; }
a=$(json weights_crc32 "$tmp/full.json")
b=$(json weights_crc32 "$tmp/resumed.json")
[ -n "$a" ] && [ "$a" = "$b" ] || { say "resume on the GPU is not bit-identical: $a vs $b"; exit 1; }
say "GPU checkpoint resume bit-identical (weights crc32 $a)"

# Throughput and MFU on an MLP whose GEMMs fill the GPU (8192-wide, batch 8192 per GPU).
# shellcheck disable=SC2086
job 1 --layers 1024,8192x6,16 --data synthetic --synthetic-samples 32768,1024 --batch 8192 --epochs 10 \
	--log-every 10 --summary "$tmp/mfu.json" 2>"$tmp/mfu.log" || { cat "$tmp/mfu.log"; say "MFU run FAILED"; exit 1; }
sps=$(json samples_per_sec "$tmp/mfu.json")
fps=$(json train_flops_per_sample "$tmp/mfu.json")
case $gpu_name in
*H100* | *H200* | *H800* | *H20*) peak=989 ;;
*A100* | *A800*) peak=312 ;;
*) peak="" ;;
esac
peak=${PEAK_TFLOPS:-$peak}
tflops=$(awk -v s="$sps" -v f="$fps" 'BEGIN { printf "%.1f", s * f / 1e12 }')
if [ -n "$peak" ]; then
	say "1024-8192x6-16, batch 8192, bf16 on $gpu_name: $sps samples/s, $tflops TFLOP/s, MFU $(awk -v t="$tflops" -v p="$peak" 'BEGIN { printf "%.1f%%", 100 * t / p }') of $peak TFLOP/s"
else
	say "1024-8192x6-16, batch 8192, bf16 on $gpu_name: $sps samples/s, $tflops TFLOP/s (set PEAK_TFLOPS for MFU)"
fi

# 4. NCCL bandwidth, then the CPU unit tests.
timeout 300 ./trainrt-bench --local "$ngpu" -b 1M -e 256M -f 4 -n 10 -w 3 || true
make -j"$(nproc)" check >/dev/null || { say "CPU unit tests FAILED (see tests/unit/*.log)"; exit 1; }
say "all passed"

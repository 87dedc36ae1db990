#!/bin/sh
# run.sh — the GPU check for libtrainrt's NCCL backend, for a lent GPU machine (< 10 min).
# From the repository root: sh tests/gpu/run.sh. Builds with CUDA, then runs tests/gpu/nccl_check
# as one rank per visible GPU (env contract on 127.0.0.1, TRAINRT_BACKEND=nccl), then a killed-rank
# check when there are 2+ GPUs, then the CPU unit tests on the machine's larger core count.
set -eu
CUDA=${CUDA:-/usr/local/cuda}
say() { printf 'gpu-check: %s\n' "$*"; }

nvidia-smi -L
ngpu=$(nvidia-smi -L | grep -c '^GPU')
say "$ngpu GPU(s)"
[ -x configure ] || autoreconf -fi >/dev/null
[ -f Makefile ] || ./configure --with-cuda="$CUDA" >/dev/null
grep -q '^#define TT_HAVE_CUDA 1' config.h || { say "configure did not enable CUDA"; exit 1; }
make -j"$(nproc)" >/dev/null
${CC:-cc} -O2 -Wall -Wextra -Werror -I runtime -I"$CUDA/include" tests/gpu/nccl_check.c -o tests/gpu/nccl_check \
	.libs/libtrainrt.so -L"$CUDA/lib64" -lcudart -lm -Wl,-rpath,"$PWD/.libs" -Wl,-rpath,"$CUDA/lib64"

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
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
RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 LOCAL_WORLD_SIZE=1 TRAINRT_TOKEN=gpu-check TRAINRT_BACKEND=auto \
	timeout 120 tests/gpu/nccl_check || { say "auto did not choose nccl"; exit 1; }

timeout 600 ./trainrt-bench --local "$ngpu" -b 1M -e 256M -f 4 -n 10 -w 3 || true

make -j"$(nproc)" check >/dev/null || { say "CPU unit tests FAILED (see tests/unit/*.log)"; exit 1; }
say "all passed"

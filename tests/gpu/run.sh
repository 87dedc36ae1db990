#!/bin/sh
# SPDX-License-Identifier: MIT
# run.sh — the GPU check: one prepared script for a machine with NVIDIA GPUs, under 10 minutes.
# It runs from a bundle built on a CPU machine (make gpu-bundle: bin/, lib/, this script), so the
# GPU machine needs only its driver, CUDA's runtime and cuBLAS, and NCCL (from CUDA's folders or
# its PyTorch environment). Every step runs under a timeout, a failing step does not stop the
# others, each asserts what it prints, and the end is a PASS/FAIL/SKIP table; the exit status is
# 1 when any step failed. Steps (see step_*): preflight, mlp_check, nccl_check with 1, 2 and 4
# ranks, NCCL reading train-topo's topology file, accuracy, 2 ranks = 1 rank with --accum 2, a
# 2-rank checkpoint resume, a dead peer, MFU, trainrt-bench bandwidth, and memcheck of mlp_check
# and of one large odd layer. With fewer GPUs than ranks, each rank is its own NCCL host
# (NCCL_HOSTID, NCCL_IB_DISABLE=1): ranks share a GPU over sockets, so one GPU checks the
# multi-rank paths.
#
# On this workplace's device tool, after `make gpu-bundle` here: run(command="sh gpu-bundle/run.sh",
# carry=["gpu-bundle"], timeout_s=600); results.json, table.txt and gpu-logs.tar.gz come back.
#
# usage: sh run.sh [--bundle DIR] [--out DIR] [--only STEP,...] [--list]
#   --bundle  the bundle (default: the folder of this script)
#   --out     logs, results.json and table.txt (default: $OUT when set, else ./gpu-check-out);
#             all step logs are also packed into gpu-logs.tar.gz there (under $OUT only the
#             packed logs stay, so what comes back is a handful of files)
#   --only    run these steps (and the preflight); --list prints the steps and their timeouts
# Knobs: TT_GPU_BUDGET (seconds for everything, default 570), TT_GPU_TIMEOUT (every step's timeout,
# for tests), PEAK_TFLOPS (dense bf16 peak when the GPU's name is not in peak_tflops below),
# MFU_FLOOR (percent, default 30), ACC_FLOOR (default 0.88: the float32 CPU run of the same
# synthetic data and seed reaches 0.900), CUDA_HOME (default /usr/local/cuda).
set -u
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")

# name:timeout (seconds), in run order: the slow sanitizer runs last, so a spent budget costs them.
STEPS="preflight:30 mlp_check:90 nccl_1:60 nccl_2:90 nccl_4:120 nccl_topo:90 accuracy:120 two_ranks:120
resume:120 dead_peer:90 mfu:120 bench:90 memcheck:120 memcheck_large:120"

say() { printf 'gpu-check: %s\n' "$*"; }
# detail LINE: the one line the table shows for this step.
detail() { printf '%s\n' "$*" >"$LOGS/$STEP.detail"; say "$*"; }
fail() {
	detail "$*"
	exit 1
}
json() { sed -n "s/.*\"$1\": \"\{0,1\}\([^\",]*\)\"\{0,1\},\{0,1\}$/\1/p" "$2" | head -n1; }
now() { date +%s; }
# awk_true EXPR VAR=VALUE...: exit 0 when the awk expression holds.
awk_true() {
	e=$1
	shift
	awk "$@" "BEGIN { exit !($e) }"
}

# A TCP port on 127.0.0.1 that no socket uses, below the kernel's ephemeral range: one rule, in
# launch_local.sh (beside run.sh in the bundle, in tests/trainer/ in the tree).
free_port() {
	for ll in "${self%/*}/launch_local.sh" "${self%/*}/../trainer/launch_local.sh"; do
		[ -f "$ll" ] && { sh "$ll" --free-port; return; }
	done
	echo "gpu-check: launch_local.sh is missing beside run.sh (rebuild the bundle: make gpu-bundle)" >&2
	return 1
}

# ranks N TAG CMD...: N ranks of CMD as one libtrainrt job on 127.0.0.1 (rank r on GPU r mod NGPU);
# rank r's output in $LOGS/TAG.rank<r>.log, its pid in $LOGS/TAG.rank<r>.pid. With more ranks than
# GPUs each rank is its own NCCL host. Returns the first non-zero exit status of the ranks.
ranks() {
	rk_n=$1 rk_tag=$2
	shift 2
	rk_port=$(free_port) || return 1
	rk_pids=""
	rk_r=0
	while [ "$rk_r" -lt "$rk_n" ]; do
		rk_shared=""
		[ "$rk_n" -gt "$NGPU" ] && rk_shared="NCCL_HOSTID=gpu-check-$$-$rk_r NCCL_IB_DISABLE=1 NCCL_SOCKET_IFNAME=lo"
		# shellcheck disable=SC2086 # $rk_shared is NAME=VALUE words for env, split on purpose
		env RANK=$rk_r WORLD_SIZE=$rk_n LOCAL_RANK=$rk_r LOCAL_WORLD_SIZE=$rk_n NODE_RANK=0 NNODES=1 \
			MASTER_ADDR=127.0.0.1 MASTER_PORT=$rk_port TRAINRT_TOKEN=gpu-check-secret-$$ $rk_shared "$@" \
			>"$LOGS/$rk_tag.rank$rk_r.log" 2>&1 &
		echo $! >"$LOGS/$rk_tag.rank$rk_r.pid"
		rk_pids="$rk_pids $!"
		rk_r=$((rk_r + 1))
	done
	rk_status=0
	for rk_p in $rk_pids; do
		wait "$rk_p"
		rk_s=$?
		[ "$rk_status" -eq 0 ] && rk_status=$rk_s
	done
	return "$rk_status"
}

# stop TAG: kills every rank of TAG still running (a step that gives up must not leave ranks on the GPU).
stop() { for f in "$LOGS/$1".rank*.pid; do kill -9 "$(cat "$f")" 2>/dev/null; done; }

# show TAG: the ranks' logs, into this step's log.
show() { for f in "$LOGS/$1".rank*.log; do echo "--- $f"; cat "$f"; done; }

# ---- steps: each runs as `run.sh --step NAME` under a timeout; exit 0 pass, 77 skip, else fail ----

# The machine as seen from the bundle: GPUs, driver, CUDA and NCCL versions, every library the
# programs load (NCCL, cuBLAS, cudart from the PyTorch environment when CUDA's folders lack them).
step_preflight() {
	command -v nvidia-smi >/dev/null || PATH=$PATH:/usr/local/nvidia/bin
	nvidia-smi -L || fail "nvidia-smi -L failed: no NVIDIA driver or GPU"
	ngpu=$(nvidia-smi -L | grep -c '^GPU')
	[ "$ngpu" -ge 1 ] || fail "nvidia-smi lists no GPU"
	name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n1)
	driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -n1)
	libpath="$BUNDLE/lib:$CUDA_HOME/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
	missing=$(for f in "$BUNDLE"/bin/*; do LD_LIBRARY_PATH=$libpath ldd "$f"; done 2>&1 | grep 'not found' | sort -u)
	if [ -n "$missing" ]; then
		echo "missing before the PyTorch fallback:"
		echo "$missing"
		# PyTorch's CUDA libraries come as pip's nvidia-* packages, all under the nvidia namespace.
		roots=$(python3 -c 'import nvidia; print(" ".join(nvidia.__path__))' 2>/dev/null)
		for lib in $(echo "$missing" | awk '{ print $1 }'); do
			# shellcheck disable=SC2086 # $roots is a blank-separated list of folders
			found=$([ -n "$roots" ] && find $roots -name "$lib" 2>/dev/null | head -n1)
			[ -n "$found" ] && libpath="$libpath:$(dirname "$found")"
		done
		missing=$(for f in "$BUNDLE"/bin/*; do LD_LIBRARY_PATH=$libpath ldd "$f"; done 2>&1 | grep 'not found' | sort -u)
	fi
	[ -z "$missing" ] || fail "libraries not found (bundle, $CUDA_HOME/lib64, python3's nvidia packages): $(echo "$missing" | awk '{print $1}' | xargs)"
	nccl_lib=$(LD_LIBRARY_PATH=$libpath ldd "$BUNDLE/bin/nccl_check" | awk '$1 == "libnccl.so.2" { print $3 }')
	versions=$(LD_LIBRARY_PATH=$libpath "$BUNDLE/bin/nccl_check" --versions) || fail "nccl_check --versions failed"
	echo "$versions"
	rt=$(echo "$versions" | sed -n 's/.*cuda-runtime \([0-9.]*\).*/\1/p')
	drv=$(echo "$versions" | sed -n 's/.*cuda-driver \([0-9.]*\).*/\1/p')
	awk_true 'd + 0 >= r + 0' -v d="$drv" -v r="$rt" ||
		fail "the driver supports CUDA $drv, older than the bundle's CUDA runtime $rt: update the driver or rebuild the bundle with an older CUDA"
	{
		echo "NGPU=$ngpu"
		echo "GPU_NAME='$name'"
		echo "LD_LIBRARY_PATH='$libpath'"
	} >"$WORK/env"
	detail "$ngpu x $name, driver $driver; $versions; NCCL from $nccl_lib; no library missing"
}

sanitizer() {
	for s in compute-sanitizer "$CUDA_HOME/bin/compute-sanitizer" "$CUDA_HOME/compute-sanitizer/compute-sanitizer"; do
		command -v "$s" >/dev/null 2>&1 && { command -v "$s"; return 0; }
	done
	return 1
}

# memcheck ARGS...: mlp_check ARGS under compute-sanitizer's memcheck; 0 errors wanted.
memcheck() {
	cs=$(sanitizer) || { detail "SKIP: compute-sanitizer not found (PATH, $CUDA_HOME)"; exit 77; }
	"$cs" --tool memcheck --error-exitcode 42 --print-limit 20 "$BUNDLE/bin/mlp_check" "$@" >"$WORK/memcheck.out" 2>&1
	rc=$?
	cat "$WORK/memcheck.out"
	if grep -q 'Device not supported' "$WORK/memcheck.out"; then
		detail "SKIP: compute-sanitizer does not support this device here ($(grep -m1 'Device not supported' "$WORK/memcheck.out"))"
		exit 77
	fi
	summary=$(grep -m1 'ERROR SUMMARY' "$WORK/memcheck.out" | sed 's/^=* *//')
	[ "$rc" -eq 0 ] && echo "$summary" | grep -q 'ERROR SUMMARY: 0 errors' ||
		fail "memcheck of mlp_check${*:+ $*}: exit $rc, ${summary:-no ERROR SUMMARY line}"
	detail "mlp_check${*:+ $*} under memcheck: $summary"
}

step_mlp_check() {
	"$BUNDLE/bin/mlp_check" >"$WORK/mlp.out" 2>&1
	rc=$?
	cat "$WORK/mlp.out"
	[ "$rc" -eq 0 ] && grep -q 'all GPU math checks passed' "$WORK/mlp.out" ||
		fail "GPU math differs from the CPU reference (exit $rc): $(first_error "$WORK/mlp.out")"
	detail "$(grep -m1 'training 64-128-128-10' "$WORK/mlp.out" | sed 's/^mlp_check: //')"
}

# first_error FILE: mlp_check's first failed check ("file:line: ..."), else the last line.
first_error() { grep -m1 -E ':[0-9]+: ' "$1" || tail -n1 "$1"; }

step_memcheck() { memcheck; }
# A layer whose sizes are no multiple of anything: 1023 inputs, 3001 outputs, 777 rows.
step_memcheck_large() { memcheck --layer 1023,3001,17 0 777; }

# nccl N TAG [NAME=VALUE...]: the collective matrix on N ranks; every rank must report 0 wrong
# elements over nccl.
nccl() {
	n=$1 tag=$2
	shift 2
	ranks "$n" "$tag" env TRAINRT_TIMEOUT=60 "$@" "$BUNDLE/bin/nccl_check"
	rc=$?
	show "$tag"
	ok=$(cat "$LOGS/$tag".rank*.log | grep -c 'nccl_check: rank [0-9]* of '"$n"' (nccl, .*): 0 wrong elements')
	[ "$rc" -eq 0 ] && [ "$ok" -eq "$n" ] ||
		fail "$n rank(s): exit $rc, $ok of $n ranks right; $(grep -h -m1 'trainrt\|nccl_check:' "$LOGS/$tag".rank*.log | grep -v ' 0 wrong' | head -n1)"
}

# One rank with TRAINRT_BACKEND unset: auto must choose nccl (nccl_check insists on it).
step_nccl_1() {
	nccl 1 nccl1 && detail "1 rank, backend auto -> nccl: every collective x dtype x op x size right"
}
step_nccl_2() { nccl 2 nccl2 TRAINRT_BACKEND=nccl && detail "2 ranks: every collective right$(shared_note 2)"; }
step_nccl_4() { nccl 4 nccl4 TRAINRT_BACKEND=nccl && detail "4 ranks: every collective right$(shared_note 4)"; }
shared_note() { [ "$1" -gt "$NGPU" ] && echo " (sharing $NGPU GPU(s): NCCL_HOSTID per rank, sockets)"; }

# train-topo's topology file for this machine, read by NCCL (its GRAPH log names the file).
step_nccl_topo() {
	HWLOC_PLUGINS_PATH=$BUNDLE/lib/hwloc "$BUNDLE/bin/train-topo" nccl-xml -o "$WORK/topo.xml" ||
		fail "train-topo nccl-xml failed"
	cp "$WORK/topo.xml" "$LOGS/nccl-topo.xml"
	gpus=$(grep -c '<gpu' "$WORK/topo.xml")
	nccl 2 topo TRAINRT_BACKEND=nccl NCCL_TOPO_FILE="$WORK/topo.xml" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV,GRAPH
	read_by=$(grep -l "Loading topology file $WORK/topo.xml" "$LOGS"/topo.rank*.log | wc -l)
	[ "$read_by" -eq 2 ] || fail "NCCL did not report 'Loading topology file $WORK/topo.xml' on every rank ($read_by of 2)"
	detail "NCCL read train-topo's file ($gpus GPU element(s)) on both ranks; collectives right"
}

# train-mlp on the GPU(s); TRAINRT_TIMEOUT 60 so a hang fails inside the step's timeout.
train() {
	n=$1 tag=$2
	shift 2
	ranks "$n" "$tag" env TRAINRT_TIMEOUT=60 OPENBLAS_NUM_THREADS=2 "$BUNDLE/bin/train-mlp" --device gpu "$@"
}

step_accuracy() {
	want=${ACC_FLOOR:-0.88}
	n=$NGPU
	train "$n" acc --layers 784,256,10 --data synthetic --synthetic-samples 65536,4096 --epochs 3 --batch 128 \
		--lr 0.001 --seed 1 --log-every 200 --summary "$LOGS/accuracy.json"
	rc=$?
	show acc
	[ "$rc" -eq 0 ] || fail "training on $n rank(s) failed (exit $rc): $(grep -h -m1 'train-mlp: .*\(error\|failed\|trainrt\)' "$LOGS"/acc.rank*.log)"
	grep -q "(nccl), .*bf16" "$LOGS/acc.rank0.log" || fail "train-mlp did not report the nccl backend and bf16"
	acc=$(json test_accuracy "$LOGS/accuracy.json")
	awk_true 'a >= w' -v a="$acc" -v w="$want" || fail "test accuracy $acc < $want ($n rank(s))"
	detail "784-256-10, synthetic, 3 epochs on $n rank(s): test accuracy $acc >= $want"
}

# The same 2 global batches per step as 2 ranks or as 1 rank with 2 micro-batches: rank r's half
# is micro-batch r, the GEMMs see the same rows, and the gradient is the same sum (NCCL adds two
# float32 values in either order alike), so the losses agree to float rounding.
step_two_ranks() {
	args="--layers 256,512,512,10 --data synthetic --synthetic-samples 16384,1024 --batch 256 --epochs 1 --seed 7 --lr 0.002 --log-every 8"
	# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
	train 1 one $args --accum 2 --summary "$LOGS/one.json" || { show one; fail "1 rank with --accum 2 failed"; }
	# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
	train 2 two $args --summary "$LOGS/two.json" || { show two; fail "2 ranks failed"; }
	show one
	show two
	losses "$LOGS/one.json" >"$WORK/l1"
	losses "$LOGS/two.json" >"$WORK/l2"
	gap=$(paste "$WORK/l1" "$WORK/l2" | awk 'NF == 2 { g = ($1 - $2) / $1; if (g < 0) g = -g; if (g > m) m = g; n++ }
		END { if (n < 8) print "none"; else printf "%.2e %d", m, n }')
	case $gap in none | "") fail "too few loss points to compare: $(wc -l <"$WORK/l1") vs $(wc -l <"$WORK/l2")" ;; esac
	t1=$(json test_loss "$LOGS/one.json")
	t2=$(json test_loss "$LOGS/two.json")
	max=${gap% *}
	awk_true 'm <= 2e-3 && (a - b) / a <= 2e-3 && (b - a) / a <= 2e-3' -v m="$max" -v a="$t1" -v b="$t2" ||
		fail "2 ranks differ from 1 rank with --accum 2: max loss gap $max, test loss $t2 vs $t1"
	# The step's traffic: one ring all-reduce of the 399,370 float32 gradients, 2(p-1)/p of them
	# sent by each of the p = 2 ranks (counted for both devices by tt_dp_train_step).
	bytes=$(json bytes_sent_per_step "$LOGS/two.json")
	[ "$bytes" = 3194960 ] || fail "2 ranks sent ${bytes:-no} bytes per step, want 3194960 (2 x 399370 x 4)"
	c1=$(json weights_crc32 "$LOGS/one.json")
	c2=$(json weights_crc32 "$LOGS/two.json")
	detail "2 ranks = 1 rank --accum 2: max relative loss gap $max over ${gap#* } points, test loss $t2 vs $t1, weights $([ "$c1" = "$c2" ] && echo bit-identical || echo "crc $c2 vs $c1")"
}
losses() { grep -o '"loss": [-0-9.e+]*' "$1" | awk '{ print $2 }'; }

# 2 ranks checkpoint every 25 steps; a second run resumed from step 25 ends bit-identical.
step_resume() {
	args="--layers 256,512,512,10 --data synthetic --synthetic-samples 8192,512 --batch 128 --epochs 1 --seed 5 --log-every 1000"
	rm -rf "$WORK/ck"
	# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
	train 2 full $args --ckpt-dir "$WORK/ck" --ckpt-every 25 --keep 0 --summary "$LOGS/full.json" ||
		{ show full; fail "checkpointing run failed"; }
	[ -d "$WORK/ck/step-00000025" ] || fail "no checkpoint of step 25 in $WORK/ck"
	for d in "$WORK"/ck/step-*; do [ "$(basename "$d")" = step-00000025 ] || rm -rf "$d"; done
	# shellcheck disable=SC2086 # $args is train-mlp's options, split on purpose
	train 2 resumed $args --ckpt-dir "$WORK/ck" --summary "$LOGS/resumed.json" || { show resumed; fail "resumed run failed"; }
	show resumed
	grep -q "resumed from .*step-00000025" "$LOGS/resumed.rank0.log" || fail "the second run did not resume from step 25"
	a=$(json weights_crc32 "$LOGS/full.json")
	b=$(json weights_crc32 "$LOGS/resumed.json")
	[ -n "$a" ] && [ "$a" = "$b" ] || fail "resumed weights differ: crc32 $b vs uninterrupted $a"
	detail "2 ranks resumed from step 25: weights crc32 $a, bit-identical to the uninterrupted run"
}

# kill -9 of rank 1 while training: rank 0 must fail within TRAINRT_TIMEOUT (+15 s), saying why.
step_dead_peer() {
	limit=20
	ranks 2 dead env TRAINRT_TIMEOUT=$limit "$BUNDLE/bin/train-mlp" --device gpu --layers 512,1024,10 --data synthetic \
		--synthetic-samples 65536,256 --batch 256 --epochs 100 --log-every 10 &
	job=$!
	i=0
	until grep -q 'step [0-9]*/' "$LOGS/dead.rank0.log" 2>/dev/null; do
		i=$((i + 1))
		[ "$i" -le 600 ] || { stop dead; fail "rank 0 logged no training step within 60 s"; }
		sleep 0.1
	done
	t0=$(now)
	kill -9 "$(cat "$LOGS/dead.rank1.pid")"
	wait "$job"
	rc=$?
	dt=$(($(now) - t0))
	show dead
	why=$(grep -m1 'trainrt: rank 0' "$LOGS/dead.rank0.log")
	[ "$rc" -ne 0 ] || fail "the job exited 0 after rank 1 was killed"
	[ "$dt" -le $((limit + 15)) ] || fail "rank 0 took $dt s to fail, over TRAINRT_TIMEOUT $limit + 15 s"
	[ -n "$why" ] || fail "rank 0 exited (after $dt s) without a trainrt error naming the failure"
	detail "rank 0 failed $dt s after rank 1's kill -9 (limit $limit + 15 s): ${why#*trainrt: }"
}

# Dense bf16 peak in TFLOP/s by the GPU's name (NVIDIA's datasheets: H100/H200 SXM 989.4 without
# sparsity, H100 PCIe 756, H100 NVL 835, A100 312, L40S 362); PEAK_TFLOPS overrides.
peak_tflops() {
	case $1 in
	*H100*PCIe*) echo 756 ;;
	*H100*NVL*) echo 835 ;;
	*H200* | *H100* | *H800*) echo 989 ;; # GH200 too: *H200* matches it
	*A100* | *A800*) echo 312 ;;
	*L40S*) echo 362 ;;
	*) echo "" ;;
	esac
}

# An MLP whose GEMMs fill the GPU: 8192 wide, batch 8192 per GPU; MFU from the steady rate.
step_mfu() {
	floor=${MFU_FLOOR:-30}
	train 1 mfu --layers 1024,8192x6,16 --data synthetic --synthetic-samples 65536,1024 --batch 8192 --epochs 5 \
		--log-every 4 --summary "$LOGS/mfu.json" || { show mfu; fail "MFU run failed"; }
	show mfu
	sps=$(json steady_samples_per_sec "$LOGS/mfu.json")
	fps=$(json train_flops_per_sample "$LOGS/mfu.json")
	awk_true 's > 0' -v s="$sps" || fail "no steady rate measured (steady_samples_per_sec '$sps')"
	tflops=$(awk -v s="$sps" -v f="$fps" 'BEGIN { printf "%.1f", s * f / 1e12 }')
	peak=${PEAK_TFLOPS:-$(peak_tflops "$GPU_NAME")}
	[ -n "$peak" ] || { detail "SKIP: $tflops TFLOP/s; no dense bf16 peak known for '$GPU_NAME' (set PEAK_TFLOPS)"; exit 77; }
	mfu=$(awk -v t="$tflops" -v p="$peak" 'BEGIN { printf "%.1f", 100 * t / p }')
	awk_true 'm >= f' -v m="$mfu" -v f="$floor" ||
		fail "MFU $mfu% < $floor%: $sps samples/s, $tflops of $peak TFLOP/s"
	detail "1024-8192x6-16, batch 8192: $sps samples/s steady, $tflops TFLOP/s, MFU $mfu% of $peak (floor $floor%)"
}

# NCCL all-reduce bandwidth: every row's busbw must be above 0.
step_bench() {
	n=$((NGPU > 1 ? NGPU : 2))
	ranks "$n" bench env TRAINRT_TIMEOUT=60 "$BUNDLE/bin/trainrt-bench" -b 1M -e 64M -f 4 -n 5 -w 2
	rc=$?
	show bench
	rows=$(grep -v '^#' "$LOGS/bench.rank0.log" | awk 'NF == 8 && $1 ~ /^[0-9]+$/' | wc -l)
	bad=$(grep -v '^#' "$LOGS/bench.rank0.log" | awk 'NF == 8 && $1 ~ /^[0-9]+$/ && !($7 > 0)' | wc -l)
	best=$(grep -v '^#' "$LOGS/bench.rank0.log" | awk 'NF == 8 && $7 > b { b = $7 } END { print b + 0 }')
	[ "$rc" -eq 0 ] && [ "$rows" -eq 4 ] && [ "$bad" -eq 0 ] ||
		fail "trainrt-bench on $n ranks: exit $rc, $rows of 4 rows, $bad with busbw <= 0"
	grep -q 'backend nccl' "$LOGS/bench.rank0.log" || fail "trainrt-bench did not run over nccl"
	detail "all-reduce 1M..64M on $n ranks over nccl$(shared_note "$n"): busbw up to $best GB/s"
}

# ---- driver ------------------------------------------------------------------------------------

if [ "${1:-}" = --step ]; then
	STEP=$2
	[ -f "$WORK/env" ] && . "$WORK/env"
	export LD_LIBRARY_PATH
	"step_$STEP"
	exit $?
fi

BUNDLE=$(dirname "$self")
dest=${OUT:-}
only=""
packed_only=${OUT:+1}
while [ $# -gt 0 ]; do
	case $1 in
	--bundle) BUNDLE=$(cd "$2" && pwd) || exit 2; shift 2 ;;
	--out) dest=$2 packed_only=""; shift 2 ;;
	--only) only=$2; shift 2 ;;
	--list)
		for s in $STEPS; do echo "${s%%:*} ${TT_GPU_TIMEOUT:-${s#*:}}s"; done
		exit 0
		;;
	*) echo "usage: sh run.sh [--bundle DIR] [--out DIR] [--only STEP,...] [--list]" >&2; exit 2 ;;
	esac
done
dest=${dest:-./gpu-check-out}
mkdir -p "$dest/logs" || exit 2
dest=$(cd "$dest" && pwd)
LOGS=$dest/logs
WORK=$(mktemp -d /tmp/gpu-check-XXXXXX)
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
NGPU=1
GPU_NAME=unknown
export BUNDLE LOGS WORK CUDA_HOME NGPU GPU_NAME
trap 'rm -rf "$WORK"' EXIT
budget=${TT_GPU_BUDGET:-570}
t_start=$(now)
failed=0
: >"$dest/table.txt"
printf '[' >"$dest/results.json"
sep=""

for s in $STEPS; do
	name=${s%%:*} limit=${TT_GPU_TIMEOUT:-${s#*:}}
	if [ -n "$only" ] && [ "$name" != preflight ] && ! echo ",$only," | grep -q ",$name,"; then
		continue
	fi
	left=$((budget - ($(now) - t_start)))
	[ "$limit" -gt "$left" ] && limit=$left
	rm -f "$LOGS/$name.detail"
	t0=$(now)
	if [ "$left" -lt 5 ]; then
		rc=125
		echo "not run: the ${budget} s budget is spent" >"$LOGS/$name.detail"
	else
		say "== $name (timeout ${limit} s)"
		timeout -k 5 "$limit" sh "$self" --step "$name" >"$LOGS/$name.log" 2>&1
		rc=$?
	fi
	secs=$(($(now) - t0))
	# The preflight's findings (GPU count and name, library path) are every later step's.
	[ "$name" = preflight ] && [ -f "$WORK/env" ] && . "$WORK/env" && export NGPU GPU_NAME LD_LIBRARY_PATH
	why=$(cat "$LOGS/$name.detail" 2>/dev/null)
	case $rc in
	0) status=PASS ;;
	77) status=SKIP ;;
	124 | 137) status=FAIL why="timed out after $limit s; last output: $(tail -n1 "$LOGS/$name.log")" ;;
	*) status=FAIL why=${why:-"exit $rc; last output: $(tail -n1 "$LOGS/$name.log")"} ;;
	esac
	[ $status = FAIL ] && failed=$((failed + 1))
	say "$status $name (${secs} s): $why"
	printf '%-5s %-15s %4ss  %s\n' "$status" "$name" "$secs" "$why" >>"$dest/table.txt"
	esc=$(printf '%s' "$why" | sed 's/\\/\\\\/g; s/"/\\"/g' | tr -d '\n\r\t')
	printf '%s\n  {"step": "%s", "status": "%s", "seconds": %s, "detail": "%s"}' "$sep" "$name" "$status" "$secs" "$esc" \
		>>"$dest/results.json"
	sep=,
done
printf '\n]\n' >>"$dest/results.json"
total=$(($(now) - t_start))
tar -czf "$dest/gpu-logs.tar.gz" -C "$dest" logs 2>/dev/null
[ -n "$packed_only" ] && rm -rf "$LOGS"
echo
echo "gpu-check: results on $GPU_NAME ($NGPU GPU(s)), ${total} s:"
cat "$dest/table.txt"
pass=$(grep -c '^PASS' "$dest/table.txt")
skip=$(grep -c '^SKIP' "$dest/table.txt")
echo "gpu-check: $pass passed, $failed failed, $skip skipped"
[ "$failed" -eq 0 ]

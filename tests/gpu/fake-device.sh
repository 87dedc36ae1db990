#!/bin/sh
# SPDX-License-Identifier: MIT
# fake-device.sh — a pretend GPU machine for testing tests/gpu/run.sh without a GPU: installed
# under several names (nvidia-smi, compute-sanitizer, ldd, python3 on PATH; mlp_check, nccl_check,
# train-mlp, trainrt-bench, train-topo in a bundle's bin/), it prints what the real program prints
# on a healthy machine, so run.sh's parsing, assertions, timeouts and table are what is tested.
# Knobs (environment): FAKE_FAIL="prog ..." exits 1; FAKE_HANG="prog ..." sleeps forever;
# FAKE_ACC (test accuracy, 0.9); FAKE_BUSBW (11.5); FAKE_SANITIZER=unsupported; FAKE_NO_NCCL=1
# (no NCCL anywhere); FAKE_RESUME_DIFFERS=1; FAKE_GAP=1 (2 ranks' losses differ); FAKE_DIR (state).
prog=$(basename "$0")
# (--versions is the preflight's look at the libraries: it never hangs or fails here)
[ "${1:-}" = --versions ] || case " ${FAKE_HANG:-} " in *" $prog "*) exec sleep 100000 ;; esac
[ "${1:-}" = --versions ] || case " ${FAKE_FAIL:-} " in *" $prog "*) echo "$prog: fake failure" >&2; exit 1 ;; esac
rank=${RANK:-0}
world=${WORLD_SIZE:-1}

# arg NAME "$@": the value after option NAME, empty when absent.
arg() {
	want=$1
	shift
	while [ $# -gt 0 ]; do
		[ "$1" = "$want" ] && { echo "${2:-}"; return; }
		shift
	done
}

case $prog in
nvidia-smi)
	case "$*" in
	-L) echo "GPU 0: NVIDIA H200 (UUID: GPU-00000000-fake)" ;;
	*query-gpu=name*) echo "NVIDIA H200" ;;
	*query-gpu=driver_version*) echo "580.159.04" ;;
	*) echo "fake nvidia-smi: $*" ;;
	esac
	;;
compute-sanitizer)
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
		case $1 in --tool | --error-exitcode | --print-limit) shift 2 ;; *) shift ;; esac
	done
	echo "========= COMPUTE-SANITIZER"
	if [ "${FAKE_SANITIZER:-}" = unsupported ]; then
		echo "========= Error: Device not supported (fake)"
		exit 1
	fi
	"$@"
	rc=$?
	echo "========= ERROR SUMMARY: 0 errors"
	exit $rc
	;;
ldd)
	# The bundle's programs need NCCL; it is found only in the fake PyTorch environment.
	nccl=""
	for d in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
		[ -f "$d/libnccl.so.2" ] && nccl="$d/libnccl.so.2"
	done
	printf '\tlibtrainrt.so.0 => /fake/lib/libtrainrt.so.0 (0x0000)\n'
	if [ -n "$nccl" ]; then
		printf '\tlibnccl.so.2 => %s (0x0000)\n' "$nccl"
	else
		printf '\tlibnccl.so.2 => not found\n'
	fi
	;;
python3)
	# python3 -c 'import nvidia; print(...nvidia.__path__)': where pip's nvidia-* packages live.
	[ "${FAKE_NO_NCCL:-}" = 1 ] && exit 1
	echo "$FAKE_DIR/site-packages/nvidia"
	;;
mlp_check)
	[ "${1:-}" = --layer ] && { echo "mlp_check: layer $3 of $2 on $4 rows: passed"; exit 0; }
	echo "mlp_check: on NVIDIA H200 (device 0)"
	echo "mlp_check: training 64-128-128-10: CPU loss 2.2787 -> 1.3479, GPU -> 1.3477, worst step gap 0.2%"
	echo "mlp_check: all GPU math checks passed"
	;;
nccl_check)
	if [ "${1:-}" = --versions ]; then
		echo "nccl 2.28.9 (built with 2.28.9) cuda-runtime 13.0 cuda-driver 13.0"
		exit 0
	fi
	[ "${NCCL_DEBUG:-}" = INFO ] && [ -n "${NCCL_TOPO_FILE:-}" ] &&
		echo "fake:1:1 [0] NCCL INFO Loading topology file $NCCL_TOPO_FILE"
	echo "nccl_check: rank $rank of $world (nccl, ${LOCAL_WORLD_SIZE:-1} per node): 0 wrong elements"
	;;
train-topo)
	out=$(arg -o "$@")
	printf '<system version="1">\n  <cpu numaid="0"><pci busid="0000:1b:00.0"><gpu dev="0"/></pci></cpu>\n</system>\n' >"$out"
	;;
trainrt-bench)
	[ "$rank" = 0 ] || exit 0
	echo "# trainrt-bench: allreduce, $world ranks ($world per node), backend nccl"
	echo "#    size(B)        count   type     redop    time(us)    algbw    busbw  #wrong"
	for s in 1048576 4194304 16777216 67108864; do
		printf '%12s %12s  float       sum       100.0     10.0 %8s      -1\n' "$s" $((s / 4)) "${FAKE_BUSBW:-11.5}"
	done
	;;
train-mlp)
	summary=$(arg --summary "$@")
	ck=$(arg --ckpt-dir "$@")
	epochs=$(arg --epochs "$@")
	echo "train-mlp: $(arg --layers "$@"): 1 parameters, $world rank(s) (nccl), layout ${world}x1x1 (DPxTPxPP), NVIDIA H200 (device 0) bf16, zero 0" >&2
	mkdir -p "$FAKE_DIR/pids"
	echo $$ >"$FAKE_DIR/pids/$MASTER_PORT.$rank"
	if [ "$epochs" = 100 ]; then
		# The dead-peer run: rank 0 notices when rank 1 is gone, as the nccl backend would. Like
		# the real one it logs no step before rank 1 has joined (here: written its pid), so a
		# kill after rank 0's first step always finds rank 1's pid to watch.
		i=0
		while [ "$rank" = 0 ] && [ ! -s "$FAKE_DIR/pids/$MASTER_PORT.1" ] && [ "$i" -lt 600 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		i=0
		while :; do
			i=$((i + 1))
			echo "train-mlp: step $i/100000 epoch 0 loss 1.0 acc 0.5 samples/s 1000 eta 0:01:00" >&2
			if [ "$rank" = 0 ] && [ -f "$FAKE_DIR/pids/$MASTER_PORT.1" ] && ! kill -0 "$(cat "$FAKE_DIR/pids/$MASTER_PORT.1")" 2>/dev/null; then
				echo "train-mlp: [rank 0] all-reduce of a gradient bucket failed: trainrt: rank 0: nccl backend: allreduce: NCCL error: remote process exited or there was a network error (fake)" >&2
				exit 1
			fi
			sleep 0.1
		done
	fi
	crc=1234abcd
	if [ -n "$ck" ]; then
		if [ -n "$(arg --ckpt-every "$@")" ]; then
			mkdir -p "$ck/step-00000025" "$ck/step-00000050"
		else
			echo "train-mlp: resumed from $ck/step-00000025 (step 25, epoch 0)" >&2
			[ "${FAKE_RESUME_DIFFERS:-}" = 1 ] && crc=deadbeef
		fi
	fi
	loss2=0.5
	[ "${FAKE_GAP:-}" = 1 ] && [ "$world" = 2 ] && loss2=0.6
	echo "train-mlp: done: 64 steps, test loss 0.4, test accuracy ${FAKE_ACC:-0.9}" >&2
	[ "$rank" = 0 ] && [ -n "$summary" ] && cat >"$summary" <<JSON
{
  "test_accuracy": ${FAKE_ACC:-0.9},
  "test_loss": 0.400000,
  "device": "NVIDIA H200 (device 0) bf16",
  "train_flops_per_sample": 25000000000,
  "samples_per_sec": 18000.0,
  "steady_samples_per_sec": 20000.0,
  "weights_crc32": "$crc",
  "bytes_sent_per_step": $([ "$world" = 2 ] && echo "${FAKE_BYTES:-3194960}" || echo 0),
  "history": [
    {"step": 8, "loss": 2.0, "test_acc": null},
    {"step": 16, "loss": 1.5, "test_acc": null},
    {"step": 24, "loss": 1.2, "test_acc": null},
    {"step": 32, "loss": 1.0, "test_acc": null},
    {"step": 40, "loss": 0.8, "test_acc": null},
    {"step": 48, "loss": 0.7, "test_acc": null},
    {"step": 56, "loss": 0.6, "test_acc": null},
    {"step": 64, "loss": $loss2, "test_acc": 0.9}
  ]
}
JSON
	;;
*)
	echo "fake-device.sh: unknown program $prog" >&2
	exit 2
	;;
esac
exit 0

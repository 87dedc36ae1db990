#!/bin/sh
# SPDX-License-Identifier: MIT
# before_after.sh — the shm point-to-point and waiting numbers of two builds of this tree (an old
# one and a new one, each built in place with scripts/build.sh) in one run, interleaved: every
# round measures each item with both builds, the order swapped from round to round so drift on a
# shared machine falls on both; the median of ROUNDS (default 3) is reported with new/old.
#   usage: bench/before_after.sh OLD_BUILD_DIR [NEW_BUILD_DIR (default: this tree)]
# Items: trainrt_sendrecv 8 B and 64 MiB between 2 ranks over shared memory; the shm all-reduce
# 8 B and 64 MiB (2 ranks; 64 MiB with 4 too, as a fraction of the memory bandwidth each of 2 and
# 4 processes copying at once gets); train-mlp 784-256-10 world 1 and 2 on a quiet machine and with one
# CPU kept busy by an unrelated `yes >/dev/null`, started by the bench launcher (unbound) and by
# the build's train-run (each worker bound to a CPU of its own, as users run it); PyTorch DDP
# (gloo, bench/torch_ddp.py) world 2 both ways, unbound and bound (--bind), when python3-torch
# is installed; the peers of the point-to-point and all-reduce items once a round (Open MPI's
# MPI_Sendrecv and MPI_Allreduce when mpicc is installed, Gloo's isend/irecv and all-reduce); the pipeline step time of bench/parallel.sh's 1x1x2
# layout (512x8, batch 128, 4 micro-batches). Every command is bounded (timeout); a benchmark,
# never a test.
set -u
[ $# -ge 1 ] || { echo "usage: $0 OLD_BUILD_DIR [NEW_BUILD_DIR]" >&2; exit 2; }
old=$1
new=${2:-$(cd "$(dirname "$0")/.." && pwd)}
for d in "$old" "$new"; do
	[ -x "$d/trainrt-bench" ] && [ -x "$d/train-mlp" ] && [ -x "$d/train-run" ] ||
		{ echo "before_after.sh: $d has no built trainrt-bench, train-mlp and train-run (run scripts/build.sh there)" >&2; exit 2; }
done
ROUNDS=${ROUNDS:-3}
PY=${PYTHON:-/usr/bin/python3}
here=$(cd "$(dirname "$0")" && pwd)
launch="$here/../tests/trainer/launch_local.sh"
tmp=$(mktemp -d /tmp/tt-bench-ba-XXXXXX)
busy=
cleanup() { [ -n "$busy" ] && kill "$busy" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 TRAINRT_TIMEOUT=120
unset RANK WORLD_SIZE PMIX_RANK

field() { sed -n "s/.*\"$2\": \([0-9.e+-]*\).*/\1/p" "$1" | head -1; }

# bench DIR OP BYTES ITERS COLUMN [RANKS]: one trainrt-bench number (5: time us, 6: algbw, 7: busbw)
bench() {
	LOCAL_WORLD_SIZE=${6:-2} timeout 120 "$1/trainrt-bench" --local "${6:-2}" -o "$2" -b "$3" -e "$3" -n "$4" -w 10 |
		awk -v c="$5" '!/^#/ { print $c }'
}

# copiers N: the memory bandwidth (GB/s) each of N processes copying 64 MiB at once gets — the
# bound of an N-rank all-reduce's busbw (the new build's trainrt-bench: the old one lacks it)
copiers() { timeout 60 "$new/trainrt-bench" --memcpy 67108864 --copiers "$1" | awk '{ print $10 }'; }

# mlp DIR WORLD: samples/s of train-mlp as bench/train.sh runs it
mlp() {
	timeout 120 "$launch" "$2" "$1/train-mlp" --layers 784,256,10 --data synthetic --synthetic-samples 8192,256 \
		--batch 256 --max-steps 300 --epochs 1000 --log-every 100000 --summary "$tmp/t.json" 2>"$tmp/t.log" &&
		field "$tmp/t.json" samples_per_sec
}

# mlprun DIR: samples/s of the same train-mlp world 2 under the build's train-run, which binds
# each worker to a CPU of its own
mlprun() {
	timeout 120 "$1/train-run" --nproc-per-node 2 -- "$1/train-mlp" --layers 784,256,10 --data synthetic \
		--synthetic-samples 8192,256 --batch 256 --max-steps 300 --epochs 1000 --log-every 100000 \
		--summary "$tmp/t.json" >"$tmp/t.log" 2>&1 && field "$tmp/t.json" samples_per_sec
}

# pipe DIR: pipeline step time (ms) of the 1x1x2 layout of bench/parallel.sh
pipe() {
	timeout 120 "$launch" 2 "$1/train-mlp" --layers 512x8 --data synthetic --synthetic-samples 4096,64 --batch 128 \
		--accum 4 --max-steps 20 --epochs 1000 --log-every 5 --tp 1 --pp 2 --summary "$tmp/p.json" 2>"$tmp/p.log" &&
		awk -v s="$(field "$tmp/p.json" steady_samples_per_sec)" 'BEGIN { printf "%.2f", 128 / s * 1000 }'
}

ddp() {
	timeout 120 "$PY" "$here/torch_ddp.py" --layers 784,256,10 --batch 256 --world 2 --steps 300 --threads 1 "$@" \
		2>"$tmp/d.log" | awk '{ print $2 }'
}

# the peers: bench/mpi_*.c built once; each prints "value value" (see their opening comments)
has_mpi=0
command -v mpicc >/dev/null && mpicc -O2 -o "$tmp/mpi_sr" "$here/mpi_sendrecv.c" 2>/dev/null &&
	mpicc -O2 -o "$tmp/mpi_ar" "$here/mpi_allreduce.c" 2>/dev/null && has_mpi=1
# mpi PROGRAM BYTES ITERS FIELD: one Open MPI number between 2 ranks over shared memory
mpi() {
	timeout 120 mpirun --allow-run-as-root --mca btl self,vader -np 2 "$tmp/$1" "$2" "$3" 10 2>/dev/null |
		tail -1 | cut -d' ' -f"$4"
}
port() { sh "$launch" --free-port; }
# gloo SCRIPT ARGS...: the first number a Gloo peer prints
gloo() { s=$1; shift; timeout 120 "$PY" "$here/$s" "$@" 2>/dev/null | cut -d' ' -f1; }

load_on() { yes >/dev/null & busy=$!; }

# hog ITEM CMD...: runs CMD (its output is the item's value), and records in ITEM.hog the share
# of a core the busy process got meanwhile (its utime+stime from /proc, over the wall time): where
# the kernel put the ranks shows there (a share near 1: both ranks on the other core).
hog() {
	hog_item=$1
	shift
	hog_t0=$(date +%s.%N) hog_c0=$(awk '{ print $14 + $15 }' "/proc/$busy/stat")
	hog_v=$("$@")
	awk -v c0="$hog_c0" -v c1="$(awk '{ print $14 + $15 }' "/proc/$busy/stat")" -v t0="$hog_t0" -v t1="$(date +%s.%N)" \
		-v hz="$(getconf CLK_TCK)" 'BEGIN { printf "%.2f\n", (c1 - c0) / hz / (t1 - t0) }' >>"$tmp/$hog_item.hog"
	echo "$hog_v"
}
load_off() { kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null; busy=; }

# record NAME VALUE: appends to the item's file
record() { echo "${2:-nan}" >>"$tmp/$1"; }

items="p2p8:sendrecv_8_B_(us) p2p64:sendrecv_64_MiB_(GB/s/direction) ar8:allreduce_8_B_(us) ar64:allreduce_64_MiB_busbw_(GB/s)
ar64x4:allreduce_64_MiB_busbw,_4_ranks_(GB/s)
mlp1:train-mlp_world_1_(samples/s) mlp2:train-mlp_world_2_(samples/s) mlp1busy:train-mlp_world_1,_one_CPU_busy
mlp2busy:train-mlp_world_2,_one_CPU_busy mlp2run:train-mlp_world_2,_train-run
mlp2runbusy:train-mlp_world_2,_train-run,_one_CPU_busy pipe:pipeline_1x1x2_step_(ms)"
has_torch=0
"$PY" -c 'import torch.distributed' 2>/dev/null && has_torch=1

echo "machine: $(getconf _NPROCESSORS_ONLN) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "old: $old ($(git -C "$old" rev-parse --short HEAD 2>/dev/null)); new: $new ($(git -C "$new" rev-parse --short HEAD 2>/dev/null)); $ROUNDS rounds"
r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then order="old new"; else order="new old"; fi
	for which in $order; do
		eval "d=\$$which"
		record "p2p8.$which" "$(bench "$d" sendrecv 8 2000 5)"
		record "p2p64.$which" "$(bench "$d" sendrecv 67108864 10 6)"
		record "ar8.$which" "$(bench "$d" allreduce 8 2000 5)"
		record "ar64.$which" "$(bench "$d" allreduce 67108864 10 7)"
		record "ar64x4.$which" "$(bench "$d" allreduce 67108864 10 7 4)"
		record "mlp1.$which" "$(mlp "$d" 1)"
		record "mlp2.$which" "$(mlp "$d" 2)"
		record "mlp2run.$which" "$(mlprun "$d")"
		record "pipe.$which" "$(pipe "$d")"
		load_on
		record "mlp1busy.$which" "$(mlp "$d" 1)"
		record "mlp2busy.$which" "$(hog "mlp2busy.$which" mlp "$d" 2)"
		record "mlp2runbusy.$which" "$(hog "mlp2runbusy.$which" mlprun "$d")"
		load_off
	done
	record mem2 "$(copiers 2)"
	record mem4 "$(copiers 4)"
	if [ "$has_torch" -eq 1 ]; then
		record ddp "$(ddp)"
		record ddpbind "$(ddp --bind)"
		load_on
		record ddpbusy "$(ddp)"
		record ddpbindbusy "$(ddp --bind)"
		load_off
	fi
	if [ "$has_mpi" -eq 1 ]; then
		record mpi_p2p8 "$(mpi mpi_sr 8 2000 1)"
		record mpi_p2p64 "$(mpi mpi_sr 67108864 10 2)"
		record mpi_ar8 "$(mpi mpi_ar 8 2000 2)"
		record mpi_ar64 "$(mpi mpi_ar 67108864 10 1)"
	fi
	if [ "$has_torch" -eq 1 ]; then
		record gloo_p2p8 "$(gloo gloo_sendrecv.py "$(port)" 8 2000 10)"
		record gloo_ar64 "$(gloo gloo_allreduce.py 2 "$(port)" 67108864 10 3)"
	fi
	echo "round $r done, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	r=$((r + 1))
done

median() { sort -g "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) { print "nan"; exit }
	m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf (m >= 1000 ? "%.0f" : "%.3g"), m }'; }
printf "%-42s %12s %12s %9s   %s\n" item old new new/old "all rounds (old | new)"
for it in $items; do
	key=${it%%:*}
	name=$(echo "${it#*:}" | tr _ ' ')
	o=$(median "$tmp/$key.old")
	n=$(median "$tmp/$key.new")
	printf "%-42s %12s %12s %9s   %s | %s\n" "$name" "$o" "$n" "$(awk -v a="$n" -v b="$o" 'BEGIN { printf "%.2f", a / b }')" \
		"$(tr '\n' ' ' <"$tmp/$key.old")" "$(tr '\n' ' ' <"$tmp/$key.new")"
done
echo "share of a core the busy process got during train-mlp world 2 (medians, old | new): bench launcher $(median "$tmp/mlp2busy.old.hog") | $(median "$tmp/mlp2busy.new.hog"), under train-run $(median "$tmp/mlp2runbusy.old.hog") | $(median "$tmp/mlp2runbusy.new.hog")"
m2=$(median "$tmp/mem2") m4=$(median "$tmp/mem4")
frac() { awk -v a="$(median "$tmp/$1")" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "memory bandwidth each of N copiers gets (GB/s): N=2 $m2, N=4 $m4; all-reduce 64 MiB busbw as a fraction of it (goal 0.8): 2 ranks old $(frac ar64.old "$m2") new $(frac ar64.new "$m2"), 4 ranks old $(frac ar64x4.old "$m4") new $(frac ar64x4.new "$m4")"
if [ "$has_torch" -eq 1 ]; then
	echo "PyTorch DDP gloo world 2 (samples/s): quiet $(median "$tmp/ddp"), one CPU busy $(median "$tmp/ddpbusy"); each rank bound to a CPU (--bind): quiet $(median "$tmp/ddpbind"), one CPU busy $(median "$tmp/ddpbindbusy")"
fi
# peer NAME FILE NEW_ITEM: a peer's median beside the new build's, new/peer
peer() {
	[ -s "$tmp/$2" ] || return 0
	p=$(median "$tmp/$2") n=$(median "$tmp/$3.new")
	printf "%-42s %12s %12s %9s   %s\n" "$1" "$p" "$n" "$(awk -v a="$n" -v b="$p" 'BEGIN { printf "%.2f", a / b }')" \
		"$(tr '\n' ' ' <"$tmp/$2")"
}
printf "%-42s %12s %12s %9s   %s\n" "peer (2 ranks, same run)" peer new new/peer "all rounds (peer)"
peer "Open MPI MPI_Sendrecv 8 B (us)" mpi_p2p8 p2p8
peer "Open MPI MPI_Sendrecv 64 MiB (GB/s/dir)" mpi_p2p64 p2p64
peer "Open MPI MPI_Allreduce 8 B (us)" mpi_ar8 ar8
peer "Open MPI MPI_Allreduce 64 MiB busbw" mpi_ar64 ar64
peer "Gloo isend/irecv 8 B (us)" gloo_p2p8 p2p8
peer "Gloo all-reduce 64 MiB busbw (GB/s)" gloo_ar64 ar64
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

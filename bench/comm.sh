#!/bin/sh
# SPDX-License-Identifier: MIT
# comm.sh — `make bench-comm`: libtrainrt's collectives against their peers, measured in one run
# on this machine: memcpy bandwidth, our shm all-reduce (2 and 4 ranks, 64 MiB float32), Gloo
# all-reduce through Debian's PyTorch, MPI_Allreduce from Debian's Open MPI, and a rendezvous of
# 1024 ranks (threads) through our store vs PyTorch's TCPStore; point-to-point exchanges between two
# ranks (trainrt_sendrecv over shared memory and over loopback TCP, Gloo isend/irecv, Open MPI's
# MPI_Sendrecv); the 8 B all-reduce of ours and Open MPI's. Prints the
# numbers and the ratios that BENCHMARKS.md "## Collectives" records. Every part is bounded (timeout) and loopback only.
# Needs python3-torch, libopenmpi-dev and openmpi-bin (scripts/install-deps.sh; parts without them are skipped).
set -u
BENCH=${TRAINRT_BENCH:-./trainrt-bench}
PY=${PYTHON:-/usr/bin/python3}
SIZE=67108864
ITERS=10
WARM=3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
here=$(cd "$(dirname "$0")" && pwd)

say() { printf '%s\n' "$*"; }
# busbw (GB/s) of the 64 MiB row of trainrt-bench output
ours() { timeout 120 "$BENCH" --local "$1" -b $SIZE -e $SIZE -n $ITERS -w $WARM | awk '!/^#/ { print $7, $8 }'; }

say "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
# memcpy bandwidth as N ranks see it: N processes copying at once (each one's share is the bound
# of an all-reduce's busbw at N ranks; one copier is a single core's memcpy)
each() { "$BENCH" --memcpy $SIZE --copiers "$1" | awk '{ print $10 }'; }
memcpy=$(each 1)
say "memcpy 64 MiB, one copier: $memcpy GB/s"
for n in 2 4; do
	eval "memcpy$n=\$(each $n)"
	say "memcpy 64 MiB, $n copiers at once: $(eval echo "\$memcpy$n") GB/s each"
done

for n in 2 4; do
	r=$(ours $n)
	eval "shm$n=\$(echo \$r | cut -d' ' -f1)"
	say "trainrt shm allreduce $n ranks 64 MiB float32: busbw $(echo "$r" | cut -d' ' -f1) GB/s (#wrong $(echo "$r" | cut -d' ' -f2))"
done

port() { sh "$(dirname "$0")/../tests/trainer/launch_local.sh" --free-port; } # the project's one port rule
if "$PY" -c 'import torch.distributed' 2>/dev/null; then
	for n in 2 4; do
		g=$(timeout 120 "$PY" "$here/gloo_allreduce.py" $n "$(port)" $SIZE $ITERS $WARM 2>/dev/null)
		eval "gloo$n=\${g:-0}"
		say "gloo allreduce $n ranks 64 MiB float32: busbw ${g:-n/a} GB/s"
	done
else
	say "gloo: skipped (apt-get install -y python3-torch)"; gloo2=0; gloo4=0
fi

if command -v mpicc >/dev/null && mpicc -O2 -o "$tmp/mpi_ar" "$here/mpi_allreduce.c" 2>/dev/null; then
	for n in 2 4; do
		m=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --mca btl self,vader -np $n "$tmp/mpi_ar" $SIZE $ITERS $WARM 2>/dev/null | tail -1 | cut -d' ' -f1)
		eval "mpi$n=\${m:-0}"
		say "Open MPI allreduce $n ranks 64 MiB float32: busbw ${m:-n/a} GB/s"
	done
	m=$(timeout 120 mpirun --allow-run-as-root --mca btl self,vader -np 2 "$tmp/mpi_ar" 8 2000 100 2>/dev/null | tail -1 | cut -d' ' -f2)
	say "Open MPI allreduce 2 ranks 8 B: ${m:-n/a} us"
else
	say "Open MPI: skipped (apt-get install -y libopenmpi-dev openmpi-bin)"; mpi2=0; mpi4=0
fi
# ours at 8 B, the same 2000 timed calls: latency (time per call, us)
say "trainrt shm allreduce 2 ranks 8 B: $(LOCAL_WORLD_SIZE=2 timeout 120 "$BENCH" --local 2 -b 8 -e 8 -n 2000 -w 100 | awk '!/^#/ { print $5 }') us"

rdv=$(timeout 60 "$BENCH" --rendezvous 1024 | awk '{ print $(NF-3) }')
say "rendezvous 1024 ranks (threads), trainrt store: ${rdv} s"
cat >"$tmp/tcpstore.py" <<'PY'
import sys, threading, time
from datetime import timedelta
from torch.distributed import TCPStore
n = int(sys.argv[1])
master = TCPStore("127.0.0.1", 0, n, True, timedelta(seconds=60), wait_for_workers=False)
port = master.port
def rank():
    s = TCPStore("127.0.0.1", port, n, False, timedelta(seconds=60))
    if s.add("count", 1) == n: s.set("done", "1")
    s.get("done")
t0 = time.perf_counter()
ts = [threading.Thread(target=rank) for _ in range(n)]
[t.start() for t in ts]; [t.join() for t in ts]
print("%.3f" % (time.perf_counter() - t0))
PY
if "$PY" -c 'import torch.distributed' 2>/dev/null; then
	# shellcheck disable=SC3045 # dash, Debian's /bin/sh, has ulimit -n and -H; elsewhere it fails quietly
	ts=$(ulimit -n "$(ulimit -Hn)" 2>/dev/null; timeout 120 "$PY" "$tmp/tcpstore.py" 1024 2>/dev/null)
	say "rendezvous 1024 ranks (threads), PyTorch TCPStore: ${ts:-n/a} s"
else
	ts=0
fi

# Point-to-point: two ranks swap a buffer (8 bytes: latency, 64 MiB: bandwidth per direction).
p2p() { # LOCAL_WORLD_SIZE size [iters] -> "time_us algbw"
	LOCAL_WORLD_SIZE=$1 timeout 120 "$BENCH" --local 2 -o sendrecv -b "$2" -e "$2" -n "${3:-$ITERS}" -w $WARM |
		awk '!/^#/ { print $5, $7 }'
}
for where in "2 shm" "1 tcp"; do
	set -- $where
	small=$(p2p "$1" 8 2000)
	big=$(p2p "$1" $SIZE)
	eval "p2p_$2=\$(echo \$big | cut -d' ' -f2)"
	say "trainrt sendrecv 2 ranks over $2: 8 B $(echo "$small" | cut -d' ' -f1) us, 64 MiB $(echo "$big" | cut -d' ' -f2) GB/s per direction"
done
if "$PY" -c 'import torch.distributed' 2>/dev/null; then
	small=$(timeout 120 "$PY" "$here/gloo_sendrecv.py" "$(port)" 8 $ITERS $WARM 2>/dev/null)
	big=$(timeout 120 "$PY" "$here/gloo_sendrecv.py" "$(port)" $SIZE $ITERS $WARM 2>/dev/null)
	gloo_p2p=$(echo "$big" | cut -d' ' -f2)
	say "gloo isend/irecv 2 ranks: 8 B $(echo "$small" | cut -d' ' -f1) us, 64 MiB ${gloo_p2p:-n/a} GB/s per direction"
else
	gloo_p2p=0
fi

# Open MPI's peer of trainrt_sendrecv: MPI_Sendrecv between 2 ranks (both directions at once),
# time per exchange and bandwidth per direction; its shared-memory transport spins while it waits.
if command -v mpicc >/dev/null && mpicc -O2 -o "$tmp/mpi_sr" "$here/mpi_sendrecv.c" 2>/dev/null; then
	small=$(timeout 120 mpirun --allow-run-as-root --mca btl self,vader -np 2 "$tmp/mpi_sr" 8 2000 100 2>/dev/null | tail -1)
	big=$(timeout 120 mpirun --allow-run-as-root --mca btl self,vader -np 2 "$tmp/mpi_sr" $SIZE $ITERS $WARM 2>/dev/null | tail -1)
	say "Open MPI sendrecv 2 ranks: 8 B $(echo "$small" | cut -d' ' -f1) us, 64 MiB $(echo "$big" | cut -d' ' -f2) GB/s per direction"
fi

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "n/a" }'; }
# shellcheck disable=SC2154 # memcpy2 and memcpy4 are set by the evals above
say "all-reduce busbw against the memory bandwidth each rank gets when all copy at once (goal >= 0.8): 2 ranks $(ratio "$shm2" "$memcpy2")  4 ranks $(ratio "$shm4" "$memcpy4")"
# shellcheck disable=SC2154 # shm2, shm4, p2p_shm and p2p_tcp are set by the evals above
say "ratios at 64 MiB: shm2/memcpy $(ratio "$shm2" "$memcpy")  shm4/memcpy $(ratio "$shm4" "$memcpy")  shm2/gloo2 $(ratio "$shm2" "$gloo2")  shm4/gloo4 $(ratio "$shm4" "$gloo4")  shm2/mpi2 $(ratio "$shm2" "$mpi2")  shm4/mpi4 $(ratio "$shm4" "$mpi4")  tcpstore/trainrt rendezvous $(ratio "${ts:-0}" "$rdv")  sendrecv shm/gloo $(ratio "$p2p_shm" "${gloo_p2p:-0}")  sendrecv tcp/gloo $(ratio "$p2p_tcp" "${gloo_p2p:-0}")"

#!/bin/sh
# SPDX-License-Identifier: MIT
# collective_model.sh — `make bench-model`: measures all-reduce times on this machine (loopback)
# for the alpha-beta model of issue #20 and runs bench/collective_model.py on them: the TCP ring
# at 2/4/8 ranks, shared-memory all-reduce and broadcast at 2/4 ranks (the hierarchical backend's
# parts inside a node) and the hierarchical backend at 8 ranks as 4 fake nodes x 2 and 2 x 4,
# float32 sums from 4 B to 64 MiB (x4 steps), all with TRAINRT_TCP_ALLREDUCE=ring (the formulas
# fitted are the ring's); then the TCP backend's own choice (recursive doubling up to 64 KiB) at
# 2/4/8 ranks, 4 B..256 KiB, against those ring points. Each point is the slowest rank's mean;
# the model takes the median of REPS runs.
# usage: collective_model.sh [--quick] [DATA_OUT]
#   --quick: one run, 2 ranks, TCP only, 4 B..64 KiB (what `make check` runs: no timing asserted)
#   env: TRAINRT_BENCH (./trainrt-bench), MODEL (bench/collective_model.py next to this script), REPS (3)
set -u
here=$(cd "$(dirname "$0")" && pwd)
BENCH=${TRAINRT_BENCH:-./trainrt-bench}
MODEL=${MODEL:-$here/collective_model.py}
PY=${PYTHON:-python3}
REPS=${REPS:-3}
quick=0
if [ "${1:-}" = --quick ]; then
	quick=1
	REPS=1
	shift
fi
out=${1:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
data=$tmp/data

# point ALGO P L [ENV=VALUE...] -- TRAINRT-BENCH ARGS: appends "ALGO P L BYTES TIME_US WRONG" rows.
point() {
	algo=$1 p=$2 loc=$3
	shift 3
	envs=""
	while [ "$1" != -- ]; do
		envs="$envs $1"
		shift
	done
	shift
	# shellcheck disable=SC2086 # envs is a list of VAR=VALUE words
	if ! env $envs timeout 120 "$BENCH" --local "$p" "$@" >"$tmp/run" 2>"$tmp/err"; then
		echo "collective_model.sh: $algo $p ranks ($envs $*) failed:" >&2
		cat "$tmp/err" >&2
		exit 1
	fi
	awk -v a="$algo" -v p="$p" -v l="$loc" '!/^#/ && NF >= 8 { print a, p, l, $1, $5, $8 }' "$tmp/run" >>"$data"
}

# sizes ALGO P L [ENV...]: 4 B..64 KiB with many iterations, 256 KiB..64 MiB with few.
sizes() {
	algo=$1 p=$2 loc=$3
	shift 3
	op=allreduce
	[ "$algo" = shmbcast ] && op=broadcast
	point "$algo" "$p" "$loc" "$@" -- -o $op -b 4 -e 64K -f 4 -n 30 -w 3
	[ "$quick" = 1 ] && return
	if [ "$algo" = choice ]; then
		point "$algo" "$p" "$loc" "$@" -- -o $op -b 256K -e 256K -n 30 -w 3
	else
		point "$algo" "$p" "$loc" "$@" -- -o $op -b 256K -e 64M -f 4 -n 3 -w 1
	fi
}

echo "# cores: $(nproc)" >"$data"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
r=0
while [ "$r" -lt "$REPS" ]; do
	if [ "$quick" = 1 ]; then
		sizes tcp 2 2 TRAINRT_BACKEND=tcp TRAINRT_TCP_ALLREDUCE=ring
	else
		for p in 2 4 8; do
			sizes tcp "$p" "$p" TRAINRT_BACKEND=tcp TRAINRT_TCP_ALLREDUCE=ring
			sizes choice "$p" "$p" TRAINRT_BACKEND=tcp TRAINRT_TCP_ALLREDUCE=auto
		done
		for l in 2 4; do
			sizes shm "$l" "$l" TRAINRT_BACKEND=shm
			sizes shmbcast "$l" "$l" TRAINRT_BACKEND=shm
			sizes hier 8 "$l" LOCAL_WORLD_SIZE="$l" TRAINRT_TCP_ALLREDUCE=ring
		done
	fi
	r=$((r + 1))
done
echo "measured in $(($(date +%s) - start)) s ($REPS runs), load now $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$out" ] && cp "$data" "$out"
"$PY" "$MODEL" "$data" "$tmp" || exit 1
if [ "$quick" = 0 ] && command -v gnuplot >/dev/null 2>&1; then
	echo '```'
	gnuplot <<EOF 2>"$tmp/gnuplot.err" || sed 's/^/gnuplot: /' "$tmp/gnuplot.err"
set terminal dumb 100 30
set logscale xy
set key left top
set title "TCP ring all-reduce on loopback, us vs bytes (log-log): 2/4/8 measured, lines: model (fit 2)"
plot "$tmp/measured.dat" index 0 using 2:3 with points pt "2" notitle, \\
     "$tmp/measured.dat" index 1 using 2:3 with points pt "4" notitle, \\
     "$tmp/measured.dat" index 2 using 2:3 with points pt "8" notitle, \\
     "$tmp/measured.dat" index 0 using 2:4 with lines title "model p=2", \\
     "$tmp/measured.dat" index 1 using 2:4 with lines title "model p=4", \\
     "$tmp/measured.dat" index 2 using 2:4 with lines title "model p=8"
set title "predicted, 512 nodes, ASSUMED 100 Gb/s IB (alpha 3 us): us vs bytes (log-log)"
plot "$tmp/predicted.dat" using 1:2 with lines title "ring", \\
     "$tmp/predicted.dat" using 1:3 with lines title "recursive doubling", \\
     "$tmp/predicted.dat" using 1:4 with lines title "Rabenseifner"
EOF
	echo '```'
fi

#!/bin/sh
# SPDX-License-Identifier: MIT
# collective_model.sh — `make bench-model`: measures all-reduce times on this machine (loopback)
# for the alpha-beta model of issue #20 and runs bench/collective_model.py on them: the TCP ring
# at 2/4/8 ranks, shared-memory all-reduce and broadcast at 2/4 ranks (the hierarchical backend's
# parts inside a node) and the hierarchical backend at 8 ranks as 4 fake nodes x 2 and 2 x 4,
# float32 sums from 4 B to 64 MiB (x4 steps). Each point is the slowest rank's mean; the model
# takes the median of REPS runs.
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
	[ "$quick" = 1 ] || point "$algo" "$p" "$loc" "$@" -- -o $op -b 256K -e 64M -f 4 -n 3 -w 1
}

echo "# cores: $(nproc)" >"$data"
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
r=0
while [ "$r" -lt "$REPS" ]; do
	if [ "$quick" = 1 ]; then
		sizes tcp 2 2 TRAINRT_BACKEND=tcp
	else
		for p in 2 4 8; do
			sizes tcp "$p" "$p" TRAINRT_BACKEND=tcp
		done
		for l in 2 4; do
			sizes shm "$l" "$l" TRAINRT_BACKEND=shm
			sizes shmbcast "$l" "$l" TRAINRT_BACKEND=shm
			sizes hier 8 "$l" LOCAL_WORLD_SIZE="$l"
		done
	fi
	r=$((r + 1))
done
echo "measured in $(($(date +%s) - start)) s ($REPS runs), load now $(cut -d' ' -f1-3 /proc/loadavg)"
[ -n "$out" ] && cp "$data" "$out"
"$PY" "$MODEL" "$data"

#!/bin/sh
# SPDX-License-Identifier: MIT
# launch.sh — how fast train-run starts a 2-worker group, against torchrun measured in the same
# run on the same machine. Two numbers per launcher:
#   first line: from starting the launcher to both workers having run their first command
#               (each worker writes `date +%s%N`; the same cost on both sides);
#   end to end: the whole `LAUNCHER 2 workers -- /bin/true` command (hyperfine), torchrun's
#               default 5 s monitor interval included, because that is what a user waits for.
# torchrun is Debian's python3-torch 1.13 run through bench/torchrun_py311.py (see there why).
# Usage: launch.sh PATH/TO/train-run   (make bench-launch runs it). About 30 s.
set -eu
TRAIN_RUN=$1
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
RUNS=5
TORCH_RUNS=3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-launch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES

have_torch=1
$PY -c 'import torch.distributed.run' 2>/dev/null || have_torch=0
TORCHRUN="$PY $HERE/torchrun_py311.py --nproc_per_node=2 --no_python"

# Prints the milliseconds from launch to both first lines; $1 = 1 when the launcher must be
# stopped once they are there (torchrun would otherwise sit out its monitor interval).
first_line_ms() {
	stop=$1
	shift
	rm -f "$WORK"/t.*
	t0=$(date +%s%N)
	"$@" sh -c 'date +%s%N > "$0/t.$LOCAL_RANK"' "$WORK" >/dev/null 2>&1 &
	pid=$!
	i=0
	while [ ! -s "$WORK/t.0" ] || [ ! -s "$WORK/t.1" ]; do
		i=$((i + 1))
		[ $i -lt 2000 ] || { echo "workers never started" >&2; exit 1; }
		sleep 0.01
	done
	[ "$stop" = 1 ] && kill -TERM $pid 2>/dev/null
	wait $pid || true
	t1=$(cat "$WORK/t.0" "$WORK/t.1" | sort -n | tail -1)
	echo $(((t1 - t0) / 1000)) | awk '{ printf "%.2f\n", $1 / 1000 }'
}

# Starts the two workers from this shell: the cost of the stamp alone.
no_launcher() {
	LOCAL_RANK=0 "$@" &
	LOCAL_RANK=1 "$@"
	wait
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# Mean milliseconds of one command under hyperfine; $1 = runs ("" = hyperfine's default, >= 10).
e2e_s() {
	runs=$1
	shift
	hyperfine -N --style none --warmup ${runs:+0}${runs:-3} ${runs:+--runs $runs} \
		--export-json "$WORK/e2e.json" "$*" >/dev/null 2>&1
	sed -n 's/^ *"mean": \([0-9.e-]*\),*$/\1/p' "$WORK/e2e.json" | head -1 | awk '{ printf "%.2f\n", $1 * 1000 }'
}

ratio() { echo "$1 $2" | awk '{ printf "%.0f", $1 / $2 }'; }

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, Linux $(uname -r)"
# The stamp itself (sh + date, and the t0 date) costs this much without any launcher.
direct=$(for _ in $(seq $RUNS); do first_line_ms 0 no_launcher; done | median)
tr_first=$(for _ in $(seq $RUNS); do first_line_ms 0 "$TRAIN_RUN" --nproc-per-node 2 --; done | median)
echo "first line, median of $RUNS (ms): no launcher (stamp cost) $direct, train-run $tr_first"
if [ $have_torch = 1 ]; then
	tc_first=$(for _ in $(seq $TORCH_RUNS); do first_line_ms 1 $TORCHRUN; done | median)
	echo "first line, median of $TORCH_RUNS (ms): torchrun $tc_first; torchrun/train-run = $(ratio "$tc_first" "$tr_first")x"
else
	echo "torchrun: skipped ($PY cannot import torch.distributed.run; apt-get install python3-torch)"
fi
if ! command -v hyperfine >/dev/null; then
	echo "end to end: skipped (apt-get install hyperfine)"
	exit 0
fi
tr_e2e=$(e2e_s "" "$TRAIN_RUN" --nproc-per-node 2 -- /bin/true)
echo "end to end, hyperfine mean (ms): train-run $tr_e2e"
if [ $have_torch = 1 ]; then
	# torchrun takes seconds per run: 2 runs keep the whole benchmark near 30 s.
	tc_e2e=$(e2e_s 2 $TORCHRUN /bin/true)
	echo "end to end, hyperfine mean (ms): torchrun $tc_e2e; torchrun/train-run = $(ratio "$tc_e2e" "$tr_e2e")x"
fi

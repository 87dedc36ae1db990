#!/bin/sh
# SPDX-License-Identifier: MIT
# ft.sh — fault recovery on one node (issue #29), train-run against torchrun in the same run: a
# 2-rank group, one fault into local rank 1 after warm-up, `--max-restarts 1` on both launchers.
#   programs: train-mlp under train-run; examples/pytorch_ddp.py (gloo, CPU) under train-run and
#             under torchrun (Debian's python3-torch through bench/torchrun_py311.py, --standalone,
#             its default 5 s monitor interval: what a user gets);
#   faults:   kill -9 of the worker; a hung worker (kill -STOP).
# Each row is one bench/ft_drive.py run: it stamps every launcher line as it is read and times
# fault -> the launcher's failure or hang line -> the first step line after the restart, and
# takes the steps lost from the last step line before the fault and the program's "resumed from"
# line. A row that has not recovered FT_BOUND seconds (120) after the fault is killed and shown as
# such (torchrun on a hang: gloo's own timeout is 30 min). Requeue-style recovery (requeue.sh) is
# not here: it needs Slurm (the cluster suite).
# Usage: ft.sh PATH/TO/train-run PATH/TO/train-mlp   (make bench-ft runs it). About 4 minutes.
set -eu
# The whole benchmark is bounded: 6 rows of at most 3 x FT_BOUND each, and some slack.
BOUND=${FT_BOUND:-120}
if [ -z "${FT_BOUNDED:-}" ]; then
	FT_BOUNDED=1 exec timeout -k 10 $((6 * 3 * BOUND + 120)) sh "$0" "$@"
fi
TRAIN_RUN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TRAIN_MLP=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
EXAMPLE=$HERE/../examples/pytorch_ddp.py
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/bench-ft.XXXXXX")
unset SLURM_JOB_ID CUDA_VISIBLE_DEVICES TRAIN_HEARTBEAT_FD
# torchrun sets OMP_NUM_THREADS=1 for its workers when it is unset, train-run leaves it: the same
# value for both keeps the example's own speed out of the comparison (2 ranks on 2 CPUs here).
CPUS=$(nproc) # before the export: GNU nproc honours OMP_NUM_THREADS
export OMP_NUM_THREADS=1

# Whatever still runs with the work directory in its command line is a leftover: named, killed.
leftovers() {
	pids=$(pgrep -f "$WORK" || true)
	[ -z "$pids" ] && return 0
	echo "ft.sh: processes left behind: $(echo "$pids" | tr '\n' ' ')" >&2
	for p in $pids; do
		kill -KILL -- "-$(ps -o pgid= -p "$p" | tr -d ' ')" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
	done
	return 1
}
trap 'leftovers || true; rm -rf "$WORK"' EXIT

have_torch=1
$PY -c 'import torch.distributed.run' 2>/dev/null || have_torch=0

TR_DETECT='train-run: host .*: rank [0-9]+ (hung in section|\(local rank)'
TR_RESTART='train-run: restarting'
# torchrun prints its restart decision only at INFO level: its failure line is the decision.
TC_DETECT='failed \(exitcode'
MLP_STEP='train-mlp: .*step ([0-9]+)/'
MLP_RESUME='resumed from .*\(step ([0-9]+)'
PT_STEP='pytorch_ddp: step ([0-9]+) loss'
PT_RESUME='resumed from .* at step ([0-9]+)'
# train-mlp: about 0.6 ms a step here, 24 epochs of 1024 steps, a checkpoint every 1000; the fault
# comes at step 3200, inside a step: a worker stopped in section checkpoint is not a hang by
# default (train-run(1): no timeout outside step unless --hang-timeout gives one). The example: about 20 ms a step, one every 100.
MLP_ARGS="--layers 256,256,10 --data synthetic --synthetic-samples 65536,256 --epochs 24 --batch 64 --log-every 10 --ckpt-every 1000"
PT_ARGS="--steps 1000 --log-every 1 --ckpt-every 100"

n=0
# row PROGRAM LAUNCHER FAULT WARM STEP_RE DETECT_RE RESTART_RE RESUME_RE -- CMD... (CKPT in CMD is
# replaced by the row's own checkpoint directory)
row() {
	prog=$1 launcher=$2 fault=$3 warm=$4 step_re=$5 detect_re=$6 restart_re=$7 resume_re=$8
	shift 9
	n=$((n + 1))
	dir=$WORK/row$n
	mkdir -p "$dir"
	# each word CKPT of the command becomes the row's checkpoint directory
	for a in "$@"; do
		shift
		if [ "$a" = CKPT ]; then set -- "$@" "$dir/ckpt"; else set -- "$@" "$a"; fi
	done
	res=$(timeout -k 5 $((3 * BOUND + 30)) $PY "$HERE/ft_drive.py" "$dir/log" "$fault" "$warm" "$BOUND" \
		"$step_re" "$detect_re" "$restart_re" "$resume_re" -- "$@") ||
		res="-	-	-	-	driver failed ($?)	-"
	left=none
	leftovers || left=killed
	echo "$prog	$launcher	$fault	$res	$left" >>"$WORK/rows"
	cp "$dir/log" "${FT_LOGS:-$WORK}/ft-row$n.log" 2>/dev/null || true
	rm -rf "$dir"
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $CPUS CPUs, Linux $(uname -r)"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
: >"$WORK/rows"
for f in kill stop; do
	row train-mlp train-run $f 3200 "$MLP_STEP" "$TR_DETECT" "$TR_RESTART" "$MLP_RESUME" -- \
		"$TRAIN_RUN" --nproc-per-node 2 --max-restarts 1 -- "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT
done
if [ $have_torch = 1 ]; then
	for f in kill stop; do
		row pytorch_ddp.py train-run $f 350 "$PT_STEP" "$TR_DETECT" "$TR_RESTART" "$PT_RESUME" -- \
			"$TRAIN_RUN" --nproc-per-node 2 --max-restarts 1 -- $PY "$EXAMPLE" $PT_ARGS --ckpt-dir CKPT
		row pytorch_ddp.py torchrun $f 350 "$PT_STEP" "$TC_DETECT" "$TC_DETECT" "$PT_RESUME" -- \
			$PY "$HERE/torchrun_py311.py" --standalone --nproc_per_node=2 --max_restarts=1 \
			"$EXAMPLE" $PT_ARGS --ckpt-dir CKPT
	done
else
	echo "pytorch_ddp.py rows: skipped ($PY cannot import torch.distributed.run; apt-get install python3-torch)"
fi

# The table, then torchrun / train-run for each fault where both recovered.
echo
echo "| program | launcher | fault | fault -> detection | detection -> training | fault -> training | last step before fault | resumed from | steps lost | verdict | exit | left behind |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '{
	tot = ($4 != "-" && $5 != "-") ? sprintf("%.2f s", $4 + $5) : "-"
	lost = ($6 != "-" && $7 != "-") ? $6 - $7 : "-"
	fault = $3 == "kill" ? "kill -9" : "hang (SIGSTOP)"
	printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, fault,
		$4 == "-" ? "-" : $4 " s", $5 == "-" ? "-" : $5 " s", tot, $6, $7, lost, $8, $9, $10
}' "$WORK/rows"
echo "| any | requeue.sh | any | not measured here: requeue-and-resume needs Slurm (the cluster suite) | | | | | | | | |"
echo
awk -F'\t' -v bound="$BOUND" '
$1 == "pytorch_ddp.py" && $8 == "recovered" { t[$2 "/" $3] = $4 + $5; d[$2 "/" $3] = $4 }
$1 == "pytorch_ddp.py" && $8 ~ /^not recovered/ { lost[$2 "/" $3] = 1 }
END {
	for (i = 1; i <= 2; i++) {
		f = (i == 1) ? "kill" : "stop"
		name = (f == "kill") ? "kill -9" : "hang"
		a = "train-run/" f
		b = "torchrun/" f
		if ((a in t) && (b in t) && t[a] > 0) {
			det = (d[a] > 0) ? sprintf("%.1fx", d[b] / d[a]) : "- (train-run 0.00 s)"
			printf "%s, pytorch_ddp.py: torchrun / train-run = %.1fx fault -> training, %s fault -> detection\n", name, t[b] / t[a], det
		} else if ((a in t) && (b in lost) && t[a] > 0)
			printf "%s, pytorch_ddp.py: torchrun did not recover in %d s, train-run in %.2f s (> %.0fx)\n", name, bound, t[a], bound / t[a]
		else
			printf "%s, pytorch_ddp.py: no ratio (not both launchers ran and recovered)\n", name
	}
}' "$WORK/rows"

#!/bin/sh
# SPDX-License-Identifier: MIT
# split.sh — `make bench-split`: trainrt_comm_split of N ranks on this machine (forked by
# tests/trainer/launch_local.sh, shm backend) into two groups by parity, against PyTorch's
# new_group on gloo (bench/torch_split.py) in the same run. Per size, the median of RUNS runs of
#   agree   every rank passes TRAINRT_UNDEFINED: the agreement on the groups only
#   groups  both groups built (shared-memory backends of their own)
#   torch   torch.distributed.new_group for both groups (up to SPLIT_TORCH_MAX ranks)
# Usage: split.sh BUILD_DIR SRC_DIR. Knobs: SPLIT_SIZES (default "16 64 128 256"), RUNS (3),
# SPLIT_TORCH_MAX (128), PYTHON.
set -u
B=$1 S=$2
SIZES=${SPLIT_SIZES:-16 64 128 256}
RUNS=${RUNS:-3}
TORCH_MAX=${SPLIT_TORCH_MAX:-128}
PY=${PYTHON:-/usr/bin/python3}
LAUNCH="$S/tests/trainer/launch_local.sh"

# median CMD...: the median of RUNS runs' first output line (a number of seconds), "fail" if any failed.
median() {
	i=0
	vals=""
	while [ "$i" -lt "$RUNS" ]; do
		v=$("$@" 2>/dev/null | head -n 1)
		case $v in [0-9]*) ;; *) echo fail; return ;; esac
		vals="$vals $v"
		i=$((i + 1))
	done
	printf '%s\n' $vals | sort -g | sed -n "$(((RUNS + 1) / 2))p"
}

have_torch=0
"$PY" -c 'import torch.distributed' 2>/dev/null && have_torch=1
echo "split of N ranks in two by parity, on $(nproc) CPUs ($(uname -m)), median of $RUNS runs, seconds:"
echo "| ranks | agree (trainrt) | groups (trainrt) | new_group x2 (PyTorch gloo) | PyTorch / trainrt groups |"
echo "|---|---|---|---|---|"
for n in $SIZES; do
	agree=$(median env TRAINRT_SHM_ARENA_MB=1 TRAINRT_TIMEOUT=120 sh "$LAUNCH" "$n" "$B/bench/split-time" agree)
	groups=$(median env TRAINRT_SHM_ARENA_MB=1 TRAINRT_TIMEOUT=120 sh "$LAUNCH" "$n" "$B/bench/split-time" groups)
	torch=n/a ratio=n/a
	if [ "$have_torch" = 1 ] && [ "$n" -le "$TORCH_MAX" ]; then
		torch=$(median sh -c "timeout 600 '$PY' '$S/bench/torch_split.py' $n \$(sh '$LAUNCH' --free-port)")
		case $torch$groups in *fail*) ;; *) ratio=$(awk -v t="$torch" -v g="$groups" 'BEGIN { printf "%.1f", t / g }') ;; esac
	fi
	echo "| $n | $agree | $groups | $torch | $ratio |"
done
[ "$have_torch" = 1 ] || echo "(PyTorch: not installed; apt-get install -y python3-torch)"

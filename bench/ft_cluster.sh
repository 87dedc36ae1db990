#!/bin/sh
# SPDX-License-Identifier: MIT
# ft_cluster.sh — fault recovery across nodes (issue #29) on the embedded test cluster: train-mlp,
# 2 nodes x 2 ranks, checkpoints, one fault on node 2 after warm-up; train-run's control plane
# against torchrun's elastic agents (c10d rendezvous) on the same program in the same run.
#   train-run --max-restarts 1: kill -9 of a worker on node 2 (global rank 3); a hung worker
#             there (kill -STOP); kill -9 of node 2's train-run (a lost node: node 1 must stop
#             with the one-line sbatch --exclude verdict);
#   train-run --spares 1 on 3 nodes (node 3 stands by): kill -9 of node 2's train-run, the
#             spare takes node rank 1 and training goes on from the checkpoint (spare_row);
#   torchrun  --max-restarts 1 (Debian's python3-torch through bench/torchrun_py311.py, one agent
#             per node, --rdzv-backend c10d on node1, --no-python train-mlp): kill -9, hang.
# Each row is one bench/ft_drive.py run around `srun -N2` (FT_TARGET picks the process on node 2
# by its environment: the clusters' nodes share this machine's pid namespace); times come from
# the stamped srun output lines (both nodes' launchers and rank 0's step lines). After each row,
# the processes still holding the row's directory in their command line are counted (orphans)
# and killed, and the row's job is cancelled. A recovered row's final weights_crc32 (train-mlp
# --summary) is compared with an uninterrupted run's of the same arguments: train-mlp resumes a
# checkpoint bit-exactly, so they must be equal.
# Needs root and the cluster lock; brings a 3-node cluster up (and down again) when none is up
# (a 2-node one runs every row but the spare's).
# Usage: bench/ft_cluster.sh PATH/TO/train-run PATH/TO/train-mlp PLUGIN.so
# (make bench-ft-cluster). FT_BOUND (60 s): how long a row may take to train again after the fault.
set -eu
BOUND=${FT_BOUND:-60}
if [ -z "${FT_BOUNDED:-}" ]; then
	FT_BOUNDED=1 exec timeout -k 10 $((7 * 3 * BOUND + 300)) sh "$0" "$@"
fi
TRAIN_RUN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TRAIN_MLP=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
PLUGIN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/../tests/cluster/cluster.sh
PY=/usr/bin/python3
# The nodes have a private /tmp: the work directory lives beside the build.
WORK=$(mktemp -d "$(dirname "$TRAIN_RUN")/bench-ft-cluster.XXXXXX")
started=0
cleanup() {
	leftovers >/dev/null || true
	rm -rf "$WORK"
	if [ $started = 1 ]; then "$CLUSTER" down >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
if ! "$CLUSTER" status >/dev/null 2>&1; then
	"$CLUSTER" up --nodes 3 --plugin "$PLUGIN" >/dev/null
	started=1
fi
export SLURM_CONF="${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/etc/slurm.conf"
CPUS=$(nproc) # before the export: GNU nproc honours OMP_NUM_THREADS
export OMP_NUM_THREADS=1 TRAINRT_TOKEN=bench-ft-cluster-secret-0123456789
unset TRAIN_HEARTBEAT_FD CUDA_VISIBLE_DEVICES

# leftovers: the processes whose command line names the work directory; prints the count, kills them.
leftovers() {
	pids=$(pgrep -f "$WORK/" || true)
	echo "$pids" | grep -c . || true
	for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
}

TR_DETECT='train-run: (host .*: rank [0-9]+ (hung in section|\(local rank)|rank [0-9]+ on host .* (was killed|hung)|node .* lost)'
TR_RESTART='train-run: .*(restarting|every node restarts)'
TC_DETECT='failed \(exitcode'
MLP_STEP='train-mlp: .*step ([0-9]+)/'
MLP_RESUME='resumed from .*\(step ([0-9]+)'
MLP_ARGS="--layers 256,256,10 --data synthetic --synthetic-samples 16384,256 --epochs ${FT_EPOCHS:-12} --batch 64 --log-every 10 --ckpt-every 500 --seed 7"
WARM=${FT_WARM:-1200}

# crc FILE: the weights_crc32 of a train-mlp --summary file ("-" when there is none).
crc() { sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$1" 2>/dev/null | grep . || echo -; }

# the reference: the same run without a fault
mkdir -p "$WORK/ref"
t0=$(date +%s%N)
# shellcheck disable=SC2086 # the arguments are words on purpose
timeout 300 srun -J ftc-ref -N2 --ntasks-per-node=1 --export=ALL "$TRAIN_RUN" --nproc-per-node 2 -- \
	"$TRAIN_MLP" $MLP_ARGS --ckpt-dir "$WORK/ref/ckpt" --summary "$WORK/ref/summary.json" >"$WORK/ref/log" 2>&1 ||
	{ tail -n 20 "$WORK/ref/log"; echo "ft_cluster.sh: the uninterrupted run failed" >&2; exit 1; }
REF_S=$(( ($(date +%s%N) - t0) / 1000000 ))
REF_CRC=$(crc "$WORK/ref/summary.json")

n=0
# row LAUNCHER FAULT TARGET DETECT_RE RESTART_RE -- CMD... (CKPT, SUMMARY and JOB in CMD become the
# row's checkpoint directory, summary file and job name)
row() {
	launcher=$1 fault=$2 target=$3 detect_re=$4 restart_re=$5
	shift 6
	n=$((n + 1))
	dir=$WORK/row$n
	mkdir -p "$dir"
	for a in "$@"; do
		shift
		case $a in
		CKPT) set -- "$@" "$dir/ckpt" ;;
		SUMMARY) set -- "$@" "$dir/summary.json" ;;
		JOB) set -- "$@" "ftc-row$n" ;;
		*) set -- "$@" "$a" ;;
		esac
	done
	res=$(FT_ROW=row$n FT_TARGET="FT_ROW=row$n,$target" timeout -k 5 $((3 * BOUND + 60)) $PY "$HERE/ft_drive.py" \
		"$dir/log" "$fault" "$WARM" "$BOUND" "$MLP_STEP" "$detect_re" "$restart_re" "$MLP_RESUME" -- "$@") ||
		res="-	-	-	-	driver failed ($?)	-"
	scancel -n "ftc-row$n" 2>/dev/null || true
	sleep 1
	left=$(leftovers)
	named=no
	if [ "$launcher" = train-run ]; then
		# the restart decision (every node's line) names rank 3 on node2, or only node2's own line does
		if grep -q -E 'rank 3 on host node2 .*every node restarts|node node2 lost' "$dir/log"; then
			named=yes
		elif grep -q -E 'host node2: rank 3 (hung|\(local rank)' "$dir/log"; then
			named="node 2's own line only"
		fi
	else
		grep -q -E 'failed \(exitcode.*' "$dir/log" && grep -q -E 'rank: 3|local_rank: 1' "$dir/log" && named="local rank only"
	fi
	verdict=$(grep -o -m1 -E 'train-run: node node2 lost.*resubmit with: sbatch --exclude=node2' "$dir/log" || true)
	c=$(crc "$dir/summary.json")
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$launcher" "$fault$target" "$res" "$named" "$left" "$c" "$verdict" >>"$WORK/rows"
	cp "$dir/log" "${FT_LOGS:-$WORK}/ftc-row$n.log" 2>/dev/null || true
}

TR_CMD="srun -J JOB -N2 --ntasks-per-node=1 --export=ALL $TRAIN_RUN --nproc-per-node 2 --max-restarts 1 --"
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $CPUS CPUs, Linux $(uname -r); embedded cluster, $(sinfo -h -N -o %N 2>/dev/null | sort -u | grep -c .) nodes"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "uninterrupted run: $REF_S ms, weights_crc32 $REF_CRC"
: >"$WORK/rows"
for f in kill stop; do
	# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
	row train-run $f ",RANK=3" "$TR_DETECT" "$TR_RESTART" -- $TR_CMD \
		"$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
done
# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
row train-run kill ",SLURM_NODEID=1,comm=train-run" "$TR_DETECT" "$TR_RESTART" -- $TR_CMD "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
# spare_row: 2 nodes x 2 ranks train as in every row, node 3 stands by (--spares 1, srun --no-kill
# so that the step outlives the lost train-run); node 2's train-run killed -9: node 1 gives node 3
# node rank 1 and both train again. FT_SPARE=1 marks the row's processes (and the table's row).
spare_row() {
	if [ "$(sinfo -h -N -o %N 2>/dev/null | sort -u | grep -c .)" -lt 3 ]; then
		echo "spare row: skipped (the cluster that is up has fewer than 3 nodes)"
		return
	fi
	# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
	row train-run kill ",SLURM_NODEID=1,comm=train-run,FT_SPARE=1" 'train-run: host .*: node .* lost .*spare node' \
		"$TR_RESTART" -- env FT_SPARE=1 srun -J JOB -N3 --ntasks-per-node=1 --no-kill --export=ALL "$TRAIN_RUN" \
		--nproc-per-node 2 --spares 1 --max-restarts 1 -- "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
}
spare_row
if $PY -c 'import torch.distributed.run' 2>/dev/null; then
	for f in kill stop; do
		# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
		row torchrun $f ",RANK=3" "$TC_DETECT" "$TC_DETECT" -- srun -J JOB -N2 --ntasks-per-node=1 \
			--export=ALL $PY "$HERE/torchrun_py311.py" --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d \
			--rdzv_endpoint node1:29411 --rdzv_id "ftc$((n + 1))" --max_restarts 1 --no_python \
			"$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
	done
else
	echo "torchrun rows: skipped ($PY cannot import torch.distributed.run; apt-get install python3-torch)"
fi

echo
echo "| launcher | fault on node 2 | fault -> detection | detection -> training (or verdict) | fault -> training | last step before fault | resumed from | steps lost | culprit named | orphans | weights = uninterrupted | outcome |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
awk -F'\t' -v ref="$REF_CRC" '{
	f = $2 ~ /FT_SPARE/ ? "kill -9 of train-run (node lost, 1 spare)" : $2 ~ /comm=train-run/ ? "kill -9 of train-run (node lost)" : $2 ~ /^kill/ ? "kill -9 of a worker" : "hang (SIGSTOP) of a worker"
	tot = ($3 != "-" && $4 != "-") ? sprintf("%.2f s", $3 + $4) : "-"
	lost = ($5 != "-" && $6 != "-") ? $5 - $6 : "-"
	same = $11 == "-" ? "- (no final weights)" : ($11 == ref ? "yes (" $11 ")" : "no (" $11 ")")
	out = $12 != "" ? "verdict: " $12 : $7
	again = $12 != "" ? "0 s (the detection line is the verdict)" : $4 == "-" ? "-" : $4 " s"
	printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, f,
		$3 == "-" ? "-" : $3 " s", again, tot, $5, $6, lost, $9, $10, same, out
}' "$WORK/rows"
echo
awk -F'\t' -v bound="$BOUND" '
$7 == "recovered" { t[$1 "/" substr($2, 1, 4)] = $3 + $4 }
$7 ~ /^not recovered/ { lost[$1 "/" substr($2, 1, 4)] = 1 }
END {
	for (i = 1; i <= 2; i++) {
		f = (i == 1) ? "kill" : "stop"
		a = "train-run/" f
		b = "torchrun/" f
		if ((a in t) && (b in t) && t[a] > 0)
			printf "%s: torchrun / train-run = %.1fx fault -> training\n", f, t[b] / t[a]
		else if ((a in t) && (b in lost) && t[a] > 0)
			printf "%s: torchrun did not recover in %d s, train-run in %.2f s (> %.0fx)\n", f, bound, t[a], bound / t[a]
		else
			printf "%s: no ratio (not both launchers ran and recovered)\n", f
	}
}' "$WORK/rows"
# The spare's row against a worker killed (train-run, the same run): what the loss and the
# replacement cost beyond a restart.
awk -F'\t' '
$7 == "recovered" && $2 ~ /FT_SPARE/ { spare = $3 + $4 }
$7 == "recovered" && $1 == "train-run" && $2 ~ /^kill,RANK=3/ { worker = $3 + $4 }
END {
	if (spare > 0 && worker > 0)
		printf "node lost, 1 spare: fault -> training %.2f s = %.1fx a worker killed (%.2f s)\n", spare, spare / worker, worker
	else
		print "node lost, 1 spare: no ratio (the spare row or the worker row did not recover)"
}' "$WORK/rows"

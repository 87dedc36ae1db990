#!/bin/sh
# SPDX-License-Identifier: MIT
# ft_cluster.sh — fault recovery across nodes (issue #29) on the embedded test cluster: train-mlp,
# 2 nodes x 2 ranks, checkpoints, one fault on node 2 after warm-up; train-run's control plane
# against torchrun's elastic agents (c10d rendezvous) on the same program in the same run; then
# the same for the PyTorch example (examples/pytorch_ddp.py, gloo), less the lost node.
#   train-run --max-restarts 1: kill -9 of a worker on node 2 (global rank 3); a hung worker
#             there (kill -STOP); kill -9 of node 2's train-run (a lost node: node 1 must stop
#             with the one-line sbatch --exclude verdict);
#   train-run --spares 1 on 3 nodes (node 3 stands by): kill -9 of node 2's train-run, and node
#             2's eth0 taken down inside its network namespace (the node lost to its link): the
#             spare takes node rank 1 and training goes on from the checkpoint (spare_row);
#   torchrun  --max-restarts 1 (Debian's python3-torch through bench/torchrun_py311.py, one agent
#             per node, --rdzv-backend c10d on node1, --no-python train-mlp): kill -9, hang, and
#             (train-mlp) node 2's link down;
#   requeue.sh (train-mlp) a new job, the Slurm way: sbatch-templates/requeue.sh submitted with
#             sbatch --wait, and once more from the same checkpoints when it fails
#             (bench/ft_resubmit.sh): kill -9 of a worker.
# Each row is one bench/ft_drive.py run around `srun -N2` (FT_TARGET picks the process on node 2
# by its environment: the clusters' nodes share this machine's pid namespace); times come from
# the stamped srun output lines (both nodes' launchers and rank 0's step lines). After each row,
# the processes still holding the row's directory in their command line are counted (orphans)
# and killed, and the row's job is cancelled. A recovered row's final weights_crc32 (train-mlp
# --summary; the example's: a CRC-32 of the model tensors in its last checkpoint) is compared
# with an uninterrupted run's of the same arguments: both resume a checkpoint bit-exactly, so
# they must be equal. Then bench/ft_straggle.sh's table: a slow node (cgroup CPU quota) and a
# slow link (tc tbf), how long until train-run names them and how.
# Needs root and the cluster lock; brings a 3-node cluster up (and down again) when none is up
# (a 2-node one runs every row but the spare's).
# Usage: bench/ft_cluster.sh PATH/TO/train-run PATH/TO/train-mlp PLUGIN.so
# (make bench-ft-cluster). FT_BOUND (60 s): how long a row may take to train again after the fault.
# FT_PROGRAMS ("train-mlp pytorch"): whose rows run.
set -eu
BOUND=${FT_BOUND:-60}
if [ -z "${FT_BOUNDED:-}" ]; then
	FT_BOUNDED=1 exec timeout -k 10 $((11 * 3 * BOUND + 600)) sh "$0" "$@"
fi
TRAIN_RUN=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
TRAIN_MLP=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
PLUGIN=$3
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER=$HERE/../tests/cluster/cluster.sh
PY=/usr/bin/python3
EXAMPLE=$HERE/../examples/pytorch_ddp.py
# The nodes have a private /tmp: the work directory lives beside the build.
WORK=$(mktemp -d "$(dirname "$TRAIN_RUN")/bench-ft-cluster.XXXXXX")
started=0
cleanup() {
	ip netns exec tt-node2 ip link set eth0 up 2>/dev/null || true
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
PT_STEP='pytorch_ddp: step ([0-9]+) loss'
PT_RESUME='pytorch_ddp: resumed from .* at step ([0-9]+)'
PT_STEPS=${FT_PT_STEPS:-1500}
PT_ARGS="--samples 4096 --steps $PT_STEPS --batch 64 --log-every 10 --ckpt-every 200"

# weights_mlp DIR: the weights_crc32 of the train-mlp --summary file in DIR ("-" when there is none).
weights_mlp() { sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' "$1/summary.json" 2>/dev/null | grep . || echo -; }
# weights_pt DIR: a CRC-32 of the model tensors in the example's final checkpoint in DIR/ckpt ("-"
# when there is none).
weights_pt() {
	$PY -c '
import sys, zlib, torch
m = torch.load(sys.argv[1], map_location="cpu")["model"]
c = 0
for k in sorted(m):
    c = zlib.crc32(m[k].contiguous().numpy().tobytes(), c)
print(f"{c:08x}")' "$1/ckpt/step-$(printf %08d "$PT_STEPS").pt" 2>/dev/null || echo -
}

# reference DIR CMD...: the program's run without a fault, its files in DIR, into REF_CRC; prints
# its line.
reference() {
	dir=$1
	shift
	mkdir -p "$dir"
	t0=$(date +%s%N)
	timeout 300 srun -J ftc-ref -N2 --ntasks-per-node=1 --export=ALL "$TRAIN_RUN" --nproc-per-node 2 -- \
		"$@" >"$dir/log" 2>&1 ||
		{ tail -n 20 "$dir/log"; echo "ft_cluster.sh: the uninterrupted run of $PROG failed" >&2; exit 1; }
	REF_CRC=$($WEIGHTS "$dir")
	echo "uninterrupted run of $PROG: $(( ($(date +%s%N) - t0) / 1000000 )) ms, weights crc32 $REF_CRC"
}

n=0
# row LAUNCHER FAULT TARGET DETECT_RE RESTART_RE -- CMD... (CKPT, SUMMARY and JOB in CMD become the
# row's checkpoint directory, summary file and job name); the program's STEP_RE, RESUME_RE,
# WARM, WEIGHTS, REF_CRC and PROG come from its *_rows function.
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
		"$dir/log" "$fault" "$WARM" "$BOUND" "$STEP_RE" "$detect_re" "$restart_re" "$RESUME_RE" -- "$@") ||
		res="-	-	-	-	driver failed ($?)	-"
	scancel -n "ftc-row$n" 2>/dev/null || true
	sleep 1
	left=$(leftovers)
	named=no
	if [ "$launcher" = requeue.sh ]; then
		# train-run in the failed job names the culprit on its way out
		grep -q 'rank 3 on host node2 ' "$dir/log" && named=yes
	elif [ "$launcher" = train-run ]; then
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
	# (a recovered row has no verdict: node 2 cut off by its link names itself so, the others go on)
	[ "$(printf '%s\n' "$res" | cut -f5)" != recovered ] || verdict=""
	c=$($WEIGHTS "$dir")
	same="no ($c)"
	[ "$c" != - ] || same="- (no final weights)"
	[ "$c" != "$REF_CRC" ] || same="yes ($c)"
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$launcher" "$fault$target" "$res" "$named" "$left" "$same" "$verdict" \
		"$PROG" >>"$WORK/rows"
	cp "$dir/log" "${FT_LOGS:-$WORK}/ftc-row$n.log" 2>/dev/null || true
}

# requeue.sh runs train-run from PATH on the nodes
PATH=$(dirname "$TRAIN_RUN"):$PATH
export PATH
TR_CMD="srun -J JOB -N2 --ntasks-per-node=1 --export=ALL $TRAIN_RUN --nproc-per-node 2 --max-restarts 1 --"
HAVE_TORCH=0
! $PY -c 'import torch.distributed.run' 2>/dev/null || HAVE_TORCH=1

# torchrun_rows FAULTS PROGRAM-ARGS...: torchrun's rows, one for each of FAULTS (kill stop
# link:tt-node2) (PROGRAM-ARGS start with --no_python for a program that is no Python script).
torchrun_rows() {
	faults=$1
	shift
	if [ $HAVE_TORCH = 0 ]; then
		echo "torchrun rows of $PROG: skipped ($PY cannot import torch.distributed.run; apt-get install python3-torch)"
		return
	fi
	for f in $faults; do
		row torchrun "$f" ",RANK=3" "$TC_DETECT" "$TC_DETECT" -- srun -J JOB -N2 --ntasks-per-node=1 \
			--export=ALL $PY "$HERE/torchrun_py311.py" --nnodes 2 --nproc_per_node 2 --rdzv_backend c10d \
			--rdzv_endpoint node1:29411 --rdzv_id "ftc$((n + 1))" --max_restarts 1 "$@"
	done
}

# spare_row: 2 nodes x 2 ranks train as in every row, node 3 stands by (--spares 1, srun --no-kill
# so that the step outlives the lost train-run); node 2's train-run killed -9, then in a second
# row node 2's eth0 down inside its namespace: node 1 gives node 3 node rank 1 and both train
# again. FT_SPARE=1 marks the row's processes (and the table's row).
spare_row() {
	if [ "$(sinfo -h -N -o %N 2>/dev/null | sort -u | grep -c .)" -lt 3 ]; then
		echo "spare row: skipped (the cluster that is up has fewer than 3 nodes)"
		return
	fi
	# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
	for f in kill link:tt-node2; do
		# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
		row train-run "$f" ",SLURM_NODEID=1,comm=train-run,FT_SPARE=1" 'train-run: host .*: node .* lost .*spare node' \
			"$TR_RESTART" -- env FT_SPARE=1 srun -J JOB -N3 --ntasks-per-node=1 --no-kill --export=ALL "$TRAIN_RUN" \
			--nproc-per-node 2 --spares 1 --max-restarts 1 -- "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
	done
}

# mlp_rows: train-mlp: train-run's kill, hang, lost node, and lost node (killed, link down) with
# a spare; torchrun's kill, hang and link down.
mlp_rows() {
	PROG=train-mlp STEP_RE=$MLP_STEP RESUME_RE=$MLP_RESUME WARM=${FT_WARM:-1200} WEIGHTS=weights_mlp
	# shellcheck disable=SC2086 # word splitting of the arguments is meant
	reference "$WORK/ref-mlp" "$TRAIN_MLP" $MLP_ARGS --ckpt-dir "$WORK/ref-mlp/ckpt" --summary "$WORK/ref-mlp/summary.json"
	for f in kill stop; do
		# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
		row train-run $f ",RANK=3" "$TR_DETECT" "$TR_RESTART" -- $TR_CMD \
			"$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
	done
	# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
	row train-run kill ",SLURM_NODEID=1,comm=train-run" "$TR_DETECT" "$TR_RESTART" -- $TR_CMD "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
	spare_row
	# shellcheck disable=SC2086 # word splitting of the arguments is meant
	row requeue.sh kill ",RANK=3" 'training failed with exit code' 'ft_resubmit: resubmitting' -- \
		sh "$HERE/ft_resubmit.sh" JOB CKPT "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
	# shellcheck disable=SC2086 # word splitting of the arguments is meant
	torchrun_rows "kill stop link:tt-node2" --no_python "$TRAIN_MLP" $MLP_ARGS --ckpt-dir CKPT --summary SUMMARY
}

# pt_rows: the PyTorch example (gloo, checkpoints every 200 steps): train-run's and torchrun's
# kill and hang.
pt_rows() {
	PROG=pytorch_ddp.py STEP_RE=$PT_STEP RESUME_RE=$PT_RESUME WARM=${FT_PT_WARM:-500} WEIGHTS=weights_pt
	if [ $HAVE_TORCH = 0 ]; then
		echo "rows of $PROG: skipped ($PY cannot import torch; apt-get install python3-torch)"
		return
	fi
	# shellcheck disable=SC2086 # word splitting of the arguments is meant
	reference "$WORK/ref-pt" $PY "$EXAMPLE" $PT_ARGS --ckpt-dir "$WORK/ref-pt/ckpt"
	for f in kill stop; do
		# shellcheck disable=SC2086 # word splitting of the command and arguments is meant
		row train-run $f ",RANK=3" "$TR_DETECT" "$TR_RESTART" -- $TR_CMD $PY "$EXAMPLE" $PT_ARGS --ckpt-dir CKPT
	done
	# shellcheck disable=SC2086 # word splitting of the arguments is meant
	torchrun_rows "kill stop" "$EXAMPLE" $PT_ARGS --ckpt-dir CKPT
}

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $CPUS CPUs, Linux $(uname -r); embedded cluster, $(sinfo -h -N -o %N 2>/dev/null | sort -u | grep -c .) nodes"
echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
: >"$WORK/rows"
for p in ${FT_PROGRAMS:-train-mlp pytorch}; do
	case $p in
	train-mlp) mlp_rows ;;
	pytorch) pt_rows ;;
	*) echo "ft_cluster.sh: FT_PROGRAMS: unknown program '$p'; use train-mlp and/or pytorch" >&2; exit 2 ;;
	esac
done

echo
echo "| launcher, program | fault on node 2 | fault -> detection | detection -> training (or verdict) | fault -> training | last step before fault | resumed from | steps lost | culprit named | orphans | weights = uninterrupted | outcome |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
awk -F'\t' '{
	f = $2 ~ /FT_SPARE/ ? "kill -9 of train-run (node lost, 1 spare)" : $2 ~ /comm=train-run/ ? "kill -9 of train-run (node lost)" : $2 ~ /^kill/ ? "kill -9 of a worker" : "hang (SIGSTOP) of a worker"
	if ($2 ~ /^link/)
		f = $2 ~ /FT_SPARE/ ? "link down in its namespace (node lost, 1 spare)" : "link down in its namespace (node lost)"
	tot = ($3 != "-" && $4 != "-") ? sprintf("%.2f s", $3 + $4) : "-"
	lost = ($5 != "-" && $6 != "-") ? $5 - $6 : "-"
	out = $12 != "" ? "verdict: " $12 : $7
	again = $12 != "" ? "0 s (the detection line is the verdict)" : $4 == "-" ? "-" : $4 " s"
	printf "| %s, %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", $1, $13, f,
		$3 == "-" ? "-" : $3 " s", again, tot, $5, $6, lost, $9, $10, $11, out
}' "$WORK/rows"
echo
awk -F'\t' -v bound="$BOUND" '
!($13 in seen) { seen[$13] = 1; progs[np++] = $13 }
$7 == "recovered" && $2 !~ /^kill.*FT_SPARE/ { t[$13 "/" $1 "/" substr($2, 1, 4)] = $3 + $4 }
$7 ~ /^not recovered/ { lost[$13 "/" $1 "/" substr($2, 1, 4)] = 1 }
END {
	for (p = 0; p < np; p++)
		for (i = 1; i <= 3; i++) {
			f = (i == 1) ? "kill" : (i == 2) ? "stop" : "link"
			if (f == "link" && progs[p] != "train-mlp")
				continue
			a = progs[p] "/train-run/" f
			b = progs[p] "/torchrun/" f
			q = progs[p] "/requeue.sh/" f
			if ((a in t) && (q in t) && t[a] > 0)
				printf "%s, %s: requeue.sh (a new job) / train-run = %.1fx fault -> training\n", progs[p], f, t[q] / t[a]
			if ((a in t) && (b in t) && t[a] > 0)
				printf "%s, %s: torchrun / train-run = %.1fx fault -> training\n", progs[p], f, t[b] / t[a]
			else if ((a in t) && (b in lost) && t[a] > 0)
				printf "%s, %s: torchrun did not recover in %d s, train-run in %.2f s (> %.0fx)\n", progs[p], f,
					bound, t[a], bound / t[a]
			else
				printf "%s, %s: no ratio (not both launchers ran and recovered)\n", progs[p], f
		}
}' "$WORK/rows"

# The spare's row against a worker killed (train-run, train-mlp, the same run): what the loss and
# the replacement cost beyond a restart.
awk -F'\t' '
$7 == "recovered" && $2 ~ /^kill.*FT_SPARE/ { spare = $3 + $4 }
$7 == "recovered" && $2 ~ /^link.*FT_SPARE/ { link = $3 + $4 }
$7 == "recovered" && $1 == "train-run" && $13 == "train-mlp" && $2 ~ /^kill,RANK=3/ { worker = $3 + $4 }
END {
	if (spare > 0 && worker > 0)
		printf "node lost, 1 spare: fault -> training %.2f s = %.1fx a worker killed (%.2f s)\n", spare, spare / worker, worker
	else
		print "node lost, 1 spare: no ratio (the spare row or the worker row did not recover)"
	if (link > 0 && worker > 0)
		printf "link down, 1 spare: fault -> training %.2f s = %.1fx a worker killed (%.2f s)\n", link, link / worker, worker
	else
		print "link down, 1 spare: no ratio (the link row or the worker row did not recover)"
}' "$WORK/rows"

# The slow node and slow link rows: a table of their own (what is named, not a recovery).
echo
sh "$HERE/ft_straggle.sh" "$TRAIN_RUN" "$TRAIN_MLP"

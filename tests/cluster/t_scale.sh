# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_scale.sh — the plugin on more nodes (test_n8_*, on the 8-node cluster scripts/test.sh brings
# up): steps of 8 nodes x 8 tasks in one held allocation, as bench/plugin_scale.sh times them on
# 64 and more, every task counted against Slurm's own ids; and that bench itself, one run, small.

# scale_step OUT MODE: one step of 8 x 8 tasks in the allocation $alloc (MODE off: no --train-topo);
# each task prints "HOST PROCID NODEID LOCALID RANK WORLD_SIZE NODE_RANK LOCAL_RANK FILE", with
# FILE "file" when NCCL_TOPO_FILE names a file the task can read, else "-".
scale_step() {
	local opt=()
	[ "$2" = off ] || opt=(--train-topo="$2")
	srun --jobid="$alloc" -N8 --ntasks-per-node=8 "${opt[@]}" bash -c 'f=-
		[ -z "${NCCL_TOPO_FILE:-}" ] || [ ! -r "$NCCL_TOPO_FILE" ] || f=file
		echo "$(hostname) $SLURM_PROCID $SLURM_NODEID $SLURM_LOCALID ${RANK:--} ${WORLD_SIZE:--} ${NODE_RANK:--} ${LOCAL_RANK:--} $f"' >"$1"
}

test_n8_plugin_ranks_every_task_of_64() {
	with_gpu_topology # the test machines have no NVIDIA GPU: the probe reads the 8-GPU fixture
	alloc=$(salloc -N8 --ntasks-per-node=8 --no-shell 2>&1 | sed -n 's/.*Granted job allocation \([0-9]*\).*/\1/p')
	[ -n "$alloc" ] || fail "salloc -N8 gave no allocation"
	trap 'scancel "$alloc"' EXIT
	local mode
	for mode in off env full; do
		scale_step $mode.txt $mode
		expect_eq "$mode: tasks" 64 "$(wc -l <$mode.txt)"
		expect_eq "$mode: 8 tasks on each of 8 nodes" "8 8" "$(awk '{print $1}' $mode.txt | sort | uniq -c | awk '{print $1}' | uniq -c | awk '{print $1, $2}')"
	done
	expect_eq "off: no rank env" "- - - -" "$(awk '{print $5, $6, $7, $8}' off.txt | sort -u)"
	expect_eq "off: no topology file" "-" "$(awk '{print $9}' off.txt | sort -u)"
	for mode in env full; do
		# Each rank 0..63 exactly once; the node blocks are Slurm's node and local ids.
		expect_eq "$mode: ranks once each" "$(seq 0 63 | xargs)" "$(awk '{print $5}' $mode.txt | sort -n | uniq -c | awk '$1 == 1 {print $2}' | xargs)"
		expect_eq "$mode: WORLD_SIZE" 64 "$(awk '{print $6}' $mode.txt | sort -u)"
		expect_eq "$mode: RANK = SLURM_NODEID * 8 + SLURM_LOCALID, NODE_RANK, LOCAL_RANK from Slurm's" 64 \
			"$(awk '$5 == $3 * 8 + $4 && $7 == $3 && $8 == $4' $mode.txt | wc -l)"
	done
	expect_eq "env: no topology file" "-" "$(awk '{print $9}' env.txt | sort -u)"
	expect_eq "full: a readable topology file in every task" "64 file" "$(awk '{print $9}' full.txt | sort | uniq -c | awk '{print $1, $2}')"
}

# The bench's own steps, once, on 2 and 8 nodes of the running cluster's plugin: it must finish and
# print its table (its times are not checked: they belong in BENCHMARKS.md).
test_n8_bench_plugin_scale_runs() {
	with_gpu_topology # the bench uses the running cluster's plugin as it is, fixture included
	"$TT_SRCDIR/bench/plugin_scale.sh" - 1 "2 8" >bench.txt 2>&1 || { cat bench.txt; fail "bench/plugin_scale.sh failed"; }
	cat bench.txt
	expect_match "correctness line" "checked: srun -N8 --ntasks-per-node=8 --train-topo=full: ranks 0\.\.63 once each" "$(cat bench.txt)"
	expect_eq "table rows for 2 and 8 nodes" "2 16
8 64" "$(awk -F' *[|] *' '$2 ~ /^[0-9]+$/ {print $2, $3}' bench.txt)"
	expect_match "probe cost line" "wall median [0-9.]+ ms .* CPU [0-9.]+ ms per probe" "$(cat bench.txt)"
}

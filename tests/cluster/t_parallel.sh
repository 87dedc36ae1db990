# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_parallel.sh — groups, point-to-point and 3D parallelism across the test cluster's 2 nodes
# (4 ranks each, the plugin's env contract): the equivalence table (every DPxTPxPP factorization of
# 8 ranks trains like one rank, with and without --recompute), each group on its best path (TP and
# DP inside a node over shared memory, the pipeline across nodes), point-to-point exchanges between
# nodes, a checkpoint resumed under another layout, bad layouts refused before the rendezvous, and
# Fashion-MNIST above 88% with TP=2 PP=2. Tolerance as in tests/trainer/parallel.sh: per step
# |loss - one rank| <= 1e-4 * max(1, |loss|) (float32 sums in another order); stages alone are exact.

# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
par_args=(--layers 16,32x6,8 --data synthetic --synthetic-samples 512,64 --batch 32 --max-steps 8 --lr 0.01
	--seed 5 --log-every 1 --accum 2)

# par_run NAME ARGS...: train-mlp on 2 nodes x 4 ranks; summary NAME.json, rank 0's log NAME.log.
par_run() {
	local name=$1
	shift
	srun -N2 --ntasks-per-node=4 --train-topo=env train-mlp "${par_args[@]}" --summary "$name.json" "$@" \
		>"$name.log" 2>&1 || { tail -n 20 "$name.log"; fail "$name ($*) failed"; }
}

par_losses() { sed -n 's/.*"step": \([0-9]*\), "loss": \([^,]*\),.*/\1 \2/p' "$1"; }
par_crc() { sed -n 's/.*"weights_crc32": "\(.*\)".*/\1/p' "$1"; }

# par_compare NAME REF: NAME's logged steps against REF's, within the tolerance; prints one table row.
par_compare() {
	par_losses "$2.json" >ref.txt
	par_losses "$1.json" >got.txt
	[ -s got.txt ] || fail "$1 logged no loss"
	join ref.txt got.txt >both.txt
	expect_eq "$1: steps also in $2" "$(wc -l <got.txt)" "$(wc -l <both.txt)"
	awk -v name="$1" '
		{ d = $2 - $3; if (d < 0) d = -d; m = $2 < 0 ? -$2 : $2; if (m < 1) m = 1;
		  r = d / m; if (r > worst) worst = r; if (d > 1e-4 * m) { bad = 1; print "FAIL: " name " step " $1 ": " $3 " vs " $2 } }
		END { printf "%-22s %d steps, max relative loss difference %.2e\n", name, NR, worst; exit bad }' both.txt ||
		fail "$1 strays from $2"
}

par_reference() {
	srun -N1 -n1 train-mlp "${par_args[@]}" --summary ref.json >ref.log 2>&1 || { cat ref.log; fail "1-rank run"; }
}

par_table() { # extra-args...
	par_reference
	for lay in 8x1x1 4x2x1 4x1x2 2x2x2 1x2x4 2x4x1 1x8x1 1x1x8; do
		par_run "$lay" --tp "$(echo "$lay" | cut -dx -f2)" --pp "$(echo "$lay" | cut -dx -f3)" "$@"
		par_compare "$lay" ref
	done
	expect_eq "1x1x8 (stages alone) equals one rank bit for bit" "$(par_crc ref.json)" "$(par_crc 1x1x8.json)"
}

test_parallel_equivalence_table_2_nodes() {
	par_table
}

test_parallel_equivalence_table_recompute_2_nodes() {
	par_table --recompute
}

# TP and DP groups of 2x2x2 lie inside a node (shared memory, though the world is hierarchical);
# each pipeline group has one rank per node.
test_parallel_groups_take_the_best_path() {
	par_run groups --tp 2 --pp 2
	expect_match "world over both nodes" "8 rank\\(s\\) \\(hier\\), layout 2x2x2" "$(cat groups.log)"
	expect_match "group paths" "groups: data-parallel shm, tensor-parallel shm, pipeline hier" "$(cat groups.log)"
}

test_parallel_sendrecv_between_nodes() {
	srun -N2 --ntasks-per-node=2 --train-topo=env trainrt-bench -o sendrecv -b 4 -e 4M -f 16 -n 3 -w 1 >out.txt
	bench_ok out.txt
	expect_match "pairs across nodes" "sendrecv, 4 ranks \\(2 per node\\), backend hier" "$(cat out.txt)"
}

# Written under 2x2x2 at steps 4 and 8; step 8 removed; resumed under 4x1x2 (resharded).
test_parallel_resume_resharded_2_nodes() {
	par_run full --tp 2 --pp 2 --ckpt-dir "$PWD/ck" --ckpt-every 4
	rm -rf ck/step-00000008
	par_run resumed --pp 2 --ckpt-dir "$PWD/ck"
	expect_match "resharding note" "written under layout 2x2x2 \\(DPxTPxPP, 8 ranks\\), resuming under 4x1x2 \\(8 ranks\\): resharded" \
		"$(cat resumed.log)"
	par_compare resumed full
}

test_parallel_bad_layout_refused_before_rendezvous() {
	local rc=0
	srun -N2 --ntasks-per-node=4 --train-topo=env train-mlp "${par_args[@]}" --tp 3 >out.txt 2>err.txt || rc=$?
	[ "$rc" -ne 0 ] || fail "a layout of TP 3 on 8 ranks ran"
	expect_eq "ranks refusing with the numbers" 8 \
		"$(grep -c -- "--tp 3 x --pp 1 = 3 ranks per data-parallel replica does not divide the world of 8 ranks" err.txt)"
	if grep -q "trainrt:" err.txt; then fail "a rank reached the rendezvous: $(grep trainrt: err.txt | head -n 2)"; fi
}

test_parallel_fashion_mnist_tp2_pp2() {
	local data=/usr/share/datasets/fashion-mnist acc
	[ -d "$data" ] || skip "$data missing (apt-get install dataset-fashion-mnist)"
	# 1x2x2 on 2 nodes of 2: each stage's TP pair inside a node, the two stages on different nodes.
	srun -N2 --ntasks-per-node=2 --train-topo=env train-mlp --layers 784,256,256,256,10 --data "$data" --epochs 6 \
		--batch 128 --accum 4 --lr 0.002 --warmup 100 --weight-decay 0.01 --seed 1 --log-every 100000 --tp 2 --pp 2 \
		--summary fm.json >fm.log 2>&1 || { tail -n 20 fm.log; fail "Fashion-MNIST run"; }
	acc=$(sed -n 's/.*"test_accuracy": \([0-9.]*\).*/\1/p' fm.json)
	echo "Fashion-MNIST 784-256-256-256-10, layout 1x2x2 on 2 nodes, 6 epochs: test accuracy $acc"
	awk -v a="$acc" 'BEGIN { exit !(a >= 0.88) }' || fail "test accuracy $acc below 0.88"
}

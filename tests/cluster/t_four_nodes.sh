# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_four_nodes.sh — tests that need a 4-node cluster (test_n4_*): run-tests.sh skips them on a
# smaller one; scripts/test.sh brings the cluster up again with 4 nodes to run them.

test_n4_trainrt_matrix_pmix() {
	srun --mpi=pmix -N4 --ntasks-per-node=2 "$TT_BUILDDIR/tests/comm/comm_check" >out.txt
	matrix_ok out.txt 8 hier
}

test_n4_trainrt_matrix_plugin_env() {
	srun -N4 --ntasks-per-node=2 --train-topo=env "$TT_BUILDDIR/tests/comm/comm_check" >out.txt
	matrix_ok out.txt 8 hier
}

test_n4_trainrt_matrix_tcp_ring() {
	TRAINRT_BACKEND=tcp srun -N4 --ntasks-per-node=1 --train-topo=env "$TT_BUILDDIR/tests/comm/comm_check" >out.txt
	matrix_ok out.txt 4 tcp
}

# The plugin's contract on 4 nodes: node ranks 0..3, one MASTER_ADDR, ranks in node blocks.
test_n4_plugin_env_contract() {
	srun -N4 --ntasks-per-node=2 --train-topo=env bash -c 'echo "$(hostname) $RANK $WORLD_SIZE $NODE_RANK $NNODES $LOCAL_RANK $MASTER_ADDR"' >out.txt
	cat out.txt
	expect_eq "ranks" "$(seq 0 7 | xargs)" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "world size and node count" "8 4" "$(awk '{print $3, $5}' out.txt | sort -u)"
	expect_eq "MASTER_ADDR" node1 "$(awk '{print $7}' out.txt | sort -u)"
	expect_eq "node blocks" 8 "$(awk '$2 == $4 * 2 + $6' out.txt | wc -l)"
}

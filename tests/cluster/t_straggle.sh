# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_straggle.sh — a slow node named by train-run (issue #29), 2 nodes x 2 ranks of train-mlp:
#  - node2's workers under a cgroup v1 CPU quota (cpu.cfs_quota_us inside node2's own subtree of
#    the cpu hierarchy, tests/cluster/cluster.sh): in a data-parallel job every rank's step takes
#    as long as the slowest's, so only the busy times on the heartbeats (the step without the
#    waits in collectives) can tell; node 0's final summary names node 2 and its ranks 2 and 3
#    exactly once each and nobody else, and --report's JSON holds the same;
#  - node4's link shaped (tc tbf on its eth0, 64 Mbit/s out: netem is not available here), 4
#    nodes: preflight's TCP probe names node 4 with its bandwidth and the sbatch --exclude on
#    every node before any worker starts (and unshaped, the same launch passes). The nodes share
#    one kernel, so their memory numbers and round trips are not judged; their links'
#    bandwidths are, against 0.5 / 4 nodes on the machine (wrapper/preflight.h).
# No timing asserts; every wait is bounded.

# node2's workers: 15% of one CPU for both ranks (bin/cpu-quota.sh).
SLOW_NODE=$TT_SRCDIR/tests/cluster/bin/cpu-quota.sh

test_straggle_slow_node_named_by_busy_time() {
	# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
	local args=(--layers 784,1024,1024,10 --data synthetic --synthetic-samples 10240,256 --batch 256 --epochs 1
		--seed 5 --log-every 1000)
	local rc=0
	timeout 300 srun -N2 --ntasks-per-node=1 --export=ALL train-run --nproc-per-node 2 --report "$PWD/report.json" \
		-- "$SLOW_NODE" node2 15000 train-mlp "${args[@]}" >out.txt 2>err.txt || rc=$?
	srun -N1 -w node2 rmdir /sys/fs/cgroup/cpu/tt-slow || true
	cat err.txt
	expect_eq "the step's exit" 0 "$rc"
	expect_eq "the summary judges busy times" 1 "$(grep -c '^train-run: job: busy times of 4 ranks on 2 nodes: ' err.txt)"
	expect_eq "node 2 named" 1 "$(grep -c '^train-run: job: straggler node 1 (host node2): median busy p50 ' err.txt)"
	expect_eq "rank 2 named" 1 "$(grep -c '^train-run: job: straggler: rank 2 on host node2 (node 1) busy p50 ' err.txt)"
	expect_eq "rank 3 named" 1 "$(grep -c '^train-run: job: straggler: rank 3 on host node2 (node 1) busy p50 ' err.txt)"
	expect_eq "straggler lines" 3 "$(grep -c '^train-run: job: straggler' err.txt)"
	python3 - report.json <<'EOF' || fail "report.json: $(cat report.json 2>&1)"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["judged"] == "busy", r
assert r["stragglers"] == {"ranks": [2, 3], "nodes": [1]}, r["stragglers"]
assert sorted((x["rank"], x["host"]) for x in r["ranks"]) == [(0, "node1"), (1, "node1"), (2, "node2"), (3, "node2")], r
assert all(x["busy_samples"] > 0 for x in r["ranks"]), r
EOF
}

test_n4_straggle_slow_link_named_by_preflight() {
	local rc=0
	# Unshaped first: the same four links pass (no false positive on a shared, busy machine).
	timeout 60 srun -N4 --ntasks-per-node=1 train-run -- bash -c 'echo started' >out.txt 2>err.txt || rc=$?
	cat err.txt
	expect_eq "unshaped: the step's exit" 0 "$rc"
	expect_eq "unshaped: workers started" 4 "$(grep -c started out.txt)"
	ip netns exec tt-node4 tc qdisc add dev eth0 root tbf rate 64mbit burst 32kb latency 50ms
	timeout 60 srun -N4 --ntasks-per-node=1 train-run -- bash -c 'echo started' >out.txt 2>err.txt || rc=$?
	ip netns exec tt-node4 tc qdisc del dev eth0 root
	cat err.txt
	[ "$rc" -ne 0 ] || fail "the step with a slow link passed preflight"
	expect_eq "workers started" 0 "$(grep -c started out.txt)"
	expect_eq "the line, once on each node" 4 "$(grep -c -E '^train-run: node 3 \(node4\) failed preflight: network bandwidth to node 0 [0-9.]+ GB/s < 0.125 x median [0-9.]+ GB/s; resubmit with sbatch --exclude=node4$' err.txt)"
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_ft.sh — train-run's control plane on the test cluster (wrapper/ctl.c), 2 nodes x 2 workers of
# a program whose ranks never talk to each other (a shell loop writing heartbeats): a fault on
# node2 must reach node1 through the train-runs, since no collective carries it.
#  - kill -9 of a worker on node2: both nodes restart in the same round (each worker logs its
#    round: every rank starts twice, rounds 0 and 1) and both name the culprit;
#  - kill -9 of node2's train-run: node1 stops within the loss bound with the line naming node2
#    and the sbatch --exclude to resubmit with, notes node2 in TRAIN_TOPO_EXCLUDE_FILE, and no
#    worker is left on either node.
#  - (4-node cluster) 3 nodes with --spares 1, train-mlp on node1 and node2 (node3 stands by): node2's train-run
#    killed -9 after the first checkpoint: node3 takes node rank 1, train-mlp resumes from its
#    checkpoint and trains to its last step at the same world size; the replacement is named on
#    every surviving node, node2 noted for exclusion, no worker left.
#  - (4-node cluster) 3 nodes with --nnodes 2:3, train-mlp on each: node2's train-run killed -9
#    after the first checkpoint: node1 and node3 restart as node ranks 0 and 1 of a world of 2,
#    train-mlp resumes resharded and trains to its last step; one line on each, node2 excluded.
# No timing asserts; every wait is bounded.

# The worker: "RANK ROUND HOST" per start into starts.txt; train-run's pid into trpid.RANK; rank
# 3 (node2's second) kills itself in round 0 when FT_KILL_SELF is set; heartbeats, FT_SECS s.
FT_WORKER='echo "$RANK $TRAIN_RESTART_COUNT $(hostname)" >>starts.txt; echo $PPID >trpid.$RANK
i=0
while [ $i -lt $((FT_SECS * 10)) ]; do
	i=$((i + 1)); echo "step $i" >>/proc/self/fd/$TRAIN_HEARTBEAT_FD
	if [ -n "${FT_KILL_SELF:-}" ] && [ "$RANK" = 3 ] && [ "$TRAIN_RESTART_COUNT" = 0 ] && [ $i = 10 ]; then kill -9 $$; fi
	sleep 0.1
done'

test_ft_worker_killed_restarts_every_node() {
	local rc=0
	rm -f starts.txt
	FT_SECS=4 FT_KILL_SELF=1 timeout 90 srun -N2 --ntasks-per-node=1 --export=ALL train-run --nproc-per-node 2 \
		--max-restarts 2 -- bash -c "$FT_WORKER" >out.txt 2>err.txt || rc=$?
	cat err.txt
	expect_eq "the step's exit" 0 "$rc"
	expect_eq "starts (rank round)" "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" "$(cut -d' ' -f1,2 starts.txt | sort | tr '\n' ';')"
	expect_eq "node1's workers restarted" 4 "$(grep -c ' node1$' starts.txt)"
	expect_eq "the culprit named on both nodes" 2 \
		"$(grep -c 'rank 3 on host node2 was killed by SIGKILL (status 137): every node restarts its workers (restart 1 of 2' err.txt)"
}

test_ft_node_lost_names_it_for_exclusion() {
	local rc=0 spid victim deadline left
	rm -f starts.txt trpid.* exclude.txt
	FT_SECS=60 TRAIN_TOPO_EXCLUDE_FILE=$PWD/exclude.txt timeout 90 srun -N2 --ntasks-per-node=1 --export=ALL \
		train-run --nproc-per-node 2 --max-restarts 2 -- bash -c "$FT_WORKER" >out.txt 2>err.txt &
	spid=$!
	deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ] && { [ ! -s trpid.2 ] || [ "$(wc -l <starts.txt)" -lt 4 ]; }; do
		sleep 0.1
	done
	victim=$(cat trpid.2 2>/dev/null)
	[ -n "$victim" ] || { kill "$spid"; fail "node2's workers never started"; }
	kill -9 "$victim"
	wait "$spid" || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "the step succeeded although node2's train-run was killed"
	expect_eq "node1's verdict" 1 "$(grep -c -E '^train-run: node node2 lost \(.*\); resubmit with: sbatch --exclude=node2 \.\.\.; stopping 2 workers here' err.txt)"
	expect_eq "the exclude file" node2 "$(cat exclude.txt)"
	expect_eq "no restart" "0 0;1 0;2 0;3 0;" "$(cut -d' ' -f1,2 starts.txt | sort | tr '\n' ';')"
	sleep 1
	left=$(pgrep -f 'TRAIN_HEARTBEAT_FD' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

# train-mlp on 3 nodes x 1 worker under train-run with options "$@" (srun --no-kill: the step
# outlives a killed train-run, as the sbatch-templates run it): node2's train-run (node rank 1)
# killed -9 after the first checkpoint; its lines in err.txt, each start "RANK ROUND NODE_RANK
# WORLD_SIZE HOST" in starts.txt, train-mlp's summary in summary.json. --batch 60: split by 3
# data-parallel replicas and by 2.
mlp_lose_node2() {
	local spid victim deadline
	# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
	local args=(--layers 784,1024,1024,10 --data synthetic --synthetic-samples 4096,256 --batch 60 --epochs 100
		--seed 3 --log-every 1000 --ckpt-every 5 --keep 2 --max-steps 200 --ckpt-dir ckpt --summary summary.json)
	rm -rf starts.txt trpid.* exclude.txt ckpt summary.json
	TRAIN_TOPO_EXCLUDE_FILE=$PWD/exclude.txt timeout 150 srun -N3 --ntasks-per-node=1 --no-kill --export=ALL \
		train-run --nproc-per-node 1 "$@" -- bash -c \
		'echo "$RANK $TRAIN_RESTART_COUNT $NODE_RANK $WORLD_SIZE $(hostname)" >>starts.txt
		echo $PPID >trpid.$NODE_RANK.$TRAIN_RESTART_COUNT; exec train-mlp "$@"' _ "${args[@]}" >out.txt 2>err.txt &
	spid=$!
	deadline=$((SECONDS + 90))
	while [ $SECONDS -lt $deadline ] && kill -0 "$spid" 2>/dev/null &&
		{ [ ! -s trpid.1.0 ] || ! compgen -G "ckpt/step-*/meta.txt" >/dev/null; }; do
		sleep 0.1
	done
	victim=$(cat trpid.1.0 2>/dev/null)
	[ -n "$victim" ] || { kill "$spid"; cat err.txt; fail "node2's worker never started"; }
	kill -9 "$victim"
	wait "$spid" || true
	cat err.txt
}

test_n4_ft_spare_takes_lost_node() {
	local left
	mlp_lose_node2 --spares 1
	expect_eq "the replacement, named on node1 and node3" 2 \
		"$(grep -c -E '^train-run: host [^ ]*: node node2 lost \(.*\); spare node 2 \(node3\) takes its node rank 1: every node restarts its workers' err.txt)"
	expect_eq "round 0 (rank round node-rank world host)" "0 0 0 2 node1;1 0 1 2 node2;" \
		"$(awk '$2 == 0' starts.txt | sort | tr '\n' ';')"
	expect_eq "node rank 1 after the loss" "1 1 2 node3" "$(awk '$2 > 0 && $1 == 1 { print $1, $3, $4, $5 }' starts.txt)"
	expect_eq "resumed from a checkpoint" 1 "$(grep -c 'train-mlp: \[rank 0\] resumed from ckpt/step-' err.txt)"
	expect_eq "trained to the last step at world size 2" "200 2" \
		"$(python3 -c 'import json; s = json.load(open("summary.json")); print(s["steps"], s["world_size"])')"
	expect_eq "the exclude files" node2 "$(sort -u exclude.txt)"
	sleep 1
	left=$(pgrep -f 'train-mlp --layers' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

test_n4_ft_shrink_to_fewer_nodes() {
	local left
	mlp_lose_node2 --nnodes 2:3
	expect_eq "the shrink, named on node1 and node3" 2 \
		"$(grep -c -E '^train-run: host [^ ]*: node node2 lost \(.*\); no spare: every node restarts its workers on 2 nodes \(round 1; world 2; ' err.txt)"
	expect_eq "round 0 (rank round node-rank world host)" "0 0 0 3 node1;1 0 1 3 node2;2 0 2 3 node3;" \
		"$(awk '$2 == 0' starts.txt | sort | tr '\n' ';')"
	expect_eq "round 1 on two nodes" "0 1 0 2 node1;1 1 1 2 node3;" "$(awk '$2 == 1' starts.txt | sort | tr '\n' ';')"
	expect_eq "resumed from a checkpoint, resharded" "1 1" \
		"$(grep -c 'train-mlp: \[rank 0\] resumed from ckpt/step-' err.txt) $(grep -c 'resharded' err.txt)"
	expect_eq "trained to the last step at world size 2" "200 2" \
		"$(python3 -c 'import json; s = json.load(open("summary.json")); print(s["steps"], s["world_size"])')"
	expect_eq "the exclude files" node2 "$(sort -u exclude.txt)"
	sleep 1
	left=$(pgrep -f 'train-mlp --layers' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

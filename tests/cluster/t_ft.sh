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
#  - (4-node cluster) 3 nodes with --spares 1, node2 failing the start preflight: node3 runs node
#    rank 1 from round 0, node2 none; the replacement named on every node, the step ends 0.
#  - (4-node cluster) 4 nodes with --spares 2, node2 and the first spare node3 failing the start
#    preflight: node3 is set aside (no verdict), node4 runs node rank 1 from round 0; both lines
#    on every node, both hosts noted for exclusion, the step ends 0.
#  - (4-node cluster) node2's link down inside its namespace (with a spare, then without):
#    node2 falls silent, node1 names it lost (spare or verdict), node2 names itself (its own
#    link is down), training completes with the spare, nothing left.
#  - (3-node cluster) node2's link shaped (tc tbf 64mbit) after the start, then a worker of node2
#    killed: before round 1 node2's probe to node 0 measures the slow link and every node stops
#    with the verdict naming node2, once each, no round 1 started.
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

# spare_took_node2: after node2 was lost on 3 nodes with --spares 1 (starts.txt: "RANK ROUND
# NODE_RANK WORLD_SIZE HOST" per start): node3 took node rank 1, train-mlp resumed and trained to
# its last step at world size 2, node2 noted for exclusion.
spare_took_node2() {
	expect_eq "round 0 (rank round node-rank world host)" "0 0 0 2 node1;1 0 1 2 node2;" \
		"$(awk '$2 == 0' starts.txt | sort | tr '\n' ';')"
	expect_eq "node rank 1 after the loss" "1 1 2 node3" "$(awk '$2 > 0 && $1 == 1 { print $1, $3, $4, $5 }' starts.txt)"
	expect_eq "resumed from a checkpoint" 1 "$(grep -c 'train-mlp: \[rank 0\] resumed from ckpt/step-' err.txt)"
	expect_eq "trained to the last step at world size 2" "200 2" \
		"$(python3 -c 'import json; s = json.load(open("summary.json")); print(s["steps"], s["world_size"])')"
	expect_eq "the exclude files" node2 "$(sort -u exclude.txt)"
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
	spare_took_node2
	sleep 1
	left=$(pgrep -f 'train-mlp --layers' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

# 3 nodes with --spares 1 (node3 stands by), node2 failing the start preflight: its GPU device
# files are the cluster's GRES files, which do not open (ENXIO: no NVIDIA driver), the others'
# plain files (as in t_launcher.sh). The census gives node3 node rank 1 before any worker starts:
# round 0 runs on node1 and node3, node2 starts none and says it is excluded, every node names
# node2, its device and node3 in one line and notes node2 for exclusion, the step ends 0.
# preflight_start_run N SPARES BAD: train-run --spares SPARES on N nodes, one worker each that
# logs "RANK ROUND NODE_RANK WORLD_SIZE HOST" into starts.txt and sleeps 2 s; the nodes whose
# SLURM_NODEID is in BAD (a list) fail the start preflight (dev-gres). Stderr in err.txt (and
# shown), the hosts noted in exclude.txt; the step's exit status.
preflight_start_run() {
	local rc=0
	rm -f starts.txt exclude.txt
	preflight_dev_dirs
	# shellcheck disable=SC2016 # expanded by the task's shell on each node
	TRAIN_TOPO_EXCLUDE_FILE=$PWD/exclude.txt TT_BAD=" $3 " TT_SPARES=$2 timeout 90 \
		srun -N"$1" --ntasks-per-node=1 --gres=gpu:8 --export=ALL bash -c '
		dir=$PWD/dev-ok
		case $TT_BAD in *" $SLURM_NODEID "*) dir=$PWD/dev-gres ;; esac
		TRAINRT_PREFLIGHT_TEST_DEV_DIR=$dir exec train-run --nproc-per-node 1 --spares "$TT_SPARES" -- bash -c \
			"echo \"\$RANK \$TRAIN_RESTART_COUNT \$NODE_RANK \$WORLD_SIZE \$(hostname)\" >>starts.txt; sleep 2"' \
		>out.txt 2>err.txt || rc=$?
	cat err.txt
	return $rc
}

test_n4_ft_spare_replaces_node_failing_preflight() {
	local rc=0 left
	preflight_start_run 3 1 1 || rc=$?
	expect_eq "the step's exit" 0 "$rc"
	expect_eq "starts (rank round node-rank world host)" "0 0 0 2 node1;1 0 1 2 node3;" \
		"$(sort starts.txt | tr '\n' ';')"
	expect_eq "the replacement, once on each node" 3 \
		"$(grep -c -E "^train-run: host [^ ]*: node 1 \(node2\) failed preflight: GPU device $PWD/dev-gres/nvidia[0-7] does not open \(No such device or address\); spare node 2 \(node3\) takes its node rank 1$" err.txt)"
	expect_eq "node2 excluded, once" 1 "$(grep -c -E '^train-run: host [^ ]*: node 1 is excluded \(it failed preflight\): it starts no workers' err.txt)"
	expect_eq "the exclude files" node2 "$(sort -u exclude.txt)"
	expect_eq "the exclude lines, one per node" 3 "$(wc -l <exclude.txt)"
	sleep 1
	left=$(pgrep -f 'starts.txt; sleep 2' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

# 4 nodes, --spares 2: node2 (node 1) and the first spare node3 (node 2) fail the start preflight:
# the failing spare is set aside (no verdict), the other spare node4 takes node rank 1; one line
# of each on every node, both hosts in every node's exclude lines, the step ends 0.
test_n4_ft_failing_spare_set_aside() {
	local rc=0 left
	preflight_start_run 4 2 "1 2" || rc=$?
	expect_eq "the step's exit" 0 "$rc"
	expect_eq "starts (rank round node-rank world host)" "0 0 0 2 node1;1 0 1 2 node4;" \
		"$(sort starts.txt | tr '\n' ';')"
	expect_eq "the spare set aside, once on each node" 4 \
		"$(grep -c -E "^train-run: host [^ ]*: spare node 2 \(node3\) failed preflight: GPU device $PWD/dev-gres/nvidia[0-7] does not open \(No such device or address\); the job goes on with 1 spare fewer$" err.txt)"
	expect_eq "the replacement, once on each node" 4 \
		"$(grep -c -E "^train-run: host [^ ]*: node 1 \(node2\) failed preflight: GPU device $PWD/dev-gres/nvidia[0-7] does not open \(No such device or address\); spare node 3 \(node4\) takes its node rank 1$" err.txt)"
	expect_eq "node2 and node3 excluded, once each" 2 "$(grep -c -E '^train-run: host [^ ]*: node [12] is excluded \(it failed preflight\): it starts no workers' err.txt)"
	expect_eq "no verdict" 0 "$(grep -c 'resubmit with' err.txt)"
	expect_eq "the exclude files" "node2;node3;" "$(sort -u exclude.txt | tr '\n' ';')"
	expect_eq "the exclude lines, two per node" 8 "$(wc -l <exclude.txt)"
	sleep 1
	left=$(pgrep -f 'starts.txt; sleep 2' | wc -l)
	expect_eq "workers left behind" 0 "$left"
}

# node_procs: "PID COMM" of every train-run and train-mlp in the cluster's node namespaces.
node_procs() {
	local ns pid
	for ns in $(ip netns list | awk '/^tt-node[0-9]+/ { print $1 }'); do
		for pid in $(ip netns pids "$ns"); do
			case $(cat "/proc/$pid/comm" 2>/dev/null) in
			train-run | train-mlp) echo "$pid $(cat "/proc/$pid/comm") in $ns" ;;
			esac
		done
	done
}

# link_down_run SPARES N: train-mlp under train-run on N nodes (--spares SPARES, srun --no-kill)
# with node2's eth0 taken down inside its namespace once the first checkpoint exists; the link
# comes up again once training is over on the other nodes (summary.json), a verdict stopped them,
# or 90 s after, so that
# node2's slurmstepd can report its task's end (and its stderr) to srun. The output in err.txt.
link_down_run() {
	local spares=$1 nodes=$2 spid deadline
	# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
	local args=(--layers 784,1024,1024,10 --data synthetic --synthetic-samples 4096,256 --batch 64 --epochs 100
		--seed 3 --log-every 1000 --ckpt-every 5 --keep 2 --max-steps 200 --ckpt-dir ckpt --summary summary.json)
	rm -rf starts.txt exclude.txt ckpt summary.json
	# shellcheck disable=SC2016 # expanded by the worker's bash
	TRAIN_TOPO_EXCLUDE_FILE=$PWD/exclude.txt timeout 170 srun -N"$nodes" --ntasks-per-node=1 --no-kill --export=ALL \
		train-run --nproc-per-node 1 --spares "$spares" -- bash -c \
		'echo "$RANK $TRAIN_RESTART_COUNT $NODE_RANK $WORLD_SIZE $(hostname)" >>starts.txt
		exec train-mlp "$@"' _ "${args[@]}" >out.txt 2>err.txt &
	spid=$!
	deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ] && { [ ! -s starts.txt ] || [ "$(wc -l <starts.txt)" -lt 2 ] ||
		! compgen -G "ckpt/step-*/meta.txt" >/dev/null; }; do
		sleep 0.1
	done
	compgen -G "ckpt/step-*/meta.txt" >/dev/null || { kill "$spid"; fail "no checkpoint within 60 s"; }
	ip netns exec tt-node2 ip link set eth0 down
	echo "node2's eth0 down at $(date +%T.%N)"
	deadline=$((SECONDS + 90))
	while [ $SECONDS -lt $deadline ] && [ ! -s summary.json ] && ! grep -q 'resubmit with' err.txt &&
		kill -0 "$spid" 2>/dev/null; do
		sleep 0.2
	done
	ip netns exec tt-node2 ip link set eth0 up
	echo "node2's eth0 up at $(date +%T.%N)"
	timeout 30 tail --pid="$spid" -f /dev/null || kill "$spid"
	wait "$spid" || true
	cat err.txt
}

# node2's link goes down inside its namespace while train-mlp trains on node1 and node2 (node3
# a spare): node2's train-run falls silent on the control plane, node1 (node 0) judges it lost
# and node3 takes its node rank; the line is printed once on each surviving node, training ends
# at its last step at the same world size, node2 is noted for exclusion and nothing is left on
# any node. node2 itself finds its own link down and names itself, not node 0 (it used to name
# node1 and note it for exclusion). Then without a spare on 2 nodes: both nodes' verdicts name
# node2 with the sbatch --exclude. The link is brought up again on every way out (trap).
# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_n4_ft_link_down_node_lost=400
test_n4_ft_link_down_node_lost() {
	local left
	trap 'ip netns exec tt-node2 ip link set eth0 up' EXIT
	link_down_run 1 3
	local own='train-run: node node2 lost \(its own link eth0 is down; node 0 \(node1\) silent for [0-9.]+ s\); resubmit with: sbatch --exclude=node2 \.\.\.; stopping 1 worker here$'
	local line='node node2 lost \(silent for [0-9.]+ s\); spare node 2 \(node3\) takes its node rank 1: every node restarts its workers'
	expect_eq "the replacement named on node1" 1 "$(grep -c -E "^train-run: host node1: $line" err.txt)"
	expect_eq "the replacement named on node3" 1 "$(grep -c -E "^train-run: host node3: $line" err.txt)"
	expect_eq "node2 names itself" 1 "$(grep -c -E "^$own" err.txt)"
	spare_took_node2
	sleep 1
	left=$(node_procs)
	expect_eq "processes left behind" "" "$left"

	link_down_run 0 2
	expect_eq "node2's verdict" 1 "$(grep -c -E "^$own" err.txt)"
	expect_eq "node1's verdict" 1 "$(grep -c -E '^train-run: node node2 lost \(silent for [0-9.]+ s\); resubmit with: sbatch --exclude=node2 \.\.\.; stopping 1 worker here' err.txt)"
	expect_eq "no restart" "0 0 0 2 node1;1 0 1 2 node2;" "$(sort starts.txt | tr '\n' ';')"
	expect_eq "the exclude file" node2 "$(sort -u exclude.txt)"
	sleep 1
	left=$(node_procs)
	expect_eq "processes left behind" "" "$left"
}

# 3 nodes x 1 worker; once all run, node2's eth0 shaped inside its namespace (tc tbf 64mbit, as
# t_straggle.sh shapes node4's at the start: some MB/s against the veths' GB/s) and node2's
# worker told to die (the file ft-kill): the restart's preflight probes the network again, node
# 0 judges node2's bandwidth below the line and every node gives the verdict once; nothing of
# round 1 starts. The shaping is undone on every way out (trap).
test_n3_ft_slow_link_before_restart() {
	local rc=0 spid deadline
	rm -f starts.txt ft-kill
	trap 'ip netns exec tt-node2 tc qdisc del dev eth0 root 2>/dev/null || true' EXIT
	# shellcheck disable=SC2016 # expanded by the worker's bash
	timeout 90 srun -N3 --ntasks-per-node=1 --export=ALL train-run --nproc-per-node 1 --max-restarts 1 -- bash -c \
		'echo "$RANK $TRAIN_RESTART_COUNT $(hostname)" >>starts.txt
		i=0
		while [ $i -lt 300 ]; do
			i=$((i + 1)); echo "step $i" >>/proc/self/fd/$TRAIN_HEARTBEAT_FD
			if [ -e ft-kill ] && [ "$RANK" = 1 ] && [ "$TRAIN_RESTART_COUNT" = 0 ]; then kill -9 $$; fi
			sleep 0.1
		done' >out.txt 2>err.txt &
	spid=$!
	deadline=$((SECONDS + 60))
	while [ $SECONDS -lt $deadline ] && { [ ! -s starts.txt ] || [ "$(wc -l <starts.txt)" -lt 3 ]; }; do
		sleep 0.1
	done
	ip netns exec tt-node2 tc qdisc add dev eth0 root tbf rate 64mbit burst 32kb latency 50ms
	: >ft-kill
	wait "$spid" || rc=$?
	ip netns exec tt-node2 tc qdisc del dev eth0 root
	cat err.txt
	[ "$rc" -ne 0 ] || fail "the step with a slow link passed the preflight before its restart"
	expect_eq "the verdict, once on each node" 3 "$(grep -c -E '^train-run: node node2 lost \(failed preflight before round 1: network bandwidth to node 0 [0-9.]+ GB/s < 0.166667 x median [0-9.]+ GB/s\); resubmit with: sbatch --exclude=node2 \.\.\.; stopping 0 workers here$' err.txt)"
	expect_eq "no round 1 (rank round host)" "0 0 node1;1 0 node2;2 0 node3;" "$(sort starts.txt | tr '\n' ';')"
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

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

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_job.sh — sbatch-templates/job.sh, the job users copy first: 2 nodes x 8 GPUs, 16 ranks train
# Fashion-MNIST through srun --train-topo train-run train-mlp; with TRAIN_SPARES=1 on 3 nodes; and
# a lost node replaced by a spare or left behind (TRAIN_MIN_NODES): the job COMPLETED all the same.

test_job_template_trains_16_ranks_on_2_nodes() {
	local id
	id=$(TRAIN_MAX_STEPS=120 sbatch --parsable --output=job-%j.out --nodes=2 --gres=gpu:8 "${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates}/job.sh")
	expect_eq "job state" COMPLETED "$(job_wait "$id" 170)"
	local out="job-$id.out"
	cat "$out"
	expect_eq "every rank listed" "$(seq 0 15 | xargs)" "$(sed -n 's/^rank \([0-9]*\) of 16 on node[12]: .*/\1/p' "$out" | xargs)"
	# Each node's 8 ranks (a block of global ranks) own local ranks 0..7 and GPUs 0..7, each once.
	local node first
	for node in node1 node2; do
		[ "$node" = node1 ] && first=0 || first=8
		expect_eq "global ranks on $node" "$(seq $first $((first + 7)) | xargs)" \
			"$(sed -n "s/^rank \([0-9]*\) of 16 on $node: .*/\1/p" "$out" | sort -n | xargs)"
		expect_eq "local ranks on $node, each once" "$(seq 0 7 | xargs)" \
			"$(sed -n "s/^rank [0-9]* of 16 on $node: local rank \([0-9]*\), .*/\1/p" "$out" | sort -n | xargs)"
		expect_eq "GPUs of $node's ranks, one each and each once" "$(seq 0 7 | xargs)" \
			"$(sed -n "s/^rank [0-9]* of 16 on $node: local rank [0-9]*, GPU \([^ ]*\), CPUs .*/\1/p" "$out" | sort -n | xargs)"
	done
	expect_match "16 ranks trained" "16 rank\\(s\\)" "$(cat "$out")"
	# Without arguments job.sh runs train-mlp with --device auto: no usable CUDA here, one line why.
	expect_eq "--device auto's CPU line" 1 "$(grep -c '^train-mlp: --device auto: using the CPU: ' "$out")"
	expect_match "final accuracy" "test accuracy 0\\.[6-9][0-9]*" "$(cat "$out")"
	expect_match "summary written" '"world_size": *16' "$(cat "train-mlp-$id.json")"
}

# TRAIN_SPARES=1 on 3 nodes of the 4-node cluster (sbatch --no-kill, as the template's header
# says): the training step runs with --spares 1 under srun --no-kill, node3 stands by, 2 nodes x 2
# GPUs train 4 ranks, and the job completes with the spare ending with node 0 (the replacement
# itself: t_ft.sh).
test_n4_job_template_with_a_spare() {
	local id out
	id=$(TRAIN_SPARES=1 TRAIN_MAX_STEPS=60 sbatch --parsable --no-kill --output=job-%j.out --nodes=3 --gres=gpu:2 \
		"${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates}/job.sh")
	expect_eq "job state" COMPLETED "$(job_wait "$id" 170)"
	out="job-$id.out"
	cat "$out"
	expect_eq "the spare's line" 1 "$(grep -c "^train-run: host node3: spare node 2 stands by (2 workers when it takes a lost node's rank)$" "$out")"
	expect_match "4 ranks trained" "4 rank\\(s\\)" "$(cat "$out")"
	expect_match "summary written" '"world_size": *4' "$(cat "train-mlp-$id.json")"
}

# job.sh on 3 nodes with your own program and the knobs in "$@" (VAR=VALUE), node2's train-run
# killed -9 in round 0 (a lost node); the program's ranks note "RANK ROUND NODE_RANK HOST" in
# starts.txt and wait in round 0, end at once in round 1. The job must be COMPLETED with the lost
# node named for exclusion, although the killed train-run's status fails the srun step: the
# job's outcome is node 0's (TRAIN_TOPO_OUTCOME_FILE), the coordinator that decided to go on.
job_loses_node2() {
	local id out deadline st
	rm -f starts.txt trpid.*
	cat >prog.sh <<'SH'
#!/bin/bash
echo "$RANK $TRAIN_RESTART_COUNT $NODE_RANK $(hostname)" >>starts.txt
echo "$PPID" >"trpid.$NODE_RANK.$TRAIN_RESTART_COUNT"
[ "$TRAIN_RESTART_COUNT" != 0 ] || sleep 60
SH
	chmod +x prog.sh
	id=$(env "$@" sbatch --parsable --no-kill --output=job-%j.out --nodes=3 --gres=gpu:2 \
		"${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates}/job.sh" "$PWD/prog.sh")
	deadline=$((SECONDS + 90))
	while [ $SECONDS -lt $deadline ] && [ ! -s trpid.1.0 ]; do sleep 0.2; done
	[ -s trpid.1.0 ] || { scancel "$id"; fail "node rank 1's workers never started"; }
	kill -9 "$(cat trpid.1.0)"
	st=$(job_wait "$id" 120)
	out="job-$id.out"
	cat "$out"
	expect_eq "job state" COMPLETED "$st"
	expect_eq "the outcome line" 1 \
		"$(grep -c "^done: $PWD/prog.sh (node2 was lost and the job went on without it: exclude it next time, sbatch --exclude=node2)$" "$out")"
	expect_eq "the failure line" 0 "$(grep -c '^training failed' "$out")"
}

# TRAIN_SPARES=1: node3 stands by, then takes node rank 1.
test_n4_job_template_spare_takes_lost_node() {
	job_loses_node2 TRAIN_SPARES=1
	expect_eq "round 1 on node1 and the spare node3 (rank round node-rank host)" "0 1 0 node1;1 1 0 node1;2 1 1 node3;3 1 1 node3;" \
		"$(awk '$2 == 1' starts.txt | sort -n | tr '\n' ';')"
}

# TRAIN_MIN_NODES=2: no spare, the world shrinks to node1 and node3 (renumbered node rank 1).
test_n4_job_template_min_nodes_goes_on_with_fewer() {
	job_loses_node2 TRAIN_MIN_NODES=2
	expect_eq "round 0 on 3 nodes" "0 0 0 node1;1 0 0 node1;2 0 1 node2;3 0 1 node2;4 0 2 node3;5 0 2 node3;" \
		"$(awk '$2 == 0' starts.txt | sort -n | tr '\n' ';')"
	expect_eq "round 1 on node1 and node3 (rank round node-rank host)" "0 1 0 node1;1 1 0 node1;2 1 1 node3;3 1 1 node3;" \
		"$(awk '$2 == 1' starts.txt | sort -n | tr '\n' ';')"
}

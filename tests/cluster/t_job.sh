# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_job.sh — sbatch-templates/job.sh, the job users copy first: 2 nodes x 8 GPUs, 16 ranks train
# Fashion-MNIST through srun --train-topo train-run train-mlp; and with TRAIN_SPARES=1 on 3 nodes.

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

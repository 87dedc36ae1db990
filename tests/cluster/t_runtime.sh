# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_runtime.sh — libtrainrt across the test cluster's nodes: collectives through PMIx, through the
# env contract (plugin and train-run), a dead peer, and train-mlp's signal checkpoint and resume.

# bench_ok OUT: every row of trainrt-bench output in OUT has #wrong = 0 (and there are rows).
bench_ok() {
	cat "$1"
	local rows
	rows=$(grep -c -E '^ +[0-9]+ +[0-9]+ ' "$1" || true)
	[ "$rows" -gt 0 ] || fail "no result rows in $1"
	expect_eq "rows with wrong elements" 0 "$(awk '/^ +[0-9]+ +[0-9]+ / && $NF != 0' "$1" | wc -l)"
}

# matrix_ok OUT N BACKEND: all N ranks of comm_check printed 0 wrong elements on BACKEND.
matrix_ok() {
	cat "$1"
	expect_eq "ranks with every collective right ($3)" "$2" "$(grep -c -E "^comm_check: rank [0-9]+ of $2 \\($3, [0-9]+ per node\\): 0 wrong elements$" "$1")"
}

# The whole collective matrix (every collective x dtype x op x size, comm_check) across nodes:
# hierarchical shm + tcp, launched by PMIx and by the plugin's env contract.
test_trainrt_matrix_2_nodes_pmix() {
	srun --mpi=pmix -N2 --ntasks-per-node=2 "$TT_BUILDDIR/tests/comm/comm_check" >out.txt
	matrix_ok out.txt 4 hier
}

test_trainrt_matrix_2_nodes_plugin_env() {
	srun -N2 --ntasks-per-node=2 --train-topo=env "$TT_BUILDDIR/tests/comm/comm_check" >out.txt
	matrix_ok out.txt 4 hier
}

test_trainrt_allreduce_over_pmix_2x2() {
	srun --mpi=pmix -N2 --ntasks-per-node=2 trainrt-bench -o allreduce -b 4 -e 4M -f 16 -n 3 -w 1 >out.txt
	bench_ok out.txt
	expect_match "4 ranks on 2 nodes" "4 ranks \\(2 per node\\)" "$(cat out.txt)"
}

test_trainrt_tcp_backend_with_plugin_env() {
	TRAINRT_BACKEND=tcp srun -N2 --ntasks-per-node=2 --train-topo=env \
		trainrt-bench -o reducescatter -d bf16 -b 64 -e 1M -f 16 -n 3 -w 1 >out.txt
	bench_ok out.txt
	expect_match "tcp backend" "backend tcp" "$(cat out.txt)"
}

test_trainrt_allgather_under_train_run() {
	srun -N2 --ntasks-per-node=1 --gres=gpu:2 train-run -- \
		trainrt-bench -o allgather -b 8 -e 1M -f 32 -n 3 -w 1 >out.txt
	bench_ok out.txt
}

# Rank 3 is killed once every rank is in the world (rank 0 printed its header into the job
# directory, which both nodes see), during the all-reduces; the others must fail, saying a peer
# died rather than waiting out TRAINRT_TIMEOUT.
test_trainrt_dead_peer_fails_the_others_quickly() {
	local start=$SECONDS rc=0
	TRAINRT_TIMEOUT=5 srun -N2 --ntasks-per-node=2 --train-topo=env bash -c '
		stdbuf -oL trainrt-bench -o allreduce -b 1M -e 1M -n 100000 -w 0 >bench-$RANK.out &
		if [ "$RANK" = 3 ]; then
			until grep -q "^# trainrt-bench" bench-0.out 2>/dev/null || ! kill -0 $! 2>/dev/null; do sleep 0.1; done
			kill -9 $!
		fi
		wait $!' >out.txt 2>err.txt || rc=$?
	cat err.txt | tail -n 20
	[ "$rc" -ne 0 ] || fail "the step succeeded although rank 3 died"
	grep -q "^# trainrt-bench" bench-0.out || fail "rank 0 never got into the world: $(cat err.txt)"
	[ $((SECONDS - start)) -lt 40 ] || fail "the others took $((SECONDS - start)) s to notice"
	expect_match "a trainrt: error on a surviving rank" "trainrt: rank [0-2]: " "$(cat err.txt)"
	expect_eq "survivors that only noticed by TRAINRT_TIMEOUT" "" "$(grep 'TRAINRT_TIMEOUT' err.txt || true)"
}

# The checkpoint signal through the whole stack: plugin relay -> train-run -> 4 trainer ranks on
# 2 nodes, which agree on one step, checkpoint it and exit 99; the resumed run ends with the same
# weights as an uninterrupted one.
test_train_mlp_signal_checkpoint_resume_on_2_nodes() {
	# shellcheck disable=SC2054 # the commas are inside values (--layers A,B,C), not between elements
	local args=(--layers 256,512,512,10 --data synthetic --synthetic-samples 8192,512 --batch 64 --epochs 6 --seed 7 --log-every 50)
	srun -N2 --ntasks-per-node=1 --gres=gpu:2 train-run -- train-mlp "${args[@]}" --summary full.json >full.out
	local crc_full
	crc_full=$(sed -n 's/.*"weights_crc32": *"\{0,1\}\([0-9a-fx]*\).*/\1/p' full.json)
	[ -n "$crc_full" ] || fail "no weights_crc32 in the uninterrupted run's summary"

	srun -J ttest-ckpt -N2 --ntasks-per-node=1 --gres=gpu:2 --train-topo=env train-run -- \
		train-mlp "${args[@]}" --ckpt-dir ckpt --summary part.json >part.out 2>&1 &
	local pid=$! rc=0 id deadline=$((SECONDS + 30))
	# signal once training is under way (the first progress line)
	while ! grep -q ' step 50/' part.out 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
	id=$(squeue -h -n ttest-ckpt -o %i | head -n1)
	[ -n "$id" ] || fail "the training step finished before it could be signalled"
	scancel --signal=USR1 "$id"
	wait "$pid" || rc=$?
	cat part.out | tail -n 20
	# train-run takes its workers' exit 99 (TRAIN_TOPO_CKPT_EXIT) for a clean stop: 0, one line per node
	expect_eq "srun exit status after checkpoint-exit" 0 "$rc"
	expect_eq "one checkpoint line per node" 2 "$(grep -c 'train-run: host .*: checkpointed; requeue or resubmit to resume' part.out)"
	expect_eq "one checkpoint" 1 "$(ls -d ckpt/step-* | wc -l)"
	expect_match "all four ranks in it" "world 4" "$(cat ckpt/step-*/meta.txt)"

	srun -N2 --ntasks-per-node=1 --gres=gpu:2 train-run -- train-mlp "${args[@]}" --ckpt-dir ckpt --summary resumed.json >resumed.out
	expect_eq "resumed run ends with the uninterrupted weights" "$crc_full" \
		"$(sed -n 's/.*"weights_crc32": *"\{0,1\}\([0-9a-fx]*\).*/\1/p' resumed.json)"
}

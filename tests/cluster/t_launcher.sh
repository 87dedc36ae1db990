# t_launcher.sh — train-run on the real cluster: one worker per allocated GPU on every node, the
# first failure ends the step everywhere, and the checkpoint signal reaches every worker.

TRAINER=$TT_SRCDIR/tests/cluster/bin/fake-trainer.sh

check_16_workers() {
	cat out.txt
	expect_eq "workers" 16 "$(wc -l <out.txt)"
	expect_eq "ranks" "$(seq 0 15 | xargs)" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "WORLD_SIZE" 16 "$(awk '$4 == 16' out.txt | wc -l)"
	expect_eq "one MASTER_ADDR:PORT" 1 "$(awk '{print $6 ":" $7}' out.txt | sort -u | wc -l)"
	expect_eq "MASTER_ADDR" node1 "$(awk '{print $6}' out.txt | sort -u)"
	local node
	for node in node1 node2; do
		expect_eq "$node: one GPU each, all eight" "0 1 2 3 4 5 6 7" \
			"$(awk -v n="$node" '$1 == n {print $5}' out.txt | sort -n | xargs)"
		expect_eq "$node: local ranks" "0 1 2 3 4 5 6 7" \
			"$(awk -v n="$node" '$1 == n {print $3}' out.txt | sort -n | xargs)"
	done
	# RANK = NODE_RANK * 8 + LOCAL_RANK
	expect_eq "rank formula" 0 "$(awk '$2 != $8 * 8 + $3' out.txt | wc -l)"
}

WORKER_LINE='echo "$(hostname) $RANK $LOCAL_RANK $WORLD_SIZE $CUDA_VISIBLE_DEVICES $MASTER_ADDR $MASTER_PORT $NODE_RANK"'

test_train_run_one_worker_per_gpu_with_plugin() {
	srun -N2 --ntasks-per-node=1 --gres=gpu:8 --train-topo train-run -- bash -c "$WORKER_LINE" >out.txt
	check_16_workers
}

test_train_run_one_worker_per_gpu_without_plugin() {
	srun -N2 --ntasks-per-node=1 --gres=gpu:8 train-run -- bash -c "$WORKER_LINE" >out.txt
	check_16_workers
}

test_train_run_failing_worker_ends_the_step_everywhere() {
	local start=$SECONDS rc=0
	srun -N2 --ntasks-per-node=1 --gres=gpu:8 --kill-on-bad-exit=1 train-run --grace 5 -- \
		bash -c 'if [ "$RANK" = 13 ]; then sleep 1; exit 3; fi; exec sleep 60' >out.txt 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "srun succeeded although rank 13 exited 3"
	[ $((SECONDS - start)) -lt 30 ] || fail "the step took $((SECONDS - start)) s to end"
	expect_eq "one line naming the failed worker" 1 "$(grep -c -E 'train-run: host node2: rank 13 \(local rank 5, pid [0-9]+\) exited with code 3' err.txt)"
	expect_eq "the node's exit status" 1 "$(grep -c 'node2: task 1: Exited with exit code 3' err.txt)"
}

# usr1_case MODE: 16 fake trainers under train-run; scancel --signal=USR1 once all are ready.
usr1_case() {
	srun -J "ttest-usr1-$1" -N2 --ntasks-per-node=1 --gres=gpu:8 --train-topo="$1" train-run -- "$TRAINER" "$PWD" 60 >srun.out 2>&1 &
	local srun_pid=$! id deadline=$((SECONDS + 30))
	while [ "$(compgen -G 'ready.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	expect_eq "trainers ready" 16 "$(compgen -G 'ready.*' | wc -l)"
	id=$(squeue -h -n "ttest-usr1-$1" -o %i | head -n1)
	scancel --signal=USR1 "$id"
	deadline=$((SECONDS + 20))
	while [ "$(compgen -G 'ckpt.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	touch stop
	wait "$srun_pid" || { cat srun.out; fail "srun failed after the signal"; }
	expect_eq "workers that saw USR1" 16 "$(compgen -G 'ckpt.*' | wc -l)"
}

test_train_run_scancel_usr1_reaches_all_16_workers() {
	usr1_case env
}

test_train_run_forwards_usr1_without_plugin() {
	usr1_case off
}

test_train_run_refuses_two_tasks_per_node() {
	local rc=0
	srun -N1 --ntasks-per-node=2 --gres=gpu:8 train-run -- true 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "train-run accepted two tasks on one node"
	expect_match "clear error" "train-run: .*(one task|ntasks-per-node)" "$(cat err.txt)"
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
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

# signal_workers_case MODE SIGNAL: 16 fake trainers under train-run handling SIGNAL; one
# scancel --signal=SIGNAL once all are ready; every worker must see it exactly once (from the
# plugin's relay with a mode, from train-run's forwarding with off).
signal_workers_case() {
	local mode=$1 sig=$2
	TT_TEST_SIGNAL=$sig srun -J "ttest-sig-$mode" -N2 --ntasks-per-node=1 --gres=gpu:8 --train-topo="$mode" \
		train-run -- "$TRAINER" "$PWD" 60 >srun.out 2>&1 &
	local srun_pid=$! id deadline=$((SECONDS + 30))
	while [ "$(compgen -G 'ready.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	expect_eq "trainers ready" 16 "$(compgen -G 'ready.*' | wc -l)"
	id=$(squeue -h -n "ttest-sig-$mode" -o %i | head -n1)
	scancel --signal="$sig" "$id" || fail "scancel --signal=$sig $id failed"
	deadline=$((SECONDS + 20))
	while [ "$(compgen -G 'ckpt.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	touch stop
	wait "$srun_pid" || { cat srun.out; fail "srun failed after the signal"; }
	expect_eq "workers that saw SIG$sig" 16 "$(compgen -G 'ckpt.*' | wc -l)"
	expect_eq "SIG$sig deliveries per worker" 1 "$(deliveries 'ckpt.*')"
}

test_train_run_scancel_usr1_reaches_all_16_workers() {
	signal_workers_case env USR1
}

test_train_run_forwards_usr1_without_plugin() {
	signal_workers_case off USR1
}

# Every name of the signal table reaches the workers without the plugin too.
test_train_run_forwards_urg_without_plugin() {
	signal_workers_case off URG
}

# The environment table: a worker with local rank i gets the same values whether the plugin
# starts it as task i (srun --ntasks-per-node=8) or train-run starts it under the plugin
# (srun --ntasks-per-node=1 train-run), on 2 nodes x 8 GPUs with a multi-NIC hwloc_xml (the
# committed fixture: 6 HCAs over 2 NUMA nodes). Slurm's own SLURM_* of the direct tasks are the
# oracle for the SLURM_* train-run gives its workers; the kernel's Cpus_allowed_list and nproc
# for TRAIN_CPU_LIST and OMP_NUM_THREADS. Per step by design: MASTER_PORT (each step's first
# reserved port) and NCCL_TOPO_FILE's path (compared by content).
ENV_TABLE_VARS="RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK NNODES MASTER_ADDR
CUDA_VISIBLE_DEVICES OMP_NUM_THREADS NCCL_IB_HCA NCCL_SOCKET_IFNAME TRAIN_CPU_LIST TRAIN_TOPO_SET
topo_sum SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_NPROCS SLURM_STEP_NUM_TASKS
SLURM_NTASKS_PER_NODE SLURM_TASKS_PER_NODE SLURM_STEP_TASKS_PER_NODE SLURM_GTIDS"

# table_field NAME LINE
table_field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

test_train_run_env_table_same_both_ways() {
	set_plugin_args "hwloc_xml=$TT_SRCDIR/tests/fixtures/topo/dual-pcie-8gpu.xml"
	local printer=$TT_SRCDIR/tests/cluster/bin/print-env.sh
	srun -N2 --ntasks-per-node=8 --gres=gpu:8 --train-topo "$printer" | sort >direct.txt
	srun -N2 --ntasks-per-node=1 --gres=gpu:8 --train-topo train-run -- "$printer" | sort >workers.txt
	expect_eq "tasks" 16 "$(wc -l <direct.txt)"
	expect_eq "workers" 16 "$(wc -l <workers.txt)"
	local host lr d w v dv wv port mismatches=0
	for host in node1 node2; do
		for lr in 0 1 2 3 4 5 6 7; do
			d=$(grep "^host=$host .* LOCAL_RANK=$lr " direct.txt)
			w=$(grep "^host=$host .* LOCAL_RANK=$lr " workers.txt)
			[ -n "$d" ] && [ -n "$w" ] || { fail "$host local rank $lr: missing (direct '$d', worker '$w')"; continue; }
			for v in $ENV_TABLE_VARS; do
				dv=$(table_field "$v" "$d")
				wv=$(table_field "$v" "$w")
				if [ "$dv" != "$wv" ] || [ "$dv" = unset ]; then
					echo "MISMATCH $host local rank $lr $v: task '$dv', worker '$wv'"
					mismatches=$((mismatches + 1))
				fi
			done
			for line in "$d" "$w"; do
				port=$(table_field SLURM_STEP_RESV_PORTS "$line")
				expect_eq "$host/$lr MASTER_PORT = its step's first reserved port" "${port%%[-,]*}" \
					"$(table_field MASTER_PORT "$line")"
				expect_match "$host/$lr NCCL_TOPO_FILE names its step" \
					"^/tmp/traintopo\.[0-9]+/nccl-topo\.$(table_field SLURM_STEP_ID "$line")\.xml$" \
					"$(table_field NCCL_TOPO_FILE "$line")"
				expect_eq "$host/$lr TRAIN_CPU_LIST = Cpus_allowed_list" "$(table_field allowed "$line")" \
					"$(table_field TRAIN_CPU_LIST "$line")"
				expect_eq "$host/$lr OMP_NUM_THREADS = nproc" "$(table_field nproc "$line")" \
					"$(table_field OMP_NUM_THREADS "$line")"
			done
		done
	done
	# The values themselves: one GPU each; NCCL_IB_HCA lists the fixture's HCAs (which order is
	# the topology policy's business: the table only asks that task and worker agree).
	expect_eq "one GPU per local rank" "0 1 2 3 4 5 6 7" \
		"$(grep '^host=node1 ' direct.txt | sed -n 's/.* CUDA_VISIBLE_DEVICES=\([^ ]*\).*/\1/p' | sort -n | xargs)"
	expect_eq "NCCL_IB_HCA names the fixture's HCAs" 0 \
		"$(grep -v -c -E ' NCCL_IB_HCA==mlx5_[0-5]:1(,mlx5_[0-5]:1)* ' workers.txt)"
	echo "compared: 16 processes x $(wc -w <<<"$ENV_TABLE_VARS") variables, $mismatches mismatches"
	expect_eq "variables that differ between a task and a worker of the same local rank" 0 "$mismatches"
	head -n 2 direct.txt workers.txt
}

# Uneven GPUs per node: srun --gpus=12 -N2 gives 8 + 4. The nodes learn each other's counts
# before the workers start: unique ranks 0..11 and one WORLD_SIZE, as the README promises.
test_train_run_uneven_gpus_per_node() {
	srun -N2 --ntasks-per-node=1 --gpus=12 train-run -- \
		bash -c 'echo "$(hostname) $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $SLURM_PROCID $SLURM_NTASKS $SLURM_TASKS_PER_NODE"' >out.txt
	cat out.txt
	expect_eq "workers" 12 "$(wc -l <out.txt)"
	expect_eq "unique ranks 0..11" "$(seq 0 11 | xargs)" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "one WORLD_SIZE" 12 "$(awk '{print $3}' out.txt | sort -u)"
	local big small
	big=$(awk '$5 == 8 {print $1}' out.txt | sort -u)
	small=$(awk '$5 == 4 {print $1}' out.txt | sort -u)
	expect_eq "one node runs 8 workers, the other 4" 2 "$(echo "$big $small" | wc -w)"
	expect_eq "SLURM_PROCID = RANK, SLURM_NTASKS = WORLD_SIZE" 0 "$(awk '$6 != $2 || $7 != $3' out.txt | wc -l)"
	expect_eq "SLURM_TASKS_PER_NODE" "8,4" "$(awk '{print $8}' out.txt | sort -u)"
}

# ... and libtrainrt, which needs the same number of ranks on every node, refuses that world at
# start-up with a message saying so, as the README says (not a hang, not a wrong result).
test_train_run_uneven_gpus_refused_by_trainrt() {
	local rc=0 start=$SECONDS
	srun -N2 --ntasks-per-node=1 --gpus=12 --kill-on-bad-exit=1 train-run --grace 5 -- \
		train-mlp --layers 16,8,4 --data synthetic --synthetic-samples 256,64 --batch 48 --epochs 1 \
		>out.txt 2>err.txt || rc=$?
	tail -n 20 err.txt
	[ "$rc" -ne 0 ] || fail "train-mlp ran on 8 + 4 ranks"
	[ $((SECONDS - start)) -lt 90 ] || fail "the refusal took $((SECONDS - start)) s"
	expect_match "the error names the rule" "every node must run the same number of ranks" "$(cat err.txt)"
}

test_train_run_refuses_two_tasks_per_node() {
	local rc=0
	srun -N1 --ntasks-per-node=2 --gres=gpu:8 train-run -- true 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "train-run accepted two tasks on one node"
	expect_match "clear error" "train-run: .*(one task|ntasks-per-node)" "$(cat err.txt)"
}

# The preflight (on by default) on a real fault: node2's GPU device files are the cluster's own
# GRES files (gres.conf File=), device nodes of major 195 without an NVIDIA driver, so opening
# one fails (ENXIO), while node1's are plain files that open. node1 refuses the launch through the
# census: neither node starts a worker, and both print the one line naming node2, its device and
# the sbatch --exclude. The device directory is given per node by TRAINRT_PREFLIGHT_TEST_DEV_DIR.
test_train_run_preflight_names_the_failing_node() {
	local rc=0
	preflight_dev_dirs
	# shellcheck disable=SC2016 # expanded by the task's shell on each node
	timeout 60 srun -N2 --ntasks-per-node=1 --gres=gpu:8 bash -c '
		dir=$PWD/dev-ok
		[ "$SLURM_NODEID" = 1 ] && dir=$PWD/dev-gres
		TRAINRT_PREFLIGHT_TEST_DEV_DIR=$dir exec train-run -- bash -c "echo started"' \
		>out.txt 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "the step with a node failing preflight succeeded"
	expect_eq "workers started" 0 "$(grep -c started out.txt)"
	expect_eq "the line, once on each node" 2 "$(grep -c -E "^train-run: node 1 \(node2\) failed preflight: GPU device $PWD/dev-gres/nvidia[0-7] does not open \(No such device or address\); resubmit with sbatch --exclude=node2$" err.txt)"
}

# srun -N2 train-run --node-rank=0 without --kill-on-bad-exit: node2's train-run refuses (its
# SLURM_NODEID is 1) and tells node1's through the census, so the step ends on both nodes within
# 10 s instead of node1's workers waiting until the time limit; node1 starts no worker and
# names node2's refusal and its reason.
test_train_run_refusing_node_ends_the_step() {
	local rc=0 start=$SECONDS
	timeout 60 srun -N2 --ntasks-per-node=1 train-run --node-rank=0 -- bash -c 'echo started; sleep 300' \
		>out.txt 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "the step with a refusing node succeeded"
	[ $((SECONDS - start)) -le 10 ] || fail "the step ended after $((SECONDS - start)) s, not within 10 s"
	expect_eq "workers started" 0 "$(grep -c started out.txt)"
	expect_match "node2's own line" "train-run: --node-rank 0 contradicts SLURM_NODEID=1" "$(cat err.txt)"
	expect_match "node1 names node2 and why" "train-run: node 1 \(node2\) refused: --node-rank 0 contradicts SLURM_NODEID=1" "$(cat err.txt)"
}

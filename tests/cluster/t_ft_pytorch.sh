# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_ft_pytorch.sh — the PyTorch example (examples/pytorch_ddp.py, gloo on the CPUs) under
# train-run --max-restarts 1 on 2 nodes x 2 ranks, checkpointing every 100 steps, with one fault
# on node2's second worker (global rank 3) once it logged step 110 (issue #29):
#  - kill -9: one restart decision (the line naming rank 3 on node2, once per node), every rank
#    started exactly twice (rounds 0 and 1);
#  - SIGSTOP: the heartbeat timeout names rank 3 as hung in one line on node2, then the same;
#  - on 3 nodes with --spares 1, node2's train-run killed -9 (a lost node): node3 takes its node
#    rank, the same resume.
# Either way the second round resumes from the newest checkpoint, and every loss line after it
# equals an uninterrupted run's resumed from a copy of that checkpoint, and the final weights are
# equal. Bit-equal, not within a tolerance: the example's batches are a function of the seed and
# the step, its checkpoint holds the model and AdamW's state exactly, and gloo's all-reduce at a
# fixed world size and bucket layout adds in the same order every time (its ring depends on the
# ranks and offsets, not on timing); both runs start from the checkpoint, so both take DDP's
# first-iteration bucket layout at the same step. (An uninterrupted run would not do: at 4 ranks
# its step 101 sums in DDP's rebuilt layout, 1 ulp away; BENCHMARKS.md.) 'loss %.9g' names a
# float32 uniquely. The oracle is that second run, not a stored number. No timing asserts;
# every wait is bounded.

# The example, slowed to 0.05 s a step so the fault finds it training between two checkpoints.
FT_PT=(/usr/bin/python3 "${TT_EXAMPLES:-$TT_SRCDIR/examples}/pytorch_ddp.py" --samples 1024 --log-every 1
	--steps 300 --ckpt-every 100 --keep 5 --sleep-per-step 0.05)
# Each start appends "RANK ROUND HOST" to starts.txt, then becomes the example.
FT_PT_START='echo "$RANK $TRAIN_RESTART_COUNT $(hostname)" >>starts.txt; exec "$@"'

# ft_pt_losses FILE: the example's loss lines after its resume line, without launcher tags.
ft_pt_losses() {
	sed -n '/pytorch_ddp: resumed from /,$p' "$1" | grep -o 'pytorch_ddp: step [0-9]* loss .*'
}

# ft_pt_pid MARK: the pid of the example's rank 3 of the run marked FT_PT_MARK=MARK (the
# cluster's nodes share this machine's pid namespace), or nothing.
ft_pt_pid() {
	local e
	for e in /proc/[0-9]*/environ; do
		tr '\0' '\n' <"$e" 2>/dev/null | grep -qx "FT_PT_MARK=$1" || continue
		tr '\0' '\n' <"$e" 2>/dev/null | grep -qx 'RANK=3' || continue
		[ "$(cat "${e%/environ}/comm" 2>/dev/null)" = python3 ] || continue
		basename "${e%/environ}"
		return 0
	done
}

# ft_pt_fault SIGNAL [spare]: runs the example with SIGNAL sent to rank 3 after step 110, then
# checks the restart, the resume and the losses against the reference. With "spare": 3 nodes,
# --spares 1 (node3 stands by), and SIGNAL goes to rank 3's train-run on node2 (a lost node):
# node3 takes node rank 1, and the launch's outcome is node 0's (TRAIN_TOPO_OUTCOME_FILE), the
# killed train-run failing srun's step. Output in out.txt, err.txt.
ft_pt_fault() {
	local sig=$1 spare=${2:-} rc=0 spid deadline victim newest mark step
	local nodes=(-N2) opts=(--max-restarts 1)
	mark=$PWD/$sig$spare
	[ -z "$spare" ] || { nodes=(-N3 --no-kill); opts=(--spares 1); }
	rm -rf starts.txt ckpt ref outcome
	FT_PT_MARK=$mark TRAIN_TOPO_OUTCOME_FILE=$PWD/outcome timeout 200 srun "${nodes[@]}" --ntasks-per-node=1 --export=ALL \
		train-run --nproc-per-node 2 "${opts[@]}" -- bash -c "$FT_PT_START" ft "${FT_PT[@]}" --ckpt-dir "$PWD/ckpt" >out.txt 2>err.txt &
	spid=$!
	# Found at the first step (a scan of /proc takes seconds on a busy machine), signalled at 110.
	deadline=$((SECONDS + 120))
	while [ $SECONDS -lt $deadline ] && ! grep -q '^pytorch_ddp: step 1 loss' out.txt 2>/dev/null; do
		sleep 0.1
	done
	victim=$(ft_pt_pid "$mark")
	# The example is exec'd by train-run's worker: its parent is node2's train-run.
	[ -z "$spare" ] || [ -z "$victim" ] || victim=$(ps -o ppid= -p "$victim" | tr -d ' ')
	while [ $SECONDS -lt $deadline ] && ! grep -q '^pytorch_ddp: step 110 loss' out.txt 2>/dev/null; do
		sleep 0.1
	done
	if [ -z "$victim" ] || ! grep -q '^pytorch_ddp: step 110 loss' out.txt; then
		kill "$spid"
		cat out.txt err.txt
		fail "rank 3 not found or never at step 110 (pid '$victim')"
	fi
	kill "-$sig" "$victim"
	# The other ranks wait in the next all-reduce: no checkpoint is written until the restart.
	newest=$(find ckpt -name 'step-*.pt' | sort | tail -n 1)
	wait "$spid" || rc=$?
	cat err.txt out.txt
	expect_eq "starts (rank round)" "0 0;0 1;1 0;1 1;2 0;2 1;3 0;3 1;" "$(cut -d' ' -f1,2 starts.txt | sort | tr '\n' ';')"
	if [ -z "$spare" ]; then
		expect_eq "the step's exit" 0 "$rc"
		expect_eq "starts per node" "4 node1;4 node2" "$(cut -d' ' -f3 starts.txt | sort | uniq -c | awk '{print $1, $2}' | paste -sd';')"
		# One decision: one line per node, both naming rank 3 on node2 and restart 1.
		expect_eq "restart lines, those naming rank 3 on node2 in restart 1" "2 2" \
			"$(grep -c 'every node restarts' err.txt) $(grep -c '^train-run: host node[12]: rank 3 on host node2 .*: every node restarts its workers (restart 1 of 1;' err.txt)"
	else
		expect_eq "the launch's outcome (node 0's status)" 0 "$(cat outcome 2>&1)"
		expect_eq "round 1's ranks on node1 and the spare (rank host)" "0 node1;1 node1;2 node3;3 node3;" \
			"$(awk '$2 == 1 { print $1, $3 }' starts.txt | sort | tr '\n' ';')"
		expect_eq "the replacement, named on node1 and node3" 2 \
			"$(grep -c '^train-run: host node[13]: node node2 lost (.*); spare node 2 (node3) takes its node rank 1: every node restarts its workers (round 1;' err.txt)"
	fi
	[ -n "$newest" ] || fail "no checkpoint at the fault"
	step=${newest#ckpt/step-}
	step=$((10#${step%.pt}))
	[ "$step" -lt 300 ] || fail "the fault came after the last checkpoint ($newest)"
	expect_eq "resumed from the newest checkpoint" 1 \
		"$(grep -c "^pytorch_ddp: resumed from $PWD/$newest at step $step$" out.txt)"
	# The oracle: an uninterrupted run on the same 2 x 2 ranks from a copy of that checkpoint.
	mkdir -p ref
	cp "$newest" ref/
	timeout 150 srun -N2 --ntasks-per-node=1 --export=ALL train-run --nproc-per-node 2 -- \
		"${FT_PT[@]}" --ckpt-dir "$PWD/ref" >ref.out 2>ref.err || { cat ref.err; fail "the reference run failed"; }
	expect_eq "loss lines after the restart point" $((300 - step)) "$(ft_pt_losses out.txt | wc -l)"
	expect_eq "losses after the restart point vs the uninterrupted run's" "$(ft_pt_losses ref.out)" "$(ft_pt_losses out.txt)"
	expect_eq "final weights and optimizer state vs the uninterrupted run's" equal "$(/usr/bin/python3 -c '
import sys, torch
a, b = (torch.load(p, map_location="cpu") for p in sys.argv[1:])
same = lambda x, y: all(torch.equal(x[k], y[k]) if torch.is_tensor(x[k]) else x[k] == y[k] for k in x)
print("equal" if same(a["model"], b["model"]) and a["losses"] == b["losses"] and
      all(same(s, b["opt"]["state"][k]) for k, s in a["opt"]["state"].items()) else "different")
' ckpt/step-00000300.pt ref/step-00000300.pt)"
}

# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_ft_pytorch_worker_killed_resumes_equal_losses=420
test_ft_pytorch_worker_killed_resumes_equal_losses() {
	ft_pt_fault KILL
	expect_eq "the culprit line" 2 \
		"$(grep -c '^train-run: host node[12]: rank 3 on host node2 was killed by SIGKILL (status 137): every node restarts' err.txt)"
}

# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_ft_pytorch_worker_hung_resumes_equal_losses=420
test_ft_pytorch_worker_hung_resumes_equal_losses() {
	ft_pt_fault STOP
	expect_eq "the hang, named in one line on node2" 1 \
		"$(grep -c -E '^train-run: host node2: rank 3 hung in section step: no progress for [0-9.]+ s \(timeout [0-9.]+ s\)' err.txt)"
	expect_eq "the decision names the hang" 2 \
		"$(grep -c '^train-run: host node[12]: rank 3 on host node2 hung in section step: .*every node restarts' err.txt)"
}

# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_n4_ft_pytorch_spare_takes_lost_node_resumes_equal_losses=420
# The PyTorch example through the spares' path: node2's train-run killed -9 at step 110, node3
# takes its node rank 1, and the example resumes to the same losses and weights as without it.
test_n4_ft_pytorch_spare_takes_lost_node_resumes_equal_losses() {
	ft_pt_fault KILL spare
}

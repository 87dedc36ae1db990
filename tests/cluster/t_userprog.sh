# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_userprog.sh — the user's own program through the templates (issue #28), with the PyTorch
# example (examples/pytorch_ddp.py, gloo on the test cluster's CPUs): job.sh on 2 nodes;
# requeue.sh with a real time-limit signal, one requeue and a resumed loss sequence equal to the
# job.sh run's; a 4-point sweep ranked by the example's TRAIN_RESULT line. A checkpoint stop ends
# the first run requeued, never FAILED, with no error or 'stopping' line.

EXAMPLES=${TT_EXAMPLES:-$TT_SRCDIR/examples}
# Debian's python3-torch lives with /usr/bin/python3.
PYTORCH_DDP=(/usr/bin/python3 "$EXAMPLES/pytorch_ddp.py" --samples 1024 --log-every 1)

# losses FILE...: the example's 'step N loss X' lines, without launcher tags, once each, by step.
losses() { cat "$@" | grep -o 'pytorch_ddp: step [0-9]* loss .*' | sort -u -k3n; }

# One uninterrupted 2-node run through job.sh and, beside it, the same training through
# requeue.sh under --time=2 --signal=B:USR1@60: slurmctld signals within its first time-limit
# checks after 60 s, the ranks checkpoint (0.25 s per step makes the run outlast that), the
# script requeues, the second run resumes and finishes.
# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_userprog_pytorch_job_and_requeue_resume_equal_losses=480
test_userprog_pytorch_job_and_requeue_resume_equal_losses() {
	local templates=${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates} ref id restarts
	ref=$(sbatch --parsable -N2 --gres=gpu:1 --mem=700M --time=10 --output=ref.out \
		"$templates/job.sh" "${PYTORCH_DDP[@]}" --steps 480)
	id=$(sbatch --parsable -N2 --gres=gpu:1 --mem=700M --time=2 --signal=B:USR1@60 --output=run.out \
		"$templates/requeue.sh" "${PYTORCH_DDP[@]}" --steps 480 --sleep-per-step 0.25)
	# Stop watching at the first requeue, whatever the job's state then: the second run starts
	# after the old credential expired (cred_expire=10) and must get its longer limit before its
	# own signal would come, 60 s later.
	restarts=$(requeue_wait "$id" 200)
	cat run.out
	[ "${restarts:-0}" -ge 1 ] || fail "job $id was not requeued (did it finish before the signal?)"
	# The second run finishes rather than being signalled again.
	scontrol update JobId="$id" TimeLimit=10
	expect_eq "reference job state" COMPLETED "$(job_wait "$ref" 200)"
	expect_eq "requeued job's final state" COMPLETED "$(job_wait "$id" 240)"
	cat ref.out run.out
	expect_match "job.sh: 2 ranks on 2 nodes" "pytorch_ddp: 2 rank\\(s\\), gloo" "$(cat ref.out)"
	expect_eq "job.sh: the result line" 1 "$(grep -c '^TRAIN_RESULT {"metric": "val_loss"' ref.out)"
	expect_eq "job.sh: done" 1 "$(grep -c '^done: /usr/bin/python3 .*pytorch_ddp.py' ref.out)"
	# The checkpoint stop: one train-run line per node, the script requeues, nothing reads as a failure.
	expect_eq "one checkpointed line per node" 2 "$(grep -c '^train-run: host node[12]: checkpointed; requeue or resubmit to resume' run.out)"
	grep -q '^checkpointed in .*: requeueing job' run.out || fail "run 1 did not checkpoint and requeue"
	# Slurm's own notice when scontrol requeue ends the batch script before it exited (a race the
	# script cannot close) is the requeue itself; any other error, stopping or SIGKILL line fails.
	# slurmstepd prefixes it with its name (22.05) or with a [timestamp] (26.05).
	expect_eq "error or stopping lines" 0 \
		"$(grep -i 'error\|stopping\|SIGKILL' run.out |
			grep -Evc "^(slurmstepd[-a-z0-9]*: |\[[0-9T:.-]+\] )error: \*\*\* JOB $id ON node[12] CANCELLED AT .* DUE TO JOB REQUEUE \*\*\*$")"
	grep -q "^job $id run 2 (requeued 1 of at most 3 times)" run.out || fail "no second run"
	grep -q 'pytorch_ddp: resumed from .*/checkpoints/'"$id"'/step-' run.out || fail "run 2 did not resume"
	grep -q '^done after 1 requeue(s)' run.out || fail "run 2 did not finish"
	expect_eq "loss lines of the reference" 480 "$(losses ref.out | wc -l)"
	expect_eq "losses, interrupted and resumed vs uninterrupted" "$(losses ref.out)" "$(losses run.out)"
}

# Four points of the example, each its own array task: the keys become its flags, its
# TRAIN_RESULT line is the result, and the report ranks by val_loss (goal min).
# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_userprog_pytorch_sweep_four_points_ranked=300
test_userprog_pytorch_sweep_four_points_ranked() {
	local templates=${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates} id rc=0
	printf 'hidden = 16, 32\nlr = 1e-3, 1e-2\n' >grid.sweep
	expect_eq "array range" 0-3 "$(train-sweep size --program /usr/bin/python3 grid.sweep 2>/dev/null)"
	id=$(sbatch --parsable --array=0-3 --gres=gpu:1 --mem=500M --output='task-%a.out' "$templates/sweep.sh" \
		grid.sweep "${PYTORCH_DDP[@]}" --samples 512 --steps 20)
	array_wait "$id" 240
	cat task-*.out
	train-sweep report "sweep-$id" >report.txt || rc=$?
	cat report.txt
	expect_eq "report exit (all points finished)" 0 "$rc"
	expect_match "summary line" '^4 of 4 points finished' "$(head -n1 report.txt)"
	expect_eq "ranked rows" "1 2 3 4" "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {print $1}' report.txt | xargs)"
	expect_eq "every row's metric" "val_loss min" "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {print $5, $7}' report.txt | sort -u)"
	expect_eq "sorted by val_loss, lowest first" 0 \
		"$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {if (n++ && $6 < prev) bad++; prev = $6} END {print bad + 0}' report.txt)"
	expect_eq "point 3 trained with its flags" 1 "$(grep -c 'pytorch_ddp.py .* --hidden 32 --lr 1e-2' task-3.out)"
	expect_eq "report.csv rows" 5 "$(wc -l <"sweep-$id/report.csv")"
}

# A checkpoint stop of job.sh (scancel --batch --signal=USR1, as the time limit's B:USR1 does):
# the job ends COMPLETED, not FAILED 99:0, with one line per node and no error or stopping line.
# shellcheck disable=SC2034 # run-tests.sh reads timeout_<test>
timeout_test_userprog_pytorch_job_sh_checkpoint_stop_is_completed=240
test_userprog_pytorch_job_sh_checkpoint_stop_is_completed() {
	local templates=${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates} id deadline
	id=$(sbatch --parsable -N2 --gres=gpu:1 --mem=700M --time=10 --output=job.out \
		"$templates/job.sh" "${PYTORCH_DDP[@]}" --steps 2000 --sleep-per-step 0.25)
	deadline=$((SECONDS + 150))
	while ! grep -q 'pytorch_ddp: step 5 ' job.out 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
	grep -q 'pytorch_ddp: step 5 ' job.out || { cat job.out; fail "training did not start"; }
	scancel --batch --signal=USR1 "$id"
	expect_eq "job state after the checkpoint stop" COMPLETED "$(job_wait "$id" 90)"
	cat job.out
	expect_eq "exit code" 0:0 "$(scontrol show job "$id" | sed -n 's/.*ExitCode=\([0-9:]*\).*/\1/p')"
	expect_eq "one checkpointed line per node" 2 "$(grep -c '^train-run: host node[12]: checkpointed; requeue or resubmit to resume' job.out)"
	expect_eq "job.sh says how to resume" 1 "$(grep -c '^checkpointed on the signal in .*: submit again with TRAIN_CKPT_DIR=' job.out)"
	expect_eq "error or stopping lines" 0 "$(grep -ci 'error\|stopping\|SIGKILL' job.out)"
	expect_eq "one checkpoint" 1 "$(find "checkpoints/$id" -name 'step-*.pt' | wc -l)"
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_templates.sh — the sbatch templates end to end: a hyperparameter sweep as a job array with its
# ranked report and plot (sweep.sh, train-sweep), and a time-limited job that checkpoints, requeues
# itself and resumes to the same final weights as an uninterrupted run (requeue.sh).

# The checkout's templates, or the installed ones (TT_TEMPLATES=DIR, set by scripts/test.sh).
TEMPLATES=${TT_TEMPLATES:-$TT_SRCDIR/sbatch-templates}
# Tiny synthetic training: each sweep point takes well under a second.
SWEEP_ENV=(TRAIN_DATA=synthetic "TRAIN_LAYERS=784,32,10" TRAIN_MAX_STEPS=20
	"TRAIN_EXTRA=--synthetic-samples 2048,256 --eval-every 10")

# array_wait ID [TIMEOUT]: waits until every task of array job ID left the queue.
array_wait() {
	local deadline=$((SECONDS + ${2:-120}))
	while [ -n "$(squeue -h -j "$1" 2>/dev/null)" ]; do
		[ $SECONDS -lt $deadline ] || { scancel "$1"; echo "array job $1 timed out" >&2; return 1; }
		sleep 0.5
	done
}

test_sweep_four_points_ranked_csv_and_plot() {
	printf '# test grid\nlr = 1e-3, 1e-2\nbatch = 32, 64\n' >grid.sweep
	expect_eq "array range" 0-3 "$(train-sweep size grid.sweep)"
	# Task 4 lies outside the grid: it must fail with the range, and change nothing.
	local id
	id=$(env "${SWEEP_ENV[@]}" sbatch --parsable --array=0-4%4 --gres=gpu:2 --mem=300M \
		--output='task-%a.out' "$TEMPLATES/sweep.sh" grid.sweep)
	array_wait "$id" 120
	grep -q 'point index 4 is outside the grid of 4 points (0-3); submit with --array=0-3' task-4.out ||
		{ cat task-4.out; fail "task 4 did not name the grid's range"; }
	local dir=sweep-$id rc=0
	train-sweep report "$dir" >report.txt || rc=$?
	cat report.txt
	expect_eq "report exit (all points finished)" 0 "$rc"
	expect_match "summary line" '^4 of 4 points finished' "$(head -n1 report.txt)"
	# Ranked: test accuracy never rises down the table.
	expect_eq "ranked rows" "1 2 3 4" "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {print $1}' report.txt | xargs)"
	expect_eq "sorted by accuracy" 0 "$(awk 'NR > 2 && $1 ~ /^[0-9]+$/ {if (n++ && $5 > prev) bad++; prev = $5} END {print bad + 0}' report.txt)"
	expect_eq "report.csv rows" 5 "$(wc -l <"$dir/report.csv")"
	expect_eq "report.csv points" "0 1 2 3" "$(awk -F, 'NR > 1 && $5 == "ok" {print $2}' "$dir/report.csv" | sort | xargs)"
	expect_eq "world size of every point" "2" "$(awk -F, 'NR > 1 {print $9}' "$dir/report.csv" | sort -u)"
	expect_eq "point 3's params" "lr=1e-2 batch=64" "$(xargs <"$dir/point-3.params")"
	expect_eq "PNG magic" "89504e470d0a1a0a" "$(head -c 8 "$dir/report.png" | od -An -tx1 | tr -d ' \n')"
}

test_sweep_report_names_failed_and_missing_points() {
	# A batch larger than the data passes train-sweep's check of the grid but fails training.
	printf 'batch = 64, 100000\nseed = 1, 2\n' >grid.sweep
	local id rc=0
	# Points 0 and 1 train, 2 and 3 fail on the batch; nothing else is submitted.
	id=$(env "${SWEEP_ENV[@]}" sbatch --parsable --array=0-2 --gres=gpu:1 --mem=300M \
		--output='task-%a.out' "$TEMPLATES/sweep.sh" grid.sweep)
	array_wait "$id" 120
	train-sweep report "sweep-$id" >report.txt || rc=$?
	cat report.txt
	expect_eq "report exit (some points did not finish)" 3 "$rc"
	expect_match "summary line" '^2 of 4 points finished' "$(head -n1 report.txt)"
	grep -q '^  p2 batch=100000 seed=1: failed: exit [0-9]*: training failed; log: \[rank 0\] train-mlp: --batch 100000 is larger than' report.txt ||
		fail "point 2's failure and its log line are not reported"
	grep -q '^  p3 batch=100000 seed=2: missing: never started' report.txt || fail "point 3 not reported missing"
	expect_eq "report.csv statuses" "failed missing ok ok" \
		"$(awk -F, 'NR > 1 {print $5}' "sweep-$id/report.csv" | sort | xargs)"
}

# REQUEUE_ENV: a run of about half a minute of training, bit-identical when resumed at the same world size.
REQUEUE_ENV=(TRAIN_DATA=synthetic "TRAIN_LAYERS=784,512,512,10" TRAIN_BATCH=64 TRAIN_EPOCHS=1000
	TRAIN_MAX_STEPS=12000 TRAIN_MAX_REQUEUES=3 "TRAIN_EXTRA=--synthetic-samples 4096,512 --log-every 2000")

# Two trainings of 12000 steps (the interrupted one and its reference) share the node's 2 cores:
# on a loaded machine they take minutes, so the job waits and the runner allow for that.
# shellcheck disable=SC2034 # read by run-tests.sh, as timeout_$test
timeout_test_requeue_checkpoints_requeues_and_resumes_to_the_same_weights=480
test_requeue_checkpoints_requeues_and_resumes_to_the_same_weights() {
	local ref id restarts
	# The uninterrupted run of the same configuration, at the same time.
	ref=$(env "${REQUEUE_ENV[@]}" TRAIN_SUMMARY="$PWD/ref.json" TRAIN_CKPT_DIR="$PWD/ref-ckpt" \
		sbatch --parsable -N1 --gres=gpu:1 --mem=500M --time=10 --output=ref.out "$TEMPLATES/requeue.sh")
	# --time=1 with B:USR1@50: slurmctld sends the signal at its first time-limit check (every
	# ~30 s), so within the first half minute.
	id=$(env "${REQUEUE_ENV[@]}" TRAIN_SUMMARY="$PWD/run.json" \
		sbatch --parsable -N1 --gres=gpu:1 --mem=500M --time=1 --signal=B:USR1@50 --output=run.out \
		"$TEMPLATES/requeue.sh")
	# Once requeued (it starts again when its old credential expired: cred_expire=10 on the test
	# cluster), give the resumed run room to finish rather than being signalled again at once:
	# stop watching at the first requeue, pending or already running again.
	restarts=$(requeue_wait "$id" 90)
	cat run.out
	[ "${restarts:-0}" -ge 1 ] || fail "job $id was not requeued (did it finish before the signal? raise TRAIN_MAX_STEPS)"
	scontrol update JobId="$id" TimeLimit=10
	expect_eq "resumed job state" COMPLETED "$(job_wait "$id" 300)"
	expect_eq "reference job state" COMPLETED "$(job_wait "$ref" 120)"
	cat run.out
	grep -q '^checkpointed in .*: requeueing job' run.out || fail "run 1 did not checkpoint and requeue"
	grep -q "^job $id run 2 (requeued 1 of at most 3 times)" run.out || fail "no second run with SLURM_RESTART_COUNT=1"
	grep -q 'train-mlp: resumed from .*/checkpoints/'"$id"'/step-' run.out || fail "run 2 did not resume from the checkpoint"
	grep -q '^done after 1 requeue(s)' run.out || fail "run 2 did not finish"
	local crc_ref crc_run
	crc_ref=$(sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' ref.json)
	crc_run=$(sed -n 's/.*"weights_crc32": "\([0-9a-f]*\)".*/\1/p' run.json)
	[ -n "$crc_ref" ] || fail "the reference run wrote no weights checksum"
	expect_eq "final weights checksum, interrupted vs uninterrupted" "$crc_ref" "$crc_run"
	expect_eq "steps" 12000 "$(sed -n 's/.*"steps": \([0-9]*\).*/\1/p' run.json)"
}

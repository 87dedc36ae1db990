# t_signals.sh — the checkpoint signal under proctrack/cgroup: Slurm itself signals only each task's
# direct child; with --train-topo the plugin's relay makes every training process see it, whether
# the trainer is the task, a shell's child, or in a new session, and from the batch step.

TRAINER=$TT_SRCDIR/tests/cluster/bin/fake-trainer.sh

# count PATTERN: files in the current directory matching the glob.
count() { compgen -G "$1" | wc -l; }

# wait_count PATTERN N [SECONDS]
wait_count() {
	local deadline=$((SECONDS + ${3:-30}))
	while [ $SECONDS -lt $deadline ]; do
		[ "$(count "$1")" -ge "$2" ] && return 0
		sleep 0.2
	done
	echo "only $(count "$1") of $2 files match $1" >&2
	return 1
}

job_id_by_name() { squeue -h -n "$1" -o %i | head -n1; }

# signal_case NAME MODE COMMAND...: 2 nodes x 2 tasks run COMMAND, scancel --signal=USR1 once all
# four trainers are ready; prints how many trainers saw it.
signal_case() {
	local name=$1 mode=$2 id
	shift 2
	srun -J "ttest-$name" -N2 --ntasks-per-node=2 --train-topo="$mode" "$@" >srun.out 2>&1 &
	local srun_pid=$!
	wait_count 'ready.*' 4 30 || return 1
	id=$(job_id_by_name "ttest-$name")
	scancel --signal=USR1 "$id"
	sleep 2
	touch stop
	wait "$srun_pid" || true
	count 'ckpt.*'
}

test_signal_scancel_reaches_trainer_started_directly() {
	expect_eq "trainers that saw USR1" 4 "$(signal_case direct env "$TRAINER" "$PWD" 60)"
	expect_eq "one signal each" 4 "$(cat ckpt.* | wc -l)"
}

test_signal_scancel_reaches_trainer_under_a_shell() {
	expect_eq "trainers that saw USR1" 4 \
		"$(signal_case shell env bash -c '"$0" "$1" 60; echo shell-done' "$TRAINER" "$PWD")"
	expect_eq "the shell survived and finished" 4 "$(grep -c shell-done srun.out)"
}

test_signal_scancel_reaches_trainer_in_new_session() {
	expect_eq "trainers that saw USR1" 4 \
		"$(signal_case setsid env bash -c 'setsid "$0" "$1" 60 & wait' "$TRAINER" "$PWD")"
}

# The control: without the relay, proctrack/cgroup keeps the signal from a shell's child.
test_signal_without_plugin_does_not_reach_shell_child() {
	expect_eq "trainers that saw USR1 without the relay" 0 \
		"$(signal_case control off bash -c '"$0" "$1" 60; echo shell-done' "$TRAINER" "$PWD")"
}

# The signal matrix inside batch jobs: how the signal is sent x how the trainer is started.
# matrix_case HOW LAUNCH
#   HOW:    scancel (scancel --signal=USR1), scancel_batch (scancel --batch --signal=USR1),
#           time_step (--signal=USR1@50), time_batch (--signal=B:USR1@50); with --time=1 the
#           timed signals come 10-40 s in (slurmctld checks about every 30 s)
#   LAUNCH: direct (srun starts the trainer), shell (a shell's child), train_run (2 workers/node)
# submit_signal_job HOW: submits ./job.sh on 2 nodes (the timed signals of HOW as sbatch
# options) and prints its id. send_signal HOW ID: the scancel of HOW (the timed ones send none).
submit_signal_job() {
	local sbatch_args=()
	case $1 in
	time_step) sbatch_args=(--time=1 --signal=USR1@50) ;;
	time_batch) sbatch_args=(--time=1 --signal=B:USR1@50) ;;
	esac
	sbatch --parsable --output=out.txt -N2 --gres=gpu:2 --train-topo=env "${sbatch_args[@]}" job.sh
}

send_signal() {
	case $1 in
	scancel) scancel --signal=USR1 "$2" ;;
	scancel_batch) scancel --batch --signal=USR1 "$2" ;;
	esac
}

matrix_case() {
	local how=$1 launch=$2 n=2 id step
	case $launch in
	direct) step="srun --ntasks-per-node=1 '$TRAINER' '$PWD' 100" ;;
	shell) step="srun --ntasks-per-node=1 bash -c '\"\$0\" \"\$1\" 100; echo shell-done' '$TRAINER' '$PWD'" ;;
	train_run) step="srun --ntasks-per-node=1 --gres=gpu:2 train-run -- '$TRAINER' '$PWD' 100"; n=4 ;;
	esac
	printf '#!/bin/bash\n%s &\nwait\n' "$step" >job.sh
	id=$(submit_signal_job "$how")
	wait_count 'ready.*' "$n" 30 || { cat out.txt; return 1; }
	send_signal "$how" "$id"
	wait_count 'ckpt.*' "$n" 60 || { cat out.txt; return 1; }
	sleep 1
	touch stop
	expect_eq "job state" COMPLETED "$(job_wait "$id" 60)"
	expect_eq "trainers that saw USR1" "$n" "$(count 'ckpt.*')"
	[ "$launch" != shell ] || expect_eq "the shells survived" 2 "$(grep -c shell-done out.txt)"
}

for how in scancel scancel_batch time_step time_batch; do
	for launch in direct shell train_run; do
		eval "test_signal_matrix_${how}_${launch}() { matrix_case $how $launch; }"
	done
done

# The same matrix with the real trainer: train-mlp ranks agree on one step, write one consistent
# checkpoint (every rank's shard + metadata) and exit 99 (--on-signal checkpoint-exit).
trainer_case() {
	local how=$1 launch=$2 n=2 id step
	local cmd="train-mlp --layers 64,64,10 --data synthetic --synthetic-samples 4096,256 --batch 64 --epochs 100000 --log-every 20 --ckpt-dir '$PWD/ckpt'"
	case $launch in
	direct) step="srun --ntasks-per-node=1 $cmd" ;;
	shell) step="srun --ntasks-per-node=1 bash -c \"$cmd; echo shell-done \\\$?\"" ;;
	train_run) step="srun --ntasks-per-node=1 --gres=gpu:2 train-run -- $cmd"; n=4 ;;
	esac
	printf '#!/bin/bash\n%s &\nwait $!\necho "step exit $?"\n' "$step" >job.sh
	id=$(submit_signal_job "$how")
	local deadline=$((SECONDS + 30))
	while ! grep -q ' step 20/' out.txt 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	grep -q ' step 20/' out.txt || { cat out.txt; fail "training did not start"; }
	send_signal "$how" "$id"
	expect_eq "job state" COMPLETED "$(job_wait "$id" 90)"
	cat out.txt | tail -n 8
	if [ "$launch" = shell ]; then
		expect_eq "every trainer exited 99 and its shell went on" 2 "$(grep -c '^shell-done 99$' out.txt)"
	else
		expect_eq "the step's exit status" "step exit 99" "$(grep '^step exit' out.txt)"
	fi
	expect_eq "one checkpoint" 1 "$(ls -d ckpt/step-* | wc -l)"
	expect_match "of all $n ranks" "world $n" "$(cat ckpt/step-*/meta.txt)"
	expect_eq "every rank's shard" "$n" "$(ls ckpt/step-*/rank-*.bin | wc -l)"
}

for how in scancel scancel_batch time_step time_batch; do
	for launch in direct shell train_run; do
		eval "test_signal_trainer_${how}_${launch}() { trainer_case $how $launch; }"
	done
done

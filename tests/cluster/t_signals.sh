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
	srun -J "$name" -N2 --ntasks-per-node=2 --train-topo="$mode" "$@" >srun.out 2>&1 &
	local srun_pid=$!
	wait_count 'ready.*' 4 30 || return 1
	id=$(job_id_by_name "$name")
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

test_signal_scancel_batch_reaches_steps() {
	cat >job.sh <<JOB
#!/bin/bash
srun --ntasks-per-node=2 bash -c '"\$0" "\$1" 60; echo shell-done' "$TRAINER" "$PWD" &
wait
JOB
	local id
	id=$(sbatch --parsable --output=out.txt -N2 --ntasks-per-node=2 --train-topo=env job.sh)
	wait_count 'ready.*' 4 30 || { cat out.txt; return 1; }
	scancel --batch --signal=USR1 "$id"
	wait_count 'ckpt.*' 4 20 || { cat out.txt; return 1; }
	touch stop
	expect_eq "job state" COMPLETED "$(job_wait "$id" 60)"
	expect_eq "trainers that saw USR1" 4 "$(count 'ckpt.*')"
}

test_signal_time_limit_B_usr1_reaches_steps() {
	cat >job.sh <<JOB
#!/bin/bash
srun --ntasks-per-node=1 "$TRAINER" "$PWD" 100 &
wait
JOB
	local id
	# --time=1 with B:USR1@50: the signal comes 10-40 s in (slurmctld checks every ~30 s).
	id=$(sbatch --parsable --output=out.txt -N2 --time=1 --signal=B:USR1@50 --train-topo=env job.sh)
	wait_count 'ready.*' 2 30 || { cat out.txt; return 1; }
	wait_count 'ckpt.*' 2 60 || { cat out.txt; return 1; }
	touch stop
	expect_eq "job state" COMPLETED "$(job_wait "$id" 60)"
}

test_signal_time_limit_usr1_reaches_steps() {
	cat >job.sh <<JOB
#!/bin/bash
srun --ntasks-per-node=1 bash -c '"\$0" "\$1" 100; echo shell-done' "$TRAINER" "$PWD" &
wait
JOB
	local id
	# Without B: Slurm signals the steps' tasks (only their direct child under proctrack/cgroup).
	id=$(sbatch --parsable --output=out.txt -N2 --time=1 --signal=USR1@50 --train-topo=env job.sh)
	wait_count 'ready.*' 2 30 || { cat out.txt; return 1; }
	wait_count 'ckpt.*' 2 60 || { cat out.txt; return 1; }
	touch stop
	expect_eq "job state" COMPLETED "$(job_wait "$id" 60)"
	expect_eq "the shells survived" 2 "$(grep -c shell-done out.txt)"
}

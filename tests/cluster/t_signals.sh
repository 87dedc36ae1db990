# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_signals.sh — the checkpoint signal under proctrack/cgroup: Slurm itself signals only each task's
# direct child; with --train-topo the plugin's relay makes every training process see it exactly
# once, whether the trainer is the task, a shell's child, a train-run or torchrun worker, or in a
# new session, and from the batch step. Deliveries are counted (fake-trainer.sh appends a line per
# delivery), so a double delivery fails as surely as a missing one.

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
# four trainers are ready, stop them once every trainer saw it; prints the trainers' delivery
# counts ("1" when each saw it exactly once).
signal_case() {
	local name=$1 mode=$2 id
	shift 2
	srun -J "ttest-$name" -N2 --ntasks-per-node=2 --train-topo="$mode" "$@" >srun.out 2>&1 &
	local srun_pid=$!
	wait_count 'ready.*' 4 30 || return 1
	id=$(job_id_by_name "ttest-$name")
	scancel --signal=USR1 "$id" || fail "scancel --signal=USR1 $id failed"
	wait_count 'ckpt.*' 4 30 || true
	touch stop
	wait "$srun_pid" || { cat srun.out >&2; fail "srun failed after the signal"; }
	[ "$(count 'ckpt.*')" -eq 4 ] || { echo "$(count 'ckpt.*') of 4 trainers saw USR1" >&2; return 1; }
	deliveries 'ckpt.*'
}

test_signal_scancel_reaches_trainer_started_directly() {
	expect_eq "USR1 deliveries per trainer" 1 "$(signal_case direct env "$TRAINER" "$PWD" 60)"
}

test_signal_scancel_reaches_trainer_under_a_shell() {
	expect_eq "USR1 deliveries per trainer" 1 \
		"$(signal_case shell env bash -c '"$0" "$1" 60; echo shell-done' "$TRAINER" "$PWD")"
	expect_eq "the shell survived and finished" 4 "$(grep -c shell-done srun.out)"
}

test_signal_scancel_reaches_trainer_in_new_session() {
	expect_eq "USR1 deliveries per trainer" 1 \
		"$(signal_case setsid env bash -c 'setsid "$0" "$1" 60 & wait' "$TRAINER" "$PWD")"
}

# The control: without the relay, proctrack/cgroup keeps the signal from a shell's child. The
# shell itself handles USR1 and records it, so the test knows the signal was delivered (Slurm
# reached each task's direct child) before it looks at the child, which must have seen nothing.
test_signal_without_plugin_does_not_reach_shell_child() {
	local id srun_pid
	srun -J ttest-control -N2 --ntasks-per-node=2 --train-topo=off bash -c \
		'trap "echo >>\"$1/shell-got.$(hostname).$$\"" USR1; "$0" "$1" 60 & child=$!
		 while ! wait $child; do :; done; echo shell-done' "$TRAINER" "$PWD" >srun.out 2>&1 &
	srun_pid=$!
	wait_count 'ready.*' 4 30 || return 1
	id=$(job_id_by_name ttest-control)
	scancel --signal=USR1 "$id" || fail "scancel --signal=USR1 $id failed"
	wait_count 'shell-got.*' 4 30 || fail "the shells (the tasks' direct children) never got USR1"
	touch stop
	wait "$srun_pid" || { cat srun.out; fail "srun failed"; }
	expect_eq "USR1 deliveries per shell (Slurm's own delivery)" 1 "$(deliveries 'shell-got.*')"
	expect_eq "trainers under a shell that saw USR1 without the relay" 0 "$(count 'ckpt.*')"
	expect_eq "the shells went on" 4 "$(grep -c shell-done srun.out)"
}

# The delivery matrix inside batch jobs: how the signal is sent x how the trainers start, every
# cell one step of the same job, the four ways of sending four concurrent jobs.
#   HOW:    scancel (scancel --signal=USR1: the steps), scancel_batch (scancel --batch
#           --signal=USR1), time_step (--signal=USR1@120), time_batch (--signal=B:USR1@120);
#           with --time=3 the timed signals come 60-90 s in (slurmctld checks about every 30 s),
#           after every trainer is up even when torchrun's Python start takes half a minute on a
#           loaded 2-core machine (a signal before a trainer handles it kills that step)
#   LAUNCH: direct (srun starts the trainer), shell (a shell's child), train_run (2 workers per
#           node), torchrun (python3 -m torch.distributed.run, 2 workers per node, each in a new
#           session), setsid (a shell's child in a new session)
MATRIX_HOWS="scancel scancel_batch time_step time_batch"
MATRIX_LAUNCHES="direct shell train_run torchrun setsid"

# matrix_trainers LAUNCH: the trainer processes of that step on 2 nodes.
matrix_trainers() { case $1 in train_run | torchrun) echo 4 ;; *) echo 2 ;; esac; }

# matrix_step LAUNCH DIR PORT: the srun line of one cell (torchrun's store listens on PORT).
matrix_step() {
	local launch=$1 dir=$2 port=$3 srun="srun --overlap --ntasks-per-node=1"
	case $launch in
	direct) echo "$srun '$TRAINER' '$dir' 150" ;;
	shell) echo "$srun bash -c '\"\$0\" \"\$1\" 150; echo shell-done' '$TRAINER' '$dir'" ;;
	train_run) echo "$srun --gres=gpu:2 train-run -- '$TRAINER' '$dir' 150" ;;
	# -r/-t 0:2: Debian's torch 1.13 under Python 3.11 fails on the default '0' (IntFlag).
	torchrun) echo "$srun /usr/bin/python3 -m torch.distributed.run --nnodes 1 --nproc_per_node 2" \
		"--master_addr 127.0.0.1 --master_port $port -r 0:2 -t 0:2 --no_python '$TRAINER' '$dir' 150" ;;
	setsid) echo "$srun bash -c 'setsid \"\$0\" \"\$1\" 150 & wait' '$TRAINER' '$dir'" ;;
	esac
}

# matrix_job HOW PORT: writes HOW/job.sh, submits it, prints the job id.
matrix_job() {
	local how=$1 port=$2 launch sbatch_args=()
	mkdir -p "$how"
	{
		echo '#!/bin/bash'
		for launch in $MATRIX_LAUNCHES; do
			mkdir -p "$how/$launch"
			echo "$(matrix_step "$launch" "$PWD/$how/$launch" "$port") &"
			echo "pid_$launch=\$!"
		done
		for launch in $MATRIX_LAUNCHES; do
			echo "wait \$pid_$launch; echo \"step $launch exit \$?\""
		done
	} >"$how/job.sh"
	case $how in
	time_step) sbatch_args=(--time=3 --signal=USR1@120) ;;
	time_batch) sbatch_args=(--time=3 --signal=B:USR1@120) ;;
	esac
	sbatch --parsable -J "ttest-matrix-$how" --output="$PWD/$how/out.txt" -N2 --ntasks-per-node=1 \
		--gres=gpu:2 --train-topo=env "${sbatch_args[@]}" "$how/job.sh"
}

# matrix_total: trainers in all steps of one job.
matrix_total() {
	local launch n=0
	for launch in $MATRIX_LAUNCHES; do n=$((n + $(matrix_trainers "$launch"))); done
	echo $n
}

# The timed signals come 60-90 s in; the whole matrix takes about two minutes.
# shellcheck disable=SC2034 # read by run-tests.sh, as timeout_$test
timeout_test_signal_matrix_exactly_once=300
test_signal_matrix_exactly_once() {
	local how launch port=29410 total id ids=() deadline
	command -v /usr/bin/python3 >/dev/null && /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null ||
		skip "the torchrun column needs Debian's python3-torch (scripts/install-deps.sh installs it)"
	total=$(matrix_total)
	for how in $MATRIX_HOWS; do
		ids+=("$(matrix_job "$how" "$port")")	# one torchrun store port per job
		port=$((port + 1))
	done
	echo "jobs: ${ids[*]}"
	# Every trainer of every job handles USR1 before anything is sent.
	for how in $MATRIX_HOWS; do
		wait_count "$how/*/ready.*" "$total" 90 || { cat "$how/out.txt"; fail "$how: trainers did not start"; }
	done
	set -- "${ids[@]}"
	for how in $MATRIX_HOWS; do
		id=$1
		shift
		case $how in
		scancel) scancel --signal=USR1 "$id" || fail "scancel --signal=USR1 $id failed" ;;
		scancel_batch) scancel --batch --signal=USR1 "$id" || fail "scancel --batch --signal=USR1 $id failed" ;;
		esac
	done
	# Each trainer appends a line when the signal arrives; once every one of a job has, it is
	# told to stop (a second delivery comes within milliseconds of the first, well before).
	deadline=$((SECONDS + 100))
	for how in $MATRIX_HOWS; do
		wait_count "$how/*/ckpt.*" "$total" $((deadline - SECONDS)) || echo "$how: not every trainer saw USR1" >&2
		for launch in $MATRIX_LAUNCHES; do touch "$how/$launch/stop"; done
	done
	set -- "${ids[@]}"
	for how in $MATRIX_HOWS; do
		expect_eq "$how: job state" COMPLETED "$(job_wait "$1" 60)"
		shift
	done
	# The matrix: deliveries per trainer in each cell (1 = each exactly once).
	printf '%-14s' "deliveries"; printf ' %-10s' $MATRIX_LAUNCHES; echo
	for how in $MATRIX_HOWS; do
		printf '%-14s' "$how"
		for launch in $MATRIX_LAUNCHES; do
			printf ' %-10s' "$(deliveries "$how/$launch/ckpt.*")/$(count "$how/$launch/ckpt.*")"
		done
		echo
	done
	for how in $MATRIX_HOWS; do
		for launch in $MATRIX_LAUNCHES; do
			expect_eq "$how x $launch: trainers that saw USR1" "$(matrix_trainers "$launch")" \
				"$(count "$how/$launch/ckpt.*")"
			expect_eq "$how x $launch: deliveries per trainer" 1 "$(deliveries "$how/$launch/ckpt.*")"
			# Nothing that does not handle USR1 died of it: shells, torchrun's agent, train-run.
			expect_eq "$how x $launch: step exit status" "step $launch exit 0" \
				"$(grep "^step $launch exit" "$how/out.txt")"
		done
		expect_eq "$how: the shells survived" 2 "$(grep -c shell-done "$how/out.txt")"
	done
}

# submit_signal_job HOW: submits ./job.sh on 2 nodes (the timed signals of HOW as sbatch options,
# due 30 s in: a signal that comes before the step runs reaches no trainer, and a loaded machine
# once took over 10 s to start one, the lead this had before) and prints its id. send_signal HOW ID: the scancel of HOW (the timed ones
# send none).
submit_signal_job() {
	local sbatch_args=()
	case $1 in
	time_step) sbatch_args=(--time=2 --signal=USR1@90) ;;
	time_batch) sbatch_args=(--time=2 --signal=B:USR1@90) ;;
	esac
	sbatch --parsable --output=out.txt -N2 --gres=gpu:2 --train-topo=env "${sbatch_args[@]}" job.sh
}

send_signal() {
	case $1 in
	scancel) scancel --signal=USR1 "$2" || fail "scancel --signal=USR1 $2 failed" ;;
	scancel_batch) scancel --batch --signal=USR1 "$2" || fail "scancel --batch --signal=USR1 $2 failed" ;;
	esac
}

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
	# Until training runs (a loaded machine took over 30 s to get there once). A timed signal may
	# come first (30 s in or later): then the job ends on it, and the checks below judge the checkpoint.
	local deadline=$((SECONDS + 60))
	while ! grep -q ' step 20/' out.txt 2>/dev/null && [ $SECONDS -lt $deadline ] &&
		[ -n "$(squeue -h -j "$id")" ]; do sleep 0.2; done
	grep -q ' step [0-9]*/' out.txt || { cat out.txt; fail "training did not start"; }
	send_signal "$how" "$id"
	expect_eq "job state" COMPLETED "$(job_wait "$id" 90)"
	cat out.txt | tail -n 8
	if [ "$launch" = shell ]; then
		expect_eq "every trainer exited 99 and its shell went on" 2 "$(grep -c '^shell-done 99$' out.txt)"
	elif [ "$launch" = train_run ]; then
		# train-run takes the workers' TRAIN_TOPO_CKPT_EXIT (99) for a clean stop
		expect_eq "the step's exit status" "step exit 0" "$(grep '^step exit' out.txt)"
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

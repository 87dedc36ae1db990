# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_contract.sh — the plugin's env contract against oracles computed here, not taken from the
# code: MASTER_PORT against train_topo(8)'s formula in shell arithmetic (srun steps, the steps of a
# batch job, train-run in the batch step, a site port_range), equal in every task of a step, on
# the 4-node cluster that scripts/test.sh brings up without reserved ports; MASTER_ADDR against
# scontrol's first host of the step; OMP_NUM_THREADS against the CPUs each task may run on
# (Cpus_allowed_list and nproc inside the task), with one node's steps confined to a single CPU
# and with --cpus-per-task=3.

# documented_port JOB STEP [LO HI]: train_topo(8), PORTS: slot = ((job * 2654435769) mod 2^32) *
# span / 2^32, MASTER_PORT = LO + (slot + step) mod span, the step id read as signed 32-bit.
documented_port() {
	local job=$1 step=$2 lo=${3:-29500} hi=${4:-32499} span slot off
	span=$((hi - lo + 1))
	[ "$step" -lt 2147483648 ] || step=$((step - 4294967296))
	slot=$((((job * 2654435769) % 4294967296) * span / 4294967296))
	off=$(((slot + step) % span))
	[ "$off" -ge 0 ] || off=$((off + span))
	echo $((lo + off))
}

# no_reserved_ports: skips unless the cluster runs without MpiParams=ports.
no_reserved_ports() {
	if scontrol show config | grep -q '^MpiParams *= *ports'; then
		skip "the cluster reserves ports (MpiParams=ports), so the formula is not used: bring it up with cluster.sh up --no-resv-ports (scripts/test.sh's 4-node pass does)"
	fi
}

# ports_ok OUT WHAT [LO HI]: every line of OUT is "JOB STEP RESV PORT"; one step per file, no
# reserved ports, one port in every task, and that port is the documented one.
ports_ok() {
	cat "$1"
	local job step port
	expect_eq "$2: reserved ports" none "$(awk '{print $3}' "$1" | sort -u)"
	expect_eq "$2: one step" 1 "$(awk '{print $1, $2}' "$1" | sort -u | wc -l)"
	expect_eq "$2: one MASTER_PORT in every task" 1 "$(awk '{print $4}' "$1" | sort -u | wc -l)"
	read -r job step _ port <"$1"
	expect_eq "$2: MASTER_PORT of job $job step $step" "$(documented_port "$job" "$step" "${3:-29500}" "${4:-32499}")" "$port"
}

test_n4_master_port_is_the_documented_formula() {
	no_reserved_ports
	local line='echo "$SLURM_JOB_ID ${SLURM_STEP_ID:-4294967291} ${SLURM_STEP_RESV_PORTS:-none} $MASTER_PORT"'
	srun -N4 --ntasks-per-node=2 --train-topo=env bash -c "$line" >srun.txt
	expect_eq "tasks" 8 "$(wc -l <srun.txt)"
	ports_ok srun.txt "srun -N4 --ntasks-per-node=2"

	# Three steps of a batch job (ids 0, 1, 2) and train-run started by the batch script itself:
	# the batch step, 0xfffffffb, which the formula reads as -5.
	cat >job.sh <<JOB
#!/bin/bash
for i in 0 1 2; do srun -N4 --ntasks-per-node=1 bash -c '$line' >step\$i.txt; done
train-run --nproc-per-node 3 -- bash -c '$line' >batch.txt
JOB
	sbatch_wait job.out -N4 --train-topo=env job.sh
	local i
	for i in 0 1 2; do
		expect_eq "step $i: its step id" "$i" "$(awk '{print $2}' step$i.txt | sort -u)"
		ports_ok step$i.txt "batch job, step $i"
	done
	expect_eq "train-run's workers in the batch step" 3 "$(wc -l <batch.txt)"
	ports_ok batch.txt "train-run in the batch step"
}

test_n4_master_port_formula_in_a_site_port_range() {
	no_reserved_ports
	"$TT_SRCDIR/tests/cluster/cluster.sh" plugin --args "port_range=40000-40009" >/dev/null
	trap '"$TT_SRCDIR/tests/cluster/cluster.sh" plugin --args "" >/dev/null' EXIT
	srun -N4 --ntasks-per-node=1 --train-topo=env bash -c \
		'echo "$SLURM_JOB_ID $SLURM_STEP_ID ${SLURM_STEP_RESV_PORTS:-none} $MASTER_PORT"' >srun.txt
	ports_ok srun.txt "port_range=40000-40009" 40000 40009
}

# MASTER_ADDR is the first host of the step's nodelist, which is not the job's first host here.
test_plugin_master_addr_is_the_steps_first_host() {
	cat >job.sh <<'JOB'
#!/bin/bash
srun -N1 -w node2 --train-topo=env bash -c 'echo "$MASTER_ADDR $(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n1)"'
srun -N2 --ntasks-per-node=1 --train-topo=env bash -c 'echo "$MASTER_ADDR $(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n1)"'
JOB
	sbatch_wait out.txt -N2 job.sh
	cat out.txt
	expect_eq "MASTER_ADDR of a step on node2 alone, and of one on both nodes (scontrol's first host)" \
		"node1 node1|node1 node1|node2 node2" "$(sort out.txt | paste -sd'|')"
}

# cpus_in LIST: how many CPUs a list like "0-3,6" names.
cpus_in() {
	local n=0 r parts
	IFS=, read -ra parts <<<"$1"
	for r in "${parts[@]}"; do
		if [[ $r == *-* ]]; then n=$((n + ${r#*-} - ${r%-*} + 1)); else n=$((n + 1)); fi
	done
	echo "$n"
}

# omp_ok OUT: in every line "HOST omp=N nproc=N allowed=LIST", OMP_NUM_THREADS is the number of
# CPUs in the task's Cpus_allowed_list, and nproc (without OMP_* in its env) agrees.
omp_ok() {
	cat "$1"
	local host omp nproc allowed
	while read -r host omp nproc allowed _; do
		expect_eq "$host: nproc = Cpus_allowed_list ${allowed#allowed=}" "$(cpus_in "${allowed#allowed=}")" "${nproc#nproc=}"
		expect_eq "$host: OMP_NUM_THREADS = the task's CPUs (${allowed#allowed=})" "${nproc#nproc=}" "${omp#omp=}"
	done <"$1"
}

test_plugin_omp_num_threads_is_the_tasks_cpus() {
	[ "$(nproc --all)" -ge 2 ] || skip "one CPU on this machine: a step confined to one CPU would not differ"
	local pidfile=$TT_CLUSTER_DIR/run/slurmd-node1.pid all
	all=$(taskset -pc "$(cat "$pidfile")" | sed 's/.*: //')
	# node1's slurmd, hence its new steps and tasks, runs on CPU 0 only (run-tests.sh restores it).
	taskset -a -pc 0 "$(cat "$pidfile")" >/dev/null
	trap 'taskset -a -pc "'"$all"'" "$(cat "'"$pidfile"'")" >/dev/null' EXIT
	local report='echo "$(hostname) omp=$OMP_NUM_THREADS nproc=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc) allowed=$(sed -n "s/^Cpus_allowed_list:\t//p" /proc/self/status) cpt=${SLURM_CPUS_PER_TASK:-none}"'
	srun -N2 --ntasks-per-node=2 --train-topo=env bash -c "$report" | sort >out.txt
	expect_eq "tasks" 4 "$(wc -l <out.txt)"
	omp_ok out.txt
	expect_eq "node1's tasks confined to CPU 0" "node1 omp=1 nproc=1 allowed=0 cpt=none" "$(grep '^node1 ' out.txt | sort -u)"
	# Slurm binds nothing here (no task/affinity), so the plugin shares node2's CPUs out among its
	# two tasks (train_topo(8), CPUS): disjoint sets that together are all of them.
	expect_eq "node2's tasks share out all its CPUs ($all)" "$(cpus_in "$all")" \
		"$(grep '^node2 ' out.txt | sed 's/.* nproc=\([0-9]*\).*/\1/' | awk '{ s += $1 } END { print s }')"
	expect_eq "node2's tasks have disjoint CPU sets" 2 \
		"$(grep '^node2 ' out.txt | sed 's/.*allowed=\([^ ]*\).*/\1/' | sort -u | wc -l)"

	srun -N2 --ntasks-per-node=1 --cpus-per-task=3 --train-topo=env bash -c "$report" | sort >out3.txt
	expect_eq "tasks with --cpus-per-task=3" 2 "$(grep -c ' cpt=3$' out3.txt)"
	omp_ok out3.txt

	OMP_NUM_THREADS=5 srun -N2 --ntasks-per-node=1 --train-topo=env bash -c 'echo "$OMP_NUM_THREADS"' >user.txt
	expect_eq "a user's OMP_NUM_THREADS is kept" "5 5" "$(xargs <user.txt)"
}

# sbatch --train-topo: the batch script gets the job's rendezvous point (its first host by
# scontrol, the batch step's documented port, the job's node count, NODE_RANK 0, no RANK); a step
# inside gets its own values, every task the checkpoint stop's status (TRAIN_TOPO_CKPT_EXIT, the
# user's own winning), and train-run in a step the plugin leaves alone does not take the
# job's port for its rendezvous (TRAIN_TOPO_SET lists it as the batch step's default).
test_plugin_batch_script_gets_the_jobs_rendezvous() {
	cat >job.sh <<'JOB'
#!/bin/bash
echo "batch job=$SLURM_JOB_ID first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n1) nodes=$SLURM_JOB_NUM_NODES MASTER_ADDR=${MASTER_ADDR:-unset} MASTER_PORT=${MASTER_PORT:-unset} NNODES=${NNODES:-unset} NODE_RANK=${NODE_RANK:-unset} RANK=${RANK:-unset} ckpt_exit=${TRAIN_TOPO_CKPT_EXIT:-unset}"
srun -N1 -n1 bash -c 'echo "step first=$(scontrol show hostnames "$SLURM_STEP_NODELIST" | head -n1) MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT NNODES=$NNODES NODE_RANK=$NODE_RANK ckpt_exit=${TRAIN_TOPO_CKPT_EXIT:-unset}"'
TRAIN_TOPO_CKPT_EXIT=42 srun -N1 -n1 bash -c 'echo "own ckpt_exit=$TRAIN_TOPO_CKPT_EXIT"'
srun -N1 -n1 --train-topo=off train-run --nproc-per-node 1 -- bash -c 'echo "off-train-run MASTER_PORT=$MASTER_PORT"'
JOB
	sbatch_wait out.txt -N2 --train-topo=env job.sh || fail "the job failed"
	cat out.txt
	local batch step off job
	batch=$(grep '^batch ' out.txt) step=$(grep '^step ' out.txt) off=$(grep '^off-train-run ' out.txt)
	job=$(field job "$batch")
	expect_eq "batch: MASTER_ADDR is the job's first host" "$(field first "$batch")" "$(field MASTER_ADDR "$batch")"
	expect_eq "batch: MASTER_PORT is the batch step's documented port" "$(documented_port "$job" 4294967291)" \
		"$(field MASTER_PORT "$batch")"
	expect_eq "batch: NNODES is the job's node count" "$(field nodes "$batch")" "$(field NNODES "$batch")"
	expect_eq "batch: NODE_RANK" 0 "$(field NODE_RANK "$batch")"
	expect_eq "batch: no RANK (the script is not a rank)" unset "$(field RANK "$batch")"
	expect_eq "step: its own NNODES" 1 "$(field NNODES "$step")"
	expect_eq "batch and step: the checkpoint stop's status (default)" "99 99" \
		"$(field ckpt_exit "$batch") $(field ckpt_exit "$step")"
	expect_eq "the user's own checkpoint status wins" 42 "$(field ckpt_exit "$(grep '^own ' out.txt)")"
	expect_eq "step: MASTER_ADDR its first host" "$(field first "$step")" "$(field MASTER_ADDR "$step")"
	[ "$(field MASTER_PORT "$step")" != "$(field MASTER_PORT "$batch")" ] || fail "the step kept the job's MASTER_PORT"
	[ -n "$(field MASTER_PORT "$off")" ] || fail "train-run in the plugin-less step gave no MASTER_PORT"
	[ "$(field MASTER_PORT "$off")" != "$(field MASTER_PORT "$batch")" ] ||
		fail "train-run took the job's MASTER_PORT as its step's rendezvous"
}

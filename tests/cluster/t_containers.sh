# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_containers.sh — --train-topo and train-run inside Slurm's OCI containers (srun --container,
# oci.conf running crun; cluster.sh up --oci makes both and the bundle): the same assertions as
# the host cases of t_config.sh, t_launcher.sh, t_pytorch.sh and t_signals.sh, on tasks that run
# in a container of their own (their own mount and PID namespaces, /usr and /etc the host's, bound
# read-only). The tests skip, with the reason, on a cluster without oci.conf, and where crun
# itself cannot run a container on this machine (crun's own error, from a run outside Slurm on a
# node); everything else that goes wrong is a failure.
# Named test_cfg_oci_*: scripts/test.sh runs them on a cluster of their own (up --oci).

OCI_TRAINER=$TT_SRCDIR/tests/cluster/bin/fake-trainer.sh

OCI_BUNDLE=$TT_CLUSTER_DIR/oci/bundle

# oci_ready: skips (called directly, so the runner's set -e ends the test with skip's 77; in a
# command substitution it would not) unless the cluster runs OCI containers with crun and crun
# can run one on node1 outside Slurm (as slurmstepd would, as root in the node's namespaces).
oci_ready() {
	local out
	[ -f "$TT_CLUSTER_DIR/etc/oci.conf" ] && [ -f "$OCI_BUNDLE/config.json" ] ||
		skip "needs Slurm's OCI containers with crun (cluster.sh up --oci)"
	if ! out=$("$TT_SRCDIR/tests/cluster/cluster.sh" exec --node node1 -- crun --cgroup-manager=disabled \
		--root="$TT_CLUSTER_DIR/oci/crun" run --bundle "$OCI_BUNDLE" "ttest-probe-$$" 2>&1); then
		skip "crun cannot run a container on this machine: $(tr '\n' ' ' <<<"$out")"
	fi
}

# The env contract and the topology file, in the container: every task of a 2x2 step keeps the
# contract (t_config.sh's checks, against Slurm's own variables and the fake GPUs the task can
# open), reads NCCL_TOPO_FILE at the path in its environment, which lies in the step's spool
# directory (the node's /tmp is not the container's), nothing warns; and the tasks ran in
# containers: PID 1 of their own PID namespace, a /tmp the node does not see.
test_cfg_oci_env_contract_and_topology_file() {
	local bundle job node
	oci_ready
	with_gpu_topology # the test machines have no NVIDIA GPU: the probe reads the 8-GPU fixture
	bundle=$OCI_BUNDLE
	TT_TMP_MARKER=ttest-oci-marker srun -N2 --ntasks-per-node=2 --gres=gpu:8 --container="$bundle" --train-topo \
		bash -c 'echo "pid=$$ file=${NCCL_TOPO_FILE:-none} job=$SLURM_JOB_ID" >&2; exec "$0"' "$TASK_ENV" \
		>out.txt 2>err.txt || { cat err.txt; fail "the container step failed"; }
	cat err.txt
	contract_ok out.txt 4
	expect_eq "tasks that read NCCL_TOPO_FILE" 4 "$(grep -c ' topo=readable ' out.txt)"
	expect_eq "warnings that NCCL_TOPO_FILE is missing" 0 "$(grep -c 'running without NCCL_TOPO_FILE' err.txt)"
	expect_eq "tasks that are PID 1 of their container" 4 "$(grep -c '^pid=1 ' err.txt)"
	job=$(sed -n 's/.* job=\([0-9]*\)$/\1/p' err.txt | head -n1)
	expect_eq "files in the step's spool directory" 4 "$(grep -c -E \
		"file=$TT_CLUSTER_DIR/spool/node[12]/oci-job$job-0/traintopo\.$job/nccl-topo\.0\.xml " err.txt)"
	expect_eq "tasks that wrote their container's /tmp/ttest-oci-marker" 4 "$(grep -c ' marker=written$' out.txt)"
	for node in node1 node2; do
		if "$TT_SRCDIR/tests/cluster/cluster.sh" exec --node "$node" -- test -e /tmp/ttest-oci-marker; then
			fail "$node: the task's /tmp/ttest-oci-marker is in the node's /tmp: not in a container"
		fi
		# slurmstepd removes it after the tasks' exit reached srun: give it a few seconds.
		local deadline=$((SECONDS + 10))
		while [ -e "$TT_CLUSTER_DIR/spool/$node/oci-job$job-0" ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
		[ ! -e "$TT_CLUSTER_DIR/spool/$node/oci-job$job-0" ] ||
			fail "$node: the step's spool directory (and the topology file in it) outlived the step"
	done
}

# The whole environment table (t_launcher.sh's ENV_TABLE_VARS) of 2 nodes x 8 tasks is the same in
# a container as on the host, topology file compared by content; per step by design: MASTER_PORT
# and NCCL_TOPO_FILE's path.
test_cfg_oci_env_table_same_as_host() {
	local bundle printer=$TT_SRCDIR/tests/cluster/bin/print-env.sh host lr h c v hv cv mismatches=0
	oci_ready
	bundle=$OCI_BUNDLE
	# NCCL_IB_HCA from a multi-NIC node, as t_launcher.sh's table has it.
	set_plugin_args "hwloc_xml=$TT_SRCDIR/tests/fixtures/topo/dual-pcie-8gpu.xml"
	srun -N2 --ntasks-per-node=8 --gres=gpu:8 --train-topo "$printer" | sort >host.txt
	srun -N2 --ntasks-per-node=8 --gres=gpu:8 --train-topo --container="$bundle" "$printer" | sort >oci.txt
	expect_eq "host tasks" 16 "$(wc -l <host.txt)"
	expect_eq "container tasks" 16 "$(wc -l <oci.txt)"
	for host in node1 node2; do
		for lr in 0 1 2 3 4 5 6 7; do
			h=$(grep "^host=$host .* LOCAL_RANK=$lr " host.txt)
			c=$(grep "^host=$host .* LOCAL_RANK=$lr " oci.txt)
			[ -n "$h" ] && [ -n "$c" ] || { fail "$host local rank $lr: missing (host '$h', container '$c')"; continue; }
			for v in $ENV_TABLE_VARS; do
				hv=$(table_field "$v" "$h")
				cv=$(table_field "$v" "$c")
				if [ "$hv" != "$cv" ] || [ "$hv" = unset ]; then
					echo "MISMATCH $host local rank $lr $v: host '$hv', container '$cv'"
					mismatches=$((mismatches + 1))
				fi
			done
		done
	done
	echo "compared: 16 tasks x $(wc -w <<<"$ENV_TABLE_VARS") variables, $mismatches mismatches"
	expect_eq "variables that differ between a host task and a container task" 0 "$mismatches"
	head -n 1 host.txt oci.txt
}

# `srun --container=B --train-topo python3 train.py`: PyTorch's init_process_group(env://) over
# the contract's variables, 2 nodes x 2 tasks, each reading NCCL_TOPO_FILE. /usr/bin/python3:
# Debian's, with python3-torch (the PATH here may name a python3 outside the bundle's binds).
test_cfg_oci_python_trainer_in_container() {
	local bundle
	oci_ready
	with_gpu_topology # the test machines have no NVIDIA GPU: the probe reads the 8-GPU fixture
	bundle=$OCI_BUNDLE
	cat >train.py <<'PY'
import os, socket, torch, torch.distributed as dist
topo = open(os.environ["NCCL_TOPO_FILE"]).read(200)
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "on", socket.gethostname(), "sum", int(t.item()),
      "topo", "<system" in topo, "pid", os.getpid(), flush=True)
dist.destroy_process_group()
PY
	srun -N2 --ntasks-per-node=2 --container="$bundle" --train-topo /usr/bin/python3 "$PWD/train.py" >out.txt
	cat out.txt
	expect_eq "ranks" "0 1 2 3" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "all-reduce of 1+2+3+4 on every rank, topology file read, PID 1" 4 \
		"$(grep -c 'of 4 on node[12] sum 10 topo True pid 1$' out.txt)"
}

# oci_job_secret: the bundle has no home directory, so train-run (its node exchange proves the
# job key) and libtrainrt cannot create ~/.config/trainrt/token there: the job secret comes from
# the environment, as a user gives it to a container without their home (srun passes it on).
oci_job_secret() {
	TRAINRT_TOKEN=$(od -An -tx1 -N24 /dev/urandom | tr -d ' \n')
	export TRAINRT_TOKEN
}

# train-run inside the bundle, one per node: 16 workers, one per GPU (t_launcher.sh's checks).
test_cfg_oci_train_run_in_container() {
	local bundle
	oci_ready
	oci_job_secret
	bundle=$OCI_BUNDLE
	srun -N2 --ntasks-per-node=1 --gres=gpu:8 --container="$bundle" --train-topo train-run -- \
		bash -c "$WORKER_LINE" >out.txt
	check_16_workers
}

# The checkpoint signal reaches each trainer in a container exactly once (t_signals.sh's count):
# the trainer is the container's first process, crun passes the signal on to it, and the relay
# leaves it to crun.
test_cfg_oci_checkpoint_signal_once() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE
	expect_eq "USR1 deliveries per trainer" 1 \
		"$(signal_case oci-direct full --container="$bundle" "$OCI_TRAINER" "$PWD" 60)"
}

# A shell as the container's first process drops what crun passes on (PID 1 ignores a signal it
# has no handler for): the relay reaches the trainer under it instead, once.
test_cfg_oci_checkpoint_signal_once_under_a_shell() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE
	expect_eq "USR1 deliveries per trainer" 1 \
		"$(signal_case oci-shell full --container="$bundle" bash -c '"$0" "$1" 60; echo shell-done' \
			"$OCI_TRAINER" "$PWD")"
	expect_eq "the shells survived and finished" 4 "$(grep -c shell-done srun.out)"
}

# oci_train_run_signal BUNDLE: 16 fake trainers under train-run as the first process of each
# node's container; one scancel --signal=USR1 once all are ready; prints the delivery counts.
oci_train_run_signal() {
	local srun_pid id deadline
	oci_job_secret
	srun -J ttest-oci-sig -N2 --ntasks-per-node=1 --gres=gpu:8 --container="$1" --train-topo \
		train-run -- "$OCI_TRAINER" "$PWD" 60 >srun.out 2>&1 &
	srun_pid=$!
	deadline=$((SECONDS + 40))
	while [ "$(compgen -G 'ready.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	[ "$(compgen -G 'ready.*' | wc -l)" -eq 16 ] || fail "$(compgen -G 'ready.*' | wc -l) of 16 trainers ready"
	id=$(squeue -h -n ttest-oci-sig -o %i | head -n1)
	scancel --signal=USR1 "$id" || fail "scancel --signal=USR1 $id failed"
	deadline=$((SECONDS + 20))
	while [ "$(compgen -G 'ckpt.*' | wc -l)" -lt 16 ] && [ $SECONDS -lt $deadline ]; do sleep 0.2; done
	# A second delivery would come within this.
	sleep 1
	touch stop
	wait "$srun_pid" || { cat srun.out >&2; fail "srun failed after the signal"; }
	[ "$(compgen -G 'ckpt.*' | wc -l)" -eq 16 ] || fail "$(compgen -G 'ckpt.*' | wc -l) of 16 workers saw USR1"
	deliveries 'ckpt.*'
}

# train-run as the container's first process: crun passes the signal on to it, it passes it on to
# its 16 workers (it cannot see the relay from inside the container's PID namespace), once each.
test_cfg_oci_checkpoint_signal_once_under_train_run() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE
	expect_eq "USR1 deliveries per worker" 1 "$(oci_train_run_signal "$bundle")"
}

# The same in a container in the node's PID namespace (as Apptainer and enroot run them): train-run
# sees the relay above it but also crun between them, which passes the signal on to it, so it
# passes it on itself (tt_relay_reaches), and the relay leaves it to crun.
test_cfg_oci_checkpoint_signal_once_under_train_run_in_host_pid_namespace() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE-host-pid
	expect_eq "USR1 deliveries per worker" 1 "$(oci_train_run_signal "$bundle")"
}

# A trainer as the first process of a container in the node's PID namespace: crun passes the
# signal on, the relay leaves it to crun.
test_cfg_oci_checkpoint_signal_once_in_host_pid_namespace() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE-host-pid
	expect_eq "USR1 deliveries per trainer" 1 \
		"$(signal_case oci-host-pid full --container="$bundle" "$OCI_TRAINER" "$PWD" 60)"
}

# What the plugin cannot serve is refused in one line per node, and the step still runs: here the
# step's spool directory is not where Slurm puts it by default (as with oci.conf ContainerPath):
# a bundle path that is not a directory makes Slurm fail the step, so the refusal is shown on a
# step whose SLURM_CONTAINER names a container while oci.conf is absent (--container is then
# only advice, and Slurm makes no spool directory).
test_cfg_oci_missing_spool_directory_refused_in_one_line() {
	local bundle
	oci_ready
	bundle=$OCI_BUNDLE
	SLURM_CONTAINER=$bundle srun -N2 --ntasks-per-node=2 --train-topo "$TASK_ENV" >out.txt 2>err.txt ||
		{ cat err.txt; fail "the step failed"; }
	cat err.txt
	expect_eq "tasks that ran" 4 "$(grep -c '^host=' out.txt)"
	expect_eq "tasks with NCCL_TOPO_FILE" 0 "$(grep -c -v ' topo=none ' out.txt)"
	expect_eq "one warning line per node naming the container and the directory" 2 "$(grep -c -E \
		"train_topo: warning: running without NCCL_TOPO_FILE: the step runs in the OCI container $bundle, which cannot see the node's topo_dir: no OCI spool directory .*/oci-job[0-9]+-0: No such file or directory" err.txt)"
	expect_eq "lines of stderr" 2 "$(wc -l <err.txt)"
}

# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_plugin.sh — the train_topo SPANK plugin on the real cluster: the rank env contract of every
# task, modes, the mode carried from sbatch to its steps, and the NCCL topology file's life, also
# against a second, unprivileged user planting or swapping the job's topology directory.

# env_of_tasks OUT SRUN-ARGS...: one line per task with the contract's variables.
env_of_tasks() {
	local out=$1
	shift
	srun "$@" bash -c 'echo "host=$(hostname) resv=${SLURM_STEP_RESV_PORTS:-none} procid=$SLURM_PROCID localid=$SLURM_LOCALID nodeid=$SLURM_NODEID RANK=$RANK WORLD_SIZE=$WORLD_SIZE LOCAL_RANK=$LOCAL_RANK LOCAL_WORLD_SIZE=$LOCAL_WORLD_SIZE NODE_RANK=$NODE_RANK GROUP_RANK=$GROUP_RANK NNODES=$NNODES MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES OMP_NUM_THREADS=$OMP_NUM_THREADS NCCL_TOPO_FILE=${NCCL_TOPO_FILE:-}"' >"$out"
}

# field NAME LINE
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

test_plugin_env_contract_every_task_2x4() {
	env_of_tasks out.txt -N2 --ntasks-per-node=4 --gres=gpu:8 --train-topo=env
	cat out.txt
	expect_eq "task lines" 8 "$(wc -l <out.txt)"
	expect_eq "ranks" "0 1 2 3 4 5 6 7" "$(sed -n 's/.* RANK=\([0-9]*\) .*/\1/p' out.txt | sort -n | xargs)"
	local l port=""
	while read -r l; do
		expect_eq "RANK = SLURM_PROCID" "$(field procid "$l")" "$(field RANK "$l")"
		expect_eq "LOCAL_RANK = SLURM_LOCALID" "$(field localid "$l")" "$(field LOCAL_RANK "$l")"
		expect_eq "NODE_RANK = SLURM_NODEID" "$(field nodeid "$l")" "$(field NODE_RANK "$l")"
		expect_eq "GROUP_RANK" "$(field NODE_RANK "$l")" "$(field GROUP_RANK "$l")"
		expect_eq "WORLD_SIZE" 8 "$(field WORLD_SIZE "$l")"
		expect_eq "LOCAL_WORLD_SIZE" 4 "$(field LOCAL_WORLD_SIZE "$l")"
		expect_eq "NNODES" 2 "$(field NNODES "$l")"
		expect_eq "MASTER_ADDR" node1 "$(field MASTER_ADDR "$l")"
		expect_match "MASTER_PORT" '^[0-9]+$' "$(field MASTER_PORT "$l")"
		[ -z "$port" ] || expect_eq "same MASTER_PORT everywhere" "$port" "$(field MASTER_PORT "$l")"
		port=$(field MASTER_PORT "$l")
		local lr gpus
		lr=$(field LOCAL_RANK "$l")
		gpus=$(field CUDA_VISIBLE_DEVICES "$l")
		expect_eq "two GPUs for local rank $lr" "$((2 * lr)),$((2 * lr + 1))" "$gpus"
		expect_match "OMP_NUM_THREADS" '^[1-9][0-9]*$' "$(field OMP_NUM_THREADS "$l")"
		expect_eq "no topology file in env mode" "" "$(field NCCL_TOPO_FILE "$l")"
	done <out.txt
	# With MpiParams=ports (as here) Slurm reserves ports for every step and the plugin uses the
	# first one; otherwise the port comes from the formula inside the configured range.
	local resv
	resv=$(field resv "$(head -n1 out.txt)")
	if [ "$resv" != none ]; then
		expect_eq "MASTER_PORT = first reserved port" "${resv%%[-,]*}" "$port"
	else
		[ "$port" -ge 29500 ] && [ "$port" -le 32499 ] || fail "MASTER_PORT $port outside 29500-32499"
	fi
}

test_plugin_uneven_layout_n5_on_2_nodes() {
	env_of_tasks out.txt -N2 -n5 --gres=gpu:8 --train-topo=env
	cat out.txt
	expect_eq "ranks" "0 1 2 3 4" "$(sed -n 's/.* RANK=\([0-9]*\) .*/\1/p' out.txt | sort -n | xargs)"
	local l n0 n1
	n0=$(grep -c 'nodeid=0 ' out.txt)
	n1=$(grep -c 'nodeid=1 ' out.txt)
	expect_eq "tasks per node" "5" "$((n0 + n1))"
	while read -r l; do
		if [ "$(field nodeid "$l")" = 0 ]; then
			expect_eq "LOCAL_WORLD_SIZE node 0" "$n0" "$(field LOCAL_WORLD_SIZE "$l")"
		else
			expect_eq "LOCAL_WORLD_SIZE node 1" "$n1" "$(field LOCAL_WORLD_SIZE "$l")"
		fi
		expect_eq "WORLD_SIZE" 5 "$(field WORLD_SIZE "$l")"
		expect_match "GPUs of rank $(field RANK "$l")" '^[0-7](,[0-7])*$' "$(field CUDA_VISIBLE_DEVICES "$l")"
	done <out.txt
	expect_eq "every task has GPUs" 0 "$(grep -c 'CUDA_VISIBLE_DEVICES= ' out.txt)"
	# GPUs never shared within a node: every CUDA_VISIBLE_DEVICES of a node is disjoint.
	for node in node1 node2; do
		expect_eq "disjoint GPUs on $node" "" \
			"$(grep "host=$node " out.txt | sed -n 's/.*CUDA_VISIBLE_DEVICES=\([^ ]*\).*/\1/p' | tr ',' '\n' | sort | uniq -d)"
	done
}

test_plugin_off_by_default_leaves_env_alone() {
	env_of_tasks out.txt -N2 --ntasks-per-node=2 --gres=gpu:8
	cat out.txt
	expect_eq "no RANK without --train-topo" 0 "$(grep -c 'RANK=[0-9]' out.txt)"
	expect_eq "Slurm's own CUDA_VISIBLE_DEVICES" 4 "$(grep -c 'CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 ' out.txt)"
	env_of_tasks out2.txt -N1 -n1 --train-topo=off
	expect_eq "no RANK with --train-topo=off" 0 "$(grep -c 'RANK=[0-9]' out2.txt)"
}

test_plugin_invalid_mode_fails_before_allocation() {
	local before after rc=0
	before=$(scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p')
	srun -N1 --train-topo=bogus true 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "srun --train-topo=bogus succeeded"
	expect_match "error names the valid modes" "bogus.*(full|env|off)" "$(cat err.txt)"
	rc=0
	sbatch --train-topo=wrong --wrap true 2>err2.txt || rc=$?
	[ "$rc" -ne 0 ] || fail "sbatch --train-topo=wrong succeeded"
	after=$(scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p')
	expect_eq "no job was allocated" "$before" "$after"
}

# A bad TRAIN_TOPO_MODE in the environment is refused like a bad --train-topo: by srun itself,
# before anything is allocated; and when it reaches slurmstepd only (srun --export), every task
# fails with it and srun's status is non-zero (on Slurm 22.05 a plugin init error gave "launch
# failed" and exit 0).
test_plugin_bad_mode_in_environment_fails_the_command() {
	local before after rc=0
	before=$(scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p')
	TRAIN_TOPO_MODE=garbage srun -N1 true 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "TRAIN_TOPO_MODE=garbage srun exited 0"
	expect_match "error names the variable and the modes" "train_topo: TRAIN_TOPO_MODE='garbage'.*full, env or off" "$(cat err.txt)"
	rc=0
	TRAIN_TOPO_MODE=garbage sbatch --wrap true 2>err2.txt || rc=$?
	[ "$rc" -ne 0 ] || fail "TRAIN_TOPO_MODE=garbage sbatch succeeded"
	after=$(scontrol show config | sed -n 's/^NEXT_JOB_ID *= *//p')
	expect_eq "no job was allocated" "$before" "$after"
	rc=0
	srun -N1 -n2 --export=PATH,TRAIN_TOPO_MODE=garbage bash -c 'echo ran' >out.txt 2>err3.txt || rc=$?
	cat err3.txt
	[ "$rc" -ne 0 ] || fail "a bad mode that reached slurmstepd left srun's status 0"
	expect_eq "no task ran" "" "$(cat out.txt)"
	expect_eq "each task names the problem" 2 "$(grep -c "train_topo: error: TRAIN_TOPO_MODE='garbage'" err3.txt)"
}

test_plugin_sbatch_mode_reaches_steps() {
	cat >job.sh <<'JOB'
#!/bin/bash
# --export=NONE: no PATH from the submitter, so programs are named by full path.
srun --ntasks-per-node=1 /bin/bash -c 'echo "step host=$(hostname) RANK=$RANK WORLD_SIZE=$WORLD_SIZE MASTER_ADDR=$MASTER_ADDR mode=$TRAIN_TOPO_MODE"'
srun --ntasks-per-node=1 --train-topo=off /bin/bash -c 'echo "off host=$(hostname) RANK=${RANK:-unset}"'
JOB
	sbatch_wait out.txt --nodes=2 --gres=gpu:8 --train-topo=env --export=NONE job.sh
	cat out.txt
	expect_eq "ranks in the step" "0 1" "$(sed -n 's/^step .* RANK=\([0-9]*\) .*/\1/p' out.txt | sort -n | xargs)"
	expect_eq "WORLD_SIZE" 2 "$(grep -c 'WORLD_SIZE=2 MASTER_ADDR=node1 mode=env$' out.txt)"
	expect_eq "srun --train-topo=off wins" 2 "$(grep -c '^off .* RANK=unset$' out.txt)"
}

test_plugin_sbatch_option_without_value_means_full() {
	with_gpu_topology
	cat >job.sh <<'JOB'
#!/bin/bash
#SBATCH --train-topo
srun --ntasks-per-node=1 bash -c 'echo "RANK=$RANK mode=$TRAIN_TOPO_MODE topo=${NCCL_TOPO_FILE:+yes}"'
JOB
	sbatch_wait out.txt --nodes=2 job.sh
	cat out.txt
	expect_eq "steps in mode full" 2 "$(grep -c -E '^RANK=[01] mode=full topo=yes$' out.txt)"
}

test_plugin_concurrent_steps_get_different_ports() {
	cat >job.sh <<'JOB'
#!/bin/bash
srun -N2 --ntasks-per-node=1 --gres=gpu:4 --exact bash -c 'echo "A $MASTER_PORT"; sleep 2' &
srun -N2 --ntasks-per-node=1 --gres=gpu:4 --exact bash -c 'echo "B $MASTER_PORT"; sleep 2' &
wait
JOB
	sbatch_wait out.txt --nodes=2 --gres=gpu:8 --ntasks-per-node=2 --train-topo=env job.sh
	cat out.txt
	local a b
	a=$(awk '$1 == "A" {print $2}' out.txt | sort -u)
	b=$(awk '$1 == "B" {print $2}' out.txt | sort -u)
	expect_eq "one port per step (A)" 1 "$(echo "$a" | wc -w)"
	expect_eq "one port per step (B)" 1 "$(echo "$b" | wc -w)"
	[ "$a" != "$b" ] || fail "two concurrent steps share MASTER_PORT $a"
}

test_plugin_resv_ports_honoured() {
	srun -N2 --ntasks-per-node=1 --train-topo=env --resv-ports=2 \
		bash -c 'echo "$SLURM_STEP_RESV_PORTS $MASTER_PORT"' >ports.txt
	cat ports.txt
	expect_eq "two tasks" 2 "$(grep -c -E '^[0-9]+[-,][0-9]+ [0-9]+$' ports.txt)"
	local l
	while read -r l; do
		expect_eq "MASTER_PORT = first reserved port" "${l%%[-,]*}" "${l##* }"
	done <ports.txt
}

# set_plugin_args "k=v ...": plugstack.conf arguments for the rest of this test (new steps read
# them); the default line is restored when the test's subshell exits.
set_plugin_args() {
	"$TT_SRCDIR/tests/cluster/cluster.sh" plugin --args "$1" >/dev/null
	trap '"$TT_SRCDIR/tests/cluster/cluster.sh" plugin --args "" >/dev/null' EXIT
}

# with_gpu_topology: the probe reads a fixture's 8-GPU machine (hwloc_xml=), not this one: the test
# machines have no NVIDIA GPU, and on such a node the plugin writes no topology file (below).
with_gpu_topology() {
	set_plugin_args "hwloc_xml=$TT_SRCDIR/tests/fixtures/topo/dual-pcie-8gpu.xml"
}

# A node with no NVIDIA GPU and no RDMA NIC (this machine, probed live) gets no NCCL_TOPO_FILE, not
# an empty one, and one warning per node saying what it has instead; the tasks run.
test_plugin_node_without_nvidia_gpu_gets_no_topology_file() {
	grep -qx 0x10de /sys/bus/pci/devices/*/vendor 2>/dev/null && skip "this machine has an NVIDIA device"
	srun -N2 --ntasks-per-node=2 --gres=gpu:8 --train-topo bash -c 'echo "host=$(hostname) topo=${NCCL_TOPO_FILE-unset}"' >out.txt 2>err.txt ||
		{ cat err.txt; fail "the step failed"; }
	cat out.txt err.txt
	expect_eq "tasks without NCCL_TOPO_FILE" 4 "$(grep -c ' topo=unset$' out.txt)"
	expect_eq "one warning per node saying what it found" 2 \
		"$(grep -c 'train_topo: warning: running without NCCL_TOPO_FILE: .*no NVIDIA GPU and no RDMA NIC' err.txt)"
}

test_plugin_full_mode_writes_topology_file_per_step() {
	with_gpu_topology
	srun -N2 --ntasks-per-node=2 --gres=gpu:8 --train-topo bash -c 'f=$NCCL_TOPO_FILE; d=$(dirname "$f"); echo "host=$(hostname) job=$SLURM_JOB_ID file=$f size=$(stat -c %s "$f") dirmode=$(stat -c %a:%U "$d") head=$(head -c 20 "$f" | tr " " _) ifname=$NCCL_SOCKET_IFNAME"' >out.txt
	cat out.txt
	local job
	job=$(field job "$(head -n1 out.txt)")
	expect_eq "tasks with the file" 4 "$(grep -c "file=/tmp/traintopo.$job/nccl-topo.0.xml size=[1-9]" out.txt)"
	expect_eq "job directory private to the user" 4 "$(grep -c "dirmode=700:$(id -un) " out.txt)"
	expect_eq "NCCL's root element" 4 "$(grep -c 'head=<system_version="1">' out.txt)"
	# The interface of the machine the probe read: the fixture's Ethernet port.
	expect_eq "socket interface of the fixture's machine" 4 "$(grep -c 'ifname==eno1$' out.txt)"
	# removed with the step, on both nodes (each node has its own /tmp)
	for node in node1 node2; do
		expect_eq "no topology directory left on $node" "" \
			"$("$TT_SRCDIR/tests/cluster/cluster.sh" exec --node "$node" -- ls /tmp | grep "traintopo.$job" || true)"
	done
}

test_plugin_hwloc_xml_one_hca_list_per_node() {
	set_plugin_args "hwloc_xml=$TT_SRCDIR/tests/fixtures/topo/dual-pcie-8gpu.xml"
	srun -N1 --ntasks-per-node=8 --gres=gpu:8 --train-topo bash -c 'echo "$LOCAL_RANK $CUDA_VISIBLE_DEVICES $NCCL_IB_HCA $(grep -c "busid=\"0000:13:00.0\"" "$NCCL_TOPO_FILE")"' | sort -n >out.txt
	cat out.txt
	# NCCL_IB_HCA is a filter, not a preference: the node's HCAs for every rank; the GPU-NIC
	# pairing is in the file (GPU 13:00.0 and mlx5_0 below switch 11:00.0).
	expect_eq "every rank: the node's HCAs" 8 "$(grep -c ' =mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1 1$' out.txt)"
	expect_eq "rank 3 has GPU 3" "3 3" "$(sed -n 4p out.txt | cut -d' ' -f1-2)"
	srun -N1 -n1 --train-topo bash -c 'cat "$NCCL_TOPO_FILE"' >topo.xml
	expect_match "GPU 0 and mlx5_0 below their switch's one node" \
		'<pci busid="0000:11:00.0"[^>]*> <pci busid="0000:13:00.0"' "$(tr '\n' ' ' <topo.xml | tr -s ' ')"
}

test_plugin_user_nccl_settings_win() {
	NCCL_IB_HCA=mine NCCL_SOCKET_IFNAME=myif srun -N1 -n1 --train-topo bash -c 'echo "$NCCL_IB_HCA $NCCL_SOCKET_IFNAME"' >out.txt
	expect_eq "user values kept" "mine myif" "$(cat out.txt)"
}

test_plugin_topology_failure_warns_or_fails_in_strict_mode() {
	set_plugin_args "hwloc_xml=/nonexistent/topo.xml"
	srun -N2 --ntasks-per-node=2 --train-topo bash -c 'echo "rank=$RANK topo=${NCCL_TOPO_FILE:-none}"' >out.txt 2>err.txt
	cat out.txt err.txt
	expect_eq "tasks ran with the rank env, without the file" 4 "$(grep -c '^rank=[0-3] topo=none$' out.txt)"
	expect_eq "one warning per node naming the file" 2 "$(grep -c 'train_topo: warning: .*/nonexistent/topo.xml' err.txt)"
	set_plugin_args "hwloc_xml=/nonexistent/topo.xml strict=yes"
	local rc=0
	srun -N1 -n1 --train-topo bash -c 'echo ran' >out2.txt 2>err2.txt || rc=$?
	cat err2.txt
	[ "$rc" -ne 0 ] || fail "strict=yes: the task ran despite the failed topology (srun exit 0)"
	expect_eq "no task output" "" "$(cat out2.txt)"
	expect_match "the task names the failure" "train_topo: error: NCCL topology file \\(strict=yes\\)" "$(cat err2.txt)"
}

# Sites often load SPANK plugins "optional", so that a broken one cannot stop every job; Slurm then
# ignores a hook's error (only a required plugin's fails the task). A task the plugin cannot set up
# as asked must still not run: the same strict=yes failure with the line made optional.
test_plugin_optional_line_still_fails_the_task() {
	set_plugin_args "hwloc_xml=/nonexistent/topo.xml strict=yes"
	local conf=$TT_CLUSTER_DIR/etc/plugstack.conf rc=0
	sed -i 's/^required\([[:space:]].*train_topo\.so\)/optional\1/' "$conf"
	grep -q '^optional[[:space:]].*train_topo\.so' "$conf" || fail "no optional train_topo.so line in $conf: $(cat "$conf")"
	srun -N2 --ntasks-per-node=2 --train-topo bash -c 'echo ran' >out.txt 2>err.txt || rc=$?
	cat err.txt
	expect_eq "srun's exit status (every task exited 1)" 1 "$rc"
	expect_eq "no task output" "" "$(cat out.txt)"
	expect_eq "tasks naming the failure" 4 "$(grep -c 'train_topo: error: NCCL topology file (strict=yes)' err.txt)"
}

# The probe program missing on the nodes (traintopo's commands not installed there): the tasks run
# without the file, each node warns once naming the program; strict=yes fails the task.
test_plugin_missing_probe_warns_once_per_node() {
	set_plugin_args "probe=/nonexistent/train-topo"
	srun -N2 --ntasks-per-node=2 --train-topo bash -c 'echo "rank=$RANK topo=${NCCL_TOPO_FILE:-none}"' >out.txt 2>err.txt
	cat out.txt err.txt
	expect_eq "tasks ran with the rank env, without the file" 4 "$(grep -c '^rank=[0-3] topo=none$' out.txt)"
	expect_eq "one warning per node naming the program" 2 \
		"$(grep -c 'train_topo: warning: running without NCCL_TOPO_FILE: cannot run the topology probe /nonexistent/train-topo: No such file' err.txt)"
	set_plugin_args "probe=/nonexistent/train-topo strict=yes"
	local rc=0
	srun -N1 -n1 --train-topo bash -c 'echo ran' >out2.txt 2>err2.txt || rc=$?
	cat err2.txt
	[ "$rc" -ne 0 ] || fail "strict=yes: the task ran without its probe (srun exit 0)"
	expect_eq "no task output" "" "$(cat out2.txt)"
}

# srun (as sbatch and salloc on a login node) loads the plugin but neither hwloc nor libibverbs:
# the client's own memory map while its step runs.
test_plugin_srun_loads_no_hwloc() {
	srun -N1 -n1 --train-topo sleep 3 >/dev/null 2>&1 &
	local pid=$! maps=""
	for _ in $(seq 1 20); do
		maps=$(cat "/proc/$pid/maps" 2>/dev/null || true)
		[[ $maps == *train_topo.so* ]] && break
		sleep 0.1
	done
	wait "$pid" || fail "srun failed"
	[[ $maps == *train_topo.so* ]] || fail "srun never mapped train_topo.so"
	[[ $maps != *libhwloc* && $maps != *libibverbs* ]] ||
		fail "srun mapped $(grep -oE '[^ /]*(hwloc|ibverbs)[^ ]*' <<<"$maps" | sort -u | xargs)"
}

test_plugin_bad_plugstack_argument_fails_loudly() {
	set_plugin_args "default=off bogus=1"
	local rc=0
	srun -N1 -n1 true 2>err.txt || rc=$?
	cat err.txt
	[ "$rc" -ne 0 ] || fail "srun ran with an invalid plugstack.conf argument"
	expect_match "error names the argument" "train_topo: .*bogus" "$(cat err.txt)"
}

test_plugin_site_default_on_applies_without_option() {
	set_plugin_args "default=env"
	srun -N2 --ntasks-per-node=1 bash -c 'echo "${RANK:-unset}"' | sort >out.txt
	expect_eq "ranks from the site default" "0 1" "$(xargs <out.txt)"
}

test_plugin_salloc_mode_reaches_steps() {
	salloc -N2 --train-topo=env srun --ntasks-per-node=1 bash -c 'echo "${RANK:-unset} $TRAIN_TOPO_MODE"' >out.txt 2>err.txt
	cat out.txt
	expect_eq "ranks in salloc's step" "0 env|1 env" "$(sort out.txt | paste -sd'|')"
}

# An unprivileged second user for the tests that play another user; created when the machine has
# none and removed when the test's subshell exits.
INTRUDER=tt-intruder
with_intruder() {
	id -u "$INTRUDER" >/dev/null 2>&1 && return 0
	useradd --system --no-create-home --shell /usr/sbin/nologin "$INTRUDER" ||
		skip "cannot create the second user $INTRUDER (useradd)"
	trap 'userdel "$INTRUDER" 2>/dev/null || true' EXIT
}

# on_node NODE CMD...: CMD as root on a node (its own /tmp)
on_node() { local n=$1; shift; "$TT_SRCDIR/tests/cluster/cluster.sh" exec --node "$n" -- "$@"; }

test_plugin_topology_dir_planted_by_another_user_is_never_used() {
	with_gpu_topology # before with_intruder: each sets an EXIT trap, and the runner restores plugstack
	with_intruder
	local job state victim=$PWD/victim d n
	mkdir -m 755 "$victim"
	echo precious >"$victim/nccl-topo.0.xml"
	cat >job.sh <<'JOB'
#!/bin/bash
srun --ntasks-per-node=1 --train-topo bash -c 'f=$NCCL_TOPO_FILE; echo "host=$(hostname) file=$f size=$(stat -c %s "$f") owner=$(stat -c %U "$(dirname "$f")")"'
JOB
	job=$(sbatch --parsable --hold -N2 --ntasks-per-node=1 --output="$PWD/out.txt" --error="$PWD/err.txt" job.sh)
	d=/tmp/traintopo.$job
	# Before the job starts, the other user plants on node1 a world-writable directory with a
	# file of the step's name, on node2 a link to a directory holding one (root's, here).
	on_node node1 runuser -u "$INTRUDER" -- sh -c "mkdir -m 777 $d && echo intruder >$d/nccl-topo.0.xml"
	on_node node2 runuser -u "$INTRUDER" -- ln -s "$victim" "$d"
	scontrol release "$job"
	state=$(job_wait "$job")
	cat out.txt err.txt
	expect_eq "job state" COMPLETED "$state"
	expect_eq "each node's task got a file beside the planted one" 2 \
		"$(grep -cE "file=$d\.[A-Za-z0-9]{6}/nccl-topo\.0\.xml size=[1-9][0-9]* owner=root$" out.txt)"
	expect_eq "one warning per node naming it" 2 "$(grep -c "train_topo: warning: $d .*not used" err.txt)"
	expect_eq "node1: the other user's file untouched" "intruder $INTRUDER" \
		"$(on_node node1 sh -c "cat $d/nccl-topo.0.xml; stat -c %U $d" | paste -sd' ')"
	expect_eq "node1: nothing added" 1 "$(on_node node1 sh -c "ls -A $d | wc -l")"
	expect_eq "node2: still a link" link "$(on_node node2 sh -c "test -L $d && echo link")"
	expect_eq "node2: the linked file untouched" precious "$(cat "$victim/nccl-topo.0.xml")"
	for n in node1 node2; do
		expect_eq "$n: the step's own directory removed" "" "$(on_node $n sh -c "ls -d $d.* 2>/dev/null || true")"
		on_node $n rm -rf "$d"
	done
}

test_plugin_job_user_swapping_its_directory_makes_root_delete_nothing() {
	with_gpu_topology # before with_intruder: each sets an EXIT trap, and the runner restores plugstack
	with_intruder
	local victim=$PWD/victim out host d
	mkdir -m 755 "$victim"
	echo precious >"$victim/nccl-topo.0.xml"
	# The job's user moves its directory away during the step and links root's in its place;
	# the exit hook (root) must remove its file through the directory it made, not the link.
	out=$(runuser -u "$INTRUDER" -- srun -N1 -n1 --train-topo bash -c 'f=$NCCL_TOPO_FILE; d=$(dirname "$f"); echo "host=$(hostname) dir=$d owner=$(stat -c %U:%a "$d") size=$(stat -c %s "$f")"; mv "$d" "$d.moved" && ln -s "$1" "$d" && echo swapped' _ "$victim" 2>err.txt)
	echo "$out"; cat err.txt
	host=$(field host "$(head -n1 <<<"$out")")
	d=$(field dir "$(head -n1 <<<"$out")")
	expect_match "the job's directory" "^/tmp/traintopo\.[0-9]+$" "$d"
	expect_eq "made by the job's user (user_init runs as the user), private" "$INTRUDER:700" \
		"$(field owner "$(head -n1 <<<"$out")")"
	expect_eq "swapped" swapped "$(tail -n1 <<<"$out")"
	expect_eq "root's file untouched" precious "$(cat "$victim/nccl-topo.0.xml")"
	expect_eq "the step's file removed through its directory" "" "$(on_node "$host" ls -A "$d.moved")"
	on_node "$host" rm -rf "$d" "$d.moved"
}

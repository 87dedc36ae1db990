# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_config.sh — the env contract under the configurations and requests sites use beyond Debian's
# defaults: GPUs asked for every common way, overlapping and exclusive steps, a heterogeneous job,
# device constraints (cluster.sh up --constrain-devices) and a private /tmp per job (--job-container,
# with and without --contain-spank). Every task's contract is checked against Slurm's own
# variables and against the devices the task can actually open (tests/cluster/bin/task-env.sh).
# scripts/test.sh runs the test_cfg_* tests on each Slurm release on clusters brought up with each
# of those options (a test needing another one skips).

TASK_ENV=$TT_SRCDIR/tests/cluster/bin/task-env.sh

# The checks on task-env.sh lines, for every kind of step: ranks are Slurm's task ids, a world of
# the tasks printed, local ranks and node ranks consistent per host, MASTER_ADDR the host of rank 0,
# one MASTER_PORT (the first reserved port when Slurm reserved some), and GPUs: local index i of
# CUDA_VISIBLE_DEVICES is the i-th device the task can open (what CUDA enumerates under a device
# cgroup), it is one of the step's GPUs on the node, no GPU goes to two tasks of a node, and each
# task gets an equal share: floor(step GPUs on the node / tasks on the node). The step's GPUs on a
# node: under a device cgroup (a task cannot open every device) those its tasks can open, else
# SLURM_STEP_GPUS (under per-task constraints 26.05 numbers that one per task, from 0).
CONTRACT_AWK='
function bad(msg) { print "FAIL: " msg; nbad++ }
function split_set(list, out,   n, a, i, lo, hi, r) {
	if (list == "-" || list == "") return 0
	n = split(list, a, ",")
	for (i = 1; i <= n; i++) {
		if (split(a[i], r, "-") == 2) { for (lo = r[1]; lo <= r[2]; lo++) out[lo] = 1 }
		else out[a[i]] = 1
	}
}
{
	for (i = 1; i <= NF; i++) { p = index($i, "="); d[NR, substr($i, 1, p - 1)] = substr($i, p + 1) }
}
END {
	n = NR
	for (r = 1; r <= n; r++) {
		h = d[r, "host"]; rank = d[r, "RANK"]
		if (rank !~ /^[0-9]+$/) { bad("line " r ": RANK \"" rank "\""); continue }
		if (seen[rank]++) bad("RANK " rank " twice")
		if (rank != d[r, "procid"]) bad("RANK " rank " but SLURM_PROCID " d[r, "procid"])
		if (d[r, "WORLD_SIZE"] != n) bad("rank " rank ": WORLD_SIZE " d[r, "WORLD_SIZE"] ", tasks " n)
		if (d[r, "LOCAL_RANK"] != d[r, "localid"]) bad("rank " rank ": LOCAL_RANK " d[r, "LOCAL_RANK"] ", SLURM_LOCALID " d[r, "localid"])
		if (seen_local[h, d[r, "LOCAL_RANK"]]++) bad(h ": LOCAL_RANK " d[r, "LOCAL_RANK"] " twice")
		if (!(h in ntask)) hosts[++nhosts] = h
		ntask[h]++
		if (rank == 0) master = h
	}
	for (rank = 0; rank < n; rank++) if (!(rank in seen)) bad("no task has RANK " rank)
	for (r = 1; r <= n; r++) {
		h = d[r, "host"]; rank = d[r, "RANK"]; nr = d[r, "NODE_RANK"]
		if (d[r, "LOCAL_WORLD_SIZE"] != ntask[h]) bad("rank " rank ": LOCAL_WORLD_SIZE " d[r, "LOCAL_WORLD_SIZE"] ", tasks on " h " " ntask[h])
		if (d[r, "LOCAL_RANK"] >= ntask[h]) bad("rank " rank ": LOCAL_RANK " d[r, "LOCAL_RANK"] " of " ntask[h])
		if (d[r, "NNODES"] != nhosts) bad("rank " rank ": NNODES " d[r, "NNODES"] ", hosts " nhosts)
		if (d[r, "GROUP_RANK"] != nr) bad("rank " rank ": GROUP_RANK " d[r, "GROUP_RANK"] " != NODE_RANK " nr)
		if (nr !~ /^[0-9]+$/ || nr >= nhosts) bad("rank " rank ": NODE_RANK \"" nr "\" of " nhosts " nodes")
		if (nr != d[r, "nodeid"]) bad("rank " rank ": NODE_RANK " nr ", SLURM_NODEID " d[r, "nodeid"])
		if ((h in node_rank) && node_rank[h] != nr) bad(h ": NODE_RANK " node_rank[h] " and " nr)
		if (!(h in node_rank) && (nr in node_of)) bad("NODE_RANK " nr " on " node_of[nr] " and " h)
		node_rank[h] = nr; node_of[nr] = h
		if (d[r, "MASTER_ADDR"] != master) bad("rank " rank ": MASTER_ADDR " d[r, "MASTER_ADDR"] ", rank 0 runs on " master)
		port = d[r, "MASTER_PORT"]
		if (port !~ /^[0-9]+$/) bad("rank " rank ": MASTER_PORT \"" port "\"")
		if (r > 1 && port != d[1, "MASTER_PORT"]) bad("rank " rank ": MASTER_PORT " port ", rank of line 1 " d[1, "MASTER_PORT"])
		if (d[r, "resv"] != "-") { split(d[r, "resv"], rp, /[-,]/); if (rp[1] != port) bad("rank " rank ": MASTER_PORT " port ", reserved " d[r, "resv"]) }
	}
	# GPUs: the step GPUs of each host first, then every task against them.
	for (r = 1; r <= n; r++) {
		h = d[r, "host"]
		delete step
		if (split(d[r, "open"], open, ",") < ndev) split_set(d[r, "open"], step)
		else split_set(d[r, "step_gpus"], step)
		for (g in step) if (!((h, g) in step_host)) { step_host[h, g] = 1; nstep[h]++ }
	}
	for (r = 1; r <= n; r++) {
		h = d[r, "host"]; rank = d[r, "RANK"]
		if (!(h in nstep)) continue
		cvd = d[r, "CUDA_VISIBLE_DEVICES"]
		if (cvd == "-") { bad("rank " rank ": no CUDA_VISIBLE_DEVICES, step GPUs " d[r, "step_gpus"]); continue }
		nopen = split(d[r, "open"], open, ",")
		ncvd = split(cvd, idx, ",")
		for (i = 1; i <= ncvd; i++) {
			if (idx[i] !~ /^[0-9]+$/ || idx[i] >= nopen) { bad("rank " rank ": CUDA_VISIBLE_DEVICES " cvd " but it can open only " d[r, "open"]); continue }
			g = open[idx[i] + 1]
			if (g in mine) bad("rank " rank ": GPU " g " listed twice")
			mine[g] = 1
			if ((h, g) in owner) bad(h ": GPU " g " given to ranks " owner[h, g] " and " rank)
			owner[h, g] = rank
			if (!((h, g) in step_host)) bad("rank " rank ": GPU " g " (index " idx[i] ") is not one of the step GPUs on " h)
		}
		delete mine
		ngpus[r] = ncvd
	}
	for (r = 1; r <= n; r++) {
		h = d[r, "host"]
		if (h in nstep && ngpus[r] != int(nstep[h] / ntask[h]))
			bad("rank " d[r, "RANK"] ": " ngpus[r] " GPUs, but " nstep[h] " for " ntask[h] " tasks on " h)
	}
	exit nbad > 0
}'

# contract_ok OUT NTASKS: OUT holds NTASKS task-env.sh lines that keep the contract.
contract_ok() {
	cat "$1"
	expect_eq "task lines" "$2" "$(grep -c '^host=' "$1")"
	awk -v ndev="$(compgen -G "$TT_CLUSTER_DIR/dev/nvidia*" | wc -l)" "$CONTRACT_AWK" "$1" ||
		fail "env contract broken in $1 (lines above)"
}

# config_value KEY: the running cluster's value of KEY from scontrol show config ("" if absent).
config_value() {
	scontrol show config | awk -v k="$1" '$1 == k && $2 == "=" {sub(/^[^=]*= */, ""); print; exit}'
}

devices_constrained() { [ "$(config_value ConstrainDevices)" = yes ]; }

# kv KEY LINE: the value of KEY in a task-env.sh line.
kv() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }

test_cfg_gpus_gres_uneven_share() {
	srun -N2 --ntasks-per-node=3 --gres=gpu:6 --train-topo=env "$TASK_ENV" >out.txt
	contract_ok out.txt 6
	# 6 GPUs per node: two each, disjoint (the contract check), so every task has two.
	expect_eq "two GPUs per task" 6 "$(grep -c -E 'CUDA_VISIBLE_DEVICES=[0-9]+,[0-9]+ ' out.txt)"
}

test_cfg_gpus_per_task() {
	srun -N2 --ntasks-per-node=2 --gpus-per-task=3 --train-topo=env "$TASK_ENV" >out.txt
	contract_ok out.txt 4
	expect_eq "three GPUs per task" 4 "$(grep -c -E 'CUDA_VISIBLE_DEVICES=[0-9]+,[0-9]+,[0-9]+ ' out.txt)"
}

test_cfg_gpus_per_node() {
	srun -N2 --ntasks-per-node=2 --gpus-per-node=4 --train-topo=env "$TASK_ENV" >out.txt
	contract_ok out.txt 4
	expect_eq "two GPUs per task" 4 "$(grep -c -E 'CUDA_VISIBLE_DEVICES=[0-9]+,[0-9]+ ' out.txt)"
}

test_cfg_gpus_per_job() {
	srun -N2 -n4 --gpus=6 --train-topo=env "$TASK_ENV" >out.txt
	contract_ok out.txt 4
	local total=0 l
	for node in node1 node2; do
		l=$(grep -m1 "^host=$node " out.txt)
		total=$((total + $(kv gpus_on_node "$l")))
	done
	expect_eq "GPUs of the step on both nodes" 6 "$total"
}

# Two steps of one job at once: A holds every CPU and GPU, B runs beside it with --overlap.
test_cfg_steps_overlap() {
	cat >job.sh <<JOB
#!/bin/bash
TT_TASK_SLEEP=10 srun --ntasks-per-node=2 --train-topo=env "$TASK_ENV" >a.txt &
sleep 2
srun --overlap -N2 -n2 --train-topo=env "$TASK_ENV" >b.txt
echo "A still running after B: \$(jobs -r | wc -l)"
wait
JOB
	sbatch_wait out.txt -N2 --ntasks-per-node=2 --gres=gpu:8 job.sh
	cat out.txt
	contract_ok a.txt 4
	contract_ok b.txt 2
	expect_eq "B overlapped A" 1 "$(sed -n 's/^A still running after B: //p' out.txt)"
	local pa pb
	pa=$(kv MASTER_PORT "$(head -n1 a.txt)")
	pb=$(kv MASTER_PORT "$(head -n1 b.txt)")
	[ "$pa" != "$pb" ] || fail "overlapping steps share MASTER_PORT $pa"
}

# Two --exclusive steps at once split the job's GPUs: no GPU of a node in both.
test_cfg_steps_exclusive() {
	cat >job.sh <<JOB
#!/bin/bash
TT_TASK_SLEEP=2 srun --exclusive -N2 -n2 --ntasks-per-node=1 --gres=gpu:4 --train-topo=env "$TASK_ENV" >a.txt &
TT_TASK_SLEEP=2 srun --exclusive -N2 -n2 --ntasks-per-node=1 --gres=gpu:4 --train-topo=env "$TASK_ENV" >b.txt &
wait
JOB
	sbatch_wait out.txt -N2 --ntasks-per-node=2 --gres=gpu:8 job.sh
	contract_ok a.txt 2
	contract_ok b.txt 2
	local node ga gb
	for node in node1 node2; do
		ga=$(kv step_gpus "$(grep "^host=$node " a.txt)")
		gb=$(kv step_gpus "$(grep "^host=$node " b.txt)")
		expect_eq "$node: GPUs of both steps" "0 1 2 3 4 5 6 7" \
			"$(echo "$ga,$gb" | tr ',' '\n' | awk -F- 'NF == 2 {for (i = $1; i <= $2; i++) print i; next} {print}' | sort -n | xargs)"
	done
	[ "$(kv MASTER_PORT "$(head -n1 a.txt)")" != "$(kv MASTER_PORT "$(head -n1 b.txt)")" ] ||
		fail "concurrent exclusive steps share a MASTER_PORT"
}

# A heterogeneous job whose first component runs on node2: srun lists the step's nodes sorted
# (node1 first) in SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE, while Slurm numbers ranks and
# nodes (SLURM_PROCID, SLURM_NODEID) in component order, so rank 0 and MASTER_ADDR are on node2;
# ranks, WORLD_SIZE and NODE_RANK count across components, each node's GPUs are its component's.
test_cfg_het_job_ranks_across_components() {
	salloc -w node2 -N1 -n2 --gres=gpu:4 : -w node1 -N1 -n1 --gres=gpu:2 \
		srun --het-group=0,1 --train-topo=env "$TASK_ENV" >out.txt 2>err.txt || { cat err.txt; fail "het step failed"; }
	contract_ok out.txt 3
	expect_eq "host RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK MASTER_ADDR CUDA_VISIBLE_DEVICES per task" \
		"node1 2 3 0 1 1 node2 0,1|node2 0 3 0 2 0 node2 0,1|node2 1 3 1 2 0 node2 2,3|" \
		"$(while read -r l; do
			echo "$(kv host "$l") $(kv RANK "$l") $(kv WORLD_SIZE "$l") $(kv LOCAL_RANK "$l")" \
				"$(kv LOCAL_WORLD_SIZE "$l") $(kv NODE_RANK "$l") $(kv MASTER_ADDR "$l")" \
				"$(kv CUDA_VISIBLE_DEVICES "$l")"
		done <out.txt | sort | tr '\n' '|')"
}

# With ConstrainDevices=yes a task can open only its step's GPUs and Slurm numbers them from 0 in
# CUDA_VISIBLE_DEVICES, while SLURM_STEP_GPUS keeps the node's indices. A first job holds GPUs 0-3
# of node1, so the step gets 4-7, seen as 0-3.
test_cfg_devices_constrained_local_indices() {
	devices_constrained || skip "needs ConstrainDevices=yes (cluster.sh up --constrain-devices)"
	local blocker
	blocker=$(sbatch --parsable -w node1 -N1 -n1 --gres=gpu:4 --output=/dev/null --wrap 'sleep 60')
	job_wait_state "$blocker" R 30 || fail "the job holding GPUs 0-3 did not start"
	srun -w node1 -N1 -n2 --gres=gpu:4 "$TASK_ENV" >plain.txt
	srun -w node1 -N1 -n2 --gres=gpu:4 --train-topo=env "$TASK_ENV" >out.txt
	scancel "$blocker"
	cat plain.txt
	local l
	while read -r l; do
		expect_eq "SLURM_STEP_GPUS (node indices)" 4,5,6,7 "$(kv step_gpus "$l")"
		expect_eq "devices the task can open" 4,5,6,7 "$(kv open "$l")"
		expect_eq "Slurm's CUDA_VISIBLE_DEVICES (local indices)" 0,1,2,3 "$(kv CUDA_VISIBLE_DEVICES "$l")"
	done <plain.txt
	contract_ok out.txt 2
	expect_eq "the plugin's local indices" "0,1 2,3" \
		"$(sed -n 's/.* CUDA_VISIBLE_DEVICES=\([^ ]*\) .*/\1/p' out.txt | sort | xargs)"
}

# job_container/tmpfs (namespace/tmpfs since 25.11): every task of each full-mode step of a job (two
# steps: the second finds the job's directory in the private /tmp) reads its NCCL topology file,
# nothing warns, and /tmp is the job's own (a file written there is not in the node's /tmp).
test_cfg_container_tasks_see_topology_file() {
	local type step
	type=$(config_value NamespaceType)
	[ -n "$type" ] || type=$(config_value JobContainerType)
	[[ $type == */tmpfs ]] || skip "needs a private /tmp per job (cluster.sh up --job-container)"
	echo "$type; SlurmdParameters=$(config_value SlurmdParameters)"
	with_gpu_topology
	salloc -N2 --ntasks-per-node=2 --gres=gpu:8 bash -c "for step in 0 1; do
		TT_TMP_MARKER=ttest-marker srun --train-topo '$TASK_ENV' >out\$step.txt 2>err\$step.txt || exit 1
	done" || { cat err*.txt; fail "a step failed"; }
	for step in 0 1; do
		cat "err$step.txt"
		contract_ok "out$step.txt" 4
		expect_eq "step $step: tasks that read NCCL_TOPO_FILE" 4 "$(grep -c ' topo=readable ' "out$step.txt")"
		expect_eq "step $step: tasks that wrote /tmp/ttest-marker" 4 "$(grep -c ' marker=written$' "out$step.txt")"
		expect_eq "step $step: warnings that NCCL_TOPO_FILE is missing" 0 "$(grep -c 'running without NCCL_TOPO_FILE' "err$step.txt")"
	done
	local node
	for node in node1 node2; do
		if "$TT_SRCDIR/tests/cluster/cluster.sh" exec --node "$node" -- test -e /tmp/ttest-marker; then
			fail "$node: the job's /tmp/ttest-marker is in the node's /tmp: no private /tmp"
		fi
	done
}

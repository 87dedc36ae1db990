#!/bin/bash
# SPDX-License-Identifier: MIT
# task-env.sh — prints one line KEY=VALUE ... per task for the env-contract checks of t_config.sh:
# Slurm's own variables (the oracle), the contract's variables, and which fake GPUs (char devices
# 195:N, the cluster's dev/nvidiaN) this task may open: a device cgroup denies the others (EPERM).
dev=${TT_CLUSTER_DIR:-/var/lib/traintopo-cluster}/dev
open=""
for n in $(seq 0 63); do
	[ -e "$dev/nvidia$n" ] || break
	# No driver serves major 195 here, so an allowed open fails with ENXIO, a denied one with EPERM.
	if ! err=$( (: <"$dev/nvidia$n") 2>&1) && [[ $err == *"not permitted"* ]]; then
		continue
	fi
	open+=${open:+,}$n
done
topo=none
if [ -n "${NCCL_TOPO_FILE:-}" ]; then
	topo=missing
	head -c 200 "$NCCL_TOPO_FILE" 2>/dev/null | grep -q '<system version=' && topo=readable
fi
marker=none
if [ -n "${TT_TMP_MARKER:-}" ]; then
	: >"/tmp/$TT_TMP_MARKER" && marker=written
fi
v() { local x=${!1:-}; echo "${x:--}"; }
echo "host=$(hostname) job=$(v SLURM_JOB_ID) step=$(v SLURM_STEP_ID) procid=$(v SLURM_PROCID)" \
	"localid=$(v SLURM_LOCALID) nodeid=$(v SLURM_NODEID) het_size=$(v SLURM_HET_SIZE)" \
	"step_tasks=$(v SLURM_STEP_NUM_TASKS) step_nodes=$(v SLURM_STEP_NODELIST)" \
	"step_gpus=$(v SLURM_STEP_GPUS) gpus_on_node=$(v SLURM_GPUS_ON_NODE)" \
	"resv=$(v SLURM_STEP_RESV_PORTS) open=${open:--}" \
	"RANK=$(v RANK) WORLD_SIZE=$(v WORLD_SIZE) LOCAL_RANK=$(v LOCAL_RANK)" \
	"LOCAL_WORLD_SIZE=$(v LOCAL_WORLD_SIZE) NODE_RANK=$(v NODE_RANK) GROUP_RANK=$(v GROUP_RANK)" \
	"NNODES=$(v NNODES) MASTER_ADDR=$(v MASTER_ADDR) MASTER_PORT=$(v MASTER_PORT)" \
	"CUDA_VISIBLE_DEVICES=$(v CUDA_VISIBLE_DEVICES) topo=$topo marker=$marker"
[ -z "${TT_TASK_SLEEP:-}" ] || sleep "$TT_TASK_SLEEP"

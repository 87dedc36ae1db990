#!/bin/bash
# SPDX-License-Identifier: MIT
# print-env.sh — one line describing this process for the environment-table tests: host, the
# rank contract and traintopo's variables as NAME=VALUE (TRAIN_TOPO_SET sorted, since only the
# set matters), and two oracles from the kernel: the CPUs it may run on (Cpus_allowed_list) and
# how many (nproc); NCCL_TOPO_FILE's content as a checksum, since its path names the step.
vars="RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK GROUP_RANK NNODES MASTER_ADDR MASTER_PORT
CUDA_VISIBLE_DEVICES OMP_NUM_THREADS NCCL_IB_HCA NCCL_SOCKET_IFNAME NCCL_TOPO_FILE TRAIN_CPU_LIST
SLURM_PROCID SLURM_LOCALID SLURM_NODEID SLURM_NTASKS SLURM_NPROCS SLURM_STEP_NUM_TASKS
SLURM_NTASKS_PER_NODE SLURM_TASKS_PER_NODE SLURM_STEP_TASKS_PER_NODE SLURM_GTIDS SLURM_STEP_ID
SLURM_STEP_RESV_PORTS"
line="host=$(hostname)"
for v in $vars; do
	line="$line $v=${!v-unset}"
done
set_sorted=$(tr ',' '\n' <<<"${TRAIN_TOPO_SET-}" | sort | paste -sd,)
topo_sum="unset"  # quoted: the word, not the builtin
[ -z "${NCCL_TOPO_FILE-}" ] || topo_sum=$(md5sum <"$NCCL_TOPO_FILE" | cut -c1-12)
echo "$line TRAIN_TOPO_SET=${set_sorted:-unset} topo_sum=$topo_sum" \
	"allowed=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status) nproc=$(nproc)"

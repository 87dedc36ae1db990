# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_pytorch.sh — the env contract is what PyTorch reads: init_process_group(init_method="env://")
# works with no exports in the script, with srun --train-topo and under train-run.
# Debian's python3-torch (installed by scripts/install-deps.sh) lives with /usr/bin/python3.

TORCH_ALLREDUCE='
import os, socket, torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank", dist.get_rank(), "of", dist.get_world_size(), "on", socket.gethostname(), "sum", int(t.item()), flush=True)
dist.destroy_process_group()
'

test_pytorch_env_init_with_plugin() {
	srun -N2 --ntasks-per-node=2 --train-topo=env /usr/bin/python3 -c "$TORCH_ALLREDUCE" >out.txt
	cat out.txt
	expect_eq "ranks" "0 1 2 3" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "all-reduce of 1+2+3+4 on every rank" 4 "$(grep -c 'of 4 on node[12] sum 10$' out.txt)"
}

test_pytorch_env_init_under_train_run() {
	srun -N2 --ntasks-per-node=1 --gres=gpu:4 train-run -- /usr/bin/python3 -c "$TORCH_ALLREDUCE" >out.txt
	cat out.txt
	expect_eq "ranks" "$(seq 0 7 | xargs)" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "all-reduce of 1..8 on every rank" 8 "$(grep -c 'of 8 on node[12] sum 36$' out.txt)"
}

# A program written for torchrun runs unchanged under train-run: it asks
# is_torchelastic_launched(), reads torchrun's variables, and what PyTorch Lightning's
# SLURMEnvironment reads (SLURM_NTASKS, SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID, and
# SLURM_NTASKS_PER_NODE whenever SLURM_NTASKS > 1) agrees with the ranks torch.distributed has.
TORCHRUN_PROGRAM='
import os, socket, torch, torch.distributed as dist
e = os.environ
dist.init_process_group("gloo", init_method="env://")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
lightning = (int(e["SLURM_NTASKS"]), int(e["SLURM_PROCID"]), int(e["SLURM_LOCALID"]), int(e["SLURM_NODEID"]))
assert "SLURM_NTASKS_PER_NODE" in e
print("rank", dist.get_rank(), "of", dist.get_world_size(), "sum", int(t.item()),
      "elastic", dist.is_torchelastic_launched(), "run", e["TORCHELASTIC_RUN_ID"] == e["SLURM_JOB_ID"],
      "group", e["GROUP_RANK"], e["GROUP_WORLD_SIZE"], "role", e["ROLE_NAME"], e["ROLE_RANK"], e["ROLE_WORLD_SIZE"],
      "lightning", lightning == (dist.get_world_size(), dist.get_rank(), int(e["LOCAL_RANK"]), int(e["GROUP_RANK"])),
      flush=True)
dist.destroy_process_group()
'

test_pytorch_torchrun_program_under_train_run() {
	srun -N2 --ntasks-per-node=1 --gres=gpu:2 --train-topo=env train-run -- /usr/bin/python3 -c "$TORCHRUN_PROGRAM" >out.txt
	cat out.txt
	expect_eq "ranks" "0 1 2 3" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "every worker: torchelastic-launched, torchrun's variables, Lightning's SLURM view" 4 \
		"$(grep -c -E 'of 4 sum 10 elastic True run True group [01] 2 role default [0-3] 4 lightning True$' out.txt)"
}

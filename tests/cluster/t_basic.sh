# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# t_basic.sh — the cluster itself: multi-node batch jobs, GRES, PMIx.

test_sbatch_two_nodes_sees_hostnames_and_gpus() {
	cat >job.sh <<'JOB'
#!/bin/bash
srun --ntasks-per-node=1 bash -c 'echo "host=$(hostname) gpus=$SLURM_STEP_GPUS ngpus=$SLURM_GPUS_ON_NODE"'
JOB
	sbatch_wait out.txt --nodes=2 --gres=gpu:8 job.sh
	cat out.txt
	expect_eq "hosts" "node1 node2" "$(sed -n 's/^host=\([^ ]*\).*/\1/p' out.txt | sort | xargs)"
	expect_eq "GPU lines" 2 "$(grep -c 'gpus=0,1,2,3,4,5,6,7 ngpus=8$' out.txt)"
}

test_pmix_step_runs_on_both_nodes() {
	srun --mpi=pmix -N2 --ntasks-per-node=2 bash -c 'echo "$(hostname) $PMIX_RANK $PMIX_NAMESPACE"' >out.txt
	cat out.txt
	expect_eq "PMIx ranks" "0 1 2 3" "$(awk '{print $2}' out.txt | sort -n | xargs)"
	expect_eq "hosts" "node1 node2" "$(awk '{print $1}' out.txt | sort -u | xargs)"
	expect_eq "one namespace" 1 "$(awk '{print $3}' out.txt | sort -u | grep -c pmix)"
}

/* SPDX-License-Identifier: MIT */
/* layout.h — the env contract: who this process is in its Slurm step (facts) -> the variables
 * PyTorch/torchrun-style programs read (RANK, WORLD_SIZE, LOCAL_RANK, ..., CUDA_VISIBLE_DEVICES).
 * The single implementation behind the SPANK plugin (one process per Slurm task) and train-run
 * (one Slurm task per node spawning nproc workers): callers gather facts, call a compute
 * function, and apply the pairs tt_task_env_foreach yields with setenv or spank_setenv.
 * MASTER_ADDR and MASTER_PORT come from rendezvous.h, their one owner. */
#ifndef TT_LAYOUT_H
#define TT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gres.h"
#include "rendezvous.h"
#include "tt_env.h"
#include "tt_envnames.h"
#include "tt_err.h"

/* Slurm's special step ids (slurm.h SLURM_BATCH_SCRIPT, SLURM_EXTERN_CONT, ...). */
#define TT_STEP_INTERACTIVE 0xfffffffau
#define TT_STEP_BATCH 0xfffffffbu
#define TT_STEP_EXTERN 0xfffffffcu

/* Any nodelist an environment variable can carry: Linux passes one environment string of at
 * most MAX_ARG_STRLEN (32 pages, 131072 bytes with its name, '=' and NUL) to a task's exec, so a
 * longer SLURM_STEP_NODELIST never reaches a task. (A 10k-node step Slurm cannot compress, every
 * other node of a 20k cluster, is 60k characters.) Large: keep tt_step_facts off small stacks. */
#define TT_NODELIST_LEN 131072
/* The step's tasks per node, likewise any length Slurm can pass: counts that differ from node to
 * node do not compress ("64,48,64,48,..." on a partition of mixed nodes: 6 characters a node). */
#define TT_TASKS_PER_NODE_LEN TT_NODELIST_LEN
/* The workers per node train-run writes for its workers' SLURM_TASKS_PER_NODE: one count per node
 * of the step, runs compressed ("8(x100)"); kept small, since every worker's contract holds it. */
#define TT_WORKERS_PER_NODE_LEN 4096
#define TT_HOSTNAME_LEN TT_RDZV_HOST_LEN
#define TT_WARN_MAX 4
#define TT_WARN_LEN 256
#define TT_CPU_LIST_LEN 1024

/* What traintopo tells the processes below it (train_topo(8), train-run(1)), besides the
 * contract's variables:
 *   TRAIN_TOPO_SET          comma-separated names traintopo set for this process as defaults
 *                           (OMP_NUM_THREADS, CUDA_VISIBLE_DEVICES, NCCL_*): a launcher below
 *                           computes those again for each of its workers, while a name the
 *                           list lacks was set by the user and is kept
 *   TRAIN_CPU_LIST          the CPUs the process is bound to ("0-11"), as Cpus_allowed_list
 *   TRAIN_TOPO_HWLOC_XML    the hwloc XML the plugin read for this node (plugstack hwloc_xml=),
 *                           which train-run then reads too
 * The names themselves are defined once, in base/tt_envnames.h; the relay's own, in
 * relay/relay.h. */
#define TT_SET_LIST_LEN 256

/* Everything the contract depends on, as plain data. tt_step_facts_from_env fills all of it
 * except cpus (the caller counts its sched_getaffinity mask), ports (the caller's config) and rdzv
 * (zero: a launcher fills it). */
struct tt_step_facts {
	uint32_t job_id;                        /* SLURM_JOB_ID */
	uint32_t step_id;                       /* SLURM_STEP_ID; TT_STEP_BATCH when unset */
	char nodelist[TT_NODELIST_LEN];         /* step nodelist, compressed form */
	uint32_t node_index;                    /* SLURM_NODEID: this node's index in nodelist */
	uint32_t ntasks;                        /* tasks in the step; 0 = sum of tasks_per_node */
	char tasks_per_node[TT_TASKS_PER_NODE_LEN]; /* "2(x3),1"; "" when unknown */
	uint32_t task_id;                       /* SLURM_PROCID (global rank Slurm assigned) */
	uint32_t local_id;                      /* SLURM_LOCALID */
	struct tt_gpu_list gpus;                /* node GPUs as the step sees them (gres.h) */
	char gpus_checked[160];                 /* variables tt_gres_node_gpus read, for messages */
	bool slurm_bound_gpus;                  /* Slurm already set CUDA_VISIBLE_DEVICES per task */
	unsigned cpus;                          /* CPUs this task may use; 0 = unknown */
	bool omp_set;                           /* the user set OMP_NUM_THREADS (tt_env_user_set) */
	bool from_slurm;                        /* read from a Slurm step's environment */
	char resv_ports[256];                   /* SLURM_STEP_RESV_PORTS ("12000-12003"), or "" */
	struct tt_port_range ports;             /* MASTER_PORT range when no ports are reserved */
	/* The rendezvous point a launcher resolved for its workers (tt_rendezvous_resolve with its
	 * options); port 0: the step's own, from nodelist, resv_ports and ports (the plugin's). */
	struct tt_rendezvous rdzv;
	/* The nodes of the program's world: the first nactive of nodelist (train-run --spares keeps
	 * the others as spares); 0: all of them. */
	uint32_t nactive;
};

/* The contract for one process. Numbers are kept as numbers; tt_task_env_foreach formats them. */
struct tt_task_env {
	uint32_t rank, world_size;              /* RANK, WORLD_SIZE */
	uint32_t local_rank, local_world_size;  /* LOCAL_RANK, LOCAL_WORLD_SIZE */
	uint32_t node_rank, nnodes;             /* NODE_RANK (= GROUP_RANK), NNODES */
	char master_addr[TT_HOSTNAME_LEN];      /* MASTER_ADDR (rendezvous.h) */
	uint16_t master_port;                   /* MASTER_PORT */
	char cuda_visible_devices[TT_GPU_MAX * TT_GPU_ID_LEN]; /* "" = leave CUDA_VISIBLE_DEVICES alone */
	unsigned omp_num_threads;               /* 0 = leave OMP_NUM_THREADS alone */
	char cpu_list[TT_CPU_LIST_LEN];         /* TRAIN_CPU_LIST; "" = leave it alone (the caller
						 * fills it once it bound the process) */
	/* A launcher's worker under Slurm (tt_layout_compute_worker): the SLURM_* variables
	 * frameworks read (PyTorch Lightning's SLURMEnvironment, MPI) rewritten to agree with
	 * its rank; "" for the plugin's tasks, whose SLURM_* are Slurm's own and already agree. */
	char slurm_tasks_per_node[TT_WORKERS_PER_NODE_LEN];
	size_t nwarnings;                       /* things worth a log line that are not errors */
	char warnings[TT_WARN_MAX][TT_WARN_LEN];
};

/* Reads the facts through get (see tt_env.h). Nodelist: SLURM_STEP_NODELIST, else
 * SLURM_JOB_NODELIST, else SLURM_NODELIST. Tasks per node: SLURM_STEP_TASKS_PER_NODE, else
 * SLURM_TASKS_PER_NODE. Task count: SLURM_STEP_NUM_TASKS, else SLURM_NTASKS, else SLURM_NPROCS,
 * else 0. SLURM_PROCID/SLURM_LOCALID default to 0. GPUs: tt_gres_node_gpus; whether Slurm
 * bound them per task: tt_gres_bound_per_task. ports = defaults, cpus = 0.
 * The batch step (no SLURM_STEP_ID, as Slurm 22.05 leaves it in the batch script) is one task
 * on one node: nodelist = SLURMD_NODENAME (else the first host of the job's nodelist), one task,
 * so a launcher started in the batch script never waits for ranks on the other nodes.
 * A heterogeneous step (SLURM_HET_SIZE >= 2 and nodes of several components in the step) gets
 * its nodelist and tasks per node in Slurm's rank order (het_step.h), so that SLURM_NODEID
 * indexes them and the first host runs rank 0.
 * -1 with err naming the variable when SLURM_JOB_ID, SLURM_NODEID or a nodelist is missing, or
 * a value is malformed or too long. */
int tt_step_facts_from_env(struct tt_step_facts *f, tt_getenv_fn get, void *ctx, tt_err *err);

/* The job-level rendezvous the batch script gets (sbatch --train-topo), for a launcher the user
 * starts from it by hand (torchrun --rdzv-endpoint=$MASTER_ADDR:$MASTER_PORT): the job's first
 * host (SLURM_JOB_NODELIST, else SLURM_NODELIST) and the formula's port of the batch step
 * (rendezvous.h: just below step 0's, so no srun step of the job gets it), and the job's node
 * count into *nnodes. Each srun step computes its own values, which replace these in its tasks.
 * -1 with err naming the variable when SLURM_JOB_ID or the nodelist is missing or malformed. */
int tt_job_rendezvous_from_env(tt_getenv_fn get, void *ctx, struct tt_port_range ports,
			       struct tt_rendezvous *rdzv, uint32_t *nnodes, tt_err *err);

/* The contract for Slurm task f->task_id (the plugin's case): RANK = SLURM_PROCID, WORLD_SIZE =
 * ntasks, LOCAL_RANK = SLURM_LOCALID, LOCAL_WORLD_SIZE = tasks on this node, NODE_RANK =
 * node_index, NNODES = hosts in nodelist. GPUs: left alone when Slurm bound them, else split
 * by tt_gpu_split. OMP_NUM_THREADS = cpus when unset and known. -1 with err when the facts
 * contradict each other (node count of nodelist vs tasks_per_node, task ids out of range, ...). */
int tt_layout_compute(const struct tt_step_facts *f, struct tt_task_env *out, tt_err *err);

/* The contract for worker local_rank of nproc that train-run spawns on this node (train-run is
 * the step's only task on the node). per_node[k] is the worker count of node k (nnodes entries,
 * per_node[node_index] == nproc), or NULL when every node runs nproc: RANK = the workers of the
 * nodes before this one + local_rank, WORLD_SIZE = the sum, LOCAL_RANK = local_rank,
 * LOCAL_WORLD_SIZE = nproc. GPUs: f->gpus (which are this task's, bound by Slurm or not) split
 * by tt_gpu_split, so with nproc = number of GPUs every worker gets exactly one.
 * OMP_NUM_THREADS = max(1, cpus/nproc) when unset and known. With f->from_slurm, also the
 * worker's SLURM_* (slurm_tasks_per_node). tasks_per_node, ntasks, task_id, local_id are not
 * used. */
int tt_layout_compute_worker(const struct tt_step_facts *f, uint32_t nproc,
			     const uint32_t *per_node, uint32_t local_rank, struct tt_task_env *out,
			     tt_err *err);

/* Calls fn(ctx, name, value) for each variable to set, in this order: RANK, WORLD_SIZE,
 * LOCAL_RANK, LOCAL_WORLD_SIZE, NODE_RANK, GROUP_RANK, NNODES, MASTER_ADDR, MASTER_PORT, then
 * CUDA_VISIBLE_DEVICES, OMP_NUM_THREADS and TRAIN_CPU_LIST when they are to be set, then for a
 * worker under Slurm SLURM_PROCID (= RANK), SLURM_LOCALID (= LOCAL_RANK), SLURM_NTASKS,
 * SLURM_NPROCS, SLURM_STEP_NUM_TASKS (= WORLD_SIZE), SLURM_NTASKS_PER_NODE (= LOCAL_WORLD_SIZE),
 * SLURM_TASKS_PER_NODE, SLURM_STEP_TASKS_PER_NODE ("8(x2)" as Slurm writes it), SLURM_GTIDS
 * (the ranks on this node) and SLURM_NODEID (= NODE_RANK: a spare's is the rank it took).
 * Stops at and returns the first non-zero value fn returns; 0 when
 * all were applied. */
int tt_task_env_foreach(const struct tt_task_env *e,
			int (*fn)(void *ctx, const char *name, const char *value), void *ctx);

/* The GPU rule, one for tasks and workers: local task `local` of `ntasks` on a node with ngpus.
 * ngpus >= ntasks: each gets ngpus/ntasks contiguous GPUs, task i from i*(ngpus/ntasks); the
 * ngpus % ntasks left over stay unused. ngpus < ntasks: task i gets GPU i*ngpus/ntasks, so
 * neighbouring ranks share a GPU. Returns 1 when GPUs are shared or left unused (worth a
 * warning), 0 for an exact split, -1 when ntasks is 0 or local >= ntasks. ngpus 0: count 0. */
int tt_gpu_split(size_t ngpus, uint32_t ntasks, uint32_t local, size_t *first, size_t *count);

/* Parses a tasks-per-node value ("4", "2(x3),1") and gives the tasks on node index node, the
 * node count and the task total. -1 with err naming the value and the bad element. */
int tt_tasks_per_node(const char *spec, uint32_t node, uint32_t *on_node, uint32_t *nnodes,
		      uint32_t *ntasks, tt_err *err);

/* Whether the user, not traintopo, set name: it is set and TRAIN_TOPO_SET does not list it. A
 * value traintopo set for a launcher task is the launcher's, not its workers'. */
bool tt_env_user_set(tt_getenv_fn get, void *ctx, const char *name);

/* Appends name to a TRAIN_TOPO_SET value list (comma-separated) of size len, once. -1 when it
 * does not fit. */
int tt_env_set_list_add(char *list, size_t len, const char *name);

#endif

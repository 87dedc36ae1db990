/* topo_file.h — the step's NCCL_TOPO_FILE on this node: created once per node per step before the
 * tasks start (slurm_spank_user_init), removed when the step ends (slurm_spank_exit).
 * Discovery runs in a child process with a deadline, so a slow or crashing probe can neither
 * hang nor crash slurmstepd; the file appears complete (temp + rename) or not at all, and when it
 * cannot be made the step runs without it (NCCL then detects the node itself).
 * The job's directory TOPO_DIR/traintopo.<job> is made and checked as the job's user and removed
 * by root only through the directory it checked (see topo_file.c). */
#ifndef TT_TOPO_FILE_H
#define TT_TOPO_FILE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hw_model.h"
#include "plugin_config.h"
#include "tt_err.h"

/* Seconds the probe may take before it is killed and the step runs without the file. */
#define TT_TOPO_PROBE_TIMEOUT_S 30
#define TT_TOPO_MAX_NOTES (TT_HW_MAX_WARNINGS + 1)

/* What the probe learnt besides the file: the node's NCCL_IB_HCA and NCCL_SOCKET_IFNAME (the same
 * for every task), per node-wide GPU index (tt_gres_node_index) the GPU's NUMA-local CPUs (the
 * tasks' CPU binding, cpu_bind.h), and notes for the node's first task to print as warnings. */
struct tt_node_policy {
	char socket_ifname[34];	/* "=eth0", "" when no interface qualifies */
	char ib_hca[512];	/* "=mlx5_0:1,mlx5_1:1", "" when the node has no usable HCA */
	int ngpus;
	cpu_set_t cpus[TT_GPU_MAX];
	int nnotes;
	char notes[TT_TOPO_MAX_NOTES][TT_HW_WARNING_LEN];
};

/* The job's directory as it was made and checked: all that removal may touch. */
struct tt_topo_dir {
	char name[64];	/* its entry in topo_dir: traintopo.<job>, or traintopo.<job>.XXXXXX */
	dev_t dev;
	ino_t ino;
	int fd;		/* open on it (close-on-exec), -1 when none */
};

/* Writes the step's file into the job's directory (made if needed), puts its path into path,
 * the directory into dir and the node's policy into policy. Runs as the job's user. */
int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, struct tt_topo_dir *dir, struct tt_node_policy *policy,
			tt_err *err);

/* Removes the file and, when it was the last one, the job's directory; runs as root. Touches
 * nothing when the directory is no longer the one made (replaced, moved, a link). */
int tt_topo_file_remove(const struct tt_plugin_config *cfg, struct tt_topo_dir *dir, const char *path,
			tt_err *err);

#endif

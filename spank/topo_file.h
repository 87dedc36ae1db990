/* topo_file.h — the step's NCCL_TOPO_FILE on this node: created once per node per step before the
 * tasks start (slurm_spank_user_init, as the job's user), removed when the step ends.
 * Discovery runs in a child process with a deadline, so a slow or crashing probe can neither
 * hang nor crash slurmstepd; the file appears complete (temp + rename) or not at all. */
#ifndef TT_TOPO_FILE_H
#define TT_TOPO_FILE_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>

#include "gres.h"
#include "plugin_config.h"
#include "tt_err.h"

/* Seconds the probe may take before it is killed and the step runs without the file. */
#define TT_TOPO_PROBE_TIMEOUT_S 30

/* What the probe learnt besides the file: per node-wide GPU index (tt_gres_node_index) the
 * NCCL_IB_HCA value listing that GPU's nearest HCAs first and the GPU's NUMA-local CPUs (the
 * tasks' CPU binding, cpu_bind.h), and the node's NCCL_SOCKET_IFNAME. */
struct tt_node_policy {
	char socket_ifname[34];		/* "=eth0", "" when no interface qualifies */
	int ngpus;
	char ib_hca[TT_GPU_MAX][512];	/* "" when the node has no HCA */
	cpu_set_t cpus[TT_GPU_MAX];
};

/* Writes TOPO_DIR/traintopo.<job>/nccl-topo.<step>.xml, puts its path into path and the
 * node's policy into policy. */
int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, struct tt_node_policy *policy, tt_err *err);

/* Removes the file and, when it was the last one, the job's directory. */
int tt_topo_file_remove(const struct tt_plugin_config *cfg, uint32_t job_id, const char *path,
			tt_err *err);

#endif

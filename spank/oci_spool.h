/* SPDX-License-Identifier: MIT */
/* oci_spool.h — where a step in one of Slurm's OCI containers (srun --container=BUNDLE, oci.conf)
 * can put its NCCL topology file. The container sees its bundle's root file system and mounts,
 * not the node's /tmp; the one host directory Slurm itself binds into every container of the step
 * is the step's spool directory, SlurmdSpoolDir/oci-job<job>-<step>, at the same path inside
 * (src/slurmd/slurmstepd/container.c, 26.05.3: _generate_spooldir, _modify_config's mount of
 * mount_spool_dir). slurmstepd makes it, owned by the job's user, before the SPANK user_init hook
 * runs (setup_container in slurmstepd.c), and removes it after slurm_spank_exit (cleanup_container).
 * SPANK names neither it nor SlurmdSpoolDir: slurmstepd's own socket lies in SlurmdSpoolDir as
 * <node>_<job>.<step> (req.c, _domain_socket_create), so the socket open in this very process
 * names the directory, with no configuration to read. oci.conf's ContainerPath moves the step's
 * directory elsewhere, and MountSpoolDir moves it inside the container; neither is readable to a
 * plugin, so a step whose directory is not where Slurm's default puts it is refused. Slurm binds
 * the step's directory, at its own path, since 25.05 (its CHANGELOG: MountSpoolDir's default was
 * /var/run/slurm/, with only the task's directory bound there). */
#ifndef TT_OCI_SPOOL_H
#define TT_OCI_SPOOL_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

/* The step's OCI spool directory into dir: the directory of the socket named
 * <anything>_<job>.<step> that this process (proc_root/self, "/proc/self") holds open, joined with
 * oci-job<job>-<step>, which must be a directory (no symbolic link) of this process's effective
 * user. -1 with err saying which part was not found. */
int tt_oci_step_dir(const char *proc_self, uint32_t job_id, uint32_t step_id, char *dir, size_t len,
		    tt_err *err);

#endif

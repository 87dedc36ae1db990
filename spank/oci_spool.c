/* SPDX-License-Identifier: MIT */
/* oci_spool.c — the step's OCI spool directory, found through slurmstepd's socket (see
 * oci_spool.h). Runs in slurmstepd (user_init, the job's effective uid), reading only its own
 * /proc/self entries and the socket table of its network namespace. */
#include "oci_spool.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_SOCKETS 256

/* The inodes of the sockets open in proc_self/fd into inodes; how many (at most cap). */
static size_t open_sockets(const char *proc_self, unsigned long *inodes, size_t cap)
{
	char path[PATH_MAX], link[64];
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	snprintf(path, sizeof(path), "%s/fd", proc_self);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d)) && n < cap) {
		ssize_t got;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/fd/%s", proc_self, de->d_name);
		got = readlink(path, link, sizeof(link) - 1);
		if (got <= 0)
			continue;
		link[got] = '\0';
		if (sscanf(link, "socket:[%lu]", &inodes[n]) == 1)
			n++;
	}
	closedir(d);
	return n;
}

/* Into spool, the directory of the socket this process holds whose path ends in suffix (from
 * proc_self/net/unix: "Num RefCount Protocol Flags Type St Inode Path"). */
static int socket_dir(const char *proc_self, const unsigned long *inodes, size_t ninodes,
		      const char *suffix, char *spool, size_t len)
{
	char path[PATH_MAX], line[PATH_MAX + 128];
	size_t slen = strlen(suffix);
	int found = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/net/unix", proc_self);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (found != 0 && fgets(line, sizeof(line), f)) {
		unsigned long inode;
		size_t plen;
		char *name;
		int at = 0;

		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %n", &inode, &at) != 1 || !at)
			continue;
		name = line + at;
		name[strcspn(name, "\n")] = '\0';
		plen = strlen(name);
		if (name[0] != '/' || plen <= slen || strcmp(name + plen - slen, suffix) != 0)
			continue;
		for (size_t i = 0; i < ninodes; i++) {
			if (inodes[i] != inode)
				continue;
			*strrchr(name, '/') = '\0';
			if (snprintf(spool, len, "%s", name[0] ? name : "/") < (int)len)
				found = 0;
			break;
		}
	}
	fclose(f);
	return found;
}

int tt_oci_step_dir(const char *proc_self, uint32_t job_id, uint32_t step_id, char *dir, size_t len,
		    tt_err *err)
{
	unsigned long inodes[MAX_SOCKETS];
	char suffix[48], spool[PATH_MAX];
	size_t n = open_sockets(proc_self, inodes, MAX_SOCKETS);
	struct stat st;

	/* The socket is <node>_<job>.<step>: the '_' keeps job 1 from matching job 11. */
	snprintf(suffix, sizeof(suffix), "_%" PRIu32 ".%" PRIu32, job_id, step_id);
	if (socket_dir(proc_self, inodes, n, suffix, spool, sizeof(spool)) != 0)
		return tt_err_set(err, "slurmstepd holds no socket named *%s, so SlurmdSpoolDir is "
				  "unknown", suffix);
	if (snprintf(dir, len, "%s/oci-job%" PRIu32 "-%" PRIu32, spool, job_id, step_id) >= (int)len)
		return tt_err_set(err, "the step's OCI spool directory under %s is too long", spool);
	if (lstat(dir, &st) != 0)
		return tt_err_set(err, "no OCI spool directory %s: %s (oci.conf ContainerPath moves it; "
				  "without oci.conf --container does nothing)", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return tt_err_set(err, "%s is not a directory of uid %u, as Slurm makes a step's OCI "
				  "spool directory", dir, (unsigned)geteuid());
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* proctree.c — /proc snapshot, the descendant-selection rule of the signal relay, and the
 * ancestor check a launcher uses to find a relay above it. */
#include "proctree.h"
#include "tt_parse.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int read_status(const char *proc_root, pid_t pid, struct tt_proc *p)
{
	char path[512], line[256];
	int have_ppid = 0, have_cgt = 0, have_blk = 0;
	struct stat st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	p->pid = pid;
	p->handled = 0;
	while (fgets(line, sizeof(line), f) && !(have_ppid && have_cgt && have_blk)) {
		int ppid;
		uint64_t mask;

		if (sscanf(line, "PPid: %d", &ppid) == 1) {
			p->ppid = ppid;
			have_ppid = 1;
		} else if (sscanf(line, "SigCgt: %" SCNx64, &mask) == 1) {
			p->handled |= mask;
			have_cgt = 1;
		} else if (sscanf(line, "SigBlk: %" SCNx64, &mask) == 1) {
			p->handled |= mask;
			have_blk = 1;
		}
	}
	fclose(f);
	/* Readable for the job's own processes (the relay's user); 0 (unknown) for the others. */
	snprintf(path, sizeof(path), "%s/%d/ns/mnt", proc_root, (int)pid);
	p->mnt_ns = stat(path, &st) == 0 ? (uint64_t)st.st_ino : 0;
	return have_ppid && have_cgt && have_blk ? 0 : -1;
}

int tt_proc_snapshot(const char *proc_root, struct tt_proc **procs, size_t *n, tt_err *err)
{
	struct tt_proc *list = NULL, *grown;
	size_t count = 0, cap = 0;
	struct dirent *de;
	DIR *dir;

	dir = opendir(proc_root);
	if (!dir)
		return tt_err_errno(err, "cannot list %s (is procfs mounted?)", proc_root);
	while ((de = readdir(dir))) {
		struct tt_proc p = { 0 };
		long long pid;

		/* Only the numbered entries are processes ("self", "sys", ... are not). */
		if (tt_parse_int(de->d_name, 1, INT32_MAX, "pid", &pid, NULL) != 0)
			continue;
		if (read_status(proc_root, (pid_t)pid, &p) != 0)
			continue;	/* exited meanwhile, or not readable */
		if (count == cap) {
			cap = cap ? cap * 2 : 256;
			grown = realloc(list, cap * sizeof(*list));
			if (!grown) {
				free(list);
				closedir(dir);
				return tt_err_set(err, "out of memory reading %s", proc_root);
			}
			list = grown;
		}
		list[count++] = p;
	}
	closedir(dir);
	*procs = list;
	*n = count;
	return 0;
}

static pid_t parent_of(const char *proc_root, pid_t pid)
{
	char path[512], line[256];
	pid_t ppid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int v;

		if (sscanf(line, "PPid: %d", &v) == 1) {
			ppid = v;
			break;
		}
	}
	fclose(f);
	return ppid;
}

int tt_proc_is_ancestor(const char *proc_root, pid_t pid, pid_t ancestor)
{
	/* A bound on the walk: a chain longer than this is a loop in a corrupt snapshot. */
	for (int depth = 0; depth < 4096 && pid > 1 && ancestor > 0; depth++) {
		pid = parent_of(proc_root, pid);
		if (pid == ancestor)
			return 1;
	}
	return 0;
}

/* Whether child is a container's first process that its runtime parent passes sig on to: the
 * parent (not the relay itself) and the child handle sig, and the child lives in another mount
 * namespace. A first process that does not take sig (a shell) drops what its runtime passes on
 * (the init of a PID namespace ignores signals it has no handler for): the relay then reaches
 * into that container as anywhere else. */
static int behind_runtime(const struct tt_proc *parent, const struct tt_proc *child, pid_t root,
			  uint64_t bit)
{
	return parent->pid != root && (parent->handled & bit) && (child->handled & bit) &&
	       parent->mnt_ns && child->mnt_ns && parent->mnt_ns != child->mnt_ns;
}

/* Marks in_tree[i] for every descendant of root the relay may signal (see tt_relay_targets):
 * passes until no new process joins, so the cost is n × tree depth rather than a walk up the
 * parent chain for each process. */
static void mark_descendants(const struct tt_proc *procs, size_t n, pid_t root, uint64_t bit,
			     char *in_tree)
{
	int changed = 1;
	size_t i, j;

	while (changed) {
		changed = 0;
		for (i = 0; i < n; i++) {
			if (in_tree[i] || procs[i].pid == root)
				continue;
			if (procs[i].ppid == root) {
				in_tree[i] = 1;
				changed = 1;
				continue;
			}
			for (j = 0; j < n; j++) {
				if (in_tree[j] && procs[j].pid == procs[i].ppid) {
					if (!behind_runtime(&procs[j], &procs[i], root, bit)) {
						in_tree[i] = 1;
						changed = 1;
					}
					break;
				}
			}
		}
	}
}

static const struct tt_proc *find_proc(const struct tt_proc *procs, size_t n, pid_t pid)
{
	for (size_t i = 0; i < n; i++)
		if (procs[i].pid == pid)
			return &procs[i];
	return NULL;
}

int tt_relay_reaches(const char *proc_root, pid_t pid, pid_t relay, int sig, uint64_t relay_mnt_ns)
{
	uint64_t bit = (sig >= 1 && sig <= 64) ? (uint64_t)1 << (sig - 1) : 0;
	const struct tt_proc *child, *parent;
	struct tt_proc *procs = NULL, self = { 0 };
	int reached = 0, handler_between = 0, unreadable = 0;
	size_t n = 0;

	if (relay <= 0 || !tt_proc_is_ancestor(proc_root, pid, relay) ||
	    tt_proc_snapshot(proc_root, &procs, &n, NULL) != 0)
		return 0;
	child = find_proc(procs, n, pid);
	if (child) {
		self = *child;
		self.handled |= bit;
		child = &self;
	}
	/* Bounded like tt_proc_is_ancestor: a longer chain is a loop in a changing snapshot. */
	for (int depth = 0; child && depth < 4096; depth++) {
		parent = find_proc(procs, n, child->ppid);
		if (!parent)
			break;
		if (parent->pid == relay) {
			reached = 1;
			break;
		}
		if (behind_runtime(parent, child, relay, bit))
			break;
		handler_between |= (parent->handled & bit) != 0;
		unreadable |= !parent->mnt_ns || !child->mnt_ns;
		child = parent;
	}
	/* Seen from inside a container: a handler above, and pid in another namespace than the relay,
	 * is the runtime (a container never returns to the relay's namespace below it). */
	if (reached && unreadable && handler_between && relay_mnt_ns && self.mnt_ns &&
	    self.mnt_ns != relay_mnt_ns)
		reached = 0;
	free(procs);
	return reached;
}

size_t tt_relay_targets(const struct tt_proc *procs, size_t n, pid_t root, int sig,
			pid_t *out, size_t cap)
{
	uint64_t bit = (sig >= 1 && sig <= 64) ? (uint64_t)1 << (sig - 1) : 0;
	size_t chosen = 0, i;
	char *in_tree = calloc(n ? n : 1, 1);

	if (!in_tree)
		return 0;
	mark_descendants(procs, n, root, bit, in_tree);
	for (i = 0; i < n; i++) {
		if (!in_tree[i] || !(procs[i].handled & bit))
			continue;
		if (chosen < cap)
			out[chosen] = procs[i].pid;
		chosen++;
	}
	free(in_tree);
	return chosen;
}

/* topo_file.c — creating and removing the step's NCCL topology file (see topo_file.h).
 *
 * Who runs what (Slurm's src/slurmd/slurmstepd/mgr.c, checked in 24.11 and 26.05; spank(8) of
 * 22.05 says the same of slurm_spank_user_init: "called after privileges are temporarily
 * dropped"): _fork_all_tasks() calls drop_privileges() and then the SPANK user_init hook, so
 * tt_topo_file_create runs with the job user's effective uid (real uid root); slurm_spank_exit
 * runs after privileges are reclaimed, as root. With ContainSpank, user_init runs in a clone()
 * child that shares memory but not file descriptors with slurmstepd.
 * So: the directory is made, checked and written as the job's user, and a directory in its place
 * that is not the user's own private one (another user's, a symbolic link, a group- or
 * world-writable mode) is never used: a fresh mkdtemp() directory next to it is. Root removes
 * only through the directory it checked, identified by device and inode, with unlinkat() on
 * names inside it, never by following a path a user controls. */
#include "topo_file.h"
#include "hw_nccl_xml.h"
#include "hw_policy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the probe child sends back through the pipe (the same binary on both ends). */
struct probe_report {
	int ok;
	tt_err err;
	struct tt_node_policy policy;
};

static void add_note(struct tt_node_policy *p, const char *note)
{
	if (p->nnotes < TT_TOPO_MAX_NOTES)
		snprintf(p->notes[p->nnotes++], sizeof(p->notes[0]), "%s", note);
}

/* Runs in the probe child: discover this node, write the XML atomically, derive the policy. */
static void probe(const struct tt_plugin_config *cfg, const char *path, struct probe_report *r)
{
	struct tt_hw_options opts = { 0 };
	struct tt_hw_model *model = NULL;
	struct tt_rank_policy pol;
	int i;

	opts.input_xml = cfg->hwloc_xml[0] ? cfg->hwloc_xml : NULL;
	setenv("HWLOC_PLUGINS_BLACKLIST", TT_HWLOC_UNUSED_PLUGINS, 0);	/* a child: its own env */
	if (tt_hw_discover(&opts, &model, &r->err) != 0)
		return;
	for (int i = 0; i < model->nwarnings; i++)
		add_note(&r->policy, model->warnings[i]);
	if (tt_nccl_xml_write_file(model, path, &r->err) != 0 ||
	    tt_hw_rank_policy(model, -1, &pol, &r->err) != 0)
		goto out;
	snprintf(r->policy.socket_ifname, sizeof(r->policy.socket_ifname), "%s", pol.nccl_socket_ifname);
	snprintf(r->policy.ib_hca, sizeof(r->policy.ib_hca), "%s", pol.nccl_ib_hca);
	/* Each GPU's NUMA-local CPUs bind the tasks Slurm did not bind (cpu_bind.h); GPU indices the
	 * model does not have end the list. */
	for (i = 0; i < TT_GPU_MAX && tt_hw_rank_policy(model, i, &pol, NULL) == 0; i++)
		r->policy.cpus[i] = pol.cpus;
	r->policy.ngpus = i;
	r->ok = 1;
out:
	tt_hw_free(model);
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Reads the child's whole report from fd before the deadline. */
static int read_report(int fd, long deadline_ms, struct probe_report *r, tt_err *err)
{
	char *buf = (char *)r;
	size_t used = 0;

	while (used < sizeof(*r)) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = deadline_ms - now_ms();
		ssize_t got;
		int ready;

		if (left <= 0)
			return tt_err_set(err, "topology probe did not finish within %d s",
					  TT_TOPO_PROBE_TIMEOUT_S);
		ready = poll(&pfd, 1, (int)left);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0)
			return tt_err_errno(err, "waiting for the topology probe");
		if (ready == 0)
			continue;
		got = read(fd, buf + used, sizeof(*r) - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return tt_err_set(err, "topology probe ended without a report (crashed?)");
		used += (size_t)got;
	}
	if (!r->ok)
		return tt_err_set(err, "%s", r->err.msg);
	return 0;
}

/* Forks the probe writing path; its report into r. */
static int run_probe(const struct tt_plugin_config *cfg, const char *path, struct probe_report *r,
		     tt_err *err)
{
	int pipefd[2], status, rc;
	pid_t child;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return tt_err_errno(err, "cannot create a pipe for the topology probe");
	child = fork();
	if (child < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return tt_err_errno(err, "cannot fork the topology probe");
	}
	if (child == 0) {
		const char *p = (const char *)r;
		size_t sent = 0;

		close(pipefd[0]);
		probe(cfg, path, r);
		while (sent < sizeof(*r)) {
			ssize_t n = write(pipefd[1], p + sent, sizeof(*r) - sent);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
		_exit(0);
	}
	close(pipefd[1]);
	rc = read_report(pipefd[0], now_ms() + TT_TOPO_PROBE_TIMEOUT_S * 1000L, r, err);
	close(pipefd[0]);
	if (rc != 0)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return rc;
}

static int open_base(const struct tt_plugin_config *cfg, tt_err *err)
{
	int fd = open(cfg->topo_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		tt_err_errno(err, "cannot open %s (plugstack topo_dir)", cfg->topo_dir);
	return fd;
}

/* Opens name in basefd without following a link and accepts it only as a directory of this
 * process's user with mode 0700 (set first when just_made: the umask may have taken bits away);
 * else why (for a note) says what it is. */
static int open_private_dir(int basefd, const char *name, int just_made, struct tt_topo_dir *d,
			    char *why, size_t len)
{
	struct stat st;
	int fd = openat(basefd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0) {
		int saved = errno;

		snprintf(why, len, "%s", fstatat(basefd, name, &st, AT_SYMLINK_NOFOLLOW) != 0 ? strerror(saved)
				 : S_ISLNK(st.st_mode) ? "is a symbolic link"
				 : !S_ISDIR(st.st_mode) ? "is not a directory" : strerror(saved));
		return -1;
	}
	if (just_made)
		fchmod(fd, 0700);
	if (fstat(fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700) {
		snprintf(why, len, "belongs to uid %u with mode %04o, not to uid %u with mode 0700",
			 (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777), (unsigned)geteuid());
		close(fd);
		return -1;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	d->fd = fd;
	return 0;
}

/* The job's directory: traintopo.<job> when it is (or can be made) the user's private one,
 * else a fresh traintopo.<job>.XXXXXX beside it and a note saying why. */
static int open_job_dir(const struct tt_plugin_config *cfg, uint32_t job_id, struct tt_topo_dir *d,
			struct tt_node_policy *policy, tt_err *err)
{
	char jobdir[PATH_MAX], tmpl[PATH_MAX + 8], why[128], note[TT_HW_WARNING_LEN];
	const char *name;
	int basefd, rc = -1, made;

	if (tt_plugin_topo_dir(cfg, job_id, jobdir, sizeof(jobdir), err) != 0)
		return -1;
	name = strrchr(jobdir, '/') + 1;
	basefd = open_base(cfg, err);
	if (basefd < 0)
		return -1;
	made = mkdirat(basefd, name, 0700) == 0;
	if (!made && errno != EEXIST) {
		tt_err_errno(err, "cannot create %s (plugstack topo_dir=%s)", jobdir, cfg->topo_dir);
		goto out;
	}
	if (open_private_dir(basefd, name, made, d, why, sizeof(why)) == 0) {
		rc = 0;
		goto out;
	}
	snprintf(tmpl, sizeof(tmpl), "%s.XXXXXX", jobdir);
	if (!mkdtemp(tmpl)) {
		tt_err_errno(err, "%s %s, and no directory can be made beside it", jobdir, why);
		goto out;
	}
	if (open_private_dir(basefd, strrchr(tmpl, '/') + 1, 1, d, why, sizeof(why)) != 0) {
		tt_err_set(err, "%s %s right after mkdtemp made it", tmpl, why);
		goto out;
	}
	snprintf(note, sizeof(note), "%.80s %.80s: not used; this step's file is in %.40s beside it",
		 jobdir, why, d->name);
	add_note(policy, note);
	rc = 0;
out:
	close(basefd);
	return rc;
}

/* d->fd when it is still open on the directory d names (not so after a ContainSpank clone). */
static int same_dir_fd(const struct tt_topo_dir *d)
{
	struct stat st;

	return d->fd >= 0 && fstat(d->fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_dev == d->dev &&
	       st.st_ino == d->ino;
}

/* Removes file (may be NULL) from the job's directory and the directory when empty, touching
 * nothing unless the directory is the one d identifies. */
static int remove_in_dir(const struct tt_plugin_config *cfg, struct tt_topo_dir *d, const char *file,
			 tt_err *err)
{
	int basefd = open_base(cfg, err), fd = -1, rc = 0, own_fd = same_dir_fd(d);
	struct stat st;

	if (basefd < 0)
		goto out;
	if (own_fd) {
		fd = d->fd;
	} else {
		fd = openat(basefd, d->name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &st) != 0 || st.st_dev != d->dev || st.st_ino != d->ino)) {
			close(fd); /* replaced since: not ours to clean */
			fd = -1;
		}
	}
	if (fd >= 0 && file && unlinkat(fd, file, 0) != 0 && errno != ENOENT)
		rc = tt_err_errno(err, "cannot remove %s/%s/%s", cfg->topo_dir, d->name, file);
	/* Only the directory's owner (or root) can swap the entry in a sticky topo_dir, and rmdir
	 * takes only an empty directory: fails while other steps of the job have their files. */
	if (fd >= 0 && fstatat(basefd, d->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_dev == d->dev && st.st_ino == d->ino)
		unlinkat(basefd, d->name, AT_REMOVEDIR);
	if (fd >= 0 && fd != d->fd)
		close(fd);
	close(basefd);
out:
	/* Not ours when it is not the directory: after a ContainSpank clone the number may be one of
	 * slurmstepd's own descriptors. */
	if (own_fd)
		close(d->fd);
	d->fd = -1;
	return rc;
}

/* Another step's exit may remove the (still empty) directory between our check and the probe's
 * write; the write then fails and one more try makes a new one. */
static int dir_removed(const struct tt_topo_dir *d)
{
	struct stat st;

	return d->fd >= 0 && fstat(d->fd, &st) == 0 && st.st_nlink == 0;
}

int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, struct tt_topo_dir *dir, struct tt_node_policy *policy,
			tt_err *err)
{
	struct probe_report *report = calloc(1, sizeof(*report));
	char through_fd[64];
	int rc = -1;

	dir->fd = -1;
	if (!report)
		return tt_err_set(err, "out of memory for the topology probe's report");
	for (int attempt = 0; attempt < 2 && rc != 0; attempt++) {
		memset(report, 0, sizeof(*report));
		if (open_job_dir(cfg, job_id, dir, &report->policy, err) != 0)
			break;
		if (snprintf(path, len, "%s/%s/nccl-topo.%u.xml", cfg->topo_dir, dir->name, step_id) >= (int)len) {
			tt_err_set(err, "topology file path under %s is too long", cfg->topo_dir);
			break;
		}
		/* Written through the checked directory, whatever its path now leads to. */
		snprintf(through_fd, sizeof(through_fd), "/proc/self/fd/%d/nccl-topo.%u.xml", dir->fd, step_id);
		rc = run_probe(cfg, through_fd, report, err);
		if (rc != 0 && !dir_removed(dir))
			break;
		if (rc != 0) {
			close(dir->fd);
			dir->fd = -1;
		}
	}
	if (rc == 0)
		*policy = report->policy;
	else if (dir->fd >= 0)
		remove_in_dir(cfg, dir, NULL, NULL);
	free(report);
	return rc;
}

int tt_topo_file_remove(const struct tt_plugin_config *cfg, struct tt_topo_dir *dir, const char *path,
			tt_err *err)
{
	const char *file = strrchr(path, '/');

	return remove_in_dir(cfg, dir, file ? file + 1 : path, err);
}

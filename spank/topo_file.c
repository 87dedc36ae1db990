/* SPDX-License-Identifier: MIT */
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
#include "tt_file.h"
#include "tt_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The probe child after fork, never returning: becomes the job's user in full (user_init runs
 * with only the effective ids dropped; the probe needs no privilege), puts the report pipe on
 * standard output and /dev/null on the others, keeps the job's directory open across exec, and
 * runs `PROBE probe --output /proc/self/fd/N/FILE [--input XML]` in a fixed environment. When
 * that cannot happen it writes the error report itself. */
static void exec_probe(const struct tt_plugin_config *cfg, int pipe_fd, int dir_fd, const char *file)
{
	static char *const envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
	char output[64], msg[PATH_MAX + 256], report[sizeof(msg) + 64];
	/* Copies above the standard descriptors, so the dup2s below never meet their own source. */
	int out = fcntl(pipe_fd, F_DUPFD_CLOEXEC, 3), dir = fcntl(dir_fd, F_DUPFD, 3);
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	char *argv[] = { (char *)cfg->probe, "probe", "--output", output, NULL, NULL, NULL };
	gid_t gid = getegid();
	uid_t uid = geteuid();

	if (cfg->hwloc_xml[0]) {
		argv[4] = "--input";
		argv[5] = (char *)cfg->hwloc_xml;
	}
	snprintf(output, sizeof(output), "/proc/self/fd/%d/%s", dir, file);
	if (out < 0 || dir < 0 || null_fd < 0 || (null_fd < 3 && (null_fd = fcntl(null_fd, F_DUPFD_CLOEXEC, 3)) < 0) ||
	    dup2(null_fd, STDIN_FILENO) < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(null_fd, STDERR_FILENO) < 0 ||
	    setresgid(gid, gid, gid) != 0 || setresuid(uid, uid, uid) != 0) {
		snprintf(msg, sizeof(msg), "cannot prepare the topology probe %s: %s", cfg->probe, strerror(errno));
	} else {
		execve(cfg->probe, argv, envp);
		snprintf(msg, sizeof(msg), "cannot run the topology probe %s: %s (install traintopo's "
			 "train-topo on this node, or name it with plugstack probe=PATH)", cfg->probe,
			 strerror(errno));
	}
	/* The child's last words: nothing is left to do when even they cannot be written. */
	(void)tt_write_all(out >= 0 ? out : pipe_fd, report,
			   tt_node_policy_format_error(msg, report, sizeof(report)), false);
	_exit(127);
}

/* Reads the probe's whole report (or the step's file) from fd into a new buffer, until end of
 * file or the deadline; more than TT_NODE_REPORT_MAX bytes are cut at one byte more (the
 * parser refuses that). */
static int read_report(int fd, long deadline_ms, char **text, size_t *len, tt_err *err)
{
	size_t used = 0, cap = 4096;
	char *buf = malloc(cap);

	if (!buf)
		return tt_err_set(err, "out of memory for the topology probe's report");
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		long left = deadline_ms - tt_now_ms();
		ssize_t got;
		int ready;

		if (left <= 0) {
			free(buf);
			return tt_err_set(err, "topology probe did not finish within %d s", TT_TOPO_PROBE_TIMEOUT_S);
		}
		ready = poll(&pfd, 1, (int)left);
		if (ready < 0 && errno == EINTR)
			continue;
		if (ready < 0) {
			free(buf);
			return tt_err_errno(err, "waiting for the topology probe");
		}
		if (ready == 0)
			continue;
		if (used == cap) {
			char *bigger = cap > TT_NODE_REPORT_MAX ? NULL : realloc(buf, cap * 2);

			if (!bigger)
				break;	/* too long (or no memory): the parser says so */
			buf = bigger;
			cap *= 2;
		}
		got = read(fd, buf + used, cap - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(buf);
			return tt_err_errno(err, "reading the topology probe's report");
		}
		if (got == 0)
			break;
		used += (size_t)got;
	}
	*text = buf;
	*len = used;
	return 0;
}

/* Runs the probe program writing file into the directory open as dir_fd; its report into
 * policy. 1 (err says what the node has) when the probe found nothing to describe. */
static int run_probe(const struct tt_plugin_config *cfg, int dir_fd, const char *file,
		     struct tt_node_policy *policy, tt_err *err)
{
	int pipefd[2], status = 0, rc;
	char *text = NULL;
	size_t len = 0;
	pid_t child;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return tt_err_errno(err, "cannot create a pipe for the topology probe");
	child = fork();
	if (child < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return tt_err_errno(err, "cannot fork the topology probe");
	}
	if (child == 0)
		exec_probe(cfg, pipefd[1], dir_fd, file);
	close(pipefd[1]);
	rc = read_report(pipefd[0], tt_now_ms() + TT_TOPO_PROBE_TIMEOUT_S * 1000L, &text, &len, err);
	close(pipefd[0]);
	if (rc != 0)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (rc == 0 && tt_node_policy_parse(text, len, policy, err) != 0) {
		rc = -1;
		if (WIFSIGNALED(status))
			tt_err_set(err, "topology probe %s died of signal %d before finishing its report",
				   cfg->probe, WTERMSIG(status));
		else if (WIFEXITED(status) && WEXITSTATUS(status) == TT_TOPO_PROBE_NOTHING)
			rc = 1;
	}
	free(text);
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
	char jobdir[PATH_MAX], tmpl[PATH_MAX + 8], why[128], note[TT_NODE_NOTE_LEN];
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
	tt_node_policy_add_note(policy, note);
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
	/* The plugin's own notes (about the directory) come first, then the probe's warnings. */
	struct tt_node_policy *mine = calloc(1, sizeof(*mine)), *probed = calloc(1, sizeof(*probed));
	char file[32];
	int rc = -1;

	dir->fd = -1;
	if (!mine || !probed) {
		tt_err_set(err, "out of memory for the topology probe's report");
		goto out;
	}
	snprintf(file, sizeof(file), "nccl-topo.%u.xml", step_id);
	for (int attempt = 0; attempt < 2 && rc != 0; attempt++) {
		memset(mine, 0, sizeof(*mine));
		if (open_job_dir(cfg, job_id, dir, mine, err) != 0)
			break;
		if (snprintf(path, len, "%s/%s/%s", cfg->topo_dir, dir->name, file) >= (int)len) {
			tt_err_set(err, "topology file path under %s is too long", cfg->topo_dir);
			break;
		}
		/* Written through the checked directory, whatever its path now leads to. */
		rc = run_probe(cfg, dir->fd, file, probed, err);
		if (rc != 0 && !dir_removed(dir))
			break;
		if (rc != 0) {
			close(dir->fd);
			dir->fd = -1;
		}
	}
	if (rc == 0) {
		*policy = *probed;
		policy->nnotes = 0;
		for (int i = 0; i < mine->nnotes; i++)
			tt_node_policy_add_note(policy, mine->notes[i]);
		for (int i = 0; i < probed->nnotes; i++)
			tt_node_policy_add_note(policy, probed->notes[i]);
	} else if (dir->fd >= 0) {
		remove_in_dir(cfg, dir, NULL, NULL);
	}
out:
	free(mine);
	free(probed);
	return rc;
}

/* The step's file in the directory open as dir_fd, whole, into a new buffer. */
static int read_file_at(int dir_fd, const char *file, char **text, size_t *len, tt_err *err)
{
	int fd = openat(dir_fd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC), rc;
	struct stat st;

	if (fd < 0)
		return tt_err_errno(err, "cannot open the step's topology file %s", file);
	rc = read_report(fd, tt_now_ms() + TT_TOPO_PROBE_TIMEOUT_S * 1000L, text, len, err);
	if (rc == 0 && (fstat(fd, &st) != 0 || st.st_size != (off_t)*len)) {
		free(*text);
		rc = tt_err_set(err, "the step's topology file %s is larger than the %d bytes a copy "
				"takes", file, TT_NODE_REPORT_MAX);
	}
	close(fd);
	return rc;
}

int tt_topo_file_task_view(const struct tt_plugin_config *cfg, const struct tt_topo_dir *dir,
			   const char *path, tt_err *err)
{
	const char *file = strrchr(path, '/') + 1;
	struct tt_topo_dir here = { .fd = -1 };
	char why[128], dest[64], *text = NULL;
	size_t len = 0;
	struct stat st;
	int basefd, made, rc = -1;

	basefd = open_base(cfg, err);
	if (basefd < 0)
		return tt_err_wrap(err, "in the task");
	if (fstatat(basefd, dir->name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_dev == dir->dev && st.st_ino == dir->ino) {
		rc = 0;	/* the directory user_init wrote into: the task sees the file */
		goto out;
	}
	if (!same_dir_fd(dir)) {
		tt_err_set(err, "%s is not in this task's view of %s (a private /tmp per job?) and "
			   "slurmstepd passed no descriptor to copy it from", path, cfg->topo_dir);
		goto out;
	}
	if (read_file_at(dir->fd, file, &text, &len, err) != 0)
		goto out;
	made = mkdirat(basefd, dir->name, 0700) == 0;
	if (!made && errno != EEXIST) {
		tt_err_errno(err, "cannot create %s/%s in the task's view", cfg->topo_dir, dir->name);
		goto out;
	}
	if (open_private_dir(basefd, dir->name, made, &here, why, sizeof(why)) != 0) {
		tt_err_set(err, "%s/%s in the task's view %s", cfg->topo_dir, dir->name, why);
		goto out;
	}
	/* Through the checked directory, whatever its path leads to meanwhile. */
	snprintf(dest, sizeof(dest), "/proc/self/fd/%d/%s", here.fd, file);
	rc = tt_file_write_atomic(dest, text, len, err);
out:
	if (here.fd >= 0)
		close(here.fd);
	free(text);
	close(basefd);
	return rc;
}

int tt_topo_file_remove(const struct tt_plugin_config *cfg, struct tt_topo_dir *dir, const char *path,
			tt_err *err)
{
	const char *file = strrchr(path, '/');

	return remove_in_dir(cfg, dir, file ? file + 1 : path, err);
}

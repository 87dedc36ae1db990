/* tt_file.c — atomic whole-file writes (see tt_file.h). */
#include "tt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t left, const char *path, tt_err *err)
{
	while (left > 0) {
		ssize_t n = write(fd, p, left);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return tt_err_errno(err, "cannot write '%s' (disk full?)", path);
		p += n;
		left -= (size_t)n;
	}
	return 0;
}

/* The rename is durable only once the directory holding it is on disk. */
static int fsync_parent(const char *path, tt_err *err)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');
	int fd, rc = 0;

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tt_err_errno(err, "cannot open directory '%s' to sync it", dir);
	if (fsync(fd) != 0)
		rc = tt_err_errno(err, "cannot sync directory '%s'", dir);
	close(fd);
	return rc;
}

static const char *file_kind(mode_t mode)
{
	return S_ISDIR(mode) ? "a directory" : S_ISLNK(mode) ? "a symbolic link"
		: S_ISCHR(mode) ? "a character device" : S_ISBLK(mode) ? "a block device"
		: S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "not a regular file";
}

int tt_file_write_chunks(const char *path, const tt_chunk *chunks, int n, tt_err *err)
{
	char tmp[PATH_MAX];
	struct stat st;
	int fd, i;

	/* The rename would put a regular file where a device, FIFO or link was. */
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return tt_err_set(err, "'%s' is %s, not a regular file: not replacing it (write to a file "
				  "path instead)", path, file_kind(st.st_mode));
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return tt_err_set(err, "output path '%s' is too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return tt_err_errno(err, "cannot create a temporary file next to '%s' (is the directory writable?)", path);
	for (i = 0; i < n; i++)
		if (write_all(fd, chunks[i].data, chunks[i].len, tmp, err) != 0)
			goto fail;
	/* mkstemp makes 0600; these files are read by the job's other processes. */
	if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
		tt_err_errno(err, "cannot flush '%s' to disk", tmp);
		goto fail;
	}
	if (close(fd) != 0) {
		fd = -1;
		tt_err_errno(err, "cannot close '%s'", tmp);
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		tt_err_errno(err, "cannot rename '%s' to '%s'", tmp, path);
		goto fail;
	}
	return fsync_parent(path, err);
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

int tt_file_write_atomic(const char *path, const void *data, size_t len, tt_err *err)
{
	tt_chunk c = { data, len };

	return tt_file_write_chunks(path, &c, 1, err);
}

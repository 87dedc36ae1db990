/* atomic_file.c — temp + fsync + rename + fsync(dir) writes (see atomic_file.h). */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int fsync_dir(const char *dir, tt_err *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return tt_err_errno(err, "cannot open directory %s to sync it", dir);
	if (fsync(fd) != 0)
		rc = tt_err_errno(err, "cannot sync directory %s", dir);
	close(fd);
	return rc;
}

static int write_all(int fd, const char *p, size_t left, const char *path, tt_err *err)
{
	while (left > 0) {
		ssize_t w = write(fd, p, left);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return tt_err_errno(err, "cannot write %s (disk full?)", path);
		p += w;
		left -= (size_t)w;
	}
	return 0;
}

int tt_atomic_write(const char *dir, const char *name, const tt_chunk *chunks, int n, tt_err *err)
{
	char path[4096], tmp[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return tt_err_errno(err, "cannot create %s", tmp);
	for (int i = 0; i < n; i++)
		if (write_all(fd, chunks[i].data, chunks[i].len, tmp, err))
			goto fail;
	if (fsync(fd) != 0) {
		tt_err_errno(err, "cannot sync %s", tmp);
		goto fail;
	}
	if (close(fd) != 0) {
		fd = -1;
		tt_err_errno(err, "cannot close %s", tmp);
		goto fail;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		tt_err_errno(err, "cannot rename %s to %s", tmp, path);
		goto fail;
	}
	return fsync_dir(dir, err);
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

int tt_atomic_write_path(const char *path, const void *data, size_t len, tt_err *err)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	tt_chunk c = { data, len };

	if (!slash)
		return tt_atomic_write(".", path, &c, 1, err);
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	return tt_atomic_write(slash == path ? "/" : dir, slash + 1, &c, 1, err);
}

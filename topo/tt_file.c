/* tt_file.c — atomic whole-file writes (see tt_file.h). */
#include "tt_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
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

/* Creates a fresh temporary file next to path, like mkstemp but with mode 0666 so the umask
 * applies (mkstemp's 0600 would have to be widened by hand, overriding the user's umask). */
static int create_temp(const char *path, char *tmp, size_t len, tt_err *err)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		uint32_t r;
		int fd;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)getpid() * 2654435761u + (uint32_t)attempt;
		if (snprintf(tmp, len, "%s.tmp.%08x", path, r) >= (int)len)
			return tt_err_set(err, "output path '%s' is too long", path);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd
				       : tt_err_errno(err, "cannot create a temporary file next to '%s' (is the directory writable?)",
						      path);
	}
	return tt_err_set(err, "cannot create a temporary file next to '%s': 100 names taken", path);
}

int tt_file_write_chunks(const char *path, const tt_chunk *chunks, int n, tt_err *err)
{
	char tmp[PATH_MAX];
	int fd, i;

	fd = create_temp(path, tmp, sizeof(tmp), err);
	if (fd < 0)
		return -1;
	for (i = 0; i < n; i++)
		if (write_all(fd, chunks[i].data, chunks[i].len, tmp, err) != 0)
			goto fail;
	if (fsync(fd) != 0) {
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

/* SPDX-License-Identifier: MIT */
/* tt_file.c — atomic whole-file writes (see tt_file.h). */
#include "tt_file.h"
#include "tt_io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

/* The rename is durable only once the directory holding it is on disk. */
void tt_file_dir_of(const char *path, char *dir, size_t len)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, len, ".");
	else if (slash == path)
		snprintf(dir, len, "/");
	else
		snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

static int fsync_parent(const char *path, tt_err *err)
{
	char dir[PATH_MAX];
	int fd, rc = 0;

	tt_file_dir_of(path, dir, sizeof(dir));
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

/* Creates a fresh temporary file next to path, like mkstemp but with mode 0666 so the umask
 * applies (mkstemp's 0600 would have to be widened by hand, overriding the user's umask). */
static int create_temp(int dir, const char *name, const char *path, char *tmp, size_t len, tt_err *err)
{
	for (int attempt = 0; attempt < 100; attempt++) {
		uint32_t r;
		int fd;

		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			r = (uint32_t)getpid() * 2654435761u + (uint32_t)attempt;
		if (snprintf(tmp, len, "%s.tmp.%08x", name, r) >= (int)len)
			return tt_err_set(err, "output path '%s' is too long", path);
		fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0666);
		if (fd >= 0 || errno != EEXIST)
			return fd >= 0 ? fd
				       : tt_err_errno(err, "cannot create a temporary file next to '%s' (is the directory writable?)",
						      path);
	}
	return tt_err_set(err, "cannot create a temporary file next to '%s': 100 names taken", path);
}

int tt_file_openat(tt_file_out *f, int dirfd, const char *name, const char *path, tt_err *err)
{
	struct stat st;

	/* The rename would put a regular file where a device, FIFO or link was. */
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode))
		return tt_err_set(err, "'%s' is %s, not a regular file: not replacing it (write to a file "
				  "path instead)", path, file_kind(st.st_mode));
	f->dir = dirfd;
	f->path = path;
	f->name = name;
	f->written = f->flushed = 0;
	f->fd = create_temp(dirfd, name, path, f->tmp, sizeof(f->tmp), err);
	return f->fd < 0 ? -1 : 0;
}

int tt_file_open(tt_file_out *f, const char *path, tt_err *err)
{
	return tt_file_openat(f, AT_FDCWD, path, path, err);
}

/* Writeback starts in steps of this much; the final fsync waits only for the last ones. */
#define WRITEBACK_STEP ((off_t)8 << 20)

int tt_file_write(tt_file_out *f, const void *data, size_t len, tt_err *err)
{
	if (tt_write_all(f->fd, data, len, false) != 0)
		return tt_err_errno(err, "cannot write '%s' (disk full?)", f->tmp);
	f->written += (off_t)len;
	if (f->written - f->flushed >= WRITEBACK_STEP) {
		/* Only a hint: where unsupported, fsync does all the work. */
		sync_file_range(f->fd, f->flushed, f->written - f->flushed, SYNC_FILE_RANGE_WRITE);
		f->flushed = f->written;
	}
	return 0;
}

void tt_file_abort(tt_file_out *f)
{
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	unlinkat(f->dir, f->tmp, 0);
}

int tt_file_commit(tt_file_out *f, tt_err *err)
{
	if (fsync(f->fd) != 0) {
		tt_err_errno(err, "cannot flush '%s' to disk", f->path);
		goto fail;
	}
	if (close(f->fd) != 0) {
		f->fd = -1;
		tt_err_errno(err, "cannot close '%s'", f->path);
		goto fail;
	}
	f->fd = -1;
	if (renameat(f->dir, f->tmp, f->dir, f->name) != 0) {
		tt_err_errno(err, "cannot rename '%s' to '%s'", f->tmp, f->path);
		goto fail;
	}
	if (f->dir != AT_FDCWD)
		return fsync(f->dir) == 0 ? 0 : tt_err_errno(err, "cannot sync the directory of '%s'", f->path);
	return fsync_parent(f->path, err);
fail:
	tt_file_abort(f);
	return -1;
}

int tt_file_write_chunks_at(int dirfd, const char *name, const char *path, const tt_chunk *chunks, int n,
			    tt_err *err)
{
	tt_file_out f;

	if (tt_file_openat(&f, dirfd, name, path, err) != 0)
		return -1;
	for (int i = 0; i < n; i++)
		if (tt_file_write(&f, chunks[i].data, chunks[i].len, err) != 0) {
			tt_file_abort(&f);
			return -1;
		}
	return tt_file_commit(&f, err);
}

int tt_file_write_chunks(const char *path, const tt_chunk *chunks, int n, tt_err *err)
{
	return tt_file_write_chunks_at(AT_FDCWD, path, path, chunks, n, err);
}

int tt_file_write_atomic(const char *path, const void *data, size_t len, tt_err *err)
{
	tt_chunk c = { data, len };

	return tt_file_write_chunks(path, &c, 1, err);
}

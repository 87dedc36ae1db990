/* tt_file.c — atomic whole-file writes (see tt_file.h). */
#include "tt_file.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int tt_file_write_atomic(const char *path, const char *data, size_t len, tt_err *err)
{
	char tmp[PATH_MAX];
	size_t done = 0;
	int fd;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp))
		return tt_err_set(err, "output path '%s' is too long", path);
	fd = mkstemp(tmp);
	if (fd < 0)
		return tt_err_errno(err, "cannot create a temporary file next to '%s' (is the directory writable?)", path);
	while (done < len) {
		ssize_t n = write(fd, data + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tt_err_errno(err, "cannot write '%s'", tmp);
			goto fail;
		}
		done += (size_t)n;
	}
	/* mkstemp makes 0600; a topology file is read by the job's other processes. */
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
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	return -1;
}

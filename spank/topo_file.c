/* topo_file.c — creating and removing the step's NCCL topology file (see topo_file.h). */
#include "topo_file.h"
#include "hw_model.h"
#include "hw_nccl_xml.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs in the probe child: discover this node and write the XML atomically. */
static int probe_and_write(const struct tt_plugin_config *cfg, const char *path, tt_err *err)
{
	struct tt_hw_options opts = { 0 };
	struct tt_hw_model *model = NULL;
	int rc;

	opts.input_xml = cfg->hwloc_xml[0] ? cfg->hwloc_xml : NULL;
	if (tt_hw_discover(&opts, &model, err) != 0)
		return -1;
	rc = tt_nccl_xml_write_file(model, path, err);
	tt_hw_free(model);
	return rc;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits for the child's report on fd until the deadline; the report is "" on success or the
 * error text. Returns 0 when the child reported success. */
static int read_report(int fd, long deadline_ms, tt_err *err)
{
	char buf[sizeof(err->msg)];
	size_t used = 0;

	for (;;) {
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
		got = read(fd, buf + used, sizeof(buf) - 1 - used);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		used += (size_t)got;
		if (used == sizeof(buf) - 1)
			break;
	}
	buf[used] = '\0';
	if (used == 0)
		return tt_err_set(err, "topology probe ended without a report (crashed?)");
	if (strcmp(buf, "ok") == 0)
		return 0;
	return tt_err_set(err, "%s", buf);
}

int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, tt_err *err)
{
	char dir[PATH_MAX];
	int pipefd[2], status, rc = -1;
	pid_t child;

	if (tt_plugin_topo_dir(cfg, job_id, dir, sizeof(dir), err) != 0)
		return -1;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return tt_err_errno(err, "cannot create %s (plugstack topo_dir=%s)", dir, cfg->topo_dir);
	if (snprintf(path, len, "%s/nccl-topo.%u.xml", dir, step_id) >= (int)len)
		return tt_err_set(err, "topology file path under %s is too long", dir);
	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return tt_err_errno(err, "cannot create a pipe for the topology probe");
	child = fork();
	if (child < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return tt_err_errno(err, "cannot fork the topology probe");
	}
	if (child == 0) {
		tt_err probe_err;
		const char *report = "ok";
		ssize_t ignored;

		close(pipefd[0]);
		if (probe_and_write(cfg, path, &probe_err) != 0)
			report = probe_err.msg;
		ignored = write(pipefd[1], report, strlen(report));
		(void)ignored;
		_exit(0);
	}
	close(pipefd[1]);
	rc = read_report(pipefd[0], now_ms() + TT_TOPO_PROBE_TIMEOUT_S * 1000L, err);
	close(pipefd[0]);
	if (rc != 0)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	return rc;
}

int tt_topo_file_remove(const struct tt_plugin_config *cfg, uint32_t job_id, const char *path,
			tt_err *err)
{
	char dir[PATH_MAX];

	if (unlink(path) != 0 && errno != ENOENT)
		return tt_err_errno(err, "cannot remove %s", path);
	if (tt_plugin_topo_dir(cfg, job_id, dir, sizeof(dir), NULL) == 0)
		rmdir(dir);	/* fails while other steps of the job still have their file: fine */
	return 0;
}

/* topo_file.c — creating and removing the step's NCCL topology file (see topo_file.h). */
#include "topo_file.h"
#include "hw_model.h"
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
	if (tt_nccl_xml_write_file(model, path, &r->err) != 0)
		goto out;
	if (tt_hw_rank_policy(model, -1, &pol, &r->err) != 0)
		goto out;
	snprintf(r->policy.socket_ifname, sizeof(r->policy.socket_ifname), "%s",
		 pol.nccl_socket_ifname);
	/* GPU indices the model does not have end the list. */
	for (i = 0; i < TT_GPU_MAX && tt_hw_rank_policy(model, i, &pol, NULL) == 0; i++) {
		snprintf(r->policy.ib_hca[i], sizeof(r->policy.ib_hca[i]), "%s", pol.nccl_ib_hca);
		r->policy.cpus[i] = pol.cpus;
	}
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

int tt_topo_file_create(const struct tt_plugin_config *cfg, uint32_t job_id, uint32_t step_id,
			char *path, size_t len, struct tt_node_policy *policy, tt_err *err)
{
	struct probe_report *report;
	char dir[PATH_MAX];
	int pipefd[2], status, rc = -1;
	pid_t child;

	if (tt_plugin_topo_dir(cfg, job_id, dir, sizeof(dir), err) != 0)
		return -1;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST)
		return tt_err_errno(err, "cannot create %s (plugstack topo_dir=%s)", dir, cfg->topo_dir);
	if (snprintf(path, len, "%s/nccl-topo.%u.xml", dir, step_id) >= (int)len)
		return tt_err_set(err, "topology file path under %s is too long", dir);
	report = calloc(1, sizeof(*report));
	if (!report)
		return tt_err_set(err, "out of memory for the topology probe's report");
	if (pipe2(pipefd, O_CLOEXEC) != 0) {
		tt_err_errno(err, "cannot create a pipe for the topology probe");
		goto out;
	}
	child = fork();
	if (child < 0) {
		tt_err_errno(err, "cannot fork the topology probe");
		close(pipefd[0]);
		close(pipefd[1]);
		goto out;
	}
	if (child == 0) {
		const char *p = (const char *)report;
		size_t sent = 0;

		close(pipefd[0]);
		probe(cfg, path, report);
		while (sent < sizeof(*report)) {
			ssize_t n = write(pipefd[1], p + sent, sizeof(*report) - sent);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			sent += (size_t)n;
		}
		_exit(0);
	}
	close(pipefd[1]);
	rc = read_report(pipefd[0], now_ms() + TT_TOPO_PROBE_TIMEOUT_S * 1000L, report, err);
	close(pipefd[0]);
	if (rc != 0)
		kill(child, SIGKILL);
	while (waitpid(child, &status, 0) < 0 && errno == EINTR)
		;
	if (rc == 0)
		*policy = report->policy;
out:
	free(report);
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

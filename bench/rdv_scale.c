/* SPDX-License-Identifier: MIT */
/* rdv_scale.c — a rendezvous of N ranks through libtrainrt's store on this machine (issue #20):
 * the store in this process, the ranks as threads in client processes of at most 2048 each (one
 * process could not hold both ends of 16k connections under the usual descriptor limit), all
 * released together once every thread exists. A rank connects (with the key handshake) and then
 *   --barrier add   counts itself in (ADD), the last one sets "done", all wait for it (GET):
 *                   the pattern PyTorch's TCPStore peer runs (bench/rdv_tcpstore.py)
 *   --barrier join  joins the store's rendezvous (JOIN, what trainrt_init does), which names the
 *                   ranks that did not come
 *   --hier          meets through node leaders (rt_node.h, issue #32): ranks in nodes of 8 (N a
 *                   multiple of 8), each node's local rank 0 a thread that gathers its node over
 *                   a Unix socket and joins the store once for it; the followers of a process's
 *                   nodes are driven by one thread of it (rt_node_follow_start, then each verdict),
 *                   as a thread each would exceed this machine's pid_max at 131,072 ranks
 * --missing R never starts rank R; --die R has rank R join at once and close its connection 0.2 s
 * later, the others starting 0.5 s late (flat only).
 * Prints "<seconds> <ranks done> <store peak RSS KiB> <store CPU s> <ranks' CPU s> <connections
 * the kernel dropped on a full accept queue (ListenOverflows, the whole machine's)>", then the first failure, if any, and how
 * many ranks failed with that same line.
 *   rdv-scale N [--barrier add|join | --hier] [--timeout S] [--missing R | --die R] */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rt_net.h"
#include "rt_node.h"
#include "rt_store.h"

#define PER_PROC 2048
#define KEY "bench:rdv-scale"
#define LOCAL 8 /* ranks per simulated node (--hier) */

struct opts {
	int n, join, hier, missing, die, rt_store;
	double timeout;
};

/* What one client process sends back. */
struct result {
	int done, failed, same; /* same: failures with exactly the first failure's message */
	int first_rank;
	double last;            /* when its last rank finished (CLOCK_MONOTONIC, shared) */
	char first[512], other[512]; /* the first failure, and the first one that differs */
};

struct client {
	const struct opts *o;
	int port, go_fd;
	pthread_barrier_t start;
	pthread_mutex_t lock;
	struct result r;
};

struct rank_arg {
	struct client *c;
	int rank;
};

/* A rank's end: done, or its failure line counted against the first one. */
static void record(struct client *c, int rank, int ok, const char *msg)
{
	pthread_mutex_lock(&c->lock);
	if (ok) {
		c->r.done++;
	} else {
		if (!c->r.failed++) {
			snprintf(c->r.first, sizeof(c->r.first), "%s", msg);
			c->r.first_rank = rank;
		}
		c->r.same += strcmp(c->r.first, msg) == 0;
		if (strcmp(c->r.first, msg) != 0 && !c->r.other[0])
			snprintf(c->r.other, sizeof(c->r.other), "rank %d: %.480s", rank, msg);
	}
	c->r.last = rt_now();
	pthread_mutex_unlock(&c->lock);
}

static int rendezvous(const struct opts *o, rt_store *st, int rank, tt_err *err)
{
	int64_t v;
	char done[2];
	size_t len;

	if (o->join)
		return rt_store_join(st, "rdv", rank, err);
	if (rt_store_add(st, "count", 1, &v, err) != 0)
		return -1;
	if (v == o->n && rt_store_set(st, "done", "1", 2, err) != 0)
		return -1;
	return rt_store_get(st, "done", done, sizeof(done), &len, err);
}

/* A rank's death as the store sees it: its connection closes. */
static void *die_later(void *st)
{
	usleep(200 * 1000);
	shutdown(rt_store_fd(st), SHUT_RDWR);
	return NULL;
}

static void *rank_main(void *arg)
{
	struct rank_arg *a = arg;
	struct client *c = a->c;
	tt_err err = {""};
	rt_store *st;
	int ok;

	pthread_barrier_wait(&c->start);
	if (c->o->die >= 0 && a->rank != c->o->die)
		usleep(500 * 1000); /* the dying rank joins first */
	st = rt_store_connect("127.0.0.1", c->port, KEY, c->o->n, c->o->timeout, &err);
	if (st && a->rank == c->o->die) {
		/* Joins, and dies 0.2 s later, before the others arrived: its connection closes. */
		pthread_t killer;

		if (pthread_create(&killer, NULL, die_later, st) == 0) {
			rt_store_join(st, "rdv", a->rank, &err);
			pthread_join(killer, NULL);
		}
		rt_store_close(st);
		return NULL;
	}
	ok = st && rendezvous(c->o, st, a->rank, &err) == 0;
	rt_store_close(st);
	record(c, a->rank, ok, err.msg);
	return NULL;
}

/* A node's leader (--hier): listens before the start, then connects to the store and leads. */
struct leader_arg {
	struct client *c;
	int rank;
	rt_node *node;
};

static void *leader_main(void *arg)
{
	struct leader_arg *a = arg;
	struct client *c = a->c;
	tt_err err = {""};
	rt_store *st;
	int ok;

	pthread_barrier_wait(&c->start);
	st = rt_store_connect("127.0.0.1", c->port, KEY, c->o->n, c->o->timeout, &err);
	ok = st && rt_node_lead(a->node, st, c->o->timeout, &err) == 0;
	rt_store_close(st);
	rt_node_close(a->node);
	record(c, a->rank, ok, err.msg);
	return NULL;
}

/* The followers of ranks [first, first+count) (--hier): each says its rank to its leader, then
 * each verdict is read (they come together, so reading them in turn costs no time). */
struct followers_arg {
	struct client *c;
	int first, count;
};

static void *followers_main(void *arg)
{
	struct followers_arg *a = arg;
	struct client *c = a->c;
	int *fd = malloc((size_t)a->count * sizeof(*fd));
	tt_err *err = calloc((size_t)a->count, sizeof(*err));

	if (!fd || !err)
		_exit(1);
	pthread_barrier_wait(&c->start);
	for (int i = 0; i < a->count; i++) {
		int r = a->first + i, leader = r / LOCAL * LOCAL;

		fd[i] = -1;
		if (r % LOCAL == 0 || r == c->o->missing)
			continue;
		if (rt_node_follow_start(KEY, "", "rdv", r / LOCAL, r, leader, c->o->timeout, NULL, NULL, &fd[i], &err[i]) != 0)
			record(c, r, 0, err[i].msg);
	}
	for (int i = 0; i < a->count; i++)
		if (fd[i] >= 0) {
			int r = a->first + i;

			record(c, r, rt_node_follow_verdict(fd[i], "rdv", r / LOCAL * LOCAL, c->o->timeout, 0, &err[i]) == 0,
			       err[i].msg);
		}
	free(fd);
	free(err);
	return NULL;
}

/* --hier: a leader thread per node whose leader is not missing, one thread for the followers. */
static int client_hier(struct client *c, int first, int count, pthread_attr_t *attr, pthread_t *th)
{
	struct leader_arg *la = calloc((size_t)count / LOCAL, sizeof(*la));
	struct followers_arg fa = {c, first, count};
	int k = 0;
	tt_err err;

	if (!la)
		return -1;
	for (int r = first; r < first + count; r += LOCAL) {
		if (r == c->o->missing)
			continue;
		la[k] = (struct leader_arg){c, r, rt_node_listen(KEY, "", "rdv", r / LOCAL, r, LOCAL, &err)};
		if (!la[k].node) {
			fprintf(stderr, "rdv-scale: %s\n", err.msg);
			_exit(1);
		}
		if (pthread_create(&th[k], attr, leader_main, &la[k]) != 0) {
			fprintf(stderr, "rdv-scale: cannot start leader thread %d (ulimit -u?)\n", k);
			_exit(1);
		}
		k++;
	}
	if (pthread_create(&th[k], attr, followers_main, &fa) != 0)
		_exit(1);
	k++;
	if (read(c->go_fd, &c->port, sizeof(c->port)) != (ssize_t)sizeof(c->port))
		_exit(1);
	pthread_barrier_wait(&c->start);
	for (int i = 0; i < k; i++)
		pthread_join(th[i], NULL);
	free(la);
	return 0;
}

/* One client process: ranks [first, first+count), released once the parent writes the port. */
static int client_main(const struct opts *o, int first, int count, int go_fd, int out_fd)
{
	struct client c = {.o = o};
	struct rank_arg *args = calloc((size_t)count, sizeof(*args));
	pthread_t *th = calloc((size_t)count, sizeof(*th));
	pthread_attr_t attr;
	int started = 0;

	if (!args || !th)
		return 1;
	pthread_mutex_init(&c.lock, NULL);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	c.go_fd = go_fd;
	if (o->hier) {
		/* The leaders that come and the followers' thread. */
		for (int r = first; r < first + count; r += LOCAL)
			started += r != o->missing;
		pthread_barrier_init(&c.start, NULL, (unsigned)started + 2);
		if (client_hier(&c, first, count, &attr, th) != 0)
			return 1;
		return write(out_fd, &c.r, sizeof(c.r)) == (ssize_t)sizeof(c.r) ? 0 : 1;
	}
	for (int i = 0; i < count; i++)
		started += first + i != o->missing;
	pthread_barrier_init(&c.start, NULL, (unsigned)started + 1);
	for (int i = 0, k = 0; i < count; i++) {
		if (first + i == o->missing)
			continue;
		args[k] = (struct rank_arg){&c, first + i};
		if (pthread_create(&th[k], &attr, rank_main, &args[k]) != 0) {
			fprintf(stderr, "rdv-scale: cannot start thread %d (ulimit -u?)\n", k);
			_exit(1);
		}
		k++;
	}
	if (read(go_fd, &c.port, sizeof(c.port)) != (ssize_t)sizeof(c.port))
		_exit(1);
	pthread_barrier_wait(&c.start);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	if (write(out_fd, &c.r, sizeof(c.r)) != (ssize_t)sizeof(c.r))
		return 1;
	return 0;
}

/* The kernel's count of connections dropped because a listener's accept queue was full
 * (TcpExt ListenOverflows, /proc/net/netstat); -1 when unreadable. */
static long listen_overflows(void)
{
	char names[4096], values[4096];
	FILE *f = fopen("/proc/net/netstat", "r");
	long v = -1;

	while (f && fgets(names, sizeof(names), f) && fgets(values, sizeof(values), f)) {
		char *np, *vp, *n = strtok_r(names, " \n", &np), *x = strtok_r(values, " \n", &vp);

		for (; n && x; n = strtok_r(NULL, " \n", &np), x = strtok_r(NULL, " \n", &vp))
			if (strcmp(n, "ListenOverflows") == 0)
				v = atol(x);
	}
	if (f)
		fclose(f);
	return v;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option longs[] = {
		{"barrier", required_argument, NULL, 'b'}, {"timeout", required_argument, NULL, 't'},
		{"missing", required_argument, NULL, 'm'}, {"die", required_argument, NULL, 'd'},
		{"store-core", no_argument, NULL, 's'}, {"hier", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0}};
	int c;

	*o = (struct opts){.timeout = 60, .missing = -1, .die = -1};
	while ((c = getopt_long(argc, argv, "", longs, NULL)) != -1) {
		if (c == 'b' && (strcmp(optarg, "join") == 0 || strcmp(optarg, "add") == 0))
			o->join = strcmp(optarg, "join") == 0;
		else if (c == 't')
			o->timeout = atof(optarg);
		else if (c == 'm')
			o->missing = atoi(optarg);
		else if (c == 'd')
			o->die = atoi(optarg);
		else if (c == 's')
			o->rt_store = 1;
		else if (c == 'h')
			o->hier = 1;
		else
			return -1;
	}
	if (optind + 1 != argc)
		return -1;
	o->n = atoi(argv[optind]);
	if (o->hier && (o->n % LOCAL != 0 || o->die >= 0))
		return -1;
	return o->n >= 1 && o->n <= 1 << 20 && o->timeout > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct opts o;
	int nproc, go[2], out[2], done = 0, failed = 0, same = 0, status = 0;
	struct result first = {0};
	struct rlimit rl;
	struct rusage ru;
	rt_store_server *srv;
	double t0, last = 0;
	long overflows;
	pid_t *pids;
	tt_err err;

	if (parse_args(argc, argv, &o) != 0 || (o.die >= 0 && !o.join)) {
		fprintf(stderr, "usage: rdv-scale N [--barrier add|join | --hier (N a multiple of 8)] [--timeout S] "
			"[--missing R | --die R (join)]\n");
		return 2;
	}
	nproc = (o.n + PER_PROC - 1) / PER_PROC;
	pids = calloc((size_t)nproc, sizeof(*pids));
	if (!pids || pipe(go) != 0 || pipe(out) != 0)
		return 1;
	/* One descriptor per rank in the store's process, PER_PROC in each client. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	for (int p = 0; p < nproc; p++) {
		/* A node's ranks stay in one process. */
		int unit = o.hier ? LOCAL : 1, units = o.n / unit;
		int lo = (int)((long)units * p / nproc) * unit, hi = (int)((long)units * (p + 1) / nproc) * unit;

		pids[p] = fork();
		if (pids[p] < 0)
			return 1;
		if (pids[p] == 0)
			_exit(client_main(&o, lo, hi - lo, go[0], out[1]));
	}
	/* Rank 0's store runs on a node of its own; here its thread shares 2 cores with N simulated
	 * ranks, and the fair scheduler would give it 1/N of them. A real-time priority (inherited
	 * by the store's thread only, the clients are forked already) stands for that core. */
	if (o.rt_store && sched_setscheduler(0, SCHED_FIFO, &(struct sched_param){ .sched_priority = 1 }) != 0)
		fprintf(stderr, "rdv-scale: no real-time priority for the store (%s): it competes with the ranks\n",
			strerror(errno));
	srv = rt_store_server_start("127.0.0.1", 0, 1, KEY, o.n, &err);
	sched_setscheduler(0, SCHED_OTHER, &(struct sched_param){ .sched_priority = 0 });
	if (!srv) {
		fprintf(stderr, "rdv-scale: %s\n", err.msg);
		for (int p = 0; p < nproc; p++)
			kill(pids[p], SIGKILL);
		return 1;
	}
	overflows = listen_overflows();
	t0 = rt_now();
	for (int p = 0; p < nproc; p++) {
		int port = rt_store_server_port(srv);

		if (write(go[1], &port, sizeof(port)) != (ssize_t)sizeof(port))
			return 1;
	}
	for (int p = 0; p < nproc; p++) {
		struct result r;

		if (read(out[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
			status = 1;
			break;
		}
		done += r.done;
		if (r.failed && !failed)
			first = r;
		else if (r.failed && !first.other[0] && strcmp(r.first, first.first) != 0)
			snprintf(first.other, sizeof(first.other), "rank %d: %.480s", r.first_rank, r.first);
		failed += r.failed;
		if (r.failed && strcmp(r.first, first.first) == 0)
			same += r.same;
		last = r.last > last ? r.last : last;
	}
	for (int p = 0; p < nproc; p++)
		waitpid(pids[p], NULL, 0);
	rt_store_server_stop(srv);
	getrusage(RUSAGE_SELF, &ru);
	printf("%.3f %d %ld %.2f", last - t0, done, ru.ru_maxrss,
	       (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6);
	getrusage(RUSAGE_CHILDREN, &ru);
	printf(" %.2f %ld\n", (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e-6,
	       overflows >= 0 ? listen_overflows() - overflows : -1);
	if (failed)
		printf("%d ranks failed, %d of them with this line; rank %d: %s\n", failed, same,
		       first.first_rank, first.first);
	if (first.other[0])
		printf("another line: %s\n", first.other);
	free(pids);
	return status || done != o.n;
}

/* SPDX-License-Identifier: MIT */
/* rdv_scale.c — a rendezvous of N ranks through libtrainrt's store on this machine (issue #20):
 * the store in this process, the ranks as threads in client processes of at most 2048 each (one
 * process could not hold both ends of 16k connections under the usual descriptor limit), all
 * released together once every thread exists. A rank connects (with the key handshake) and then
 *   --barrier add   counts itself in (ADD), the last one sets "done", all wait for it (GET):
 *                   the pattern PyTorch's TCPStore peer runs (bench/rdv_tcpstore.py)
 *   --barrier join  joins the store's rendezvous (JOIN, what trainrt_init does), which names the
 *                   ranks that did not come
 * --missing R never starts rank R; --die R has rank R join at once and close its connection 0.2 s
 * later, the others starting 0.5 s late.
 * Prints "<seconds> <ranks done> <store peak RSS KiB> <store CPU s> <ranks' CPU s> <connections
 * the kernel dropped on a full accept queue (ListenOverflows, the whole machine's)>", then the first failure, if any, and how
 * many ranks failed with that same line.
 *   rdv-scale N [--barrier add|join] [--timeout S] [--missing R | --die R] */
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
#include "rt_store.h"

#define PER_PROC 2048
#define KEY "bench:rdv-scale"

struct opts {
	int n, join, missing, die, rt_store;
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
	int port;
	pthread_barrier_t start;
	pthread_mutex_t lock;
	struct result r;
};

struct rank_arg {
	struct client *c;
	int rank;
};

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
	pthread_mutex_lock(&c->lock);
	if (ok) {
		c->r.done++;
	} else {
		if (!c->r.failed++) {
			snprintf(c->r.first, sizeof(c->r.first), "%s", err.msg);
			c->r.first_rank = a->rank;
		}
		c->r.same += strcmp(c->r.first, err.msg) == 0;
		if (strcmp(c->r.first, err.msg) != 0 && !c->r.other[0])
			snprintf(c->r.other, sizeof(c->r.other), "rank %d: %.480s", a->rank, err.msg);
	}
	c->r.last = rt_now();
	pthread_mutex_unlock(&c->lock);
	return NULL;
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
		{"store-core", no_argument, NULL, 's'},
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
		else
			return -1;
	}
	if (optind + 1 != argc)
		return -1;
	o->n = atoi(argv[optind]);
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
		fprintf(stderr, "usage: rdv-scale N [--barrier add|join] [--timeout S] [--missing R | --die R (join)]\n");
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
		int lo = (int)((long)o.n * p / nproc), hi = (int)((long)o.n * (p + 1) / nproc);

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

/* SPDX-License-Identifier: MIT */
/* trainrt_bench.c — trainrt-bench: collective bandwidth in the style of nccl-tests (size, count,
 * type, redop, time, algbw, busbw, #wrong) and point-to-point exchanges (sendrecv: rank r and
 * r + n/2 swap a buffer, so with ranks on two nodes every pair crosses between them), under any
 * launcher giving the env contract, or with
 * --local N forking N ranks itself on 127.0.0.1. Also the two reference points bench/comm.sh
 * compares against: --memcpy BYTES [--copiers N] (the memory bandwidth N ranks copying at once
 * get, one core's with N = 1) and --rendezvous N (N client
 * threads meeting through the store, as a launch of N ranks would). */
#include <config.h>

#include "rt_net.h"
#include "rt_reduce.h"
#include "rt_store.h"
#include "trainrt.h"
#include "tt_envnames.h"
#include "tt_parse.h"
#include "tt_port.h"

#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

typedef enum { OP_ALLREDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_BROADCAST, OP_SENDRECV } bench_op;

struct opts {
	bench_op op;
	size_t minb, maxb;
	double factor;
	trainrt_dtype dtype;
	int iters, warmup;
};

/* The largest size a bench takes: two buffers of it are allocated per rank. */
#define MAX_BYTES ((size_t)1 << 40)

/* A byte count with an optional K, M or G suffix (powers of 1024): 0, or -1 when s is not a
 * size, -2 when it is larger than MAX_BYTES (also what would overflow size_t). */
static int parse_size(const char *s, size_t *out)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || !(v >= 0))
		return -1;
	switch (*end) {
	case 'K': case 'k': v *= 1024; end++; break;
	case 'M': case 'm': v *= 1024 * 1024; end++; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	if (!(v <= (double)MAX_BYTES))
		return -2;
	*out = (size_t)v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: trainrt-bench [-o allreduce|allgather|reducescatter|broadcast|sendrecv] [-b MINBYTES] [-e MAXBYTES]\n"
		"                     [-f FACTOR] [-d float|bf16] [-n ITERS] [-w WARMUP] [--local N]\n"
		"       trainrt-bench --memcpy BYTES [--copiers N]\n"
		"       trainrt-bench --rendezvous N\n"
		"       trainrt-bench -h|--help | -V|--version\n"
		"Sizes take K/M/G suffixes (at most 1T). Without --local, RANK, WORLD_SIZE, LOCAL_RANK,\n"
		"LOCAL_WORLD_SIZE, MASTER_ADDR and MASTER_PORT (or PMIx) must describe the job.\n");
}

static double bus_factor(bench_op op, int n)
{
	switch (op) {
	case OP_ALLREDUCE: return 2.0 * (n - 1) / n;
	case OP_ALLGATHER:
	case OP_REDUCESCATTER: return (double)(n - 1) / n;
	default: return 1.0;
	}
}

static const char *op_name(bench_op op)
{
	static const char *names[] = { "allreduce", "allgather", "reducescatter", "broadcast", "sendrecv" };

	return names[op];
}

/* One operation over a buffer of `bytes` in total (nccl-tests' size): count per rank is
 * bytes/elem for allreduce and broadcast, bytes/elem/n for allgather and reducescatter. */
static int run_op(trainrt_comm *c, const struct opts *o, void *a, void *b, size_t count)
{
	switch (o->op) {
	case OP_ALLREDUCE: return trainrt_allreduce(c, a, a, count, o->dtype, TRAINRT_SUM);
	case OP_ALLGATHER: return trainrt_allgather(c, a, b, count, o->dtype);
	case OP_REDUCESCATTER: return trainrt_reducescatter(c, b, a, count, o->dtype, TRAINRT_SUM);
	case OP_SENDRECV: {
		int n = trainrt_world_size(c), partner = (trainrt_rank(c) + n / 2) % n;

		return trainrt_sendrecv(c, a, count, partner, b, count, partner, o->dtype, 0);
	}
	default: return trainrt_broadcast(c, a, count, o->dtype, 0);
	}
}

static void fill(void *buf, trainrt_dtype dt, size_t n, int rank)
{
	for (size_t i = 0; i < n; i++) {
		float v = (float)((rank + (int)(i % 5)) % 7);

		if (dt == TRAINRT_FLOAT32)
			((float *)buf)[i] = v;
		else
			((uint16_t *)buf)[i] = rt_f32_to_bf16(v);
	}
}

static float at(const void *buf, trainrt_dtype dt, size_t i)
{
	return dt == TRAINRT_FLOAT32 ? ((const float *)buf)[i] : rt_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* Elements of this rank's result that differ from the expected values. */
static size_t count_wrong(trainrt_comm *c, const struct opts *o, void *a, void *b, size_t count)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c);
	size_t wrong = 0;

	fill(o->op == OP_REDUCESCATTER ? b : a, o->dtype, o->op == OP_REDUCESCATTER ? count * (size_t)n : count, me);
	if (run_op(c, o, a, b, count) != 0)
		return count;
	for (size_t i = 0; i < count * (o->op == OP_ALLGATHER ? (size_t)n : 1); i++) {
		float want = 0;

		if (o->op == OP_ALLREDUCE || o->op == OP_REDUCESCATTER) {
			size_t j = o->op == OP_REDUCESCATTER ? (size_t)me * count + i : i;

			for (int r = 0; r < n; r++)
				want += (float)((r + (int)(j % 5)) % 7);
		} else if (o->op == OP_ALLGATHER) {
			want = (float)(((int)(i / count) + (int)((i % count) % 5)) % 7);
		} else if (o->op == OP_SENDRECV) {
			want = (float)((((me + n / 2) % n) + (int)(i % 5)) % 7);
		} else {
			want = (float)((0 + (int)(i % 5)) % 7);
		}
		wrong += at(o->op == OP_ALLGATHER || o->op == OP_SENDRECV ? b : a, o->dtype, i) != want;
	}
	return wrong;
}

/* t[0] becomes the slowest rank's time and t[1] the sum over ranks of wrong elements, on rank 0.
 * Through the store, not a collective: these are host values, and with the nccl backend a
 * collective takes device memory only. */
static int gather_stats(trainrt_comm *c, size_t row, double t[2])
{
	char key[64];
	double theirs[2];
	size_t len = 0;

	snprintf(key, sizeof(key), "trainrt-bench/%zu/%d", row, trainrt_rank(c));
	if (trainrt_store_set(c, key, t, 2 * sizeof(double)) != 0)
		return -1;
	if (trainrt_rank(c) != 0)
		return 0;
	t[1] = 0;
	for (int r = 0; r < trainrt_world_size(c); r++) {
		snprintf(key, sizeof(key), "trainrt-bench/%zu/%d", row, r);
		if (trainrt_store_get(c, key, theirs, sizeof(theirs), &len) != 0 || len != sizeof(theirs))
			return -1;
		t[0] = theirs[0] > t[0] ? theirs[0] : t[0];
		t[1] += theirs[1];
	}
	return 0;
}

/* sendrecv pairs rank r with r + n/2: n must be even (message from `say` ranks only). */
static int pairs_ok(long n, int say)
{
	if (n % 2 == 0)
		return 1;
	if (say)
		fprintf(stderr, "trainrt-bench: -o sendrecv pairs rank r with r + n/2, so it needs an even number of ranks, not %ld\n",
			n);
	return 0;
}

static int bench_rank(const struct opts *o)
{
	char errbuf[1200];
	trainrt_comm *c = trainrt_init(errbuf, sizeof(errbuf));
	size_t es = trainrt_dtype_size(o->dtype);
	void *a = NULL, *b = NULL;
	size_t row = 0;
	int n, me, on_device, rc = 1;

	if (!c) {
		fprintf(stderr, "trainrt-bench: %s\n", errbuf);
		return 1;
	}
	n = trainrt_world_size(c);
	me = trainrt_rank(c);
	if (o->op == OP_SENDRECV && !pairs_ok(n, me == 0)) {
		trainrt_finalize(c);
		return 2;
	}
	a = trainrt_alloc(c, o->maxb + 64);
	b = trainrt_alloc(c, o->maxb + 64);
	if (!a || !b)
		goto out;
	/* Device buffers (nccl) are neither initialised nor checked from the host: #wrong is -1. */
	on_device = trainrt_buffers_on_device(c);
	if (!on_device) {
		memset(a, 0, o->maxb);
		memset(b, 0, o->maxb);
	}
	if (me == 0) {
		printf("# trainrt-bench: %s, %d ranks (%d per node), backend %s\n", op_name(o->op), n,
		       trainrt_local_world_size(c), trainrt_backend_name(c));
		printf("#%11s %12s %6s %9s %11s %8s %8s %7s\n", "size(B)", "count", "type", "redop", "time(us)",
		       "algbw", "busbw", "#wrong");
	}
	for (size_t bytes = o->minb; bytes <= o->maxb; bytes = (size_t)((double)bytes * o->factor)) {
		size_t total = bytes / es;
		size_t count = (o->op == OP_ALLGATHER || o->op == OP_REDUCESCATTER) ? total / (size_t)n : total;
		double t[2], t0;

		for (int i = 0; i < o->warmup; i++)
			if (run_op(c, o, a, b, count) != 0)
				goto out;
		if (trainrt_barrier(c) != 0)
			goto out;
		t0 = rt_now();
		for (int i = 0; i < o->iters; i++)
			if (run_op(c, o, a, b, count) != 0)
				goto out;
		t[0] = (rt_now() - t0) / o->iters;
		t[1] = on_device ? 0 : (double)count_wrong(c, o, a, b, count);
		if (gather_stats(c, row++, t) != 0)
			goto out;
		if (on_device)
			t[1] = -1;
		if (me == 0) {
			double algbw = (double)(count * es * ((o->op == OP_ALLGATHER || o->op == OP_REDUCESCATTER) ? (size_t)n : 1)) / t[0] / 1e9;

			printf("%12zu %12zu %6s %9s %11.1f %8.2f %8.2f %7.0f\n", total * es, total,
			       o->dtype == TRAINRT_BF16 ? "bf16" : "float",
			       o->op == OP_ALLREDUCE || o->op == OP_REDUCESCATTER ? "sum" : "none",
			       t[0] * 1e6, algbw, algbw * bus_factor(o->op, n), t[1]);
			fflush(stdout);
		}
		if (bytes == 0 || (size_t)((double)bytes * o->factor) <= bytes)
			break;
	}
	rc = 0;
out:
	if (rc)
		fprintf(stderr, "trainrt-bench: rank %d: %s\n", me, trainrt_last_error(c));
	trainrt_free(c, a);
	trainrt_free(c, b);
	trainrt_finalize(c);
	return rc;
}

/* Forks n ranks with the env contract on 127.0.0.1 and waits for all. LOCAL_WORLD_SIZE, when
 * set, groups them into fake nodes of that many ranks. */
static int run_local(int n, const struct opts *o)
{
	int failed = 0;
	uint16_t port;
	tt_err err;
	char buf[32];
	const char *lws = getenv(TT_ENV_LOCAL_WORLD_SIZE);
	long long lws_n = n;
	long per_node;
	pid_t *pids;

	if (lws && tt_parse_int(lws, 1, n, TT_ENV_LOCAL_WORLD_SIZE, &lws_n, NULL) != 0) {
		fprintf(stderr, "trainrt-bench: --local %d: LOCAL_WORLD_SIZE='%s' is not a rank count in [1, %d]; unset it or "
			"give the ranks per fake node\n", n, lws, n);
		return 2;
	}
	per_node = (long)lws_n;
	if (n % per_node) {
		fprintf(stderr, "trainrt-bench: --local %d: LOCAL_WORLD_SIZE=%ld does not divide it; every fake node runs "
			"the same number of ranks\n", n, per_node);
		return 2;
	}
	pids = calloc((size_t)n, sizeof(pid_t));
	if (!pids || tt_free_loopback_port(&port, &err) != 0) {
		fprintf(stderr, "trainrt-bench: cannot find a free port: %s\n", pids ? err.msg : "out of memory");
		free(pids);
		return 1;
	}
	if (!getenv("TRAINRT_TOKEN")) {
		snprintf(buf, sizeof(buf), "trainrt-bench-secret-%d", (int)getpid());
		setenv("TRAINRT_TOKEN", buf, 1);
	}
	fflush(NULL);
	for (int r = 0; r < n; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			snprintf(buf, sizeof(buf), "%d", r);
			setenv(TT_ENV_RANK, buf, 1);
			snprintf(buf, sizeof(buf), "%ld", per_node);
			setenv(TT_ENV_LOCAL_WORLD_SIZE, buf, 1);
			snprintf(buf, sizeof(buf), "%ld", r % per_node);
			setenv(TT_ENV_LOCAL_RANK, buf, 1);
			snprintf(buf, sizeof(buf), "%d", n);
			setenv(TT_ENV_WORLD_SIZE, buf, 1);
			snprintf(buf, sizeof(buf), "%d", port);
			setenv(TT_ENV_MASTER_PORT, buf, 1);
			setenv(TT_ENV_MASTER_ADDR, "127.0.0.1", 1);
			free(pids); /* the parent's table: a rank does not need it */
			_exit(bench_rank(o));
		}
		if (pids[r] < 0) {
			fprintf(stderr, "trainrt-bench: fork failed\n");
			n = r;
			failed = 1;
			break;
		}
	}
	for (int r = 0; r < n; r++) {
		int st;

		if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	free(pids);
	return failed;
}

/* Seconds each copier of --memcpy copies for, after a start they all see at once. */
#define MEMCPY_SECONDS 1.0

/* One copier of run_memcpy: copies bytes from its own buffer to another, over and over, for
 * MEMCPY_SECONDS once start_fd reads EOF; writes bytes copied and seconds taken into *res. */
static int copy_for_a_while(size_t bytes, int start_fd, double res[2])
{
	char *a = malloc(bytes), *b = malloc(bytes), c;
	double t0, t;
	size_t done = 0;

	if (!a || !b) {
		fprintf(stderr, "trainrt-bench: out of memory for --memcpy %zu\n", bytes);
		free(a);
		free(b);
		return 1;
	}
	memset(a, 1, bytes);
	memset(b, 2, bytes);
	memcpy(b, a, bytes);	/* pages mapped and caches warm before the clock starts */
	while (read(start_fd, &c, 1) < 0 && errno == EINTR)
		;
	t0 = rt_now();
	do {
		memcpy(b, a, bytes);
		done += bytes;
		t = rt_now() - t0;
	} while (t < MEMCPY_SECONDS);
	res[0] = (double)done;
	res[1] = t;
	free(a);
	free(b);
	return 0;
}

/* Memory bandwidth as the ranks of a collective see it: copiers processes (one per rank) copy
 * BYTES concurrently, started together; prints their summed bandwidth and each one's share.
 * With one copier it is a single core's memcpy; with N it is the bound an all-reduce of N ranks
 * on this machine runs against (BENCHMARKS.md, "Collectives"). */
static int run_memcpy(size_t bytes, int copiers)
{
	double *res = mmap(NULL, sizeof(double) * 2 * (size_t)copiers, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t *pids = calloc((size_t)copiers, sizeof(*pids));
	double sum = 0;
	int start[2] = { -1, -1 }, failed = 0, r;

	if (res == MAP_FAILED || !pids || pipe(start) != 0) {
		fprintf(stderr, "trainrt-bench: --memcpy: %s\n", strerror(errno));
		failed = 1;
		goto out;
	}
	for (r = 0; r < copiers; r++) {
		pids[r] = fork();
		if (pids[r] == 0) {
			close(start[1]);
			_exit(copy_for_a_while(bytes, start[0], res + 2 * r));
		}
		if (pids[r] < 0) {
			fprintf(stderr, "trainrt-bench: --memcpy: fork: %s\n", strerror(errno));
			failed = 1;
			break;
		}
	}
	close(start[1]);	/* EOF: every copier starts now (a failed fork starts the rest too) */
	start[1] = -1;
	while (r-- > 0) {
		int st;

		if (waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	if (failed)
		goto out;
	for (r = 0; r < copiers; r++)
		sum += res[2 * r] / res[2 * r + 1];
	printf("memcpy %zu bytes, %d concurrent: %.2f GB/s in all, %.2f GB/s each (%.1f s each)\n",
	       bytes, copiers, sum / 1e9, sum / copiers / 1e9, MEMCPY_SECONDS);
out:
	if (start[0] >= 0)
		close(start[0]);
	if (start[1] >= 0)
		close(start[1]);
	if (res != MAP_FAILED)
		munmap(res, sizeof(double) * 2 * (size_t)copiers);
	free(pids);
	return failed;
}

struct rdv {
	int port, n, ok;
	pthread_mutex_t *lock;
};

/* One simulated rank: connect + hello, announce itself, count in, wait for everyone. */
static void *rdv_rank(void *arg)
{
	struct rdv *r = arg;
	tt_err err;
	rt_store *st = rt_store_connect("127.0.0.1", r->port, "bench:rdv", r->n, 30, &err);
	int64_t v = 0;
	char done[2];
	size_t len;

	if (!st)
		return NULL;
	if (rt_store_add(st, "count", 1, &v, &err) == 0) {
		if (v == r->n)
			rt_store_set(st, "done", "1", 2, &err);
		if (rt_store_get(st, "done", done, sizeof(done), &len, &err) == 0) {
			pthread_mutex_lock(r->lock);
			r->ok++;
			pthread_mutex_unlock(r->lock);
		}
	}
	rt_store_close(st);
	return NULL;
}

static int run_rendezvous(int n)
{
	struct rlimit rl;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_attr_t attr;
	pthread_t *th = calloc((size_t)n, sizeof(pthread_t));
	struct rdv r = { .n = n, .lock = &lock };
	tt_err err;
	rt_store_server *srv;
	double t0;

	/* Server and clients live in this process: two descriptors per rank. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)(2 * n + 64)) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)(2 * n + 64) ? rl.rlim_max : (rlim_t)(2 * n + 64);
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	srv = rt_store_server_start("127.0.0.1", 0, 1, "bench:rdv", n, &err);
	if (!th || !srv) {
		fprintf(stderr, "trainrt-bench: %s\n", th ? err.msg : "out of memory");
		free(th);
		return 1;
	}
	r.port = rt_store_server_port(srv);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	t0 = rt_now();
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], &attr, rdv_rank, &r) != 0) {
			n = i;
			break;
		}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	t0 = rt_now() - t0;
	printf("rendezvous of %d ranks (threads) through the trainrt store: %.3f s, %d completed\n", r.n, t0, r.ok);
	rt_store_server_stop(srv);
	pthread_attr_destroy(&attr);
	free(th);
	return r.ok == r.n ? 0 : 1;
}

/* One size option into *out, or a message naming it. */
static int size_option(const char *opt, const char *val, size_t *out)
{
	switch (parse_size(val, out)) {
	case 0:
		return 0;
	case -2:
		fprintf(stderr, "trainrt-bench: %s '%s' is larger than 1T, the largest size this bench takes\n", opt, val);
		return -1;
	default:
		fprintf(stderr, "trainrt-bench: %s '%s' is not a size (e.g. 8, 64K, 128M)\n", opt, val);
		return -1;
	}
}

static int int_option(const char *opt, const char *val, long lo, long hi, long *out)
{
	long long v;
	tt_err err;

	if (tt_parse_int(val, lo, hi, opt, &v, &err) != 0) {
		fprintf(stderr, "trainrt-bench: %s\n", err.msg);
		return -1;
	}
	*out = (long)v;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { OP_ALLREDUCE, 8, 64u << 20, 2.0, TRAINRT_FLOAT32, 20, 5 };
	static const struct option longs[] = {
		{ "local", required_argument, NULL, 'L' },
		{ "memcpy", required_argument, NULL, 'M' },
		{ "copiers", required_argument, NULL, 'C' },
		{ "rendezvous", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;
	long local = 0, copiers = 1, v;
	size_t sz, es, memcpy_bytes = 0;
	char *end;

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":o:b:e:f:d:n:w:hV", longs, NULL)) != -1) {
		switch (ch) {
		case 'o':
			if (!strcmp(optarg, "allreduce")) o.op = OP_ALLREDUCE;
			else if (!strcmp(optarg, "allgather")) o.op = OP_ALLGATHER;
			else if (!strcmp(optarg, "reducescatter")) o.op = OP_REDUCESCATTER;
			else if (!strcmp(optarg, "broadcast")) o.op = OP_BROADCAST;
			else if (!strcmp(optarg, "sendrecv")) o.op = OP_SENDRECV;
			else {
				fprintf(stderr, "trainrt-bench: -o '%s' is not allreduce, allgather, reducescatter, broadcast or sendrecv\n", optarg);
				return 2;
			}
			break;
		case 'b':
		case 'e':
			if (size_option(ch == 'b' ? "-b" : "-e", optarg, ch == 'b' ? &o.minb : &o.maxb) != 0)
				return 2;
			break;
		case 'f':
			o.factor = strtod(optarg, &end);
			if (end == optarg || *end || !(o.factor > 1.0 && o.factor <= 1024.0)) {
				fprintf(stderr, "trainrt-bench: -f '%s' is not a factor above 1 (at most 1024)\n", optarg);
				return 2;
			}
			break;
		case 'd':
			if (!strcmp(optarg, "float")) o.dtype = TRAINRT_FLOAT32;
			else if (!strcmp(optarg, "bf16")) o.dtype = TRAINRT_BF16;
			else {
				fprintf(stderr, "trainrt-bench: -d '%s' is not float or bf16\n", optarg);
				return 2;
			}
			break;
		case 'n':
			if (int_option("-n", optarg, 1, 1000000, &v) != 0)
				return 2;
			o.iters = (int)v;
			break;
		case 'w':
			if (int_option("-w", optarg, 0, 1000000, &v) != 0)
				return 2;
			o.warmup = (int)v;
			break;
		case 'L':
			if (int_option("--local", optarg, 1, 256, &local) != 0)
				return 2;
			break;
		case 'M':
			if (size_option("--memcpy", optarg, &sz) != 0)
				return 2;
			if (sz == 0) {
				fprintf(stderr, "trainrt-bench: --memcpy '%s': give at least one byte\n", optarg);
				return 2;
			}
			memcpy_bytes = sz;
			break;
		case 'C':
			if (int_option("--copiers", optarg, 1, 256, &copiers) != 0)
				return 2;
			break;
		case 'R':
			if (int_option("--rendezvous", optarg, 1, 100000, &v) != 0)
				return 2;
			return run_rendezvous((int)v);
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("trainrt-bench (%s) %s\n", PACKAGE_NAME, PACKAGE_VERSION);
			return 0;
		case ':':
			fprintf(stderr, "trainrt-bench: %s needs a value\n", argv[optind - 1]);
			return 2;
		default:
			fprintf(stderr, "trainrt-bench: unknown option '%s' (see trainrt-bench --help)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "trainrt-bench: unexpected argument '%s' (see trainrt-bench --help)\n", argv[optind]);
		return 2;
	}
	if (memcpy_bytes)
		return run_memcpy(memcpy_bytes, (int)copiers);
	if (copiers != 1) {
		fprintf(stderr, "trainrt-bench: --copiers goes with --memcpy BYTES\n");
		return 2;
	}
	es = trainrt_dtype_size(o.dtype);
	if (o.maxb < es) {
		fprintf(stderr, "trainrt-bench: -e %zu: the largest size must hold at least one %s element (%zu bytes)\n",
			o.maxb, o.dtype == TRAINRT_BF16 ? "bf16" : "float", es);
		return 2;
	}
	if (o.minb > o.maxb) {
		fprintf(stderr, "trainrt-bench: -b %zu is larger than -e %zu\n", o.minb, o.maxb);
		return 2;
	}
	if (o.minb < es)
		o.minb = es;
	if (local && o.op == OP_SENDRECV && !pairs_ok(local, 1))
		return 2;
	return local ? run_local((int)local, &o) : bench_rank(&o);
}

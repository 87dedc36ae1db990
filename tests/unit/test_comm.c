/* SPDX-License-Identifier: MIT */
/* test_comm.c — the communicator end to end: forked ranks on 127.0.0.1 run every collective x
 * dtype x reduction x size against references computed here, for each backend (shm, tcp, and
 * hierarchical by faking nodes with LOCAL_WORLD_SIZE), with buffers both in and outside the
 * shared arena, blocking and asynchronous; and the failure cases: a killed rank, a hung rank,
 * a wrong token, a world-size mismatch, mismatched counts.
 *
 * Data are small integers so sums are exact in float32 and bfloat16 and results must match
 * the reference bit for bit; the random-float case checks bf16 against a float64 reference with
 * tolerance 2^-7 * sum|x| (two bf16 roundings at most: the node stage and the final one). */
#include "cunit_main.h"
#include "comm_harness.h"
#include "comm_priv.h"
#include "rt_reduce.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static float input(int rank, size_t i)
{
	return (float)((int)((rank * 7 + i * 3) % 9) - 4);
}

static void fill(void *buf, trainrt_dtype dt, int rank, size_t n, size_t base)
{
	for (size_t i = 0; i < n; i++) {
		float v = input(rank, base + i);

		if (dt == TRAINRT_FLOAT32)
			((float *)buf)[i] = v;
		else
			((uint16_t *)buf)[i] = rt_f32_to_bf16(v);
	}
}

static float get(const void *buf, trainrt_dtype dt, size_t i)
{
	return dt == TRAINRT_FLOAT32 ? ((const float *)buf)[i] : rt_bf16_to_f32(((const uint16_t *)buf)[i]);
}

/* The reduction of element i over all ranks, computed as the library must (float32, one
 * division for AVG, then rounding to the dtype). */
static float expect(int n, size_t i, trainrt_dtype dt, trainrt_redop op)
{
	float acc = input(0, i);

	for (int r = 1; r < n; r++)
		acc = op == TRAINRT_MAX ? fmaxf(acc, input(r, i)) : acc + input(r, i);
	if (op == TRAINRT_AVG)
		acc /= (float)n;
	return dt == TRAINRT_FLOAT32 ? acc : rt_bf16_to_f32(rt_f32_to_bf16(acc));
}

struct matrix {
	const size_t *sizes;
	int nsizes;
	int use_arena;
	int async;
};

static void *buffer(trainrt_comm *c, int arena, size_t bytes)
{
	return arena ? trainrt_alloc(c, bytes) : malloc(bytes ? bytes : 1);
}

static void release(trainrt_comm *c, int arena, void *p)
{
	if (arena)
		trainrt_free(c, p);
	else
		free(p);
}

static int mismatch(const char *what, size_t count, size_t i, float got, float want)
{
	fprintf(stderr, "%s count %zu: element %zu is %g, expected %g\n", what, count, i, got, want);
	return 1;
}

static int check_allreduce(trainrt_comm *c, const struct matrix *m, size_t count, trainrt_dtype dt,
			   trainrt_redop op, int in_place)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c), bad = 0;
	size_t es = trainrt_dtype_size(dt);
	void *send = buffer(c, m->use_arena, count * es);
	void *recv = in_place ? send : buffer(c, m->use_arena, count * es);
	int rc;

	if (!send || !recv)
		return 1;
	fill(send, dt, me, count, 0);
	if (m->async) {
		trainrt_req *r = trainrt_iallreduce(c, send, recv, count, dt, op);

		while (r && !trainrt_test(c, r))
			usleep(100);
		rc = trainrt_wait(c, r);
	} else {
		rc = trainrt_allreduce(c, send, recv, count, dt, op);
	}
	if (rc != 0)
		bad = 1;
	for (size_t i = 0; !bad && i < count; i++)
		if (get(recv, dt, i) != expect(n, i, dt, op))
			bad = mismatch("allreduce", count, i, get(recv, dt, i), expect(n, i, dt, op));
	if (!in_place)
		release(c, m->use_arena, recv);
	release(c, m->use_arena, send);
	return bad;
}

static int check_reducescatter(trainrt_comm *c, const struct matrix *m, size_t count, trainrt_dtype dt,
			       trainrt_redop op)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c), bad = 0;
	size_t es = trainrt_dtype_size(dt);
	void *send = buffer(c, m->use_arena, count * es * (size_t)n);
	void *recv = buffer(c, m->use_arena, count * es);

	if (!send || !recv)
		return 1;
	fill(send, dt, me, count * (size_t)n, 0);
	if (trainrt_reducescatter(c, send, recv, count, dt, op) != 0)
		bad = 1;
	for (size_t i = 0; !bad && i < count; i++) {
		float want = expect(n, (size_t)me * count + i, dt, op);

		if (get(recv, dt, i) != want)
			bad = mismatch("reducescatter", count, i, get(recv, dt, i), want);
	}
	release(c, m->use_arena, recv);
	release(c, m->use_arena, send);
	return bad;
}

static int check_allgather(trainrt_comm *c, const struct matrix *m, size_t count, trainrt_dtype dt)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c), bad = 0;
	size_t es = trainrt_dtype_size(dt);
	void *send = buffer(c, m->use_arena, count * es);
	void *recv = buffer(c, m->use_arena, count * es * (size_t)n);

	if (!send || !recv)
		return 1;
	fill(send, dt, me, count, 0);
	if (trainrt_allgather(c, send, recv, count, dt) != 0)
		bad = 1;
	for (int r = 0; !bad && r < n; r++)
		for (size_t i = 0; !bad && i < count; i++)
			if (get(recv, dt, (size_t)r * count + i) != input(r, i))
				bad = mismatch("allgather", count, (size_t)r * count + i,
					       get(recv, dt, (size_t)r * count + i), input(r, i));
	release(c, m->use_arena, recv);
	release(c, m->use_arena, send);
	return bad;
}

static int check_broadcast(trainrt_comm *c, const struct matrix *m, size_t count, trainrt_dtype dt)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c), root = n - 1, bad = 0;
	void *buf = buffer(c, m->use_arena, count * trainrt_dtype_size(dt));

	if (!buf)
		return 1;
	fill(buf, dt, me, count, 0);
	if (trainrt_broadcast(c, buf, count, dt, root) != 0)
		bad = 1;
	for (size_t i = 0; !bad && i < count; i++)
		if (get(buf, dt, i) != input(root, i))
			bad = mismatch("broadcast", count, i, get(buf, dt, i), input(root, i));
	release(c, m->use_arena, buf);
	return bad;
}

static int rank_matrix(trainrt_comm *c, const char *initerr, void *arg)
{
	const struct matrix *m = arg;
	static const trainrt_dtype dts[] = { TRAINRT_FLOAT32, TRAINRT_BF16 };
	static const trainrt_redop ops[] = { TRAINRT_SUM, TRAINRT_AVG, TRAINRT_MAX };
	int bad = 0;

	(void)initerr;
	if (!c)
		return 1;
	for (int s = 0; s < m->nsizes; s++)
		for (int d = 0; d < 2; d++) {
			for (int o = 0; o < 3; o++) {
				bad |= check_allreduce(c, m, m->sizes[s], dts[d], ops[o], o == 1);
				bad |= check_reducescatter(c, m, m->sizes[s], dts[d], ops[o]);
			}
			bad |= check_allgather(c, m, m->sizes[s], dts[d]);
			bad |= check_broadcast(c, m, m->sizes[s], dts[d]);
		}
	bad |= trainrt_barrier(c) != 0;
	return bad;
}

static const size_t small_sizes[] = { 0, 1, 7, 4097 };
static const size_t all_sizes[] = { 0, 1, 7, 4097, 1048579 };

static int world(int n, int local, const char *backend, const struct matrix *m)
{
	world_spec spec = { .n = n, .local = local, .backend = backend, .kill_after_s = 120 };

	return run_world(&spec, rank_matrix, (void *)m);
}

static void test_shm_all_world_sizes(void)
{
	struct matrix small = { small_sizes, 4, 0, 0 }, small_arena = { small_sizes, 4, 1, 0 };

	for (int n = 1; n <= 8; n++) {
		CU_ASSERT_EQUAL(world(n, n, "shm", n % 2 ? &small : &small_arena), 0);
	}
}

static void test_shm_large_staged_and_direct(void)
{
	struct matrix big = { all_sizes, 5, 0, 0 }, big_arena = { all_sizes, 5, 1, 0 };

	CU_ASSERT_EQUAL(world(3, 3, "shm", &big), 0);
	CU_ASSERT_EQUAL(world(4, 4, "shm", &big_arena), 0);
}

static void test_tcp_ring(void)
{
	struct matrix small = { small_sizes, 4, 0, 0 }, big = { all_sizes, 5, 0, 0 };

	CU_ASSERT_EQUAL(world(2, 1, "tcp", &big), 0);
	for (int n = 3; n <= 5; n++)
		CU_ASSERT_EQUAL(world(n, 1, "tcp", &small), 0);
}

static void test_hierarchical(void)
{
	struct matrix small = { small_sizes, 4, 0, 0 }, arena = { small_sizes, 4, 1, 0 };
	struct matrix big = { all_sizes, 5, 1, 0 };

	CU_ASSERT_EQUAL(world(4, 2, "auto", &big), 0);     /* 2 nodes x 2 */
	CU_ASSERT_EQUAL(world(6, 2, "auto", &small), 0);   /* 3 nodes x 2 */
	CU_ASSERT_EQUAL(world(6, 3, "auto", &arena), 0);   /* 2 nodes x 3 */
	CU_ASSERT_EQUAL(world(3, 1, "auto", &small), 0);   /* 3 nodes x 1 */
}

static void test_async_in_order(void)
{
	struct matrix m = { small_sizes, 4, 1, 1 };

	CU_ASSERT_EQUAL(world(3, 3, "shm", &m), 0);
	CU_ASSERT_EQUAL(world(4, 2, "auto", &m), 0);
}

/* Several operations in flight at once, then a blocking one; results must follow issue order. */
static int rank_overlap(trainrt_comm *c, const char *initerr, void *arg)
{
	enum { K = 6, N = 1000 };
	float bufs[K][N];
	trainrt_req *reqs[K];
	int n, bad = 0;

	(void)initerr;
	(void)arg;
	if (!c)
		return 1;
	n = trainrt_world_size(c);
	for (int k = 0; k < K; k++) {
		for (int i = 0; i < N; i++)
			bufs[k][i] = (float)(k + trainrt_rank(c));
		reqs[k] = trainrt_iallreduce(c, bufs[k], bufs[k], N, TRAINRT_FLOAT32, TRAINRT_SUM);
	}
	/* A blocking call while those are pending queues behind them. */
	float extra[N];
	for (int i = 0; i < N; i++)
		extra[i] = 1.0f;
	bad |= trainrt_allreduce(c, extra, extra, N, TRAINRT_FLOAT32, TRAINRT_SUM) != 0;
	bad |= extra[N - 1] != (float)n;
	for (int k = K - 1; k >= 0; k--)
		bad |= trainrt_wait(c, reqs[k]) != 0;
	for (int k = 0; k < K && !bad; k++)
		if (bufs[k][N - 1] != (float)(k * n + n * (n - 1) / 2))
			bad = 1;
	return bad;
}

static void test_async_many_in_flight(void)
{
	world_spec spec = { .n = 3, .local = 3, .backend = "shm" };
	world_spec tcp = { .n = 3, .local = 1, .backend = "tcp" };

	CU_ASSERT_EQUAL(run_world(&spec, rank_overlap, NULL), 0);
	CU_ASSERT_EQUAL(run_world(&tcp, rank_overlap, NULL), 0);
}

/* bf16 of random floats against a float64 reference. */
static int rank_bf16_random(trainrt_comm *c, const char *initerr, void *arg)
{
	enum { N = 5000 };
	uint16_t buf[N];
	int n, me, bad = 0;

	(void)initerr;
	(void)arg;
	if (!c)
		return 1;
	n = trainrt_world_size(c);
	me = trainrt_rank(c);
	for (int i = 0; i < N; i++)
		buf[i] = rt_f32_to_bf16(sinf((float)(i * 13 + me * 101)) * 3.0f);
	if (trainrt_allreduce(c, buf, buf, N, TRAINRT_BF16, TRAINRT_SUM) != 0)
		return 1;
	for (int i = 0; i < N && !bad; i++) {
		double ref = 0, mag = 0;

		for (int r = 0; r < n; r++) {
			double x = rt_bf16_to_f32(rt_f32_to_bf16(sinf((float)(i * 13 + r * 101)) * 3.0f));

			ref += x;
			mag += fabs(x);
		}
		if (fabs(rt_bf16_to_f32(buf[i]) - ref) > mag / 128.0 + 1e-6)
			bad = mismatch("bf16 random", N, (size_t)i, rt_bf16_to_f32(buf[i]), (float)ref);
	}
	return bad;
}

static void test_bf16_tolerance(void)
{
	world_spec shm = { .n = 5, .local = 5, .backend = "shm" };
	world_spec hier = { .n = 4, .local = 2, .backend = "auto" };

	CU_ASSERT_EQUAL(run_world(&shm, rank_bf16_random, NULL), 0);
	CU_ASSERT_EQUAL(run_world(&hier, rank_bf16_random, NULL), 0);
}

/* A small all-reduce over TCP in a power-of-two world takes recursive doubling, a large one the
 * ring: the first 1000 of 20000 random floats reduced both ways. Sums in another order differ by
 * at most 2 (n-1) 2^-24 sum|x| (each order's float32 error is at most (n-1) 2^-24 sum|x|); every
 * rank must end with the same bits (all-gathered and compared). */
static int rank_doubling_vs_ring(trainrt_comm *c, const char *initerr, void *arg)
{
	enum { BIG = 20000, SMALL = 1000 };
	float *ring = malloc(BIG * sizeof(float)), *dbl = malloc(SMALL * sizeof(float));
	int n, me, bad = 1;
	float *all = NULL;

	(void)initerr;
	(void)arg;
	if (!c || !ring || !dbl)
		goto out;
	n = trainrt_world_size(c);
	me = trainrt_rank(c);
	if (!(all = malloc(sizeof(float) * SMALL * (size_t)n)))
		goto out;
	for (int i = 0; i < BIG; i++)
		ring[i] = sinf((float)(i * 13 + me * 101)) * 3.0f;
	memcpy(dbl, ring, SMALL * sizeof(float));
	if (trainrt_allreduce(c, ring, ring, BIG, TRAINRT_FLOAT32, TRAINRT_SUM) != 0 ||
	    trainrt_allreduce(c, dbl, dbl, SMALL, TRAINRT_FLOAT32, TRAINRT_SUM) != 0 ||
	    trainrt_allgather(c, dbl, all, SMALL, TRAINRT_FLOAT32) != 0)
		goto out;
	bad = 0;
	for (int i = 0; i < SMALL && !bad; i++) {
		double mag = 0;

		for (int r = 0; r < n; r++)
			mag += fabs(sinf((float)(i * 13 + r * 101)) * 3.0f);
		if (fabs((double)dbl[i] - ring[i]) > 2.0 * (n - 1) * ldexp(mag, -24))
			bad = mismatch("doubling vs ring", SMALL, (size_t)i, dbl[i], ring[i]);
	}
	for (int r = 1; r < n && !bad; r++)
		if (memcmp(all, all + (size_t)r * SMALL, SMALL * sizeof(float)) != 0)
			bad = mismatch("doubling: rank 0 vs another rank", SMALL, (size_t)r, all[0], all[(size_t)r * SMALL]);
out:
	free(all);
	free(dbl);
	free(ring);
	return bad;
}

static void test_tcp_doubling(void)
{
	world_spec hier = { .n = 4, .local = 1, .backend = "auto" }; /* 4 leaders: doubling among them */
	struct matrix small = { small_sizes, 4, 0, 0 };

	for (int n = 2; n <= 8; n *= 2) {
		world_spec tcp = { .n = n, .local = 1, .backend = "tcp" };

		CU_ASSERT_EQUAL(run_world(&tcp, rank_doubling_vs_ring, NULL), 0);
	}
	CU_ASSERT_EQUAL(run_world(&hier, rank_doubling_vs_ring, NULL), 0);
	CU_ASSERT_EQUAL(world(8, 1, "tcp", &small), 0);
}

/* ---- failures ----------------------------------------------------------------------------- */

struct failure {
	int victim;
	int how;		/* 0: SIGKILL itself, 1: hang */
	volatile int *hanging;	/* shared by the ranks: 1 while the victim hangs */
};

/* The victim dies or hangs after one good all-reduce; the others must get an error with a message.
 * No clock is read: a death must be reported as a death, under a TRAINRT_TIMEOUT (30 s) longer
 * than the harness lets the ranks live (15 s), so waiting it out would fail the test; a hang must be
 * reported while the victim still hangs (TRAINRT_TIMEOUT 3 s ended it, not the victim's exit). */
static int rank_failure(trainrt_comm *c, const char *initerr, void *arg)
{
	const struct failure *f = arg;
	float x[64] = { 0 };
	const char *msg;

	(void)initerr;
	if (!c)
		return 1;
	if (trainrt_allreduce(c, x, x, 64, TRAINRT_FLOAT32, TRAINRT_SUM) != 0)
		return 1;
	if (trainrt_rank(c) == f->victim) {
		if (f->how == 0)
			raise(SIGKILL);
		/* Stop answering for longer than TRAINRT_TIMEOUT (3 s): the others must give up. */
		*f->hanging = 1;
		sleep(6);
		*f->hanging = 0;
		return 1;
	}
	for (int i = 0; i < 1000; i++)
		if (trainrt_allreduce(c, x, x, 64, TRAINRT_FLOAT32, TRAINRT_SUM) != 0)
			break;
	msg = trainrt_last_error(c);
	if (strncmp(msg, "trainrt: ", 9) != 0 || (f->how == 0 && strstr(msg, "TRAINRT_TIMEOUT")) ||
	    (f->how == 1 && !*f->hanging)) {
		fprintf(stderr, "%s rank: failure reported as '%s'%s\n", f->how ? "hung" : "killed", msg,
			f->how == 1 && !*f->hanging ? " only after the hung rank went on" : "");
		return 1;
	}
	/* A failed communicator stays failed. */
	return trainrt_barrier(c) == 0;
}

static void failure_case(int n, int local, const char *backend, int how)
{
	int *hanging = mmap(NULL, sizeof(int), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct failure f = { .victim = n - 1, .how = how, .hanging = hanging };
	world_spec spec = { .n = n, .local = local, .backend = backend, .timeout = how ? "3" : "30",
			    .kill_after_s = 15 };

	CU_ASSERT_FATAL(hanging != MAP_FAILED);
	*hanging = 0;
	/* Exactly the victim fails (killed, or killed by the harness when hanging). */
	CU_ASSERT_EQUAL(run_world(&spec, rank_failure, &f), 1);
	munmap(hanging, sizeof(int));
}

static void test_killed_rank_fails_the_others(void)
{
	failure_case(3, 3, "shm", 0);
	failure_case(3, 1, "tcp", 0);
	failure_case(4, 2, "auto", 0);
}

static void test_hung_rank_times_out(void)
{
	failure_case(2, 2, "shm", 1);
	failure_case(3, 1, "tcp", 1);
	failure_case(4, 2, "auto", 1); /* a non-leader hangs: its node and the other node fail */
}

static int rank_expect_init_error(trainrt_comm *c, const char *initerr, void *arg)
{
	const char *want = arg;

	if (c)
		return 0; /* the well-configured ranks may or may not get through; only the bad one matters */
	return strstr(initerr, want) ? 0 : (fprintf(stderr, "init error '%s' lacks '%s'\n", initerr, want), 1);
}

static int rank_expect_backend(trainrt_comm *c, const char *initerr, void *arg)
{
	if (!c)
		return fprintf(stderr, "init failed: %s\n", initerr), 1;
	return strcmp(trainrt_backend_name(c), arg) == 0 ? 0 : 1;
}

static int rank_bad_must_fail(trainrt_comm *c, const char *initerr, void *arg)
{
	int rank = atoi(getenv("RANK"));

	if (rank == 1)
		return c ? 1 : rank_expect_init_error(c, initerr, arg);
	return 0;
}

static void test_wrong_token_refused(void)
{
	world_spec spec = { .n = 2, .local = 1, .backend = "tcp", .timeout = "2", .kill_after_s = 15 };

	spec.env_override[1] = "TRAINRT_TOKEN=someone-else-entirely";
	CU_ASSERT_EQUAL(run_world(&spec, rank_bad_must_fail, "wrong job key"), 0);
}

static void test_world_size_mismatch(void)
{
	world_spec spec = { .n = 2, .local = 1, .backend = "tcp", .timeout = "2", .kill_after_s = 15 };

	spec.env_override[1] = "WORLD_SIZE=3";
	CU_ASSERT_EQUAL(run_world(&spec, rank_bad_must_fail, "WORLD_SIZE 3 differs"), 0);
}

static void test_bad_env_named(void)
{
	world_spec spec = { .n = 1, .local = 1, .backend = "shm", .timeout = "2" };

	spec.env_override[0] = "TRAINRT_BACKEND=carrier-pigeon";
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "TRAINRT_BACKEND='carrier-pigeon'"), 0);
	spec.env_override[0] = "RANK=5";
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "RANK='5'"), 0);
	/* A timeout no peer can meet: refused at the 1 s floor, not turned into blamed peers. */
	spec.env_override[0] = "TRAINRT_TIMEOUT=0.000001";
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "TRAINRT_TIMEOUT='0.000001' is below the 1 s floor"), 0);
	spec.env_override[0] = "TRAINRT_TIMEOUT=0.99";
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "TRAINRT_TIMEOUT='0.99' is below the 1 s floor"), 0);
}

/* Every rank must fail with the message; none may get through or time out (kill_after_s is
 * below TRAINRT_TIMEOUT, so only the early agreement can pass). */
static int rank_all_must_fail(trainrt_comm *c, const char *initerr, void *arg)
{
	if (c)
		return fprintf(stderr, "rank %s started despite the other ranks' settings\n", getenv("RANK")), 1;
	return strstr(initerr, arg) ? 0 : (fprintf(stderr, "init error '%s' lacks '%s'\n", initerr, (const char *)arg), 1);
}

/* One rank launched with other settings fails every rank at once, naming the rank and setting. */
static void test_settings_disagree(void)
{
	world_spec spec = { .n = 4, .local = 1, .backend = "tcp", .timeout = "60", .kill_after_s = 20 };

	spec.env_override[2] = "TRAINRT_TCP_ALLREDUCE=ring";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 2: TRAINRT_TCP_ALLREDUCE=ring differs from rank 0's auto"), 0);
	spec.env_override[2] = NULL;
	spec.local = 2;
	spec.backend = "auto"; /* two nodes of two: hier, except on rank 3 */
	spec.env_override[3] = "TRAINRT_BACKEND=tcp";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 3: this rank picks the tcp backend (TRAINRT_BACKEND=tcp) and rank 0 the hier one"), 0);
	spec.env_override[3] = "TRAINRT_SHM_ARENA_MB=32";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 3: TRAINRT_SHM_ARENA_MB 32 differs from rank 0's 64"), 0);
	spec.env_override[3] = NULL;
	spec.env_override[1] = "TRAINRT_TIMEOUT=soon";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 1: TRAINRT_TIMEOUT='soon' is not a positive number"), 0);
	spec.env_override[1] = NULL;
	spec.env_override[0] = "TRAINRT_BACKEND=carrier-pigeon"; /* rank 0's own problem: its settings are not compared */
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 0: TRAINRT_BACKEND='carrier-pigeon' is not one of"), 0);
}

/* A small world's checks after either start: an all-reduce of the ranks, and a key one rank sets
 * through its own (lazily opened) store connection that the others read. */
static int rank_sum_and_store(trainrt_comm *c, const char *initerr, void *arg)
{
	int n = trainrt_world_size(c ? c : NULL), r;
	float x;
	char v[8] = "";
	size_t len = 0;

	(void)arg;
	if (!c)
		return fprintf(stderr, "init failed: %s\n", initerr), 1;
	r = trainrt_rank(c);
	x = (float)r;
	if (trainrt_allreduce(c, &x, &x, 1, TRAINRT_FLOAT32, TRAINRT_SUM) != 0 || x != (float)(n * (n - 1) / 2))
		return fprintf(stderr, "rank %d: sum %g, not %d\n", r, x, n * (n - 1) / 2), 1;
	if (r == n - 1 && trainrt_store_set(c, "modes", "ok", 3) != 0)
		return 1;
	if (trainrt_store_get(c, "modes", v, sizeof(v), &len) != 0 || strcmp(v, "ok") != 0)
		return fprintf(stderr, "rank %d: store read '%s'\n", r, v), 1;
	return 0;
}

/* The start through node leaders (TRAINRT_RENDEZVOUS=node, the default with two ranks a node) and
 * the flat one: both start a world and name a follower's differing setting to every rank; so is a
 * rank whose TRAINRT_RENDEZVOUS differs from rank 0's, or is not a mode. */
static void test_rendezvous_modes(void)
{
	static const char *const modes[] = { "flat", "node", "auto" };
	world_spec spec = { .n = 6, .local = 3, .backend = "auto", .timeout = "60", .kill_after_s = 30 };

	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		setenv("TRAINRT_RENDEZVOUS", modes[m], 1);
		CU_ASSERT_EQUAL(run_world(&spec, rank_sum_and_store, NULL), 0);
		spec.env_override[4] = "TRAINRT_SHM_ARENA_MB=32";
		CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 4: TRAINRT_SHM_ARENA_MB 32 differs from rank 0's 64"),
				0);
		spec.env_override[4] = NULL;
	}
	unsetenv("TRAINRT_RENDEZVOUS");
	/* Two worlds of one job step (one key) at once on this host: their node sockets differ. */
	{
		pid_t w[2];
		int status, ok = 0;

		for (int i = 0; i < 2; i++)
			if ((w[i] = fork()) == 0)
				_exit(run_world(&spec, rank_sum_and_store, NULL) == 0 ? 0 : 1);
		for (int i = 0; i < 2; i++)
			ok += w[i] > 0 && waitpid(w[i], &status, 0) == w[i] && WIFEXITED(status) && WEXITSTATUS(status) == 0;
		CU_ASSERT_EQUAL(ok, 2);
	}
	spec.env_override[5] = "TRAINRT_RENDEZVOUS=sideways";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 5: TRAINRT_RENDEZVOUS='sideways' is not auto, node or flat"),
			0);
	spec.env_override[5] = "TRAINRT_RENDEZVOUS=flat"; /* a lone flat rank on a node of leaders (auto) */
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "rank 5: TRAINRT_RENDEZVOUS=flat differs from"), 0);
	spec.env_override[5] = NULL;
	spec.env_override[0] = "TRAINRT_RENDEZVOUS=flat"; /* node 0 flat, node 1 through its leader (auto) */
	spec.env_override[1] = "TRAINRT_RENDEZVOUS=flat";
	spec.env_override[2] = "TRAINRT_RENDEZVOUS=flat";
	CU_ASSERT_EQUAL(run_world(&spec, rank_all_must_fail, "TRAINRT_RENDEZVOUS=node differs from rank 0's flat"), 0);
}

/* Rank 0 serves the store: once an all-reduce of every rank is done every rank has started, and
 * the store has accepted the connections counted in arg (none comes later: a follower's goodbye
 * goes to its leader). */
static int rank_count_store_connections(trainrt_comm *c, const char *initerr, void *arg)
{
	long want = *(const long *)arg, got;
	float x = 1;

	if (!c)
		return fprintf(stderr, "init failed: %s\n", initerr), 1;
	if (trainrt_allreduce(c, &x, &x, 1, TRAINRT_FLOAT32, TRAINRT_SUM) != 0 || x != (float)trainrt_world_size(c))
		return fprintf(stderr, "rank %d: sum %g\n", trainrt_rank(c), x), 1;
	if (trainrt_rank(c) != 0)
		return 0;
	got = rt_store_server_accepted(c->server);
	if (got != want)
		return fprintf(stderr, "the store accepted %ld connections during the start, not %ld\n", got, want), 1;
	return 0;
}

/* Through node leaders (8 nodes of 4 ranks, hier: shm in a node, tcp between nodes) the store
 * sees one connection per node: the followers' backend set-up (the shm segment's name, their
 * point-to-point addresses) goes through their leader. Flat, it sees one per rank. */
static void test_store_connections_per_node(void)
{
	world_spec spec = { .n = 32, .local = 4, .backend = "auto", .timeout = "60", .kill_after_s = 90 };
	long nodes = 8, ranks = 32;

	CU_ASSERT_EQUAL(run_world(&spec, rank_count_store_connections, &nodes), 0);
	setenv("TRAINRT_RENDEZVOUS", "flat", 1);
	CU_ASSERT_EQUAL(run_world(&spec, rank_count_store_connections, &ranks), 0);
	unsetenv("TRAINRT_RENDEZVOUS");
}

/* The buffers' place rules the backend: host memory never goes to NCCL, GPU memory only to it. */
static void test_buffers_place_rules_backend(void)
{
	world_spec spec = { .n = 1, .local = 1, .backend = "nccl", .timeout = "2", .buffers = TRAINRT_BUFFERS_HOST };

	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "TRAINRT_BACKEND=nccl needs GPU buffers"), 0);
	spec.backend = "shm";
	spec.buffers = TRAINRT_BUFFERS_DEVICE;
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_init_error, "TRAINRT_BACKEND=shm works on host memory"), 0);
	spec.backend = "auto";
	spec.buffers = TRAINRT_BUFFERS_HOST;
	CU_ASSERT_EQUAL(run_world(&spec, rank_expect_backend, "shm"), 0);
}

/* Rank 1 passes one element more; every rank must fail with a message naming the count. Ranks 0
 * and 1 meet in that all-reduce, so both get there and see the mismatch. Another rank may still be
 * starting (publishing its point-to-point endpoint) when they have failed and rank 0's store has
 * gone: its start then fails, with a message, which is failing too (never a NULL communicator used). */
static int rank_count_mismatch(trainrt_comm *c, const char *initerr, void *arg)
{
	float x[16] = { 0 };
	int rank = atoi(getenv("RANK"));
	size_t count = rank == 1 ? 8 : 7;

	(void)arg;
	if (!c)
		return rank > 1 && initerr[0] ? 0 : 1;
	if (trainrt_allreduce(c, x, x, count, TRAINRT_FLOAT32, TRAINRT_SUM) == 0)
		return 1;
	if (!strstr(trainrt_last_error(c), "count") && !strstr(trainrt_last_error(c), "failed"))
		return 1;
	return 0;
}

static void test_count_mismatch_detected(void)
{
	world_spec shm = { .n = 3, .local = 3, .backend = "shm", .timeout = "3", .kill_after_s = 20 };
	world_spec tcp = { .n = 3, .local = 1, .backend = "tcp", .timeout = "3", .kill_after_s = 20 };
	world_spec hier = { .n = 4, .local = 2, .backend = "auto", .timeout = "3", .kill_after_s = 20 };

	CU_ASSERT_EQUAL(run_world(&shm, rank_count_mismatch, NULL), 0);
	CU_ASSERT_EQUAL(run_world(&tcp, rank_count_mismatch, NULL), 0);
	CU_ASSERT_EQUAL(run_world(&hier, rank_count_mismatch, NULL), 0);
}

/* The store API: a counter every rank bumps, and a value rank 0 publishes. */
static int rank_store(trainrt_comm *c, const char *initerr, void *arg)
{
	int64_t v = 0;
	char got[16] = "";
	size_t len = 0;

	(void)initerr;
	(void)arg;
	if (!c || trainrt_store_add(c, "count", 1, &v) != 0)
		return 1;
	if (trainrt_rank(c) == 0 && trainrt_store_set(c, "step", "42", 3) != 0)
		return 1;
	if (trainrt_store_get(c, "step", got, sizeof(got), &len) != 0 || len != 3 || strcmp(got, "42") != 0)
		return 1;
	if (trainrt_barrier(c) != 0 || trainrt_store_add(c, "count", 0, &v) != 0)
		return 1;
	/* An exhausted arena (64 MiB per rank here) is reported, and the communicator goes on. */
	if (trainrt_alloc(c, (size_t)65 << 20) != NULL || !strstr(trainrt_last_error(c), "TRAINRT_SHM_ARENA_MB"))
		return 1;
	if (trainrt_barrier(c) != 0)
		return 1;
	return v == trainrt_world_size(c) ? 0 : 1;
}

static void test_store_api(void)
{
	world_spec spec = { .n = 4, .local = 4, .backend = "shm" };

	CU_ASSERT_EQUAL(run_world(&spec, rank_store, NULL), 0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("comm", NULL, NULL);
	CU_pSuite f = CU_add_suite("comm failures", NULL, NULL);

	if (!s || !f)
		return -1;
	CU_add_test(s, "shm: world sizes 1..8, small sizes", test_shm_all_world_sizes);
	CU_add_test(s, "shm: 1M+3 staged and direct", test_shm_large_staged_and_direct);
	CU_add_test(s, "tcp ring", test_tcp_ring);
	CU_add_test(s, "settings that differ fail every rank at once, naming the rank", test_settings_disagree);
	CU_add_test(s, "the start through node leaders and the flat one", test_rendezvous_modes);
	CU_add_test(s, "through node leaders the store sees one connection per node", test_store_connections_per_node);
	CU_add_test(s, "tcp recursive doubling vs ring", test_tcp_doubling);
	CU_add_test(s, "hierarchical shm+tcp", test_hierarchical);
	CU_add_test(s, "async matrix", test_async_in_order);
	CU_add_test(s, "async many in flight", test_async_many_in_flight);
	CU_add_test(s, "bf16 random tolerance", test_bf16_tolerance);
	CU_add_test(s, "store api", test_store_api);
	CU_add_test(f, "killed rank", test_killed_rank_fails_the_others);
	CU_add_test(f, "hung rank", test_hung_rank_times_out);
	CU_add_test(f, "wrong token", test_wrong_token_refused);
	CU_add_test(f, "world size mismatch", test_world_size_mismatch);
	CU_add_test(f, "bad env named", test_bad_env_named);
	CU_add_test(f, "count mismatch", test_count_mismatch_detected);
	CU_add_test(f, "buffers' place rules the backend", test_buffers_place_rules_backend);
	return 0;
}

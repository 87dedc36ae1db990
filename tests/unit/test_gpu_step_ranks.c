/* SPDX-License-Identifier: MIT */
/* test_gpu_step_ranks.c — dp_gpu.c with 2 ranks, on the host test double of gpu_mlp.h over shared
 * memory (the double's "device" memory is host memory, so a host communicator carries it): 2 ranks
 * match 1 rank with 2 micro-batches step by step; every gradient bucket's all-reduce is ordered by
 * its event (trainrt_iallreduce_after asks it exactly once per bucket and step); broadcasts of
 * byte counts that are no multiple of 4 arrive whole; the per-rank word all-gather; a GPU step that
 * cannot be created gives back every device resource it took. The kernels themselves run only in
 * tests/gpu/run.sh on a GPU. */
#include "comm_harness.h"
#include "cunit_main.h"
#include "dataset.h"
#include "dp.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

long tt_gpu_double_ready_calls(void);
long tt_gpu_double_live(void);
void tt_gpu_double_fail_alloc_after(long n);

enum { BATCH = 16, STEPS = 5 };

/* What the forked ranks report back (a shared mapping survives their exit). */
struct shared {
	double loss[STEPS];	   /* rank 0: the step's loss summed over ranks */
	long ready_calls[2], want_calls[2];
	int buckets;
	char bytes[2][8];	   /* each rank's 7-byte broadcast result */
	uint32_t gathered[2][2];
};

static tt_mlp model;
static tt_dataset train, test;

static int setup(void)
{
	return tt_mlp_parse(&model, "12,16,16,4", NULL) ||
	       tt_dataset_synthetic(&train, &test, 12, 4, BATCH * STEPS, 8, 5, NULL);
}

static int teardown(void)
{
	tt_dataset_free(&train);
	tt_dataset_free(&test);
	return 0;
}

static tt_dp_cfg cfg_of(int accum)
{
	/* Small buckets, so the model's 3 layers travel in more than one. */
	tt_dp_cfg c = { .zero = 0, .accum = accum, .micro_batch = BATCH / 2, .bucket_bytes = 512,
			.first_bucket_bytes = 128, .seed = 4, .opt = tt_adamw_defaults(0.01f), .gpu = 1 };

	c.opt.total_steps = STEPS;
	return c;
}

/* Step s on this rank's rows of global batch s, from row `first` (as many as its config takes). */
static int step(tt_dp *dp, int s, int first, double *loss, tt_err *err)
{
	long correct = 0;
	size_t row = (size_t)s * BATCH + (size_t)first;

	return tt_dp_train_step(dp, s, train.x + row * train.dim, train.y + row, BATCH, loss, &correct, err);
}

static int rank_main(trainrt_comm *c, const char *initerr, void *arg)
{
	struct shared *sh = arg;
	tt_dp_cfg cfg = cfg_of(1);
	tt_dp dp;
	tt_err err;
	int me;
	long calls0 = tt_gpu_double_ready_calls();
	char bytes[8] = "";
	uint32_t got[2];

	(void)initerr;
	if (!c || tt_dp_init(&dp, &model, c, &cfg, &err))
		return 1;
	me = trainrt_rank(c);
	for (int s = 0; s < STEPS; s++) {
		double loss = 0.0;
		float sum;

		if (step(&dp, s, me * BATCH / 2, &loss, &err))
			return 1;
		sum = (float)loss;
		if (tt_dp_allreduce_sum(&dp, &sum, 1, &err))
			return 1;
		if (me == 0)
			sh->loss[s] = sum;
	}
	sh->ready_calls[me] = tt_gpu_double_ready_calls() - calls0;
	sh->want_calls[me] = (long)dp.n_buckets * STEPS;
	sh->buckets = dp.n_buckets;
	if (me == 0)
		memcpy(bytes, "abcdefg", 7);
	if (tt_dp_broadcast_bytes(&dp, bytes, 7, &err) || tt_dp_allgather_u32(&dp, 100u + (uint32_t)me, got, &err))
		return 1;
	memcpy(sh->bytes[me], bytes, 8);
	memcpy(sh->gathered[me], got, sizeof(got));
	tt_dp_free(&dp);
	return 0;
}

static void test_two_ranks_match_accumulation(void)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	world_spec spec = { .n = 2, .local = 2, .backend = "shm", .kill_after_s = 60, .buffers = TRAINRT_BUFFERS_HOST };
	tt_dp_cfg cfg = cfg_of(2);
	tt_dp one;
	tt_err err;

	CU_ASSERT_FATAL(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	CU_ASSERT_EQUAL_FATAL(run_world(&spec, rank_main, sh), 0);
	CU_ASSERT_EQUAL_FATAL(tt_dp_init(&one, &model, NULL, &cfg, &err), 0);
	for (int s = 0; s < STEPS; s++) {
		double loss = 0.0;

		CU_ASSERT_EQUAL_FATAL(step(&one, s, 0, &loss, &err), 0);
		CU_ASSERT(fabs(sh->loss[s] - loss) <= 1e-5 * loss);
	}
	tt_dp_free(&one);
	CU_ASSERT(sh->buckets >= 2);
	for (int r = 0; r < 2; r++) {
		CU_ASSERT_EQUAL(sh->ready_calls[r], sh->want_calls[r]);
		CU_ASSERT(sh->want_calls[r] > 0);
		CU_ASSERT_EQUAL(memcmp(sh->bytes[r], "abcdefg", 8), 0);
		CU_ASSERT_EQUAL(sh->gathered[r][0], 100u);
		CU_ASSERT_EQUAL(sh->gathered[r][1], 101u);
	}
	munmap(sh, sizeof(*sh));
}

/* A GPU step that cannot be created, because its ZeRO stage is refused or because device memory
 * runs out at each of its allocations in turn, fails with a message and leaves no device resource
 * taken (the double counts them) and the tt_dp zeroed, so tt_dp_free after it does nothing. */
static void test_failed_creation_gives_back_everything(void)
{
	tt_dp_cfg cfg = cfg_of(1);
	tt_dp dp;
	tt_err err;
	long live0 = tt_gpu_double_live(), failed = 0;

	cfg.zero = 1;
	CU_ASSERT_EQUAL(tt_dp_init(&dp, &model, NULL, &cfg, &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--zero 1 with --device gpu"));
	CU_ASSERT_PTR_NULL(dp.ops);
	tt_dp_free(&dp);
	cfg.zero = 0;
	for (long n = 0; n < 100; n++) {
		int rc;

		tt_gpu_double_fail_alloc_after(n);
		rc = tt_dp_init(&dp, &model, NULL, &cfg, &err);
		tt_gpu_double_fail_alloc_after(-1);
		if (rc == 0) { /* n allocations were all it takes */
			CU_ASSERT(tt_gpu_double_live() > live0);
			tt_dp_free(&dp);
			break;
		}
		failed++;
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "cannot allocate"));
		CU_ASSERT_EQUAL(tt_gpu_double_live(), live0);
		CU_ASSERT_PTR_NULL(dp.ops);
		CU_ASSERT_PTR_NULL(dp.gpu);
		tt_dp_free(&dp);
	}
	/* Each of the step's device buffers failed once: 14, and an activation buffer per layer boundary. */
	CU_ASSERT_EQUAL(failed, 14 + model.n_layers + 1);
	CU_ASSERT_EQUAL(tt_gpu_double_live(), live0);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("GPU step, 2 ranks on the host double", setup, teardown);

	if (!s)
		return -1;
	CU_add_test(s, "2 ranks = 1 rank with 2 micro-batches; events; bytes", test_two_ranks_match_accumulation);
	CU_add_test(s, "a GPU step that cannot be created gives everything back", test_failed_creation_gives_back_everything);
	return 0;
}

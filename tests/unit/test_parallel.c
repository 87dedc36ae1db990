/* SPDX-License-Identifier: MIT */
/* test_parallel.c — 3D layouts and pipeline schedules as plain data: rank coordinates (TP groups
 * consecutive, stages as blocks), refusals naming their numbers, how stages and tensor parallelism
 * cut the model, the element maps between a part and the whole layer (a bijection over the TP
 * ranks), the tensor-parallel math against the whole layer (the column-parallel then row-parallel
 * pair, its partial sums added as the all-reduce would), and the GPipe and 1F1B schedules run on a
 * simulated pipeline: dependencies kept, the bubble equal to (p-1)/(m+p-1), activations in flight
 * bounded as the schedule promises. */
#include "cunit_main.h"
#include "mlp.h"
#include "parallel.h"
#include "pipeline.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void test_coords_round_trip_and_groups(void)
{
	static const tt_plan3d lays[] = { { 8, 1, 1 }, { 4, 2, 1 }, { 4, 1, 2 }, { 2, 2, 2 }, { 1, 2, 4 }, { 2, 4, 1 },
					  { 1, 8, 1 }, { 1, 1, 8 } };

	for (size_t i = 0; i < sizeof(lays) / sizeof(lays[0]); i++) {
		const tt_plan3d *L = &lays[i];

		for (int r = 0; r < 8; r++) {
			tt_coords c = tt_plan3d_coords(L, r);

			CU_ASSERT_EQUAL(tt_plan3d_rank(L, c), r);
			CU_ASSERT(c.dp >= 0 && c.dp < L->dp && c.tp >= 0 && c.tp < L->tp && c.pp >= 0 && c.pp < L->pp);
			/* TP groups are consecutive ranks; a stage is a block of dp*tp ranks. */
			CU_ASSERT_EQUAL(c.tp, r % L->tp);
			CU_ASSERT_EQUAL(c.pp, r / (L->dp * L->tp));
		}
	}
}

static void expect_refusal(const char *layers, tt_plan3d lay, int world, long batch, int micro, const char *want)
{
	tt_mlp m;
	tt_err err = { "" };

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, layers, NULL), 0);
	CU_ASSERT_EQUAL(tt_plan3d_check(&lay, world, &m, batch, micro, &err), -1);
	if (!strstr(err.msg, want)) {
		fprintf(stderr, "refusal '%s' lacks '%s'\n", err.msg, want);
		CU_FAIL("refusal message");
	}
}

static void test_bad_layouts_named(void)
{
	tt_mlp m;
	tt_plan3d ok = { 2, 2, 2 };

	expect_refusal("16,32x6,8", (tt_plan3d){ 2, 3, 1 }, 8, 32, 1,
		       "--tp 3 x --pp 1 = 3 ranks per data-parallel replica does not divide the world of 8 ranks");
	expect_refusal("16,32x6,8", (tt_plan3d){ 1, 1, 3 }, 8, 32, 1, "--tp 1 x --pp 3 = 3");
	expect_refusal("16,32x5,8", (tt_plan3d){ 4, 1, 2 }, 8, 32, 1, "--pp 2 does not divide the 7 layers");
	expect_refusal("16,30x6,8", (tt_plan3d){ 2, 4, 1 }, 8, 32, 1,
		       "--tp 4 does not divide the 30 outputs of layer 0 (16->30)");
	expect_refusal("16,32x6,8", (tt_plan3d){ 4, 2, 1 }, 8, 36, 2,
		       "--batch 36 does not split into 4 data-parallel replicas x 2 micro-batches");
	expect_refusal("16,32x6,8", (tt_plan3d){ 0, 2, 1 }, 1, 32, 1, "does not divide the world of 1 ranks");
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "16,32x6,8", NULL), 0);
	CU_ASSERT_EQUAL(tt_plan3d_check(&ok, 8, &m, 32, 2, NULL), 0);
}

static void test_parts(void)
{
	tt_mlp m;
	tt_part p;
	tt_plan3d lay = { 1, 2, 2 };

	/* 6 layers: 8->12->6->4->10->6->5; 2 stages of 3: (COL, ROW, FULL) each. */
	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "8,12,6,4,10,6,5", NULL), 0);
	CU_ASSERT_EQUAL_FATAL(tt_plan3d_check(&lay, 4, &m, 4, 1, NULL), 0);
	tt_part_build(&p, &m, &lay, (tt_coords){ 0, 1, 1 });
	CU_ASSERT_EQUAL(p.n_layers, 3);
	CU_ASSERT_EQUAL(p.layer[0].global, 3);
	CU_ASSERT_EQUAL(p.layer[0].kind, TT_LAYER_COL);
	CU_ASSERT_EQUAL(p.layer[0].in, 4);
	CU_ASSERT_EQUAL(p.layer[0].out, 5);
	CU_ASSERT_EQUAL(p.layer[1].kind, TT_LAYER_ROW);
	CU_ASSERT_EQUAL(p.layer[1].in, 5);
	CU_ASSERT_EQUAL(p.layer[1].out, 6);
	CU_ASSERT_EQUAL(p.layer[2].kind, TT_LAYER_FULL);
	CU_ASSERT_EQUAL(p.layer[2].relu, 0); /* the model's last layer */
	CU_ASSERT_EQUAL(p.layer[1].relu, 1);
	CU_ASSERT_EQUAL(p.len[0], 5 * 4 + 5);
	CU_ASSERT_EQUAL(p.len[1], 6 * 5 + 6);
	CU_ASSERT_EQUAL(p.in_width, 4);
	CU_ASSERT_EQUAL(p.out_width, 5);
	/* Without tensor parallelism every layer is whole. */
	lay = (tt_plan3d){ 2, 1, 2 };
	tt_part_build(&p, &m, &lay, (tt_coords){ 1, 0, 0 });
	for (int i = 0; i < p.n_layers; i++)
		CU_ASSERT_EQUAL(p.layer[i].kind, TT_LAYER_FULL);
}

/* Over the TP ranks the part elements cover every whole-layer element exactly once, except those
 * every rank holds (ROW biases, FULL layers); from_model inverts to_model. */
static void test_element_maps(void)
{
	tt_mlp m;
	tt_plan3d lay = { 1, 3, 1 };

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "5,6,9,4", NULL), 0); /* COL 5->6/3, ROW 6/3->9, FULL 9->4 */
	for (int i = 0; i < 3; i++) {
		size_t whole = tt_mlp_layer_params(&m, i);
		int *hits = calloc(whole, sizeof(int));
		tt_part p;

		for (int t = 0; t < 3; t++) {
			tt_part_build(&p, &m, &lay, (tt_coords){ 0, t, 0 });
			for (size_t e = 0; e < p.len[i]; e++) {
				size_t g = tt_part_to_model(&m, &p, i, e);

				CU_ASSERT_FATAL(g < whole);
				hits[g]++;
				CU_ASSERT_EQUAL(tt_part_from_model(&m, &p, i, g), (long)e);
			}
		}
		for (size_t g = 0; g < whole; g++) {
			int in = m.dims[i], out = m.dims[i + 1], want = 1;

			if (p.layer[i].kind == TT_LAYER_FULL || (p.layer[i].kind == TT_LAYER_ROW && g >= (size_t)in * out))
				want = 3;
			if (hits[g] != want) {
				fprintf(stderr, "layer %d element %zu held %d times, want %d\n", i, g, hits[g], want);
				CU_FAIL("coverage");
				break;
			}
		}
		free(hits);
	}
}

/* The Megatron pair on T ranks against the whole two layers: forward (the ROW partials summed, as
 * the all-reduce does, then bias and ReLU) and backward (the COL input-gradient partials summed)
 * agree within float rounding; each rank's parameter gradient is its slice of the whole one. */
static void test_tensor_parallel_math(void)
{
	enum { N = 5, T = 4, IN = 7, HID = 12, OUT = 6 };
	tt_mlp m;
	tt_plan3d lay = { 1, T, 1 };
	float whole0[HID * IN + HID], whole1[OUT * HID + OUT], g0[HID * IN + HID], g1[OUT * HID + OUT];
	float x[N * IN], h[N * HID], y[N * OUT], dy[N * OUT], dh[N * HID], dx[N * IN];
	float ysum[N * OUT] = { 0 }, dxsum[N * IN] = { 0 };
	float tol = 1e-5f;

	CU_ASSERT_EQUAL_FATAL(tt_mlp_parse(&m, "7,12,6,3", NULL), 0); /* layers 0 (COL), 1 (ROW); 2 unused */
	tt_mlp_init_layer(&m, 0, 3, whole0);
	tt_mlp_init_layer(&m, 1, 3, whole1);
	for (int i = 0; i < N * IN; i++)
		x[i] = sinf((float)i * 0.7f);
	for (int i = 0; i < N * OUT; i++)
		dy[i] = cosf((float)i * 0.3f);
	/* The whole layers. */
	tt_linear_forward(IN, HID, whole0, 1, 1, x, h, N);
	tt_linear_forward(HID, OUT, whole1, 1, 1, h, y, N);
	{
		float d[N * OUT];

		memcpy(d, dy, sizeof(d));
		tt_linear_backward(HID, OUT, whole1, 1, h, y, d, g1, 0.0f, dh, N);
		tt_linear_backward(IN, HID, whole0, 1, x, h, dh, g0, 0.0f, dx, N);
	}
	for (int t = 0; t < T; t++) {
		tt_part p;
		float w0[HID / T * IN + HID / T], w1[OUT * (HID / T) + OUT], big[HID * IN + HID];
		float hp[N * HID / T], yp[N * OUT], pg0[HID / T * IN + HID / T], pg1[OUT * (HID / T) + OUT];
		float d[N * OUT], dhp[N * HID / T], dxp[N * IN];

		tt_part_build(&p, &m, &lay, (tt_coords){ 0, t, 0 });
		CU_ASSERT_EQUAL_FATAL(p.layer[0].kind, TT_LAYER_COL);
		CU_ASSERT_EQUAL_FATAL(p.layer[1].kind, TT_LAYER_ROW);
		tt_part_init_layer(&m, &p, 0, 3, big, w0);
		tt_part_init_layer(&m, &p, 1, 3, big, w1);
		tt_linear_forward(IN, HID / T, w0, 1, 1, x, hp, N);
		tt_linear_forward(HID / T, OUT, w1, 0, 0, hp, yp, N);
		for (int i = 0; i < N * OUT; i++)
			ysum[i] += yp[i];
		/* Backward needs the full y (after the all-reduce): take the whole one. */
		memcpy(d, dy, sizeof(d));
		tt_linear_backward(HID / T, OUT, w1, 1, hp, y, d, pg1, 0.0f, dhp, N);
		tt_linear_backward(IN, HID / T, w0, 1, x, hp, dhp, pg0, 0.0f, dxp, N);
		for (int i = 0; i < N * IN; i++)
			dxsum[i] += dxp[i];
		for (size_t e = 0; e < p.len[0]; e++)
			CU_ASSERT(fabsf(pg0[e] - g0[tt_part_to_model(&m, &p, 0, e)]) <= tol);
		for (size_t e = 0; e < p.len[1]; e++)
			CU_ASSERT(fabsf(pg1[e] - g1[tt_part_to_model(&m, &p, 1, e)]) <= tol);
	}
	tt_bias_relu(ysum, whole1 + OUT * HID, OUT, 1, N);
	for (int i = 0; i < N * OUT; i++)
		CU_ASSERT(fabsf(ysum[i] - y[i]) <= tol);
	for (int i = 0; i < N * IN; i++)
		CU_ASSERT(fabsf(dxsum[i] - dx[i]) <= tol);
}

/* Runs every stage's schedule on a simulated pipeline where F and B take one time unit and a
 * message arrives at once: an action starts when its stage is free and its input exists (F: the
 * previous stage's F of that micro-batch; B: the next stage's B and this stage's F). Returns the
 * makespan; fails on a dependency the order cannot meet (a deadlock). */
static int simulate(tt_schedule kind, int p, int m, int *max_in_flight)
{
	tt_pp_action acts[16][64];
	int n[16], next[16] = { 0 }, clock[16] = { 0 }, fdone[16][32], bdone[16][32], flight[16] = { 0 };
	int left = 0, end = 0;

	for (int s = 0; s < p; s++) {
		n[s] = tt_pp_schedule(kind, p, s, m, acts[s]);
		CU_ASSERT_EQUAL(n[s], 2 * m);
		left += n[s];
		max_in_flight[s] = 0;
		for (int i = 0; i < m; i++)
			fdone[s][i] = bdone[s][i] = -1;
	}
	while (left > 0) {
		int progressed = 0;

		for (int s = 0; s < p; s++) {
			tt_pp_action a;
			int ready;

			if (next[s] == n[s])
				continue;
			a = acts[s][next[s]];
			if (!a.backward)
				ready = s == 0 ? 0 : fdone[s - 1][a.micro];
			else
				ready = s == p - 1 ? fdone[s][a.micro] : bdone[s + 1][a.micro];
			if (ready < 0 || (a.backward && fdone[s][a.micro] < 0))
				continue;
			clock[s] = (clock[s] > ready ? clock[s] : ready) + 1;
			if (a.backward) {
				bdone[s][a.micro] = clock[s];
				flight[s]--;
			} else {
				fdone[s][a.micro] = clock[s];
				if (++flight[s] > max_in_flight[s])
					max_in_flight[s] = flight[s];
			}
			next[s]++;
			left--;
			progressed = 1;
			end = clock[s] > end ? clock[s] : end;
		}
		if (!progressed) {
			CU_FAIL("schedule deadlocks");
			return -1;
		}
	}
	return end;
}

static void test_schedules_on_a_simulated_pipeline(void)
{
	for (int k = 0; k < 2; k++)
		for (int p = 1; p <= 8; p++)
			for (int m = 1; m <= 12; m++) {
				int flight[16], span = simulate((tt_schedule)k, p, m, flight);
				double bubble = 1.0 - 2.0 * m / (double)span;

				/* Busy 2m units of a span of 2(m+p-1): idle (p-1)/(m+p-1). */
				CU_ASSERT_EQUAL(span, 2 * (m + p - 1));
				CU_ASSERT(fabs(bubble - tt_pp_bubble_theory(p, m)) < 1e-12);
				for (int s = 0; s < p; s++) {
					CU_ASSERT(flight[s] <= tt_pp_in_flight((tt_schedule)k, p, s, m));
					if (k == TT_SCHED_1F1B)
						CU_ASSERT(flight[s] <= p - s);
				}
			}
}

/* Both schedules run the backward passes in micro-batch order (gradients add up alike). */
static void test_backward_order(void)
{
	tt_pp_action a[64];

	for (int k = 0; k < 2; k++) {
		int n = tt_pp_schedule((tt_schedule)k, 4, 1, 9, a), b = 0;

		for (int i = 0; i < n; i++)
			if (a[i].backward)
				CU_ASSERT_EQUAL(a[i].micro, b++);
		CU_ASSERT_EQUAL(b, 9);
	}
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("parallel layouts and schedules", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "coordinates and groups", test_coords_round_trip_and_groups);
	CU_add_test(s, "bad layouts refused with their numbers", test_bad_layouts_named);
	CU_add_test(s, "parts of stages and TP ranks", test_parts);
	CU_add_test(s, "element maps", test_element_maps);
	CU_add_test(s, "tensor-parallel math", test_tensor_parallel_math);
	CU_add_test(s, "schedules on a simulated pipeline", test_schedules_on_a_simulated_pipeline);
	CU_add_test(s, "backward order", test_backward_order);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* test_adamw.c — AdamW against a hand-computed update, and the warmup + cosine schedule. */
#include "adamw.h"
#include "cunit_main.h"

#include <math.h>

static void test_first_step_matches_formula(void)
{
	tt_adamw_cfg c = tt_adamw_defaults(0.1f);
	float p[2] = { 1.0f, -2.0f }, g[2] = { 0.5f, -0.25f }, m[2] = { 0 }, v[2] = { 0 };

	c.weight_decay = 0.1f;
	tt_adamw_update(&c, 0, 0.1f, p, g, m, v, 2);
	/* Step 1: bias-corrected m/sqrt(v) = sign(g), so p = p*(1 - lr*wd) - lr*sign(g). */
	CU_ASSERT_DOUBLE_EQUAL(p[0], 1.0 * (1 - 0.01) - 0.1, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(p[1], -2.0 * (1 - 0.01) + 0.1, 1e-5);
	CU_ASSERT_DOUBLE_EQUAL(m[0], 0.05, 1e-7);
	CU_ASSERT_DOUBLE_EQUAL(v[1], 0.001 * 0.0625, 1e-9);
}

static void test_second_step_matches_formula(void)
{
	tt_adamw_cfg c = tt_adamw_defaults(0.01f);
	float p = 0.0f, m = 0.0f, v = 0.0f, g1 = 1.0f, g2 = 3.0f;
	double em, ev, want;

	c.weight_decay = 0.0f;
	tt_adamw_update(&c, 0, 0.01f, &p, &g1, &m, &v, 1);
	want = -0.01;
	em = 0.1 * 1.0;
	ev = 0.001 * 1.0;
	em = 0.9 * em + 0.1 * 3.0;
	ev = 0.999 * ev + 0.001 * 9.0;
	want -= 0.01 * (em / (1 - 0.81)) / (sqrt(ev / (1 - 0.999 * 0.999)) + 1e-8);
	tt_adamw_update(&c, 1, 0.01f, &p, &g2, &m, &v, 1);
	CU_ASSERT_DOUBLE_EQUAL(p, want, 1e-6);
}

static void test_schedule_warmup_then_cosine(void)
{
	tt_adamw_cfg c = tt_adamw_defaults(1.0f);

	c.warmup_steps = 4;
	c.total_steps = 14;
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 0), 0.25, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 3), 1.0, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 4), 1.0, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 9), 0.5, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 14), 0.0, 1e-6);
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 99), 0.0, 1e-6);
	c.total_steps = 0; /* no schedule: constant after warmup */
	CU_ASSERT_DOUBLE_EQUAL(tt_adamw_lr(&c, 50), 1.0, 1e-6);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("adamw", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "first step matches formula", test_first_step_matches_formula);
	CU_add_test(s, "second step matches formula", test_second_step_matches_formula);
	CU_add_test(s, "schedule warmup then cosine", test_schedule_warmup_then_cosine);
	return 0;
}

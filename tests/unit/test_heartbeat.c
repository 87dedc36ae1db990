/* SPDX-License-Identifier: MIT */
/* test_heartbeat.c — the heartbeat protocol, the hang rule at its exact boundaries (one
 * microsecond below the timeout is not a hang, the timeout itself is), the calculated timeout
 * (warm-up, k x p99, the floor), the sections' timeouts from their observed times,
 * --hang-timeout's values, the culprit pick and the straggler
 * report. Times are microseconds given by the test: no clock, no sleeps. */
#include "cunit_main.h"
#include "heartbeat.h"

#include <stdio.h>
#include <string.h>

#define S 1000000LL

static struct tt_hb hb;

static void init(int n, const struct tt_hb_config *cfg)
{
	CU_ASSERT_EQUAL_FATAL(tt_hb_init(&hb, n, cfg, NULL), 0);
}

static int line(int i, const char *l, int64_t t)
{
	return tt_hb_line(&hb, i, l, strlen(l), t);
}

/* Worker i writes steps first..last, one every gap microseconds from t0; returns the last time. */
static int64_t steps(int i, int first, int last, int64_t t0, int64_t gap)
{
	char buf[32];
	int64_t t = t0;
	int k;

	for (k = first; k <= last; k++, t += gap) {
		snprintf(buf, sizeof(buf), "step %d", k);
		CU_ASSERT_EQUAL(line(i, buf, t), 0);
	}
	return t - gap;
}

static void test_protocol_lines(void)
{
	init(1, NULL);
	CU_ASSERT_EQUAL(line(0, "step 1", 10), 0);
	CU_ASSERT_STRING_EQUAL(hb.w[0].section, "step");
	CU_ASSERT_EQUAL(line(0, "section checkpoint", 20), 0);
	CU_ASSERT_STRING_EQUAL(hb.w[0].section, "checkpoint");
	CU_ASSERT_EQUAL(hb.w[0].last_us, 20);
	/* Ignored: no time moves, the section stays. */
	CU_ASSERT_EQUAL(line(0, "step", 30), -1);
	CU_ASSERT_EQUAL(line(0, "step x", 30), -1);
	CU_ASSERT_EQUAL(line(0, "section ", 30), -1);
	CU_ASSERT_EQUAL(line(0, "section a b", 30), -1);
	CU_ASSERT_EQUAL(line(0, "section 0123456789012345678901234567890123", 30), -1);
	CU_ASSERT_EQUAL(line(0, "hello", 30), -1);
	CU_ASSERT_EQUAL(hb.w[0].last_us, 20);
	CU_ASSERT_STRING_EQUAL(hb.w[0].section, "checkpoint");
	tt_hb_free(&hb);
}

static void test_feed_splits_and_drops_overlong(void)
{
	char big[300];

	init(1, NULL);
	tt_hb_feed(&hb, 0, "ste", 3, 5);
	CU_ASSERT_FALSE(hb.w[0].active);
	tt_hb_feed(&hb, 0, "p 7\nsection ev", 14, 6);
	CU_ASSERT_TRUE(hb.w[0].active);
	CU_ASSERT_EQUAL(hb.w[0].last_step, 7);
	CU_ASSERT_STRING_EQUAL(hb.w[0].section, "step");
	tt_hb_feed(&hb, 0, "al\n", 3, 9);
	CU_ASSERT_STRING_EQUAL(hb.w[0].section, "eval");
	/* A line longer than TT_HB_LINE_MAX is dropped whole, even when its tail looks valid. */
	memset(big, 'x', sizeof(big));
	memcpy(big + sizeof(big) - 8, "step 99\n", 8);
	tt_hb_feed(&hb, 0, big, sizeof(big), 50);
	CU_ASSERT_EQUAL(hb.w[0].last_us, 9);
	tt_hb_feed(&hb, 0, "step 8\n", 7, 60);
	CU_ASSERT_EQUAL(hb.w[0].last_step, 8);
	tt_hb_free(&hb);
}

/* No timeout before the warm-up and MIN_SAMPLES are done; then k x p99 with the floor. */
static void test_calculated_timeout_after_warmup(void)
{
	int64_t t;

	init(1, NULL);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 0), INT64_MAX);
	/* WARMUP step lines, then MIN_SAMPLES - 1 intervals: still none. */
	t = steps(0, 1, TT_HB_WARMUP + TT_HB_MIN_SAMPLES - 1, 0, 4 * S);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, t + 1000 * S));
	/* The MIN_SAMPLES-th interval: 2 x 4 s. */
	t = steps(0, TT_HB_WARMUP + TT_HB_MIN_SAMPLES, TT_HB_WARMUP + TT_HB_MIN_SAMPLES, t + 4 * S, 4 * S);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, TT_HB_MIN_SAMPLES);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 8 * S);
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 0), t + 8 * S);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, t + 8 * S - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, t + 8 * S));
	tt_hb_free(&hb);
}

/* After a stop of train-run and its workers (a suspend), silence counts from the resume: hung
 * exactly one timeout after it, not before; the interval across the stop is not a sample. A
 * worker that never wrote stays unwatched. */
static void test_resumed_restarts_the_silence(void)
{
	int64_t t, resume;
	int samples;

	init(2, NULL);
	t = steps(0, 1, 40, 0, 1 * S);	/* timeout: the 5 s floor (2 x 1 s is below it) */
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 5 * S);
	samples = hb.w[0].nsamples;
	resume = t + 60 * S;	/* stopped for a minute */
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, resume));
	tt_hb_resumed(&hb, resume);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, resume));
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 0), resume + 5 * S);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, resume + 5 * S - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, resume + 5 * S));
	CU_ASSERT_FALSE(hb.w[1].active);
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 1), INT64_MAX);
	/* The next step line after the resume opens an interval, it closes none. */
	CU_ASSERT_EQUAL(line(0, "step 41", resume + 1 * S), 0);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, samples);
	CU_ASSERT_EQUAL(line(0, "step 42", resume + 2 * S), 0);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, samples + 1);
	tt_hb_free(&hb);
}

static void test_floor_applies_to_fast_steps(void)
{
	int64_t t;

	init(1, NULL);
	t = steps(0, 1, 100, 0, 10000);	/* 10 ms steps: 2 x p99 is 20 ms */
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_FLOOR_US);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, t + TT_HB_FLOOR_US - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, t + TT_HB_FLOOR_US));
	tt_hb_free(&hb);
}

/* Worker 0 after its warm-up lines (1 us apart, from time 0), then one step line per gap. */
static int64_t gaps(int64_t t, int n, int64_t gap)
{
	int k;

	for (k = 0; k < n; k++) {
		t += gap;
		CU_ASSERT_EQUAL(line(0, "step 1", t), 0);
	}
	return t;
}

/* p99 by nearest rank over the window, recalculated every 16 samples: one 10 s interval among
 * 96 is the p99 (ceil(0.99 x 96) = 96th), among 112 it is not (ceil(110.88) = 111th is 3 s). */
static void test_p99_of_intervals(void)
{
	int64_t t;

	init(1, NULL);
	t = gaps(0, TT_HB_WARMUP, 1);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, 0);
	t = gaps(t, 49, 3 * S);
	t = gaps(t, 1, 10 * S);
	t = gaps(t, 46, 3 * S);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, 96);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 20 * S);
	t = gaps(t, 15, 3 * S);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 20 * S);	/* 111: not recalculated yet */
	gaps(t, 1, 3 * S);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 6 * S);
	tt_hb_free(&hb);
}

/* An interval spanning a section is not a step; after a restart the warm-up starts again. */
static void test_sections_and_rounds(void)
{
	struct tt_hb_config cfg = { 0 };
	int64_t t;

	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "checkpoint=30", NULL), 0);
	init(1, &cfg);
	t = steps(0, 1, 40, 0, S);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_FLOOR_US);
	CU_ASSERT_EQUAL(line(0, "section checkpoint", t + S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 30 * S);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, t + 31 * S - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, t + 31 * S));
	CU_ASSERT_EQUAL(line(0, "section eval", t + 2 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);	/* no timeout set, none calculated */
	CU_ASSERT_EQUAL(line(0, "step 41", t + 100 * S), 0);
	CU_ASSERT_EQUAL(hb.w[0].nsamples, 40 - TT_HB_WARMUP);	/* 100 s were not observed */
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_FLOOR_US);
	tt_hb_round_begin(&hb);
	CU_ASSERT_FALSE(hb.w[0].active);
	CU_ASSERT_EQUAL(line(0, "step 30", 1000 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);	/* warming up again */
	steps(0, 31, 30 + TT_HB_WARMUP, 1001 * S, S);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_FLOOR_US);	/* the samples were kept */
	tt_hb_closed(&hb, 0);
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 0), INT64_MAX);
	tt_hb_free(&hb);
}

/* A section other than step gets SECTION_FACTOR x its longest observed time, at least the
 * floor, once the worker was seen to finish it; never before, and not from a time spanning a
 * stop. The observations outlive a round; a set timeout wins over them. */
static void test_section_timeouts_from_observation(void)
{
	struct tt_hb_config cfg = { 0 };
	int64_t t, u;
	char name[32];
	int k;

	init(1, NULL);
	CU_ASSERT_EQUAL(line(0, "section setup", 0), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);		/* never finished: no timeout */
	t = steps(0, 1, 20, 2 * S, S);				/* setup took 2 s */
	CU_ASSERT_EQUAL(line(0, "section checkpoint", t + S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);
	CU_ASSERT_EQUAL(line(0, "step 21", t + 9 * S), 0);	/* the checkpoint took 8 s */
	u = t + 10 * S;
	CU_ASSERT_EQUAL(line(0, "section checkpoint", u), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 40 * S);		/* 5 x 8 s */
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, u + 40 * S - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, u + 40 * S));
	CU_ASSERT_EQUAL(line(0, "section eval", u + 10 * S), 0);	/* the second took 10 s */
	CU_ASSERT_EQUAL(line(0, "step 22", u + 11 * S), 0);	/* eval took 1 s */
	CU_ASSERT_EQUAL(line(0, "section eval", u + 12 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_SECTION_FLOOR_US);	/* 5 s < the floor */
	CU_ASSERT_EQUAL(line(0, "section checkpoint", u + 13 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 50 * S);		/* the longest: 10 s */
	/* Stopped and continued inside it: the 100 s that follow are not its time. */
	tt_hb_resumed(&hb, u + 14 * S);
	CU_ASSERT_EQUAL(line(0, "step 23", u + 114 * S), 0);
	CU_ASSERT_EQUAL(line(0, "section checkpoint", u + 115 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 50 * S);
	/* A new round keeps what was observed. */
	tt_hb_round_begin(&hb);
	CU_ASSERT_EQUAL(line(0, "section setup", u + 200 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_SECTION_FLOOR_US);	/* 5 x 2 s < the floor */
	CU_ASSERT_EQUAL(line(0, "section checkpoint", u + 201 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 50 * S);
	/* Names beyond the first TT_HB_SECTIONS_MAX (setup, checkpoint, eval so far) are not kept. */
	for (k = 0; k < TT_HB_SECTIONS_MAX - 3 + 1; k++) {
		snprintf(name, sizeof(name), "section s%d", k);
		CU_ASSERT_EQUAL(line(0, name, u + (300 + 2 * k) * S), 0);
		CU_ASSERT_EQUAL(line(0, "section checkpoint", u + (301 + 2 * k) * S), 0);
	}
	CU_ASSERT_EQUAL(hb.w[0].nfinished, TT_HB_SECTIONS_MAX);
	CU_ASSERT_EQUAL(line(0, "section s4", u + 400 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), TT_HB_SECTION_FLOOR_US);
	CU_ASSERT_EQUAL(line(0, "section s5", u + 401 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 0);		/* the ninth name */
	tt_hb_free(&hb);
	/* --hang-timeout checkpoint=3 wins over the observed 8 s. */
	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "checkpoint=3", NULL), 0);
	init(1, &cfg);
	CU_ASSERT_EQUAL(line(0, "section checkpoint", 0), 0);
	CU_ASSERT_EQUAL(line(0, "step 1", 8 * S), 0);
	CU_ASSERT_EQUAL(line(0, "section checkpoint", 9 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 3 * S);
	tt_hb_free(&hb);
}

static void test_fixed_and_off(void)
{
	struct tt_hb_config cfg = { 0 };

	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "2.5", NULL), 0);
	init(1, &cfg);
	CU_ASSERT_EQUAL(line(0, "section setup", 100), 0);
	/* A fixed timeout applies from the first line, in every section. */
	CU_ASSERT_EQUAL(tt_hb_timeout(&hb, 0), 2500000);
	CU_ASSERT_FALSE(tt_hb_hung(&hb, 0, 100 + 2500000 - 1));
	CU_ASSERT_TRUE(tt_hb_hung(&hb, 0, 100 + 2500000));
	tt_hb_free(&hb);
	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "off", NULL), 0);
	init(1, &cfg);
	CU_ASSERT_EQUAL(line(0, "step 1", 100), 0);
	CU_ASSERT_EQUAL(tt_hb_deadline(&hb, 0), INT64_MAX);
	tt_hb_free(&hb);
}

static void test_config_rejects_bad_values(void)
{
	static const char *const bad[] = { "", "0", "-1", "x", "1s", "=3", "a b=3", "ckpt=", "ckpt=0",
		"9999999", " 3", NULL };
	struct tt_hb_config cfg = { 0 };
	tt_err err;
	int k;

	for (k = 0; bad[k]; k++) {
		CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, bad[k], &err), -1);
		CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--hang-timeout"));
	}
	for (k = 0; k < TT_HB_SECTIONS_MAX; k++) {
		char arg[32];

		snprintf(arg, sizeof(arg), "s%d=1", k);
		CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, arg, NULL), 0);
	}
	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "s0=7", NULL), 0);	/* the same one again: replaced */
	CU_ASSERT_EQUAL(cfg.sections[0].timeout_us, 7 * S);
	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "one.more=1", &err), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "at most"));
}

/* Ranks blocked behind the culprit look hung too: a stopped one wins, else the one silent
 * longest for its timeout; a worker that never wrote a line is never picked. */
static void test_culprit(void)
{
	struct tt_hb_config cfg = { 0 };
	int64_t now = 100 * S;

	CU_ASSERT_EQUAL(tt_hb_config_add(&cfg, "10", NULL), 0);
	init(3, &cfg);
	CU_ASSERT_EQUAL(tt_hb_culprit(&hb, now, NULL), -1);
	CU_ASSERT_EQUAL(line(0, "step 5", 89 * S), 0);
	CU_ASSERT_EQUAL(line(1, "step 5", 91 * S), 0);
	CU_ASSERT_EQUAL(tt_hb_culprit(&hb, now, "SSS"), 0);	/* rank 0: 11 s of 10 */
	CU_ASSERT_EQUAL(tt_hb_culprit(&hb, now, "STT"), 1);	/* stopped; worker 2 never wrote */
	CU_ASSERT_EQUAL(tt_hb_culprit(&hb, now, "SDS"), 1);
	CU_ASSERT_EQUAL(tt_hb_culprit(&hb, 99 * S - 1, "STS"), -1);	/* none is past yet */
	tt_hb_free(&hb);
}

static void test_report_names_stragglers(void)
{
	int ranks[3] = { 4, 5, 6 };
	char out[1024];

	init(3, NULL);
	CU_ASSERT_EQUAL(tt_hb_report(&hb, ranks, "h1", out, sizeof(out)), 0);
	CU_ASSERT_STRING_EQUAL(out, "");
	steps(0, 1, 26, 0, 10000);
	steps(1, 1, 26, 0, 10000);
	steps(2, 1, 26, 0, 15001);	/* just above 1.5 x the median */
	CU_ASSERT_EQUAL(tt_hb_report(&hb, ranks, "h1", out, sizeof(out)), 1);
	CU_ASSERT_STRING_EQUAL(out, "train-run: host h1: step times (last 1024 per rank): rank 4 p50 10.0 ms p99 10.0 ms,"
			       " rank 5 p50 10.0 ms p99 10.0 ms, rank 6 p50 15.0 ms p99 15.0 ms\n"
			       "train-run: host h1: straggler: rank 6 p50 15.0 ms is 1.5x the node's median 10.0 ms\n");
	tt_hb_free(&hb);
	init(2, NULL);
	steps(0, 1, 26, 0, 10000);
	steps(1, 1, 26, 0, 15000);	/* exactly 1.5 x: not a straggler */
	CU_ASSERT_EQUAL(tt_hb_report(&hb, ranks, "h1", out, sizeof(out)), 0);
	tt_hb_free(&hb);
	/* Several steps per line: per-step time is the interval over the steps it covered. */
	init(1, NULL);
	CU_ASSERT_EQUAL(line(0, "step 0", 0), 0);
	for (int k = 1; k <= 20; k++) {
		char buf[32];

		snprintf(buf, sizeof(buf), "step %d", 4 * k);
		CU_ASSERT_EQUAL(line(0, buf, k * 40000), 0);
	}
	CU_ASSERT_EQUAL(tt_hb_step_percentile(&hb, 0, 50.0), 10000);
	tt_hb_free(&hb);
}

/* Worker i writes steps first..last every gap us from t0, each with busy time busy. */
static void busy_steps(int i, int first, int last, int64_t t0, int64_t gap, int64_t busy)
{
	char buf[64];

	for (int k = first; k <= last; k++) {
		snprintf(buf, sizeof(buf), "step %d busy %lld", k, (long long)busy);
		CU_ASSERT_EQUAL(line(i, buf, t0 + (k - first) * gap), 0);
	}
}

/* "step N busy US": the warm-up's busy times are left out, the rest kept as they are; a busy
 * part that is not one is the whole line ignored. In step (every step time the same), the
 * report judges the busy times when every rank has them, and the step times otherwise. */
static void test_busy_times(void)
{
	static const char *const bad[] = { "step 1 busy", "step 1 busy x", "step 1 busy -1",
		"step 1 idle 5", "step 1 busy 3600000001", "step 1 busy 5 6", "step 1  busy 5", NULL };
	int ranks[3] = { 4, 5, 6 };
	char out[1024];

	init(3, NULL);
	for (int k = 0; bad[k]; k++)
		CU_ASSERT_EQUAL(line(0, bad[k], 10), -1);
	CU_ASSERT_FALSE(hb.w[0].active);
	busy_steps(0, 1, 26, 0, 10000, 2000);
	busy_steps(1, 1, 26, 0, 10000, 2000);
	busy_steps(2, 1, 26, 0, 10000, 9000);	/* the slow one: the others wait for it */
	CU_ASSERT_EQUAL(hb.w[0].nbusy, 26 - TT_HB_WARMUP);
	CU_ASSERT_EQUAL(tt_hb_busy_percentile(&hb, 2, 50.0), 9000);
	CU_ASSERT_EQUAL(tt_hb_step_percentile(&hb, 2, 50.0), 10000);
	CU_ASSERT_EQUAL(tt_hb_report(&hb, ranks, "h1", out, sizeof(out)), 1);
	CU_ASSERT_STRING_EQUAL(out, "train-run: host h1: step times (last 1024 per rank): rank 4 p50 10.0 ms p99 10.0 ms"
			       " busy p50 2.00 ms, rank 5 p50 10.0 ms p99 10.0 ms busy p50 2.00 ms, rank 6 p50 10.0 ms"
			       " p99 10.0 ms busy p50 9.00 ms\n"
			       "train-run: host h1: straggler: rank 6 busy p50 9.00 ms is 4.5x the node's median 2.00 ms\n");
	tt_hb_free(&hb);
	/* One rank without busy times: the step times are judged, all equal, nobody is named. */
	init(3, NULL);
	busy_steps(0, 1, 26, 0, 10000, 2000);
	steps(1, 1, 26, 0, 10000);
	busy_steps(2, 1, 26, 0, 10000, 9000);
	CU_ASSERT_EQUAL(tt_hb_busy_percentile(&hb, 1, 50.0), -1);
	CU_ASSERT_EQUAL(tt_hb_report(&hb, ranks, "h1", out, sizeof(out)), 0);
	tt_hb_free(&hb);
}

int tt_register_suites(void)
{
	CU_pSuite s = CU_add_suite("heartbeat", NULL, NULL);

	if (!s)
		return -1;
	CU_add_test(s, "protocol lines", test_protocol_lines);
	CU_add_test(s, "feed splits lines, drops overlong", test_feed_splits_and_drops_overlong);
	CU_add_test(s, "calculated timeout after warm-up", test_calculated_timeout_after_warmup);
	CU_add_test(s, "floor for fast steps", test_floor_applies_to_fast_steps);
	CU_add_test(s, "resumed restarts the silence", test_resumed_restarts_the_silence);
	CU_add_test(s, "p99 of the intervals", test_p99_of_intervals);
	CU_add_test(s, "sections and rounds", test_sections_and_rounds);
	CU_add_test(s, "section timeouts from observation", test_section_timeouts_from_observation);
	CU_add_test(s, "fixed timeout and off", test_fixed_and_off);
	CU_add_test(s, "config rejects bad values", test_config_rejects_bad_values);
	CU_add_test(s, "culprit", test_culprit);
	CU_add_test(s, "report names stragglers", test_report_names_stragglers);
	CU_add_test(s, "busy times", test_busy_times);
	return 0;
}

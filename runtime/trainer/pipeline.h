/* SPDX-License-Identifier: MIT */
/* pipeline.h — pipeline-parallel schedules as plain data: the order in which one stage runs the
 * forward (F) and backward (B) passes of a step's micro-batches. GPipe runs every F, then every
 * B; 1F1B (PipeDream-flush, as Megatron) runs stages-1-s warm-up Fs on stage s, then alternates
 * one F and one B, so a stage holds at most stages-s micro-batches' activations instead of all.
 * Both run the Bs in micro-batch order, so gradients add up in the same order (bit-identical
 * results). With F and B of equal cost on every stage the idle share of a step, the bubble, is
 * (p-1)/(m+p-1) for both. */
#ifndef TT_PIPELINE_H
#define TT_PIPELINE_H

typedef enum tt_schedule { TT_SCHED_1F1B = 0, TT_SCHED_GPIPE = 1 } tt_schedule;

typedef struct tt_pp_action {
	int backward; /* 0: F, 1: B */
	int micro;    /* micro-batch index */
} tt_pp_action;

/* Stage s's 2*micro actions of one step into out[]; returns their count. */
int tt_pp_schedule(tt_schedule kind, int stages, int s, int micro, tt_pp_action *out);

/* Most micro-batches whose forward is done and backward not, at any point of stage s's schedule. */
int tt_pp_in_flight(tt_schedule kind, int stages, int s, int micro);

/* The theoretical bubble (p-1)/(m+p-1). */
double tt_pp_bubble_theory(int stages, int micro);

/* "1f1b" or "gpipe". */
const char *tt_schedule_name(tt_schedule kind);

#endif

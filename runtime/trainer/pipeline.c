/* SPDX-License-Identifier: MIT */
/* pipeline.c — GPipe and 1F1B action lists (see pipeline.h). */
#include "pipeline.h"

int tt_pp_schedule(tt_schedule kind, int stages, int s, int micro, tt_pp_action *out)
{
	int n = 0, warm = kind == TT_SCHED_GPIPE ? micro : stages - 1 - s, f = 0, b = 0;

	if (warm > micro)
		warm = micro;
	while (f < warm)
		out[n++] = (tt_pp_action){ 0, f++ };
	while (f < micro) { /* steady state: one forward, one backward */
		out[n++] = (tt_pp_action){ 0, f++ };
		out[n++] = (tt_pp_action){ 1, b++ };
	}
	while (b < micro)
		out[n++] = (tt_pp_action){ 1, b++ };
	return n;
}

int tt_pp_in_flight(tt_schedule kind, int stages, int s, int micro)
{
	int warm = kind == TT_SCHED_GPIPE ? micro : stages - 1 - s;

	if (warm > micro - 1)
		return micro;
	return warm + 1;
}

double tt_pp_bubble_theory(int stages, int micro)
{
	return (double)(stages - 1) / (double)(micro + stages - 1);
}

const char *tt_schedule_name(tt_schedule kind)
{
	return kind == TT_SCHED_GPIPE ? "gpipe" : "1f1b";
}

/* SPDX-License-Identifier: MIT */
/* adamw.c — AdamW update and warmup + cosine learning rate schedule (see adamw.h). */
#include "adamw.h"

#include <math.h>

tt_adamw_cfg tt_adamw_defaults(float lr)
{
	tt_adamw_cfg c = {
		.lr = lr, .beta1 = 0.9f, .beta2 = 0.999f, .eps = 1e-8f, .weight_decay = 0.01f,
		.warmup_steps = 0, .total_steps = 0,
	};
	return c;
}

float tt_adamw_lr(const tt_adamw_cfg *cfg, long step)
{
	double progress;

	if (step < cfg->warmup_steps)
		return cfg->lr * (float)(step + 1) / (float)cfg->warmup_steps;
	if (cfg->total_steps <= cfg->warmup_steps)
		return cfg->lr;
	progress = (double)(step - cfg->warmup_steps) / (double)(cfg->total_steps - cfg->warmup_steps);
	if (progress > 1.0)
		progress = 1.0;
	return (float)(cfg->lr * 0.5 * (1.0 + cos(M_PI * progress)));
}

tt_adamw_step tt_adamw_step_factors(const tt_adamw_cfg *cfg, long step, float lr)
{
	tt_adamw_step s = {
		.b1 = cfg->beta1, .b2 = cfg->beta2, .eps = cfg->eps,
		.decay = 1.0f - lr * cfg->weight_decay,
		.step_size = lr / (1.0f - powf(cfg->beta1, (float)(step + 1))),
		.bc2_sqrt = sqrtf(1.0f - powf(cfg->beta2, (float)(step + 1))),
	};
	return s;
}

void tt_adamw_apply(const tt_adamw_step *s, float *restrict p, const float *restrict g, float *restrict m,
		    float *restrict v, size_t n)
{
	const float b1 = s->b1, b2 = s->b2, decay = s->decay, step_size = s->step_size, bc2_sqrt = s->bc2_sqrt,
		    eps = s->eps;

	for (size_t i = 0; i < n; i++) {
		m[i] = b1 * m[i] + (1.0f - b1) * g[i];
		v[i] = b2 * v[i] + (1.0f - b2) * g[i] * g[i];
		p[i] = p[i] * decay - step_size * m[i] / (sqrtf(v[i]) / bc2_sqrt + eps);
	}
}

void tt_adamw_update(const tt_adamw_cfg *cfg, long step, float lr, float *restrict p, const float *restrict g,
		     float *restrict m, float *restrict v, size_t n)
{
	tt_adamw_step s = tt_adamw_step_factors(cfg, step, lr);

	tt_adamw_apply(&s, p, g, m, v, n);
}

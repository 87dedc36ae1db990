/* SPDX-License-Identifier: MIT */
/* adamw.h — the AdamW optimizer (decoupled weight decay, as torch.optim.AdamW) and its learning
 * rate schedule (linear warmup, then cosine decay to zero). It works on any slice of the flat
 * parameter vector, so ZeRO ranks update only the shard whose moments they own. */
#ifndef TT_ADAMW_H
#define TT_ADAMW_H

#include <stddef.h>

typedef struct tt_adamw_cfg {
	float lr;	    /* peak learning rate */
	float beta1, beta2; /* moment decay rates */
	float eps;
	float weight_decay; /* decoupled: p -= lr * wd * p */
	long warmup_steps;  /* linear ramp from lr/warmup to lr */
	long total_steps;   /* cosine reaches 0 here */
} tt_adamw_cfg;

/* torch.optim.AdamW defaults with the given peak rate. */
tt_adamw_cfg tt_adamw_defaults(float lr);

/* Learning rate of 0-based optimizer step `step`. */
float tt_adamw_lr(const tt_adamw_cfg *cfg, long step);

/* The constants of one step's update, computed once so the CPU loop and the GPU kernel
 * (gpu_mlp.cu) apply the same formula: m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
 * p = p*decay - step_size*m / (sqrt(v)/bc2_sqrt + eps). */
typedef struct tt_adamw_step {
	float b1, b2, eps, decay, step_size, bc2_sqrt;
} tt_adamw_step;

tt_adamw_step tt_adamw_step_factors(const tt_adamw_cfg *cfg, long step, float lr);

/* That formula on n parameters (the host loop; gpu_mlp.cu has the kernel). */
void tt_adamw_apply(const tt_adamw_step *s, float *restrict p, const float *restrict g, float *restrict m,
		    float *restrict v, size_t n);

/* One AdamW update of n parameters with gradient g and moments m, v; `step` is 0-based and sets
 * the bias correction, lr is the scheduled rate for this step. */
void tt_adamw_update(const tt_adamw_cfg *cfg, long step, float lr, float *restrict p, const float *restrict g,
		     float *restrict m, float *restrict v, size_t n);

#endif

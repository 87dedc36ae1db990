/* SPDX-License-Identifier: MIT */
/* parallel.c — 3D layouts, stage and tensor-parallel parts, element maps (see parallel.h). */
#include "parallel.h"

#include <stdio.h>
#include <string.h>

tt_coords tt_plan3d_coords(const tt_plan3d *lay, int rank)
{
	tt_coords c;

	c.tp = rank % lay->tp;
	c.dp = rank / lay->tp % lay->dp;
	c.pp = rank / (lay->tp * lay->dp);
	return c;
}

int tt_plan3d_rank(const tt_plan3d *lay, tt_coords c)
{
	return (c.pp * lay->dp + c.dp) * lay->tp + c.tp;
}

void tt_plan3d_format(const tt_plan3d *lay, char *out, size_t len)
{
	snprintf(out, len, "%dx%dx%d", lay->dp, lay->tp, lay->pp);
}

void tt_plan3d_stage(const tt_plan3d *lay, const tt_mlp *m, int s, int *first, int *n)
{
	*n = m->n_layers / lay->pp;
	*first = s * *n;
}

/* Kind of the i-th of n layers of a stage: pairs (COL, ROW) from the first; an odd last is FULL. */
static tt_tp_kind kind_in_stage(int tp, int i, int n)
{
	if (tp == 1 || (i == n - 1 && n % 2))
		return TT_LAYER_FULL;
	return i % 2 ? TT_LAYER_ROW : TT_LAYER_COL;
}

int tt_plan3d_check(const tt_plan3d *lay, int world, const tt_mlp *m, long batch, int micro, tt_err *err)
{
	int L = m->n_layers, tp = lay->tp, pp = lay->pp, per;

	if (tp < 1 || pp < 1)
		return tt_err_set(err, "--tp %d --pp %d: both must be at least 1", tp, pp);
	if (world % (tp * pp))
		return tt_err_set(err, "--tp %d x --pp %d = %d ranks per data-parallel replica does not divide the world of %d ranks; choose T and P whose product divides %d",
				  tp, pp, tp * pp, world, world);
	if (lay->dp != world / (tp * pp))
		return tt_err_set(err, "internal: layout %dx%dx%d for a world of %d", lay->dp, tp, pp, world);
	if (L % pp)
		return tt_err_set(err, "--pp %d does not divide the %d layers of the model: each stage holds the same number of layers; use a P that divides %d",
				  pp, L, L);
	per = L / pp;
	for (int s = 0; s < pp; s++)
		for (int i = 0; i < per; i++) {
			int l = s * per + i, out = m->dims[l + 1];

			if (kind_in_stage(tp, i, per) == TT_LAYER_COL && out % tp)
				return tt_err_set(err, "--tp %d does not divide the %d outputs of layer %d (%d->%d), which tensor parallelism splits; use a T that divides %d",
						  tp, out, l, m->dims[l], out, out);
		}
	if (micro < 1 || batch % ((long)lay->dp * micro))
		return tt_err_set(err, "--batch %ld does not split into %d data-parallel replicas x %d micro-batches (--accum); use a multiple of %ld",
				  batch, lay->dp, micro, (long)lay->dp * micro);
	return 0;
}

void tt_part_build(tt_part *p, const tt_mlp *m, const tt_plan3d *lay, tt_coords c)
{
	int first, n;

	memset(p, 0, sizeof(*p));
	tt_plan3d_stage(lay, m, c.pp, &first, &n);
	p->n_layers = n;
	p->tp = lay->tp;
	p->tp_rank = c.tp;
	p->stage = c.pp;
	p->stages = lay->pp;
	p->in_width = m->dims[first];
	p->out_width = m->dims[first + n];
	for (int i = 0; i < n; i++) {
		tt_part_layer *pl = &p->layer[i];
		int l = first + i;

		pl->global = l;
		pl->kind = kind_in_stage(lay->tp, i, n);
		pl->in = m->dims[l] / (pl->kind == TT_LAYER_ROW ? lay->tp : 1);
		pl->out = m->dims[l + 1] / (pl->kind == TT_LAYER_COL ? lay->tp : 1);
		pl->relu = l < m->n_layers - 1;
		p->len[i] = (size_t)pl->out * (size_t)pl->in + (size_t)pl->out;
	}
}

size_t tt_part_model_len(const tt_mlp *m, const tt_part *p, int i)
{
	return tt_mlp_layer_params(m, p->layer[i].global);
}

size_t tt_part_to_model(const tt_mlp *m, const tt_part *p, int i, size_t e)
{
	const tt_part_layer *pl = &p->layer[i];
	size_t in = (size_t)m->dims[pl->global], out = (size_t)m->dims[pl->global + 1], t = (size_t)p->tp_rank;
	size_t pin = (size_t)pl->in, pout = (size_t)pl->out, nw = pout * pin;

	switch (pl->kind) {
	case TT_LAYER_COL: /* rows t*pout.. of W, then the same slice of b */
		return e < nw ? (t * pout + e / pin) * in + e % pin : out * in + t * pout + (e - nw);
	case TT_LAYER_ROW: /* columns t*pin.. of every row of W, then all of b */
		return e < nw ? (e / pin) * in + t * pin + e % pin : out * in + (e - nw);
	default:
		return e;
	}
}

long tt_part_from_model(const tt_mlp *m, const tt_part *p, int i, size_t g)
{
	const tt_part_layer *pl = &p->layer[i];
	size_t in = (size_t)m->dims[pl->global], out = (size_t)m->dims[pl->global + 1], t = (size_t)p->tp_rank;
	size_t pin = (size_t)pl->in, pout = (size_t)pl->out, nw = out * in;

	switch (pl->kind) {
	case TT_LAYER_COL:
		if (g < nw) {
			size_t row = g / in;

			return row / pout == t ? (long)((row - t * pout) * pin + g % in) : -1;
		}
		return (g - nw) / pout == t ? (long)(pout * pin + (g - nw - t * pout)) : -1;
	case TT_LAYER_ROW:
		if (g < nw) {
			size_t col = g % in;

			return col / pin == t ? (long)((g / in) * pin + col - t * pin) : -1;
		}
		return (long)(pout * pin + (g - nw));
	default:
		return (long)g;
	}
}

void tt_part_init_layer(const tt_mlp *m, const tt_part *p, int i, uint64_t seed, float *whole, float *out)
{
	tt_mlp_init_layer(m, p->layer[i].global, seed, whole);
	for (size_t e = 0; e < p->len[i]; e++)
		out[e] = whole[tt_part_to_model(m, p, i, e)];
}

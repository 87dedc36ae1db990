/* SPDX-License-Identifier: MIT */
/* ckpt_write.c — `make bench-ckpt`'s writer: one rank's checkpoint file of MIB MiB written through
 * tt_ckpt_write_rank (CRC32, temporary file, fsync, rename, fsync of the directory) and meta.txt,
 * as train-mlp writes them; prints the wall time and MB/s of the whole checkpoint. A first,
 * untimed checkpoint (step STEP+1, removed) warms the arrays as a trainer's long-lived ones are:
 * on a VM the first pass over freshly allocated memory costs more than the disk. */
#include "ckpt.h"
#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int write_ckpt(const char *root, tt_ckpt_meta *meta, const tt_shard_plan *plan, const float *p,
		      const float *m, const float *v, tt_err *err)
{
	return tt_ckpt_prepare(root, meta->step, err) || tt_ckpt_write_rank(root, meta->step, 0, plan, p, m, v, meta->crc, err) ||
	       tt_ckpt_write_meta(root, meta, err);
}

/* Removes the warm-up checkpoint (its two files and the directory). */
static int remove_warmup(const char *root, long step, tt_err *err)
{
	char dir[4096], path[4200];

	tt_ckpt_step_dir(dir, sizeof(dir), root, step);
	snprintf(path, sizeof(path), "%s/rank-00000.bin", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/meta.txt", dir);
	unlink(path);
	return rmdir(dir) == 0 ? 0 : tt_err_errno(err, "cannot remove the warm-up checkpoint %s", dir);
}

int main(int argc, char **argv)
{
	tt_ckpt_meta meta = { .world = 1, .seed = 1, .batch = 1 };
	size_t floats, block;
	tt_shard_plan plan;
	float *p, *m, *v;
	uint32_t crc = 0;
	long mib;
	tt_err err;
	double t0, t;

	if (argc != 4 || (mib = atol(argv[2])) < 1 || (meta.step = atol(argv[3])) < 0) {
		fprintf(stderr, "usage: ckpt-write DIR MIB STEP\n");
		return 2;
	}
	floats = (size_t)mib * 1048576 / (3 * sizeof(float)); /* p, m, v */
	block = floats;
	if (tt_shard_plan_init(&plan, &block, 1, 1, 0, &err) != 0) {
		fprintf(stderr, "ckpt-write: %s\n", err.msg);
		return 1;
	}
	p = malloc(floats * sizeof(float));
	m = malloc(floats * sizeof(float));
	v = malloc(floats * sizeof(float));
	if (!p || !m || !v) {
		fprintf(stderr, "ckpt-write: out of memory for %ld MiB\n", mib);
		return 1;
	}
	for (size_t i = 0; i < floats; i++) /* touched, so the write reads real pages */
		p[i] = m[i] = v[i] = (float)i;
	snprintf(meta.layers, sizeof(meta.layers), "%zu", floats);
	meta.crc = &crc;
	meta.step++;
	if (write_ckpt(argv[1], &meta, &plan, p, m, v, &err) != 0 ||
	    remove_warmup(argv[1], meta.step, &err) != 0)
		goto fail;
	sync();
	meta.step--;
	t0 = now();
	if (write_ckpt(argv[1], &meta, &plan, p, m, v, &err) != 0)
		goto fail;
	t = now() - t0;
	printf("checkpoint %ld MiB in %.3f s: %.1f MB/s\n", mib, t, (double)mib * 1048576 / t / 1e6);
	free(p);
	free(m);
	free(v);
	return 0;
fail:
	fprintf(stderr, "ckpt-write: %s\n", err.msg);
	return 1;
}

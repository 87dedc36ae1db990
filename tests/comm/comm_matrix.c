/* SPDX-License-Identifier: MIT */
/* comm_matrix.c — see comm_matrix.h. Inputs are small integers (rank- and index-dependent, in
 * [-4, 4]), so sums and maxima are exact in float32 and bfloat16 alike; averages are compared
 * within bf16's relative precision. */
#include "comm_matrix.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float input(int rank, size_t i)
{
	return (float)((int)((rank * 7 + i * 3) % 9) - 4);
}

static void put(void *h, trainrt_dtype dt, size_t i, float v)
{
	if (dt == TRAINRT_FLOAT32) {
		((float *)h)[i] = v;
	} else {
		uint32_t u;

		memcpy(&u, &v, 4);
		((uint16_t *)h)[i] = (uint16_t)(u >> 16); /* exact for these small integers */
	}
}

static float get(const void *h, trainrt_dtype dt, size_t i)
{
	uint32_t u;
	float f;

	if (dt == TRAINRT_FLOAT32)
		return ((const float *)h)[i];
	u = (uint32_t)((const uint16_t *)h)[i] << 16;
	memcpy(&f, &u, 4);
	return f;
}

static float reduced(int n, size_t i, trainrt_redop op)
{
	float acc = input(0, i);

	for (int r = 1; r < n; r++)
		acc = op == TRAINRT_MAX ? fmaxf(acc, input(r, i)) : acc + input(r, i);
	return op == TRAINRT_AVG ? acc / (float)n : acc;
}

static int wrong_value(float got, float want)
{
	return !(fabsf(got - want) <= 1e-2f * (1.0f + fabsf(want)));
}

/* Splits c by parity, ranked backwards (key -rank), and checks each group's size, this rank's
 * place in it, and an all-gather of the members' ranks in c over the group's own backend.
 * Returns the wrong values, or -1 when an operation failed. */
static long split_check(trainrt_comm *c, const comm_matrix_copy *copy)
{
	int n = trainrt_world_size(c), me = trainrt_rank(c), top = me + 2 * ((n - 1 - me) / 2);
	trainrt_comm *g = NULL;
	float mine = (float)me, *h = NULL, *a = NULL, *b = NULL;
	long wrong = -1;
	int gn;

	if (trainrt_comm_split(c, me % 2, -me, &g) != 0)
		return -1;
	gn = trainrt_world_size(g);
	if (!(h = malloc(sizeof(float) * (size_t)gn)) || !(a = trainrt_alloc(g, sizeof(float))) ||
	    !(b = trainrt_alloc(g, sizeof(float) * (size_t)gn)))
		goto out;
	copy->to_buffer(a, &mine, sizeof(float));
	if (trainrt_allgather(g, a, b, 1, TRAINRT_FLOAT32) != 0) {
		fprintf(stderr, "split_check: %s\n", trainrt_last_error(g));
		goto out;
	}
	copy->to_host(h, b, sizeof(float) * (size_t)gn);
	wrong = (gn != (n - me % 2 + 1) / 2) + (trainrt_rank(g) != (n - 1 - me) / 2);
	for (int i = 0; i < gn; i++)
		wrong += h[i] != (float)(top - 2 * i);
out:
	free(h);
	if (a)
		trainrt_free(g, a);
	if (b)
		trainrt_free(g, b);
	trainrt_finalize(g);
	return wrong;
}

long comm_matrix_run(trainrt_comm *c, const comm_matrix_copy *copy)
{
	static const size_t sizes[] = { 0, 1, 7, 4097, 1048579 };
	int n = trainrt_world_size(c), me = trainrt_rank(c);
	long wrong = 0;

	for (int d = 0; d < 2; d++) {
		trainrt_dtype dt = d ? TRAINRT_BF16 : TRAINRT_FLOAT32;
		size_t es = trainrt_dtype_size(dt);

		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			size_t count = sizes[s], all = count * (size_t)n, bytes = all * es + 4;
			unsigned char *h = malloc(bytes), *a = trainrt_alloc(c, bytes), *b = trainrt_alloc(c, bytes);
			int failed = !h || !a || !b;

			for (int o = 0; o < 3 && !failed; o++) {
				trainrt_redop op = (trainrt_redop)o;

				for (size_t i = 0; i < all; i++)
					put(h, dt, i, input(me, i));
				copy->to_buffer(a, h, all * es);
				failed = trainrt_allreduce(c, a, b, count, dt, op) != 0;
				if (failed)
					break;
				copy->to_host(h, b, count * es);
				for (size_t i = 0; i < count; i++)
					wrong += wrong_value(get(h, dt, i), reduced(n, i, op));
				failed = trainrt_reducescatter(c, a, b, count, dt, op) != 0;
				if (failed)
					break;
				copy->to_host(h, b, count * es);
				for (size_t i = 0; i < count; i++)
					wrong += wrong_value(get(h, dt, i), reduced(n, (size_t)me * count + i, op));
			}
			if (!failed && !(failed = trainrt_allgather(c, a, b, count, dt) != 0)) {
				copy->to_host(h, b, all * es);
				for (size_t i = 0; i < all; i++)
					wrong += get(h, dt, i) != input((int)(i / count), i % count);
			}
			if (!failed && !(failed = trainrt_broadcast(c, a, count, dt, n - 1) != 0)) {
				copy->to_host(h, a, count * es);
				for (size_t i = 0; i < count; i++)
					wrong += get(h, dt, i) != input(n - 1, i);
			}
			free(h);
			if (a)
				trainrt_free(c, a);
			if (b)
				trainrt_free(c, b);
			if (failed)
				return -1;
		}
	}
	{
		long split_wrong = split_check(c, copy);

		if (split_wrong < 0)
			return -1;
		wrong += split_wrong;
	}
	return trainrt_barrier(c) == 0 ? wrong : -1;
}

int comm_matrix_main(const char *prog, trainrt_buffers where, const char *want_backend,
		     const comm_matrix_copy *copy)
{
	char errbuf[1200];
	trainrt_comm *c = trainrt_init_for(where, errbuf, sizeof(errbuf));
	long wrong = -1;

	if (!c) {
		fprintf(stderr, "%s: %s\n", prog, errbuf);
		return 1;
	}
	if (want_backend && strcmp(trainrt_backend_name(c), want_backend) != 0)
		fprintf(stderr, "%s: backend is %s, not %s\n", prog, trainrt_backend_name(c), want_backend);
	else if ((wrong = comm_matrix_run(c, copy)) < 0)
		fprintf(stderr, "%s: %s\n", prog, trainrt_last_error(c));
	else
		printf("%s: rank %d of %d (%s, %d per node): %ld wrong elements\n", prog, trainrt_rank(c),
		       trainrt_world_size(c), trainrt_backend_name(c), trainrt_local_world_size(c), wrong);
	trainrt_finalize(c);
	return wrong == 0 ? 0 : 1;
}

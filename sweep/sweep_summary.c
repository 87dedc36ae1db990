/* SPDX-License-Identifier: MIT */
/* sweep_summary.c — reading train-mlp's JSON summary (see sweep_summary.h).
 * Not a general JSON parser: the document must be balanced (so a file cut short by a killed job
 * is refused), and the fields are found by their quoted names, which train-mlp never repeats
 * outside the history objects. */
#include "sweep_summary.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 0 when every { and [ outside strings is closed and nothing follows the outer object. */
static int balanced(const char *p)
{
	int depth = 0, in_string = 0, seen = 0;

	for (; *p; p++) {
		if (in_string) {
			if (*p == '\\' && p[1])
				p++;
			else if (*p == '"')
				in_string = 0;
			continue;
		}
		if (*p == '"')
			in_string = 1;
		else if (*p == '{' || *p == '[')
			depth++, seen = 1;
		else if (*p == '}' || *p == ']') {
			if (--depth < 0)
				return -1;
		} else if (seen && depth == 0 && !strchr(" \t\r\n", *p))
			return -1;
	}
	return seen && depth == 0 && !in_string ? 0 : -1;
}

/* The text after `"key":` within [p, end), or NULL. */
static const char *find_key(const char *p, const char *end, const char *key)
{
	size_t klen = strlen(key);

	for (const char *q = p; q && q < end; q++) {
		q = memchr(q, '"', (size_t)(end - q));
		if (!q)
			return NULL;
		if ((size_t)(end - q) > klen + 1 && memcmp(q + 1, key, klen) == 0 && q[klen + 1] == '"') {
			const char *c = q + klen + 2;

			while (c < end && strchr(" \t\r\n", *c))
				c++;
			if (c < end && *c == ':') {
				for (c++; c < end && strchr(" \t\r\n", *c); c++)
					;
				return c;
			}
		}
	}
	return NULL;
}

/* A number, or NaN for null when allow_null. */
static int number_at(const char *p, const char *end, const char *key, int allow_null, double *out, tt_err *err)
{
	const char *v = find_key(p, end, key);
	char *stop;

	if (!v)
		return tt_err_set(err, "no \"%s\" field", key);
	if (allow_null && strncmp(v, "null", 4) == 0) {
		*out = NAN;
		return 0;
	}
	errno = 0;
	*out = strtod(v, &stop);
	if (stop == v || errno)
		return tt_err_set(err, "\"%s\" is not a number", key);
	return 0;
}

/* A string field's text (no escapes: metric names and goals are plain words) into out. */
static int string_at(const char *p, const char *end, const char *key, char *out, size_t size, tt_err *err)
{
	const char *v = find_key(p, end, key);
	size_t n;

	if (!v)
		return tt_err_set(err, "no \"%s\" field", key);
	if (*v != '"')
		return tt_err_set(err, "\"%s\" is not a string", key);
	n = strcspn(v + 1, "\"\\\n");
	if (v[1 + n] != '"' || n == 0 || n >= size)
		return tt_err_set(err, "\"%s\" wants a plain name of 1 to %zu characters", key, size - 1);
	memcpy(out, v + 1, n);
	out[n] = '\0';
	return 0;
}

/* A non-negative whole count (steps, world size), range-checked before it becomes a long. */
static int count_at(const char *p, const char *end, const char *key, long *out, tt_err *err)
{
	double v;

	if (number_at(p, end, key, 0, &v, err) != 0)
		return -1;
	if (!(v >= 0 && v <= (double)(1L << 53)) || v != (double)(long)v)
		return tt_err_set(err, "\"%s\" is not a whole number from 0 to 2^53", key);
	*out = (long)v;
	return 0;
}

static int parse_history(const char *text, const char *end, struct sweep_summary *sum, tt_err *err)
{
	const char *p = find_key(text, end, "history");

	if (!p || *p != '[')
		return tt_err_set(err, "no \"history\" array");
	for (p++;;) {
		const char *open = strpbrk(p, "{]"), *close;
		struct sweep_history h, *bigger;

		if (!open || *open == ']')
			return 0;
		close = strchr(open, '}');
		if (!close)
			return tt_err_set(err, "history entry without its closing brace");
		if (count_at(open, close, "step", &h.step, err) != 0 ||
		    number_at(open, close, "loss", 0, &h.loss, err) != 0)
			return tt_err_wrap(err, "history entry %zu", sum->nhistory);
		if (number_at(open, close, "test_acc", 1, &h.test_acc, err) != 0)
			h.test_acc = NAN;
		bigger = realloc(sum->history, (sum->nhistory + 1) * sizeof(*bigger));
		if (!bigger)
			return tt_err_set(err, "out of memory");
		sum->history = bigger;
		sum->history[sum->nhistory++] = h;
		p = close + 1;
	}
}

int sweep_summary_parse(const char *text, struct sweep_summary *sum, tt_err *err)
{
	const char *end = text + strlen(text), *hist = find_key(text, end, "history");
	const char *top_end = hist ? hist : end;
	const char *crc;

	memset(sum, 0, sizeof(*sum));
	if (balanced(text) != 0)
		return tt_err_set(err, "not a complete JSON object (cut short while being written?)");
	if (number_at(text, top_end, "test_accuracy", 0, &sum->test_accuracy, err) != 0 ||
	    number_at(text, top_end, "test_loss", 0, &sum->test_loss, err) != 0 ||
	    number_at(text, top_end, "samples_per_sec", 0, &sum->samples_per_sec, err) != 0 ||
	    number_at(text, top_end, "wall_seconds", 0, &sum->wall_seconds, err) != 0 ||
	    count_at(text, top_end, "steps", &sum->steps, err) != 0 ||
	    count_at(text, top_end, "world_size", &sum->world_size, err) != 0)
		return -1;
	crc = find_key(text, top_end, "weights_crc32");
	if (crc && *crc == '"') {
		size_t n = strcspn(crc + 1, "\"");

		if (n < sizeof(sum->weights_crc32))
			memcpy(sum->weights_crc32, crc + 1, n);
	}
	if (parse_history(text, end, sum, err) != 0) {
		sweep_summary_free(sum);
		return -1;
	}
	return 0;
}

int sweep_result_parse(const char *text, struct sweep_result *res, tt_err *err)
{
	const char *end = text + strlen(text);
	char goal[8];

	memset(res, 0, sizeof(*res));
	if (balanced(text) != 0)
		return tt_err_set(err, "not one complete JSON object such as {\"metric\": \"val_loss\", \"value\": 0.31, "
				  "\"goal\": \"min\"}");
	if (string_at(text, end, "metric", res->metric, sizeof(res->metric), err) != 0 ||
	    number_at(text, end, "value", 0, &res->value, err) != 0 ||
	    string_at(text, end, "goal", goal, sizeof(goal), err) != 0)
		return -1;
	if (!isfinite(res->value))
		return tt_err_set(err, "\"value\" is not a finite number");
	if (strcmp(goal, "max") && strcmp(goal, "min"))
		return tt_err_set(err, "\"goal\" '%s': want \"max\" (higher is better) or \"min\"", goal);
	res->maximize = !strcmp(goal, "max");
	return 0;
}

void sweep_summary_free(struct sweep_summary *sum)
{
	free(sum->history);
	sum->history = NULL;
	sum->nhistory = 0;
}

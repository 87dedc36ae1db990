/* SPDX-License-Identifier: MIT */
/* sweep_grid.c — parsing sweep files and indexing their points (see sweep_grid.h).
 * Values end up as words on a train-mlp command line built by a shell script, so they are
 * limited to characters no shell treats specially; anything else is refused with its line. */
#include "sweep_grid.h"

#include "sweep_io.h"
#include "tt_parse.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options sweep.sh sets itself for every point. */
static const char *const reserved_keys[] = { "summary", "ckpt-dir", "help", NULL };

static int key_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'; /* _: argparse */
}

static int value_char_ok(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c != '\0' && strchr("._+-:/,", c) != NULL);
}

static int push_value(struct sweep_axis *axis, const char *start, size_t len)
{
	char **bigger = realloc(axis->values, (axis->nvalues + 1) * sizeof(*bigger));

	if (!bigger)
		return -1;
	axis->values = bigger;
	axis->values[axis->nvalues] = strndup(start, len);
	if (!axis->values[axis->nvalues])
		return -1;
	axis->nvalues++;
	return 0;
}

/* Splits "a, b, \"c,d\"" (up to end) into the axis's values. */
static int parse_values(struct sweep_axis *axis, const char *p, const char *end, const char *name,
			int line, tt_err *err)
{
	for (;;) {
		const char *start, *stop;

		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (*p == '"') {
			start = ++p;
			while (p < end && *p != '"')
				p++;
			if (p == end)
				return tt_err_set(err, "%s: line %d: unterminated quote in the values of '%s'",
						  name, line, axis->key);
			stop = p++;
		} else {
			start = p;
			while (p < end && *p != ',' && *p != '#')
				p++;
			stop = p;
			while (stop > start && (stop[-1] == ' ' || stop[-1] == '\t' || stop[-1] == '\r'))
				stop--;
		}
		if (stop == start)
			return tt_err_set(err, "%s: line %d: empty value for '%s' (values are separated by commas; "
					  "quote a value that contains commas, e.g. \"784,256,10\")", name, line, axis->key);
		for (const char *c = start; c < stop; c++)
			if (!value_char_ok(*c))
				return tt_err_set(err, "%s: line %d: value '%.*s' for '%s' has the character '%c'; "
						  "values may use letters, digits and . _ + - : / , only",
						  name, line, (int)(stop - start), start, axis->key, *c);
		for (size_t i = 0; i < axis->nvalues; i++)
			if (strlen(axis->values[i]) == (size_t)(stop - start) &&
			    memcmp(axis->values[i], start, (size_t)(stop - start)) == 0)
				return tt_err_set(err, "%s: line %d: value '%s' appears twice for '%s'",
						  name, line, axis->values[i], axis->key);
		if (push_value(axis, start, (size_t)(stop - start)) != 0)
			return tt_err_set(err, "%s: out of memory", name);
		while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
			p++;
		if (p == end || *p == '#')
			return 0;
		if (*p != ',')
			return tt_err_set(err, "%s: line %d: expected a comma after value '%s' of '%s'", name, line,
					  axis->values[axis->nvalues - 1], axis->key);
		p++;
	}
}

static int parse_line(struct sweep_grid *grid, const char *p, const char *end, const char *name, int line,
		      tt_err *err)
{
	const char *key, *key_end;
	struct sweep_axis *bigger, *axis;

	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (p == end || *p == '#')
		return 0;
	key = p;
	while (p < end && key_char_ok(*p))
		p++;
	key_end = p;
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
		p++;
	if (key_end == key || p == end || *p != '=')
		return tt_err_set(err, "%s: line %d: expected 'option = value, value, ...' with the program's "
				  "option in lower case (e.g. 'lr = 1e-3, 3e-3')", name, line);
	if (key[0] == '-') {
		const char *bare = key + strspn(key, "-"); /* stops inside the key: '=' follows it */

		return tt_err_set(err, "%s: line %d: write the option without dashes ('%.*s' -> '%.*s')", name,
				  line, (int)(key_end - key), key, (int)(key_end - bare), bare);
	}
	for (const char *const *r = reserved_keys; *r; r++)
		if (strlen(*r) == (size_t)(key_end - key) && memcmp(*r, key, (size_t)(key_end - key)) == 0)
			return tt_err_set(err, "%s: line %d: '%s' is set by the sweep itself for every point; "
					  "remove it from the grid", name, line, *r);
	for (size_t i = 0; i < grid->naxes; i++)
		if (strlen(grid->axes[i].key) == (size_t)(key_end - key) &&
		    memcmp(grid->axes[i].key, key, (size_t)(key_end - key)) == 0)
			return tt_err_set(err, "%s: line %d: '%s' is given twice; put all its values on one line",
					  name, line, grid->axes[i].key);
	bigger = realloc(grid->axes, (grid->naxes + 1) * sizeof(*bigger));
	if (!bigger)
		return tt_err_set(err, "%s: out of memory", name);
	grid->axes = bigger;
	axis = &grid->axes[grid->naxes];
	memset(axis, 0, sizeof(*axis));
	axis->key = strndup(key, (size_t)(key_end - key));
	if (!axis->key)
		return tt_err_set(err, "%s: out of memory", name);
	grid->naxes++;
	if (parse_values(axis, p + 1, end, name, line, err) != 0)
		return -1;
	if (grid->npoints > SWEEP_MAX_POINTS / (long)axis->nvalues)
		return tt_err_set(err, "%s: line %d: the grid has more than %ld points; split the sweep", name,
				  line, SWEEP_MAX_POINTS);
	grid->npoints *= (long)axis->nvalues;
	return 0;
}

int sweep_grid_parse(const char *text, const char *name, struct sweep_grid *grid, tt_err *err)
{
	const char *p = text;
	int line = 1;

	memset(grid, 0, sizeof(*grid));
	grid->npoints = 1;
	while (*p) {
		const char *end = strchr(p, '\n');

		if (!end)
			end = p + strlen(p);
		if (parse_line(grid, p, end, name, line, err) != 0)
			goto fail;
		p = *end ? end + 1 : end;
		line++;
	}
	if (grid->naxes == 0) {
		tt_err_set(err, "%s: no 'option = values' line; a sweep needs at least one, e.g. 'lr = 1e-3, 3e-3'", name);
		goto fail;
	}
	return 0;
fail:
	sweep_grid_free(grid);
	return -1;
}

int sweep_grid_load(const char *path, struct sweep_grid *grid, tt_err *err)
{
	char *text = sweep_read_file(path, 1 << 20, err);
	int rc;

	if (!text)
		return -1;
	rc = sweep_grid_parse(text, path, grid, err);
	free(text);
	return rc;
}

void sweep_grid_free(struct sweep_grid *grid)
{
	for (size_t i = 0; i < grid->naxes; i++) {
		for (size_t v = 0; v < grid->axes[i].nvalues; v++)
			free(grid->axes[i].values[v]);
		free(grid->axes[i].values);
		free(grid->axes[i].key);
	}
	free(grid->axes);
	memset(grid, 0, sizeof(*grid));
}

const char *sweep_grid_value(const struct sweep_grid *grid, long index, size_t axis)
{
	long stride = 1;

	for (size_t i = grid->naxes; i-- > axis + 1;)
		stride *= (long)grid->axes[i].nvalues;
	return grid->axes[axis].values[(index / stride) % (long)grid->axes[axis].nvalues];
}

int sweep_grid_index(const struct sweep_grid *grid, const char *text, long *index, tt_err *err)
{
	long long v;

	if (tt_parse_int(text, 0, LONG_MAX, "point index", &v, NULL) != 0)
		return tt_err_set(err, "point index '%s' is not a whole number (an array task id)", text);
	if (v >= grid->npoints)
		return tt_err_set(err, "point index %lld is outside the grid of %ld points (0-%ld); submit with "
				  "--array=0-%ld", v, grid->npoints, grid->npoints - 1, grid->npoints - 1);
	*index = (long)v;
	return 0;
}

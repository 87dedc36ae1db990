/* SPDX-License-Identifier: MIT */
/* hostlist.c — Slurm nodelist expansion (see hostlist.h for the forms and the order).
 * An element ("r[1-2]-n[01-04]") is parsed into literal pieces and bracket groups of numbers;
 * its hosts are the cartesian product, walked in Slurm's order by an odometer. */
#include "hostlist.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Slurm handles up to 5 dimensions; more groups than this in one host name is a typo. */
#define GROUPS_MAX 8
/* 18 digits keep every value and the range arithmetic inside 64 bits. */
#define DIGITS_MAX 18

struct range {
	unsigned long long lo, hi;
	int width;              /* zero padding: the width of lo as written */
};

struct group {
	size_t nranges;
	struct range *ranges;
	size_t count;           /* numbers in the group */
};

/* One element of the list, e.g. "r[1-2]-n[01-04]" = lit "r", group, lit "-n", group, lit "". */
struct element {
	size_t len;             /* characters of the element in the list */
	size_t ngroups;
	struct group groups[GROUPS_MAX];
	const char *lit[GROUPS_MAX + 1];
	size_t litlen[GROUPS_MAX + 1];
};

static void element_release(struct element *e)
{
	for (size_t i = 0; i < e->ngroups; i++)
		free(e->groups[i].ranges);
	e->ngroups = 0;
}

static int is_sep(char c)
{
	return c == ',' || isspace((unsigned char)c);
}

static int parse_number(const char *list, const char *s, size_t len, unsigned long long *v,
			tt_err *err)
{
	if (len == 0)
		return tt_err_set(err, "nodelist '%s': empty range element at position %zu: write "
				  "numbers or ranges like [1-4,7] between the brackets",
				  list, (size_t)(s - list) + 1);
	for (size_t i = 0; i < len; i++)
		if (!isdigit((unsigned char)s[i]))
			return tt_err_set(err, "nodelist '%s': '%.*s' at position %zu is not a "
					  "number: ranges in brackets are digits like 01-16",
					  list, (int)len, s, (size_t)(s - list) + 1);
	if (len > DIGITS_MAX)
		return tt_err_set(err, "nodelist '%s': number '%.*s' has more than %d digits",
				  list, (int)len, s, DIGITS_MAX);
	*v = 0;
	for (size_t i = 0; i < len; i++)
		*v = *v * 10 + (unsigned long long)(s[i] - '0');
	return 0;
}

/* Parses the inside of one bracket pair, s[0..len). */
static int parse_group(const char *list, const char *s, size_t len, struct group *g, tt_err *err)
{
	size_t cap = 1;

	for (size_t i = 0; i < len; i++)
		cap += s[i] == ',';
	g->ranges = calloc(cap, sizeof(*g->ranges));
	if (!g->ranges)
		return tt_err_set(err, "nodelist '%s': out of memory", list);
	g->nranges = 0;
	g->count = 0;
	for (const char *p = s, *end = s + len; p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;
		const char *dash = memchr(p, '-', (size_t)(stop - p));
		struct range *r = &g->ranges[g->nranges];

		if (parse_number(list, p, (size_t)((dash ? dash : stop) - p), &r->lo, err) != 0)
			return -1;
		r->width = (int)((dash ? dash : stop) - p);
		r->hi = r->lo;
		if (dash && parse_number(list, dash + 1, (size_t)(stop - dash - 1), &r->hi, err) != 0)
			return -1;
		if (r->hi < r->lo)
			return tt_err_set(err, "nodelist '%s': reversed range '%.*s' at position %zu: "
					  "write the low number first", list, (int)(stop - p), p,
					  (size_t)(p - list) + 1);
		if (r->hi - r->lo >= TT_HOSTLIST_MAX)
			return tt_err_set(err, "nodelist '%s': range '%.*s' has more than %u hosts",
					  list, (int)(stop - p), p, TT_HOSTLIST_MAX);
		g->count += (size_t)(r->hi - r->lo + 1);
		g->nranges++;
		p = stop + 1;
	}
	return 0;
}

/* Parses the element starting at s (no separator, not empty) and sets *next past it. */
static int parse_element(const char *list, const char *s, const char **next, struct element *e,
			 tt_err *err)
{
	const char *p = s;

	memset(e, 0, sizeof(*e));
	e->lit[0] = p;
	while (*p && !is_sep(*p)) {
		const char *close;

		if (*p == ']')
			return tt_err_set(err, "nodelist '%s': ']' at position %zu has no matching '['",
					  list, (size_t)(p - list) + 1);
		if (*p != '[') {
			p++;
			continue;
		}
		close = p + 1 + strcspn(p + 1, "[]");
		if (*close != ']')
			return tt_err_set(err, "nodelist '%s': '[' at position %zu is not closed by ']'",
					  list, (size_t)(p - list) + 1);
		if (e->ngroups == GROUPS_MAX)
			return tt_err_set(err, "nodelist '%s': more than %d bracket groups in one host "
					  "name at position %zu", list, GROUPS_MAX,
					  (size_t)(s - list) + 1);
		e->litlen[e->ngroups] = (size_t)(p - e->lit[e->ngroups]);
		if (parse_group(list, p + 1, (size_t)(close - p - 1), &e->groups[e->ngroups++], err))
			return -1;
		p = close + 1;
		e->lit[e->ngroups] = p;
	}
	e->litlen[e->ngroups] = (size_t)(p - e->lit[e->ngroups]);
	e->len = (size_t)(p - s);
	*next = p;
	return 0;
}

static size_t element_count(const struct element *e)
{
	size_t n = 1;

	/* Saturates at TT_HOSTLIST_MAX + 1: both factors stay <= 2^20, so no product overflows. */
	for (size_t i = 0; i < e->ngroups; i++) {
		if (e->groups[i].count > TT_HOSTLIST_MAX)
			return (size_t)TT_HOSTLIST_MAX + 1;
		n *= e->groups[i].count;
		if (n > TT_HOSTLIST_MAX)
			return (size_t)TT_HOSTLIST_MAX + 1;
	}
	return n;
}

/* Calls fn for every element of list; an empty element or an empty list is an error. */
static int for_each_element(const char *list, int (*fn)(void *ctx, const struct element *e),
			    void *ctx, tt_err *err)
{
	const char *p = list;
	size_t n = 0;

	if (!list)
		return tt_err_set(err, "nodelist is missing (NULL)");
	for (;;) {
		struct element e;
		int commas = 0;
		int rc;

		while (is_sep(*p))
			commas += *p++ == ',';
		if (commas > (n == 0 ? 0 : 1) || (commas && !*p))
			return tt_err_set(err, "nodelist '%s': empty element before position %zu: "
					  "separate host names by one comma", list,
					  (size_t)(p - list) + 1);
		if (!*p)
			break;
		if (parse_element(list, p, &p, &e, err) != 0) {
			element_release(&e);
			return -1;
		}
		rc = fn(ctx, &e);
		element_release(&e);
		if (rc != 0)
			return -1;
		n++;
	}
	if (n == 0)
		return tt_err_set(err, "nodelist '%s' names no host", list);
	return 0;
}

struct count_ctx {
	const char *list;
	size_t n;
	tt_err *err;
};

static int count_element(void *ctx, const struct element *e)
{
	struct count_ctx *c = ctx;

	c->n += element_count(e);
	if (c->n > TT_HOSTLIST_MAX)
		return tt_err_set(c->err, "nodelist '%s' expands to more than %u hosts", c->list,
				  TT_HOSTLIST_MAX);
	return 0;
}

int tt_hostlist_count(const char *list, size_t *n, tt_err *err)
{
	struct count_ctx c = {.list = list, .err = err};

	if (for_each_element(list, count_element, &c, err) != 0)
		return -1;
	*n = c.n;
	return 0;
}

/* Where the odometer stands in one group: a range of it and a number in that range. Stepping is
 * O(1), so an element of n hosts costs O(n) however many ranges its groups hold. */
struct cursor {
	size_t range;
	unsigned long long v;
};

static void cursor_reset(const struct group *g, struct cursor *c)
{
	c->range = 0;
	c->v = g->ranges[0].lo;
}

/* Steps to the group's next number; 0 when it wrapped around to the first. */
static int cursor_next(const struct group *g, struct cursor *c)
{
	if (c->v < g->ranges[c->range].hi) {
		c->v++;
		return 1;
	}
	if (++c->range < g->nranges) {
		c->v = g->ranges[c->range].lo;
		return 1;
	}
	cursor_reset(g, c);
	return 0;
}

struct expand_ctx {
	const char *list;
	char **hosts;
	size_t n;
	tt_err *err;
};

/* The host the cursors point at, in a buffer of its own length (not the element's: a strided
 * element of 10k ranges is 60k characters, and 10k hosts of that size would be 600 MB). */
static char *element_host(const struct element *e, const struct cursor *at)
{
	size_t len = e->litlen[e->ngroups] + 1, off = 0;
	char *host;

	for (size_t g = 0; g < e->ngroups; g++)
		len += e->litlen[g] + DIGITS_MAX + 1;
	host = malloc(len);
	if (!host)
		return NULL;
	for (size_t g = 0; g < e->ngroups; g++)
		off += (size_t)snprintf(host + off, len - off, "%.*s%0*llu", (int)e->litlen[g],
					e->lit[g], e->groups[g].ranges[at[g].range].width, at[g].v);
	snprintf(host + off, len - off, "%.*s", (int)e->litlen[e->ngroups], e->lit[e->ngroups]);
	return host;
}

static int expand_element(void *ctx, const struct element *e)
{
	struct expand_ctx *x = ctx;
	struct cursor at[GROUPS_MAX];
	/* Slurm's order: the last group turns fastest, then the first, second, ... */
	size_t order[GROUPS_MAX];
	size_t total = element_count(e);

	for (size_t g = 0; g < e->ngroups; g++)
		cursor_reset(&e->groups[g], &at[g]);
	if (e->ngroups > 0) {
		order[0] = e->ngroups - 1;
		for (size_t g = 0; g + 1 < e->ngroups; g++)
			order[g + 1] = g;
	}
	for (size_t k = 0; k < total; k++) {
		x->hosts[x->n] = element_host(e, at);
		if (!x->hosts[x->n])
			return tt_err_set(x->err, "nodelist '%s': out of memory", x->list);
		x->n++;
		for (size_t d = 0; d < e->ngroups; d++)
			if (cursor_next(&e->groups[order[d]], &at[order[d]]))
				break;
	}
	return 0;
}

int tt_hostlist_expand(const char *list, char ***hosts, size_t *n, tt_err *err)
{
	struct expand_ctx x = {.list = list, .err = err};
	size_t count;

	*hosts = NULL;
	*n = 0;
	if (tt_hostlist_count(list, &count, err) != 0)
		return -1;
	x.hosts = calloc(count, sizeof(*x.hosts));
	if (!x.hosts)
		return tt_err_set(err, "nodelist '%s': out of memory for %zu hosts", list, count);
	if (for_each_element(list, expand_element, &x, err) != 0) {
		tt_hostlist_free(x.hosts, x.n);
		return -1;
	}
	*hosts = x.hosts;
	*n = x.n;
	return 0;
}

void tt_hostlist_free(char **hosts, size_t n)
{
	if (!hosts)
		return;
	for (size_t i = 0; i < n; i++)
		free(hosts[i]);
	free(hosts);
}

/* The first host of the first element (all group indices 0), while the whole list is counted:
 * one pass checks it as tt_hostlist_count does. */
struct first_ctx {
	struct count_ctx count;
	char *host;
};

static int first_host(void *ctx, const struct element *e)
{
	struct first_ctx *x = ctx;
	struct cursor at[GROUPS_MAX];

	if (!x->host) {
		for (size_t g = 0; g < e->ngroups; g++)
			cursor_reset(&e->groups[g], &at[g]);
		x->host = element_host(e, at);
		if (!x->host)
			return tt_err_set(x->count.err, "nodelist '%s': out of memory", x->count.list);
	}
	return count_element(&x->count, e);
}

int tt_hostlist_first(const char *list, char *buf, size_t len, size_t *count, tt_err *err)
{
	struct first_ctx x = {.count = {.list = list, .err = err}};
	const char *host;
	int rc = -1;

	/* Only the first host is built: a list of a million hosts costs no million allocations. */
	if (for_each_element(list, first_host, &x, err) != 0)
		goto out;
	host = x.host;
	if (strlen(host) + 1 > len) {
		tt_err_set(err, "nodelist '%s': first host '%s' does not fit in %zu bytes",
			   list, host, len);
		goto out;
	}
	strcpy(buf, host);
	if (count)
		*count = x.count.n;
	rc = 0;
out:
	free(x.host);
	return rc;
}

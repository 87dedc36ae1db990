/* SPDX-License-Identifier: MIT */
/* hostlist.h — Slurm nodelist expansion, the same names in the same order as
 * `scontrol show hostnames LIST` prints them, without linking libslurm (pure, unit-testable).
 *
 * Forms: single hosts `x`; ranges and lists in brackets with zero padding kept `n[001-128,200]`
 * (a range's width is the width of its lower bound, as Slurm does: `a[01-3]` -> a01 a02 a03);
 * several bracket groups `r[1-2]-n[01-04]` (cartesian product); a literal suffix after the last
 * group `gpu[1-2]-ib` (scontrol 22.05 rejects this form as "Invalid hostlist", so a 22.05 step
 * never carries it; it is expanded the natural way for sites whose names end in a suffix);
 * comma- or space-separated elements mixing all of these.
 * Order of a multi-group element is Slurm's: the last group varies fastest, then the first,
 * second, ... group (for three groups a[..]b[..]c[..]: c fastest, then a, then b slowest).
 * Stricter than Slurm on input Slurm itself never produces: unbalanced or nested brackets, a
 * reversed range, an empty element (`a,,b`, `a[1,]`), a non-digit or half-open range (`a[1-]`)
 * and a list of more than TT_HOSTLIST_MAX hosts are errors. */
#ifndef TT_HOSTLIST_H
#define TT_HOSTLIST_H

#include <stddef.h>

#include "tt_err.h"

/* More hosts than this in one list is treated as a malformed list (Slurm's limit per range is 64K). */
#define TT_HOSTLIST_MAX (1u << 20)

/* Expands list into a malloc'd array of *n malloc'd host names (free with tt_hostlist_free).
 * Returns 0, or -1 with err naming the list, the position and the bad text; *hosts is NULL then. */
int tt_hostlist_expand(const char *list, char ***hosts, size_t *n, tt_err *err);

void tt_hostlist_free(char **hosts, size_t n);

/* Number of hosts list expands to, without building them. 0 or -1 with err as above. */
int tt_hostlist_count(const char *list, size_t *n, tt_err *err);

/* Writes the first host of list into buf (MASTER_ADDR) and, when count is not NULL, the number of
 * hosts into *count, in one pass over the list. -1 with err when list is malformed, empty, or the
 * name does not fit in len. */
int tt_hostlist_first(const char *list, char *buf, size_t len, size_t *count, tt_err *err);

#endif

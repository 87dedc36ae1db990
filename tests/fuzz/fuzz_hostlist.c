/* SPDX-License-Identifier: MIT */
/* fuzz_hostlist.c — Slurm nodelists (layout/hostlist): expansion, the count without expansion and
 * the first host (MASTER_ADDR) must agree on every list the parser accepts, and every error must
 * come with a message. Lists of more than 65536 hosts (Slurm's practical limit; the parser takes
 * up to TT_HOSTLIST_MAX) are counted but not expanded: a million names take seconds under ASan
 * and only repeat the paths a small list takes. */
#include "hostlist.h"

#include "fuzz_util.h"

#define EXPAND_MAX 65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = fuzz_cstr(data, size), first[64];
	char **hosts = NULL;
	size_t n = 0, counted = 0, counted_first = 0;
	tt_err err = { "" };
	int rc_count, rc_first;

	rc_count = tt_hostlist_count(list, &counted, &err);
	FUZZ_CHECK(rc_count == 0 || err.msg[0]);
	rc_first = tt_hostlist_first(list, first, sizeof(first), &counted_first, &err);
	if (rc_count != 0) {
		FUZZ_CHECK(rc_first != 0);
		goto out;
	}
	FUZZ_CHECK(counted >= 1 && counted <= TT_HOSTLIST_MAX);
	if (counted > EXPAND_MAX)
		goto out;
	FUZZ_CHECK(tt_hostlist_expand(list, &hosts, &n, &err) == 0 && n == counted);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(hosts[i] && hosts[i][0]);
	/* first fails only on a name longer than the buffer */
	if (strlen(hosts[0]) < sizeof(first))
		FUZZ_CHECK(rc_first == 0 && strcmp(first, hosts[0]) == 0 && counted_first == counted);
	else
		FUZZ_CHECK(rc_first != 0);
	tt_hostlist_free(hosts, n);
out:
	free(list);
	return 0;
}

/* fuzz_hostlist.c — Slurm nodelists (topo/hostlist): expansion, the count without expansion and
 * the first host (MASTER_ADDR) must agree on every list the parser accepts, and every error must
 * come with a message. */
#include "hostlist.h"

#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *list = fuzz_cstr(data, size), first[64];
	char **hosts = NULL;
	size_t n = 0, counted = 0;
	tt_err err = { "" };
	int rc_expand, rc_count, rc_first;

	rc_expand = tt_hostlist_expand(list, &hosts, &n, &err);
	FUZZ_CHECK(rc_expand == 0 || (hosts == NULL && err.msg[0]));
	rc_count = tt_hostlist_count(list, &counted, &err);
	FUZZ_CHECK(rc_count == rc_expand);
	rc_first = tt_hostlist_first(list, first, sizeof(first), &err);
	if (rc_expand == 0) {
		FUZZ_CHECK(counted == n && n <= TT_HOSTLIST_MAX);
		for (size_t i = 0; i < n; i++)
			FUZZ_CHECK(hosts[i] && hosts[i][0]);
		/* first fails only on an empty list or a name longer than the buffer */
		if (n > 0 && strlen(hosts[0]) < sizeof(first))
			FUZZ_CHECK(rc_first == 0 && strcmp(first, hosts[0]) == 0);
		tt_hostlist_free(hosts, n);
	} else {
		FUZZ_CHECK(rc_first != 0);
	}
	free(list);
	return 0;
}

/* SPDX-License-Identifier: MIT */
/* rt_pmix.c — PMIx edge (see rt_pmix.h): PMIx_Init/Get for the layout, Put/Commit/Fence for the
 * store address. */
#include "rt_pmix.h"

#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RT_PMIX_KEY "trainrt.store"

static pmix_proc_t rt_pmix_self;

int rt_pmix_detected(void)
{
	const char *r = getenv("PMIX_RANK"), *ns = getenv("PMIX_NAMESPACE");

	return (r && *r) || (ns && *ns);
}

static int get_u32(const pmix_proc_t *who, const char *key, uint32_t *out, tt_err *err)
{
	pmix_value_t *val = NULL;
	pmix_status_t rc = PMIx_Get(who, key, NULL, 0, &val);

	if (rc != PMIX_SUCCESS || !val)
		return tt_err_set(err, "PMIx_Get(%s) failed: %s", key, PMIx_Error_string(rc));
	switch (val->type) {
	case PMIX_UINT32: *out = val->data.uint32; break;
	case PMIX_UINT16: *out = val->data.uint16; break;
	case PMIX_INT: *out = (uint32_t)val->data.integer; break;
	default:
		PMIX_VALUE_RELEASE(val);
		return tt_err_set(err, "PMIx_Get(%s) returned an unexpected type %d", key, (int)val->type);
	}
	PMIX_VALUE_RELEASE(val);
	return 0;
}

int rt_pmix_init(rt_world *w, tt_err *err)
{
	pmix_proc_t wild;
	uint32_t size = 0, lrank = 0, lsize = 0;
	pmix_status_t rc = PMIx_Init(&rt_pmix_self, NULL, 0);

	if (rc != PMIX_SUCCESS)
		return tt_err_set(err, "PMIx_Init failed: %s (PMIX_* is set but no PMIx server answers; unset PMIX_RANK/PMIX_NAMESPACE to use the env contract)",
				  PMIx_Error_string(rc));
	PMIX_PROC_CONSTRUCT(&wild);
	snprintf(wild.nspace, sizeof(wild.nspace), "%s", rt_pmix_self.nspace);
	wild.rank = PMIX_RANK_WILDCARD;
	if (get_u32(&wild, PMIX_JOB_SIZE, &size, err) != 0 ||
	    get_u32(&rt_pmix_self, PMIX_LOCAL_RANK, &lrank, err) != 0 ||
	    get_u32(&wild, PMIX_LOCAL_SIZE, &lsize, err) != 0)
		return -1;
	w->rank = (int)rt_pmix_self.rank;
	w->size = (int)size;
	w->local_rank = (int)lrank;
	w->local_size = (int)lsize;
	return 0;
}

int rt_pmix_share_store(int rank, char *addr, size_t len, double timeout_s, tt_err *err)
{
	pmix_info_t info[2];
	int tmo = timeout_s < 1 ? 1 : (int)timeout_s;
	pmix_value_t v, *got = NULL;
	pmix_proc_t root;
	bool collect = true;
	pmix_status_t rc;

	if (rank == 0) {
		PMIX_VALUE_CONSTRUCT(&v);
		v.type = PMIX_STRING;
		v.data.string = addr;
		rc = PMIx_Put(PMIX_GLOBAL, RT_PMIX_KEY, &v);
		if (rc == PMIX_SUCCESS)
			rc = PMIx_Commit();
		if (rc != PMIX_SUCCESS)
			return tt_err_set(err, "publishing the store address through PMIx failed: %s", PMIx_Error_string(rc));
	}
	/* The fence waits for every rank: bounded like every other wait. */
	PMIX_INFO_CONSTRUCT(&info[0]);
	PMIX_INFO_CONSTRUCT(&info[1]);
	PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
	PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &tmo, PMIX_INT);
	rc = PMIx_Fence(NULL, 0, info, 2);
	PMIX_INFO_DESTRUCT(&info[0]);
	PMIX_INFO_DESTRUCT(&info[1]);
	if (rc != PMIX_SUCCESS)
		return tt_err_set(err, "PMIx_Fence failed: %s (a rank did not arrive within %d s?)", PMIx_Error_string(rc), tmo);
	if (rank == 0)
		return 0;
	PMIX_PROC_CONSTRUCT(&root);
	snprintf(root.nspace, sizeof(root.nspace), "%s", rt_pmix_self.nspace);
	root.rank = 0;
	rc = PMIx_Get(&root, RT_PMIX_KEY, NULL, 0, &got);
	if (rc != PMIX_SUCCESS || !got || got->type != PMIX_STRING) {
		if (got)
			PMIX_VALUE_RELEASE(got);
		return tt_err_set(err, "reading rank 0's store address from PMIx failed: %s", PMIx_Error_string(rc));
	}
	snprintf(addr, len, "%s", got->data.string);
	PMIX_VALUE_RELEASE(got);
	return 0;
}

void rt_pmix_finalize(void)
{
	PMIx_Finalize(NULL, 0);
}

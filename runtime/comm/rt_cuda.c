/* SPDX-License-Identifier: MIT */
/* rt_cuda.c — loading the CUDA runtime and NCCL for the nccl backend (see rt_cuda.h). */
#define RT_CUDA_LOADER
#include <config.h>

#include "rt_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

struct rt_cuda_api rt_cuda_api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_rc = -1;
static tt_err load_err;

/* soname from the loader's path, else from the CUDA directory configure found. */
static void *open_library(const char *soname, const char *what)
{
	char path[512], first[512];
	void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);

	if (h)
		return h;
	snprintf(first, sizeof(first), "%s", dlerror());
	snprintf(path, sizeof(path), "%s/%s", TT_CUDA_LIBDIR, soname);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		tt_err_set(&load_err, "the nccl backend needs %s (%s), which cannot be loaded: %s; install "
			   "it on this node (or put its directory into LD_LIBRARY_PATH), or use TRAINRT_BACKEND="
			   "auto, shm or tcp", soname, what, first);
	return h;
}

static void load(void)
{
	void *cudart = open_library(TT_CUDART_SONAME, "the CUDA runtime"), *nccl = NULL;

	if (!cudart)
		return;
	nccl = open_library(TT_NCCL_SONAME, "NCCL");
	if (!nccl)
		return;
	/* dlsym returns void *; the table's types come from the headers (rt_cuda.h). */
#define RT_CUDA_RESOLVE(lib, soname, f)                                                              \
	if (!(*(void **)&rt_cuda_api.f = dlsym(lib, #f))) {                                           \
		tt_err_set(&load_err, "the nccl backend needs %s from %s, which this %s lacks (an older " \
			   "version?)", #f, soname, soname);                                          \
		return;                                                                           \
	}
#define RT_CUDA_FROM_CUDART(f) RT_CUDA_RESOLVE(cudart, TT_CUDART_SONAME, f)
#define RT_CUDA_FROM_NCCL(f) RT_CUDA_RESOLVE(nccl, TT_NCCL_SONAME, f)
	RT_CUDA_FUNCTIONS(RT_CUDA_FROM_CUDART)
	RT_NCCL_FUNCTIONS(RT_CUDA_FROM_NCCL)
	load_rc = 0;
}

int rt_cuda_load(tt_err *err)
{
	pthread_once(&load_once, load);
	if (load_rc != 0 && err)
		*err = load_err;
	return load_rc;
}

int rt_gpu_count(void)
{
	int n = 0;

	if (rt_cuda_load(NULL) != 0 || rt_cuda_api.cudaGetDeviceCount(&n) != cudaSuccess)
		return 0;
	return n;
}

int rt_gpu_device_for(int local_rank)
{
	int n = rt_gpu_count();

	return n > 0 ? local_rank % n : 0;
}

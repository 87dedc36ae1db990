/* SPDX-License-Identifier: MIT */
/* rt_cuda.h — the CUDA runtime and NCCL as libtrainrt uses them: never linked, loaded with dlopen
 * the first time the nccl backend is asked for (or auto mode looks for a GPU), so one libtrainrt
 * installs and runs on nodes without CUDA and, where the nccl backend is wanted but CUDA or NCCL
 * is missing, says which library and what to do. backend_nccl.c calls the functions by their own
 * names: below, each name becomes a call through the table the loader fills. A function the
 * backend starts to use goes into RT_CUDA_FUNCTIONS and gets its #define (the link fails with
 * an undefined reference until it has both). */
#ifndef RT_CUDA_H
#define RT_CUDA_H

#include <cuda_runtime.h>
#include <nccl.h>

#include "tt_err.h"

#define RT_CUDA_FUNCTIONS(X) \
	X(cudaGetDeviceCount) X(cudaSetDevice) X(cudaGetErrorString) X(cudaStreamCreateWithFlags) \
	X(cudaStreamDestroy) X(cudaStreamQuery) X(cudaMalloc) X(cudaFree) X(cudaMemcpyAsync)
#define RT_NCCL_FUNCTIONS(X) \
	X(ncclGetUniqueId) X(ncclCommInitRankConfig) X(ncclCommGetAsyncError) X(ncclCommAbort) \
	X(ncclCommDestroy) X(ncclGetErrorString) X(ncclGetLastError) X(ncclAllReduce) \
	X(ncclAllGather) X(ncclReduceScatter) X(ncclBroadcast) X(ncclSend) X(ncclRecv) X(ncclGroupStart) \
	X(ncclGroupEnd) X(ncclCommSplit) X(ncclCommUserRank)

struct rt_cuda_api {
#define RT_CUDA_MEMBER(f) __typeof__(&f) f;
	RT_CUDA_FUNCTIONS(RT_CUDA_MEMBER)
	RT_NCCL_FUNCTIONS(RT_CUDA_MEMBER)
#undef RT_CUDA_MEMBER
};
extern struct rt_cuda_api rt_cuda_api;

/* Loads the CUDA runtime (TT_CUDART_SONAME) and NCCL (TT_NCCL_SONAME) once: from the loader's path
 * (LD_LIBRARY_PATH, ld.so.conf), else from the CUDA directory configure found. 0 when every
 * function above resolved; else -1 with err naming the library, the loader's reason and what to
 * do. Later calls give the first call's result. Thread-safe. */
int rt_cuda_load(tt_err *err);
/* Visible CUDA devices; 0 when none, or when CUDA cannot be loaded. */
int rt_gpu_count(void);
/* The device of a node-local rank: local_rank modulo the visible devices, 0 when none (the rule
 * behind trainrt_gpu_device). */
int rt_gpu_device_for(int local_rank);

#ifndef RT_CUDA_LOADER
#define cudaGetDeviceCount (rt_cuda_api.cudaGetDeviceCount)
#define cudaSetDevice (rt_cuda_api.cudaSetDevice)
#define cudaGetErrorString (rt_cuda_api.cudaGetErrorString)
#define cudaStreamCreateWithFlags (rt_cuda_api.cudaStreamCreateWithFlags)
#define cudaStreamDestroy (rt_cuda_api.cudaStreamDestroy)
#define cudaStreamQuery (rt_cuda_api.cudaStreamQuery)
#define cudaMalloc (rt_cuda_api.cudaMalloc)
#define cudaFree (rt_cuda_api.cudaFree)
#define cudaMemcpyAsync (rt_cuda_api.cudaMemcpyAsync)
#define ncclGetUniqueId (rt_cuda_api.ncclGetUniqueId)
#define ncclCommInitRankConfig (rt_cuda_api.ncclCommInitRankConfig)
#define ncclCommGetAsyncError (rt_cuda_api.ncclCommGetAsyncError)
#define ncclCommAbort (rt_cuda_api.ncclCommAbort)
#define ncclCommDestroy (rt_cuda_api.ncclCommDestroy)
#define ncclGetErrorString (rt_cuda_api.ncclGetErrorString)
#define ncclGetLastError (rt_cuda_api.ncclGetLastError)
#define ncclAllReduce (rt_cuda_api.ncclAllReduce)
#define ncclAllGather (rt_cuda_api.ncclAllGather)
#define ncclReduceScatter (rt_cuda_api.ncclReduceScatter)
#define ncclBroadcast (rt_cuda_api.ncclBroadcast)
#define ncclSend (rt_cuda_api.ncclSend)
#define ncclRecv (rt_cuda_api.ncclRecv)
#define ncclGroupStart (rt_cuda_api.ncclGroupStart)
#define ncclGroupEnd (rt_cuda_api.ncclGroupEnd)
#define ncclCommSplit (rt_cuda_api.ncclCommSplit)
#define ncclCommUserRank (rt_cuda_api.ncclCommUserRank)
#endif

#endif

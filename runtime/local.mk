# runtime/: libtrainrt (communication and data-parallel training), trainrt-bench and train-mlp.

# libtrainrt, communication part: rendezvous store, backends (shm, tcp, hierarchical, nccl), collectives.
include_HEADERS += runtime/trainrt.h
lib_LTLIBRARIES += libtrainrt.la
libtrainrt_la_SOURCES =
libtrainrt_la_SOURCES += \
	runtime/trainrt.h runtime/comm.c runtime/comm_backend.h runtime/comm_backend.c \
	runtime/rt_reduce.h runtime/rt_reduce.c runtime/rt_net.h runtime/rt_net.c \
	runtime/rt_token.h runtime/rt_token.c runtime/rt_store.h runtime/rt_store.c \
	runtime/rt_pmix.h runtime/rt_pmix.c \
	runtime/backend_shm.c runtime/backend_tcp.c runtime/backend_hier.c \
	runtime/comm_priv.h runtime/comm_p2p.c runtime/comm_group.c runtime/p2p_net.c
libtrainrt_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(OPENBLAS_CFLAGS)
libtrainrt_la_CPPFLAGS = $(AM_CPPFLAGS)
libtrainrt_la_LIBADD = libtopo.la $(PMIX_LIBS) $(OPENBLAS_LIBS) $(PTHREAD_LIBS) -lrt
if HAVE_CUDA
libtrainrt_la_SOURCES += runtime/backend_nccl.c
libtrainrt_la_CPPFLAGS += $(CUDA_CPPFLAGS)
libtrainrt_la_LIBADD += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif

# The GPU math of the trainer (cuBLAS + own kernels, bf16 mixed precision) is CUDA C++ compiled by
# nvcc through libtool. Code for Ampere and Hopper, plus PTX that newer GPUs compile at load time;
# NVCC_GENCODE=... on the make command line targets other GPUs.
dist_noinst_SCRIPTS += runtime/nvcc-libtool.sh
EXTRA_DIST += runtime/gpu_mlp.h runtime/gpu_mlp.cu
NVCC_GENCODE = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCC_FLAGS = -O2 -std=c++17 $(NVCC_GENCODE) --compiler-options=-Wall,-Wextra,-Werror --Werror=all-warnings
SUFFIXES = .cu
.cu.lo:
	$(AM_V_CC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(top_srcdir)/runtime/nvcc-libtool.sh $(NVCC) \
	  $(NVCC_FLAGS) $(DEFS) $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -c -o $@ $<
if HAVE_CUDA
noinst_LTLIBRARIES += libtraingpu.la
libtraingpu_la_SOURCES = runtime/gpu_mlp.h runtime/gpu_mlp.cu
runtime/gpu_mlp.lo: runtime/gpu_mlp.h topo/tt_err.h
endif

bin_PROGRAMS += trainrt-bench
trainrt_bench_SOURCES = runtime/trainrt_bench.c
trainrt_bench_LDADD = libtrainrt.la
dist_noinst_SCRIPTS += tests/trainer/trainrt_bench_cli.sh
TESTS += tests/trainer/trainrt_bench_cli.sh

# ---- trainer: model, optimizer, data, DDP/ZeRO math, checkpoints (libtrainmodel) and train-mlp ----
# libtrainmodel is a convenience library so unit tests link the model code without the comm layer.
noinst_LTLIBRARIES += libtrainmodel.la
libtrainmodel_la_SOURCES = \
	runtime/rng.h \
	runtime/mlp.h runtime/mlp.c \
	runtime/parallel.h runtime/parallel.c runtime/pipeline.h runtime/pipeline.c \
	runtime/adamw.h runtime/adamw.c \
	runtime/idx.h runtime/idx.c \
	runtime/dataset.h runtime/dataset.c \
	runtime/bucket.h runtime/bucket.c \
	runtime/shard.h runtime/shard.c \
	runtime/ckpt.h runtime/ckpt.c \
	runtime/train_opts.h runtime/train_opts.c \
	runtime/throughput.h runtime/throughput.c
# AdamW, ReLU and bias loops are memory-bound streams over millions of floats: let GCC vectorise
# them (-O2 alone will not: sqrtf may set errno, and its cheap cost model skips alias checks).
TRAIN_VEC_CFLAGS = -fno-math-errno -fvect-cost-model=dynamic
libtrainmodel_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS) $(TRAIN_VEC_CFLAGS)
libtrainmodel_la_LIBADD = $(OPENBLAS_LIBS) -lz -lm

# The data-parallel step and the model modules are part of libtrainrt, next to the collectives;
# with CUDA also the GPU step (dp_gpu.c, plain C over gpu_mlp.h) and its device code.
libtrainrt_la_SOURCES += runtime/dp.h runtime/dp.c runtime/dp_gpu.h
libtrainrt_la_LIBADD += libtrainmodel.la $(OPENBLAS_LIBS) -lz -lm
if HAVE_CUDA
libtrainrt_la_SOURCES += runtime/dp_gpu.c
libtrainrt_la_LIBADD += libtraingpu.la
endif
EXTRA_DIST += runtime/dp_gpu.c

bin_PROGRAMS += train-mlp
train_mlp_SOURCES = runtime/train_mlp.c
train_mlp_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
train_mlp_LDADD = libtrainrt.la libtrainmodel.la libtopo.la $(OPENBLAS_LIBS) -lz -lm

# Multi-process integration tests of train-mlp (ranks on 127.0.0.1 via launch_local.sh); parallel.sh
# runs every 3D layout of 8 ranks.
dist_noinst_SCRIPTS += tests/trainer/launch_local.sh tests/trainer/resume.sh tests/trainer/equivalence.sh \
	tests/trainer/signal.sh tests/trainer/parallel.sh
TESTS += tests/trainer/resume.sh tests/trainer/equivalence.sh tests/trainer/signal.sh tests/trainer/parallel.sh
EXTRA_DIST += tests/fixtures/trainer/train-images-idx3-ubyte tests/fixtures/trainer/train-labels-idx1-ubyte \
	tests/fixtures/trainer/t10k-images-idx3-ubyte.gz tests/fixtures/trainer/t10k-labels-idx1-ubyte.gz

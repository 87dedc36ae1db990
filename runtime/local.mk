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
	runtime/backend_shm.c runtime/backend_tcp.c runtime/backend_hier.c
libtrainrt_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(OPENBLAS_CFLAGS)
libtrainrt_la_CPPFLAGS = $(AM_CPPFLAGS)
libtrainrt_la_LIBADD = libtopo.la $(PMIX_LIBS) $(OPENBLAS_LIBS) $(PTHREAD_LIBS) -lrt
if HAVE_CUDA
libtrainrt_la_SOURCES += runtime/backend_nccl.c
libtrainrt_la_CPPFLAGS += $(CUDA_CPPFLAGS)
libtrainrt_la_LIBADD += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif

EXTRA_DIST += tests/gpu/run.sh tests/gpu/nccl_check.c

bin_PROGRAMS += trainrt-bench
trainrt_bench_SOURCES = runtime/trainrt_bench.c
trainrt_bench_LDADD = libtrainrt.la

# ---- trainer: model, optimizer, data, DDP/ZeRO math, checkpoints (libtrainmodel) and train-mlp ----
# libtrainmodel is a convenience library so unit tests link the model code without the comm layer.
noinst_LTLIBRARIES += libtrainmodel.la
libtrainmodel_la_SOURCES = \
	runtime/rng.h \
	runtime/mlp.h runtime/mlp.c \
	runtime/adamw.h runtime/adamw.c \
	runtime/idx.h runtime/idx.c \
	runtime/dataset.h runtime/dataset.c \
	runtime/bucket.h runtime/bucket.c \
	runtime/shard.h runtime/shard.c \
	runtime/ckpt.h runtime/ckpt.c \
	runtime/train_opts.h runtime/train_opts.c
# AdamW, ReLU and bias loops are memory-bound streams over millions of floats: let GCC vectorise
# them (-O2 alone will not: sqrtf may set errno, and its cheap cost model skips alias checks).
TRAIN_VEC_CFLAGS = -fno-math-errno -fvect-cost-model=dynamic
libtrainmodel_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS) $(TRAIN_VEC_CFLAGS)
libtrainmodel_la_LIBADD = $(OPENBLAS_LIBS) -lz -lm

# The data-parallel step and the model modules are part of libtrainrt, next to the collectives.
libtrainrt_la_SOURCES += runtime/dp.h runtime/dp.c
libtrainrt_la_LIBADD += libtrainmodel.la $(OPENBLAS_LIBS) -lz -lm

bin_PROGRAMS += train-mlp
train_mlp_SOURCES = runtime/train_mlp.c
train_mlp_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
train_mlp_LDADD = libtrainrt.la libtrainmodel.la libtopo.la $(OPENBLAS_LIBS) -lz -lm

# Multi-process integration tests of train-mlp (ranks on 127.0.0.1 via launch_local.sh).
dist_noinst_SCRIPTS += tests/trainer/launch_local.sh tests/trainer/resume.sh tests/trainer/equivalence.sh \
	tests/trainer/signal.sh
TESTS += tests/trainer/resume.sh tests/trainer/equivalence.sh tests/trainer/signal.sh
EXTRA_DIST += tests/fixtures/trainer/train-images-idx3-ubyte tests/fixtures/trainer/train-labels-idx1-ubyte \
	tests/fixtures/trainer/t10k-images-idx3-ubyte.gz tests/fixtures/trainer/t10k-labels-idx1-ubyte.gz

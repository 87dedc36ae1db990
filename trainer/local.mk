# trainer/: what trains — the MLP, AdamW, the data, DDP buckets and ZeRO shards, checkpoints, the
# data-parallel step on the CPU and (with CUDA) on the GPU, part of libtrainrt today — and train-mlp.

# The GPU math of the trainer (cuBLAS + own kernels, bf16 mixed precision) is CUDA C++ compiled by
# nvcc through libtool. Code for Ampere and Hopper, plus PTX that newer GPUs compile at load time;
# NVCC_GENCODE=... on the make command line targets other GPUs.
dist_noinst_SCRIPTS += trainer/nvcc-libtool.sh
EXTRA_DIST += trainer/gpu_mlp.h trainer/gpu_mlp.cu
NVCC_GENCODE = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCC_FLAGS = -O2 -std=c++17 $(NVCC_GENCODE) --compiler-options=-Wall,-Wextra,-Werror --Werror=all-warnings
SUFFIXES = .cu
.cu.lo:
	$(AM_V_CC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(top_srcdir)/trainer/nvcc-libtool.sh $(NVCC) \
	  $(NVCC_FLAGS) $(DEFS) $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -c -o $@ $<
if HAVE_CUDA
noinst_LTLIBRARIES += libtraingpu.la
libtraingpu_la_SOURCES = trainer/gpu_mlp.h trainer/gpu_mlp.cu
trainer/gpu_mlp.lo: trainer/gpu_mlp.h base/tt_err.h
endif

# ---- trainer: model, optimizer, data, DDP/ZeRO math, checkpoints (libtrainmodel) and train-mlp ----
# libtrainmodel is a convenience library so unit tests link the model code without the comm layer.
noinst_LTLIBRARIES += libtrainmodel.la
libtrainmodel_la_SOURCES = \
	trainer/rng.h \
	trainer/mlp.h trainer/mlp.c \
	trainer/parallel.h trainer/parallel.c trainer/pipeline.h trainer/pipeline.c \
	trainer/adamw.h trainer/adamw.c \
	trainer/idx.h trainer/idx.c \
	trainer/dataset.h trainer/dataset.c \
	trainer/bucket.h trainer/bucket.c \
	trainer/shard.h trainer/shard.c \
	trainer/ckpt.h trainer/ckpt.c \
	trainer/train_opts.h trainer/train_opts.c \
	trainer/throughput.h trainer/throughput.c
# AdamW, ReLU and bias loops are memory-bound streams over millions of floats: let GCC vectorise
# them (-O2 alone will not: sqrtf may set errno, and its cheap cost model skips alias checks).
TRAIN_VEC_CFLAGS = -fno-math-errno $(TT_VECT_COST_CFLAGS)
libtrainmodel_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS) $(TRAIN_VEC_CFLAGS)
libtrainmodel_la_LIBADD = $(OPENBLAS_LIBS) -lz -lm

# The data-parallel step and the model modules are part of libtrainrt, next to the collectives;
# with CUDA also the GPU step (dp_gpu.c, plain C over gpu_mlp.h) and its device code.
libtrainrt_la_SOURCES += trainer/dp.h trainer/dp.c trainer/dp_gpu.h
libtrainrt_la_LIBADD += libtrainmodel.la $(OPENBLAS_LIBS) -lz -lm
if HAVE_CUDA
libtrainrt_la_SOURCES += trainer/dp_gpu.c
libtrainrt_la_LIBADD += libtraingpu.la
endif
EXTRA_DIST += trainer/dp_gpu.c

bin_PROGRAMS += train-mlp
train_mlp_SOURCES = trainer/train_mlp.c
train_mlp_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
train_mlp_LDADD = libtrainrt.la libtrainmodel.la libttbase.la $(OPENBLAS_LIBS) -lz -lm

# Multi-process integration tests of train-mlp (ranks on 127.0.0.1 via launch_local.sh); parallel.sh
# runs every 3D layout of 8 ranks.
dist_noinst_SCRIPTS += tests/trainer/launch_local.sh tests/trainer/resume.sh tests/trainer/equivalence.sh \
	tests/trainer/signal.sh tests/trainer/summary.sh tests/trainer/parallel.sh
TESTS += tests/trainer/resume.sh tests/trainer/equivalence.sh tests/trainer/signal.sh tests/trainer/summary.sh \
	tests/trainer/parallel.sh
# train-mlp's float32 step against PyTorch (torch_oracle.py) on the weights and batches mlp_dump writes.
noinst_PROGRAMS += tests/trainer/mlp_dump
tests_trainer_mlp_dump_SOURCES = tests/trainer/mlp_dump.c
tests_trainer_mlp_dump_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_trainer_mlp_dump_LDADD = libtrainrt.la libtrainmodel.la libttbase.la $(OPENBLAS_LIBS) -lz -lm
dist_noinst_SCRIPTS += tests/trainer/torch_oracle.sh
# The accuracy claim (>= 0.88 on Fashion-MNIST at 1 and 4 ranks); also `make bench-accuracy`.
dist_noinst_SCRIPTS += tests/trainer/accuracy.sh
TESTS += tests/trainer/accuracy.sh
EXTRA_DIST += tests/trainer/torch_oracle.py
TESTS += tests/trainer/torch_oracle.sh
EXTRA_DIST += tests/fixtures/trainer/train-images-idx3-ubyte tests/fixtures/trainer/train-labels-idx1-ubyte \
	tests/fixtures/trainer/t10k-images-idx3-ubyte.gz tests/fixtures/trainer/t10k-labels-idx1-ubyte.gz

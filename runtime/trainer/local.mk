# SPDX-License-Identifier: MIT
# runtime/trainer/: what trains — the MLP, AdamW, the data, DDP buckets and ZeRO shards, checkpoints, the
# data-parallel step on the CPU and (with CUDA) on the GPU — and train-mlp. Two convenience
# libraries over libtrainrt's public API (trainrt.h): libtrainmodel (model, optimizer, data,
# checkpoints: no communication, so unit tests link it alone) and libtrainer (the data-parallel
# step, CPU and GPU), which train-mlp links statically next to libtrainrt.so.

# The GPU math of the trainer (cuBLAS + own kernels, bf16 mixed precision) is CUDA C++ compiled by
# nvcc through libtool. Code for Ampere and Hopper, plus PTX that newer GPUs compile at load time;
# NVCC_GENCODE=... on the make command line targets other GPUs.
dist_noinst_SCRIPTS += runtime/trainer/nvcc-libtool.sh
EXTRA_DIST += runtime/trainer/gpu_mlp.h runtime/trainer/gpu_mlp.cu runtime/trainer/dp_gpu.c
NVCC_GENCODE = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=[sm_90,compute_90]
NVCC_FLAGS = -O2 -std=c++17 $(NVCC_GENCODE) --compiler-options=-Wall,-Wextra $(NVCC_WERROR)
SUFFIXES = .cu
.cu.lo:
	$(AM_V_CC)$(LIBTOOL) $(AM_V_lt) --tag=CC --mode=compile $(top_srcdir)/runtime/trainer/nvcc-libtool.sh $(NVCC) \
	  $(NVCC_FLAGS) $(DEFS) $(AM_CPPFLAGS) $(CUDA_CPPFLAGS) -c -o $@ $<
# AdamW, ReLU and bias loops are memory-bound streams over millions of floats: let GCC vectorise
# them (-O2 alone will not: sqrtf may set errno, and its cheap cost model skips alias checks).
TRAIN_VEC_CFLAGS = -fno-math-errno $(TT_VECT_COST_CFLAGS)

if BUILD_TRAINER
if HAVE_CUDA
noinst_LTLIBRARIES += libtraingpu.la
libtraingpu_la_SOURCES = runtime/trainer/gpu_mlp.h runtime/trainer/gpu_mlp.cu
runtime/trainer/gpu_mlp.lo: runtime/trainer/gpu_mlp.h base/tt_err.h runtime/comm/trainrt.h
endif

noinst_LTLIBRARIES += libtrainmodel.la
libtrainmodel_la_SOURCES = \
	runtime/trainer/rng.h \
	runtime/trainer/mlp.h runtime/trainer/mlp.c \
	runtime/trainer/parallel.h runtime/trainer/parallel.c runtime/trainer/pipeline.h runtime/trainer/pipeline.c \
	runtime/trainer/adamw.h runtime/trainer/adamw.c \
	runtime/trainer/idx.h runtime/trainer/idx.c \
	runtime/trainer/dataset.h runtime/trainer/dataset.c \
	runtime/trainer/bucket.h runtime/trainer/bucket.c \
	runtime/trainer/shard.h runtime/trainer/shard.c \
	runtime/trainer/ckpt.h runtime/trainer/ckpt.c \
	runtime/trainer/train_opts.h runtime/trainer/train_opts.c \
	runtime/trainer/throughput.h runtime/trainer/throughput.c
libtrainmodel_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS) $(TRAIN_VEC_CFLAGS)
libtrainmodel_la_LIBADD = $(OPENBLAS_LIBS) $(ZLIB_LIBS) -lm

# The data-parallel step: its front (dp.c), the interface and shared bookkeeping of the devices'
# steps (dp_device.c), the CPU step; with CUDA also the GPU step (dp_gpu.c, plain C over gpu_mlp.h)
# and its device code. Programs linking it add $(TRAINER_LIBS).
noinst_LTLIBRARIES += libtrainer.la
libtrainer_la_SOURCES = runtime/trainer/dp.h runtime/trainer/dp.c runtime/trainer/dp_device.h runtime/trainer/dp_device.c runtime/trainer/dp_cpu.c
libtrainer_la_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
libtrainer_la_LIBADD = libtrainmodel.la
TRAINER_LIBS = $(OPENBLAS_LIBS) $(ZLIB_LIBS) -lm
if HAVE_CUDA
libtrainer_la_SOURCES += runtime/trainer/dp_gpu.c
libtrainer_la_LIBADD += libtraingpu.la
# nvcc compiles C++: its runtime comes along (a shared libtrainrt once pulled it in through cuBLAS).
TRAINER_LIBS += $(CUDA_LDFLAGS) $(CUDA_LIBS) -lstdc++
endif

bin_PROGRAMS += train-mlp
train_mlp_SOURCES = runtime/trainer/train_mlp.c
train_mlp_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
train_mlp_LDADD = libtrainer.la libtrainrt.la libttbase.la $(TRAINER_LIBS)

# Multi-process integration tests of train-mlp (ranks on 127.0.0.1 via launch_local.sh); parallel.sh
# runs every 3D layout of 8 ranks.
TESTS += tests/trainer/resume.sh tests/trainer/equivalence.sh tests/trainer/signal.sh tests/trainer/summary.sh \
	tests/trainer/parallel.sh tests/trainer/device_auto.sh
# train-mlp's float32 step against PyTorch (torch_oracle.py) on the weights and batches mlp_dump writes.
noinst_PROGRAMS += tests/trainer/mlp_dump
tests_trainer_mlp_dump_SOURCES = tests/trainer/mlp_dump.c
tests_trainer_mlp_dump_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_trainer_mlp_dump_LDADD = libtrainer.la libtrainrt.la libttbase.la $(TRAINER_LIBS)
# The accuracy claim (>= 0.88 on Fashion-MNIST at 1 and 4 ranks); also `make bench-accuracy`.
TESTS += tests/trainer/accuracy.sh
TESTS += tests/trainer/torch_oracle.sh
endif
dist_noinst_SCRIPTS += tests/trainer/launch_local.sh tests/trainer/resume.sh tests/trainer/equivalence.sh \
	tests/trainer/signal.sh tests/trainer/summary.sh tests/trainer/parallel.sh tests/trainer/torch_oracle.sh \
	tests/trainer/accuracy.sh tests/trainer/device_auto.sh
EXTRA_DIST += tests/trainer/torch_oracle.py
EXTRA_DIST += tests/fixtures/trainer/train-images-idx3-ubyte tests/fixtures/trainer/train-labels-idx1-ubyte \
	tests/fixtures/trainer/t10k-images-idx3-ubyte.gz tests/fixtures/trainer/t10k-labels-idx1-ubyte.gz

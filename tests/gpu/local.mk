# SPDX-License-Identifier: MIT
# tests/gpu/: checks for a machine with NVIDIA GPUs. run.sh is the one prepared device check; it
# runs from a bundle built here (`make gpu-bundle` -> gpu-bundle/, carried to the GPU machine).
# make check never needs a GPU: it builds the bundle and checks it is self-contained
# (bundle_check.sh, skipped without CUDA) and runs run.sh on a fake device (run_fake.sh). With
# CUDA the check programs are built by `make`, so a CPU-only build still proves they compile.
dist_noinst_SCRIPTS += tests/gpu/run.sh tests/gpu/bundle.sh tests/gpu/fake-device.sh tests/gpu/run_fake.sh \
	tests/gpu/bundle_check.sh
EXTRA_DIST += tests/gpu/nccl_check.c tests/gpu/mlp_check.c
if BUILD_TRAINER
TESTS += tests/gpu/run_fake.sh tests/gpu/bundle_check.sh
endif
if HAVE_CUDA
noinst_PROGRAMS += tests/gpu/nccl_check tests/gpu/mlp_check
tests_gpu_nccl_check_SOURCES = tests/gpu/nccl_check.c tests/comm/comm_matrix.c
tests_gpu_nccl_check_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/comm $(CUDA_CPPFLAGS)
tests_gpu_nccl_check_LDADD = libtrainrt.la $(CUDA_LDFLAGS) $(CUDA_LIBS) $(NCCL_LIBS) -lm
tests_gpu_mlp_check_SOURCES = tests/gpu/mlp_check.c
tests_gpu_mlp_check_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_gpu_mlp_check_LDADD = libtrainer.la libtrainrt_core.la libttbase.la $(TRAINER_LIBS)

gpu-bundle: all
	$(SHELL) $(top_srcdir)/tests/gpu/bundle.sh $(abs_top_builddir) $(abs_top_srcdir) $(abs_top_builddir)/gpu-bundle
else
gpu-bundle:
	@echo "gpu-bundle: this build has no GPU path (configure found no CUDA; see its summary)" >&2; exit 1
endif
.PHONY: gpu-bundle

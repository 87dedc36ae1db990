# tests/gpu/: checks for a machine with NVIDIA GPUs, run by tests/gpu/run.sh (never by make check,
# which must pass on CPU-only machines). With CUDA they are built by `make`, so a CPU-only build
# still proves they compile against the current headers.
dist_noinst_SCRIPTS += tests/gpu/run.sh
EXTRA_DIST += tests/gpu/nccl_check.c tests/gpu/mlp_check.c
if HAVE_CUDA
noinst_PROGRAMS += tests/gpu/nccl_check tests/gpu/mlp_check
tests_gpu_nccl_check_SOURCES = tests/gpu/nccl_check.c tests/comm/comm_matrix.c
tests_gpu_nccl_check_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests/comm $(CUDA_CPPFLAGS)
tests_gpu_nccl_check_LDADD = libtrainrt.la $(CUDA_LDFLAGS) $(CUDA_LIBS) -lm
tests_gpu_mlp_check_SOURCES = tests/gpu/mlp_check.c
tests_gpu_mlp_check_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
tests_gpu_mlp_check_LDADD = libtrainrt.la libtrainmodel.la libtopo.la $(OPENBLAS_LIBS) -lz -lm
endif

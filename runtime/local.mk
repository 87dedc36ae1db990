# runtime: build rules (filled by its owner)

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

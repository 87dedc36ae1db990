# comm/: libtrainrt's communication layer (trainrt.h) — the authenticated rendezvous store, PMIx,
# the backends behind one interface (shm, tcp, hierarchical, nccl) and the collectives — and
# trainrt-bench, its nccl-tests style benchmark.
include_HEADERS += comm/trainrt.h
lib_LTLIBRARIES += libtrainrt.la
libtrainrt_la_SOURCES = \
	comm/trainrt.h comm/comm.c comm/comm_backend.h comm/comm_backend.c \
	comm/rt_reduce.h comm/rt_reduce.c comm/rt_net.h comm/rt_net.c \
	comm/rt_token.h comm/rt_token.c comm/rt_store.h comm/rt_store.c \
	comm/rt_store_core.h comm/rt_store_core.c comm/rt_link.h comm/rt_link.c \
	comm/rt_pmix.h comm/rt_pmix.c \
	comm/backend_shm.c comm/backend_tcp.c comm/backend_hier.c \
	comm/comm_priv.h comm/comm_p2p.c comm/comm_group.c comm/p2p_net.c
libtrainrt_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(OPENBLAS_CFLAGS) $(CRYPTO_CFLAGS)
libtrainrt_la_CPPFLAGS = $(AM_CPPFLAGS)
libtrainrt_la_LIBADD = libttbase.la $(PMIX_LIBS) $(OPENBLAS_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS) -lrt
if HAVE_CUDA
libtrainrt_la_SOURCES += comm/backend_nccl.c
libtrainrt_la_CPPFLAGS += $(CUDA_CPPFLAGS)
libtrainrt_la_LIBADD += $(CUDA_LDFLAGS) $(CUDA_LIBS)
endif

bin_PROGRAMS += trainrt-bench
trainrt_bench_SOURCES = comm/trainrt_bench.c
trainrt_bench_LDADD = libtrainrt.la
dist_noinst_SCRIPTS += tests/trainer/trainrt_bench_cli.sh
TESTS += tests/trainer/trainrt_bench_cli.sh

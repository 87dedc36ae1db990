# SPDX-License-Identifier: MIT
# comm/: libtrainrt (trainrt.h) — the authenticated rendezvous store, PMIx, the backends behind one
# interface (shm, tcp, hierarchical, nccl) and the collectives — and trainrt-bench, its nccl-tests
# style benchmark. All of it is the convenience library libtrainrt_core, which the unit tests and
# trainrt-bench (it times the store itself) link; libtrainrt.so is that library exporting only
# trainrt_* (comm/trainrt.map). The nccl backend is built with CUDA's and NCCL's headers and loads
# their libraries when asked for (rt_cuda.h), so libtrainrt needs no CUDA to install or run.
if BUILD_TRAINRT
include_HEADERS += comm/trainrt.h
noinst_LTLIBRARIES += libtrainrt_core.la
libtrainrt_core_la_SOURCES = \
	comm/trainrt.h comm/comm.c comm/comm_backend.h comm/comm_backend.c \
	comm/rt_reduce.h comm/rt_reduce.c comm/rt_net.h comm/rt_net.c \
	comm/rt_token.h comm/rt_token.c comm/rt_store.h comm/rt_store.c \
	comm/rt_store_core.h comm/rt_store_core.c comm/rt_link.h comm/rt_link.c \
	comm/rt_pmix.h comm/rt_pmix.c \
	comm/backend_shm.c comm/backend_tcp.c comm/backend_hier.c \
	comm/comm_priv.h comm/comm_p2p.c comm/comm_group.c comm/p2p_net.c
libtrainrt_core_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(OPENBLAS_CFLAGS) $(CRYPTO_CFLAGS)
libtrainrt_core_la_CPPFLAGS = $(AM_CPPFLAGS)
libtrainrt_core_la_LIBADD = libttbase.la $(PMIX_LIBS) $(OPENBLAS_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS) -lrt
if HAVE_NCCL
libtrainrt_core_la_SOURCES += comm/rt_cuda.h comm/rt_cuda.c comm/backend_nccl.c
libtrainrt_core_la_CPPFLAGS += $(CUDA_CPPFLAGS)
endif

lib_LTLIBRARIES += libtrainrt.la
libtrainrt_la_SOURCES = comm/trainrt.h
libtrainrt_la_LIBADD = libtrainrt_core.la
# A CUDA or NCCL function backend_nccl.c calls without rt_cuda.h's table stays undefined in the
# library (libtool's -no-undefined does not make the link fail): tests/comm/exports.sh fails then.
libtrainrt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/comm/trainrt.map
EXTRA_libtrainrt_la_DEPENDENCIES = $(top_srcdir)/comm/trainrt.map
pkgconfig_DATA += comm/trainrt.pc

bin_PROGRAMS += trainrt-bench
trainrt_bench_SOURCES = comm/trainrt_bench.c
trainrt_bench_LDADD = libtrainrt_core.la
TESTS += tests/trainer/trainrt_bench_cli.sh
# The alpha-beta model's fit and crossover on a fixture, and a 2-rank run through it (issue #20).
TESTS += tests/unit/collective_model.sh
# libtrainrt.so exports trainrt_* alone and loads no CUDA library at start (nm -D, readelf).
TESTS += tests/comm/exports.sh
endif
EXTRA_DIST += comm/trainrt.map
dist_noinst_SCRIPTS += tests/trainer/trainrt_bench_cli.sh tests/comm/exports.sh tests/unit/collective_model.sh
EXTRA_DIST += tests/unit/collective_model_fixture.txt

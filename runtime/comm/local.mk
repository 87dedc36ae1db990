# SPDX-License-Identifier: MIT
# runtime/comm/: libtrainrt (trainrt.h) — the authenticated rendezvous store, PMIx, the backends behind one
# interface (shm, tcp, hierarchical, nccl) and the collectives — and trainrt-bench, its nccl-tests
# style benchmark. All of it is the convenience library libtrainrt_core, which the unit tests and
# trainrt-bench (it times the store itself) link; libtrainrt.so is that library exporting only
# trainrt_* (runtime/comm/trainrt.map). The nccl backend is built with CUDA's and NCCL's headers and loads
# their libraries when asked for (rt_cuda.h), so libtrainrt needs no CUDA to install or run.
if BUILD_TRAINRT
include_HEADERS += runtime/comm/trainrt.h
noinst_LTLIBRARIES += libtrainrt_core.la
libtrainrt_core_la_SOURCES = \
	runtime/comm/trainrt.h runtime/comm/comm.c runtime/comm/comm_backend.h runtime/comm/comm_backend.c \
	runtime/comm/rt_reduce.h runtime/comm/rt_reduce.c runtime/comm/rt_net.h runtime/comm/rt_net.c \
	runtime/comm/rt_token.h runtime/comm/rt_token.c runtime/comm/rt_store.h runtime/comm/rt_store.c \
	runtime/comm/rt_store_core.h runtime/comm/rt_store_core.c runtime/comm/rt_link.h runtime/comm/rt_link.c \
	runtime/comm/rt_pmix.h runtime/comm/rt_pmix.c runtime/comm/rt_node.h runtime/comm/rt_node.c \
	runtime/comm/backend_shm.c runtime/comm/backend_tcp.c runtime/comm/backend_hier.c \
	runtime/comm/comm_priv.h runtime/comm/comm_p2p.c runtime/comm/comm_group.c runtime/comm/p2p_net.c \
	runtime/comm/heartbeat.c
libtrainrt_core_la_CFLAGS = $(AM_CFLAGS) $(PMIX_CFLAGS) $(OPENBLAS_CFLAGS) $(CRYPTO_CFLAGS)
libtrainrt_core_la_CPPFLAGS = $(AM_CPPFLAGS)
libtrainrt_core_la_LIBADD = libttbase.la $(PMIX_LIBS) $(OPENBLAS_LIBS) $(CRYPTO_LIBS) $(PTHREAD_LIBS) -lrt
if HAVE_NCCL
libtrainrt_core_la_SOURCES += runtime/comm/rt_cuda.h runtime/comm/rt_cuda.c runtime/comm/backend_nccl.c
libtrainrt_core_la_CPPFLAGS += $(CUDA_CPPFLAGS)
endif

lib_LTLIBRARIES += libtrainrt.la
libtrainrt_la_SOURCES = runtime/comm/trainrt.h
libtrainrt_la_LIBADD = libtrainrt_core.la
# A CUDA or NCCL function backend_nccl.c calls without rt_cuda.h's table stays undefined in the
# library (libtool's -no-undefined does not make the link fail): tests/comm/exports.sh fails then.
libtrainrt_la_LDFLAGS = $(AM_LDFLAGS) -version-info 0:0:0 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/runtime/comm/trainrt.map
EXTRA_libtrainrt_la_DEPENDENCIES = $(top_srcdir)/runtime/comm/trainrt.map
pkgconfig_DATA += runtime/comm/trainrt.pc

bin_PROGRAMS += trainrt-bench
trainrt_bench_SOURCES = runtime/comm/trainrt_bench.c
trainrt_bench_LDADD = libtrainrt_core.la
TESTS += tests/trainer/trainrt_bench_cli.sh
# A node leader that fails or never runs: its ranks name it at once, once each (issue #32).
TESTS += tests/trainer/node_leader_gone.sh
# A follower that dies during the backend's set-up (LD_PRELOAD die_on_listen.so): every other rank
# of 2 nodes x 4 names it, once each, at once (issue #32).
TESTS += tests/trainer/node_follower_gone.sh
check_LTLIBRARIES += tests/trainer/die_on_listen.la
tests_trainer_die_on_listen_la_SOURCES = tests/trainer/die_on_listen.c
tests_trainer_die_on_listen_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared -rpath /nowhere
# The alpha-beta model's fit and crossover on a fixture, and a 2-rank run through it (issue #20).
TESTS += tests/unit/collective_model.sh
# libtrainrt.so exports trainrt_* alone and loads no CUDA library at start (nm -D, readelf).
TESTS += tests/comm/exports.sh
endif
EXTRA_DIST += runtime/comm/trainrt.map
dist_noinst_SCRIPTS += tests/trainer/trainrt_bench_cli.sh tests/trainer/node_leader_gone.sh tests/trainer/node_follower_gone.sh tests/comm/exports.sh tests/unit/collective_model.sh
EXTRA_DIST += tests/unit/collective_model_fixture.txt

# bench/: `make bench` targets; every claim in BENCHMARKS.md comes from one of them.
# bench-topo: live discovery + NCCL XML vs lstopo's XML export (BENCHMARKS.md, Topology discovery).
BENCH_TARGETS += bench-topo
dist_noinst_SCRIPTS += bench/topo.sh
bench-topo: train-topo$(EXEEXT)
	$(SHELL) $(srcdir)/bench/topo.sh ./train-topo$(EXEEXT)
.PHONY: bench-topo

# train-run's start-up against torchrun, measured in the same run (BENCHMARKS.md, "train-run launch").
BENCH_TARGETS += bench-launch
bench-launch: train-run$(EXEEXT)
	$(SHELL) $(srcdir)/bench/launch.sh ./train-run$(EXEEXT)
dist_noinst_SCRIPTS += bench/launch.sh
EXTRA_DIST += bench/torchrun_py311.py
.PHONY: bench-launch

# What the SPANK plugin adds to a 16-task step on the test cluster (BENCHMARKS.md, "Plugin").
BENCH_TARGETS += bench-plugin
bench-plugin: train_topo.la
	$(SHELL) $(srcdir)/bench/plugin.sh $(abs_top_builddir)/.libs/train_topo.so
dist_noinst_SCRIPTS += bench/plugin.sh
.PHONY: bench-plugin

# bench-comm: collectives vs memcpy, Gloo, Open MPI; rendezvous vs PyTorch TCPStore (bench/comm.sh).
dist_noinst_SCRIPTS += bench/comm.sh
BENCH_TARGETS += bench-comm
bench-comm: trainrt-bench
	TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/comm.sh
.PHONY: bench-comm

# bench-train: train-mlp DDP throughput vs PyTorch DDP (gloo), scaling 1 -> 2 ranks, GEMM share.
noinst_PROGRAMS += bench/sgemm-peak
bench_sgemm_peak_SOURCES = bench/sgemm_peak.c
bench_sgemm_peak_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_sgemm_peak_LDADD = $(OPENBLAS_LIBS)
dist_noinst_SCRIPTS += bench/train.sh bench/torch_ddp.py
BENCH_TARGETS += bench-train
bench-train: train-mlp bench/sgemm-peak
	TRAIN_MLP=./train-mlp SGEMM_PEAK=./bench/sgemm-peak $(SHELL) $(srcdir)/bench/train.sh
.PHONY: bench-train

# bench-accuracy: 784-256-10 on Fashion-MNIST reaches >= 88% on 1 and on 4 ranks.
dist_noinst_SCRIPTS += bench/accuracy.sh
BENCH_TARGETS += bench-accuracy
bench-accuracy: train-mlp
	TRAIN_MLP=./train-mlp $(SHELL) $(srcdir)/bench/accuracy.sh
.PHONY: bench-accuracy

# bench-tcp: TCP all-reduce between two test-cluster nodes vs a raw TCP stream (bench/tcp.sh).
noinst_PROGRAMS += bench/tcp-stream
bench_tcp_stream_SOURCES = bench/tcp_stream.c
BENCH_TARGETS += bench-tcp
bench-tcp: trainrt-bench bench/tcp-stream train_topo.la
	$(SHELL) $(srcdir)/bench/tcp.sh $(abs_top_builddir)
dist_noinst_SCRIPTS += bench/tcp.sh
.PHONY: bench-tcp

# bench-ports: MASTER_PORT of co-resident jobs on the test cluster, and the formula's collision
# rates vs the birthday estimate (bench/ports.sh; needs the cluster lock).
noinst_PROGRAMS += bench/port-collisions
bench_port_collisions_SOURCES = bench/port_collisions.c
bench_port_collisions_LDADD = libtopo.la
BENCH_TARGETS += bench-ports
bench-ports: bench/port-collisions train-run$(EXEEXT) train_topo.la
	$(SHELL) $(srcdir)/bench/ports.sh $(abs_top_builddir)
dist_noinst_SCRIPTS += bench/ports.sh
.PHONY: bench-ports

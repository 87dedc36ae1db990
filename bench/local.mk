# SPDX-License-Identifier: MIT
# bench/: `make bench` targets; every claim in BENCHMARKS.md comes from one of them (each needs
# the parts it measures: a configure that left one out cannot run its target).
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

# bench-plugin-scale: step launch with and without --train-topo on 8 to 64 nodes of 8 tasks, and
# the topology probe's cost per node (bench/plugin_scale.sh; needs root and the cluster lock).
BENCH_TARGETS += bench-plugin-scale
bench-plugin-scale: train_topo.la train-topo$(EXEEXT)
	$(SHELL) $(srcdir)/bench/plugin_scale.sh $(abs_top_builddir)/.libs/train_topo.so
dist_noinst_SCRIPTS += bench/plugin_scale.sh
.PHONY: bench-plugin-scale

# bench-comm: collectives vs memcpy, Gloo, Open MPI; rendezvous vs PyTorch TCPStore (bench/comm.sh).
dist_noinst_SCRIPTS += bench/comm.sh
EXTRA_DIST += bench/gloo_allreduce.py bench/gloo_sendrecv.py bench/mpi_allreduce.c bench/mpi_sendrecv.c
BENCH_TARGETS += bench-comm
bench-comm: trainrt-bench
	TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/comm.sh
.PHONY: bench-comm

# bench-split: trainrt_comm_split at 16-256 ranks against PyTorch's new_group (bench/split.sh).
if BUILD_TRAINRT
noinst_PROGRAMS += bench/split-time
bench_split_time_SOURCES = bench/split_time.c
bench_split_time_LDADD = libtrainrt.la
endif
dist_noinst_SCRIPTS += bench/split.sh bench/torch_split.py
BENCH_TARGETS += bench-split
bench-split: bench/split-time
	$(SHELL) $(srcdir)/bench/split.sh $(abs_top_builddir) $(abs_top_srcdir)
.PHONY: bench-split

# bench-model: the alpha-beta model of the TCP ring and the hierarchical all-reduce, fitted on
# loopback at 2/4/8 ranks, predicting 64/512/4096 nodes (bench/collective_model.sh, issue #20).
dist_noinst_SCRIPTS += bench/collective_model.sh bench/collective_model.py
BENCH_TARGETS += bench-model
bench-model: trainrt-bench
	TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/collective_model.sh
.PHONY: bench-model

# bench-before-after: shm point-to-point, waiting and train-mlp of an old build (OLD=its tree, built
# with scripts/build.sh) against this one, in one run, interleaved (BENCHMARKS.md, "Point-to-point
# and waiting, old against new"). Not part of `make bench`: it needs the old tree.
dist_noinst_SCRIPTS += bench/before_after.sh
bench-before-after: trainrt-bench train-mlp
	@test -n "$(OLD)" || { echo "bench-before-after: set OLD to a tree built with scripts/build.sh (git worktree add /tmp/old main; cd /tmp/old; scripts/build.sh)" >&2; exit 2; }
	$(SHELL) $(srcdir)/bench/before_after.sh "$(OLD)" "$(abs_builddir)"
.PHONY: bench-before-after

# bench-train: train-mlp DDP throughput vs PyTorch DDP (gloo), scaling 1 -> 2 ranks, GEMM share.
if BUILD_TRAINER
noinst_PROGRAMS += bench/sgemm-peak
bench_sgemm_peak_SOURCES = bench/sgemm_peak.c
bench_sgemm_peak_CFLAGS = $(AM_CFLAGS) $(OPENBLAS_CFLAGS)
bench_sgemm_peak_LDADD = $(OPENBLAS_LIBS)
endif
dist_noinst_SCRIPTS += bench/train.sh bench/torch_ddp.py
BENCH_TARGETS += bench-train
bench-train: train-mlp bench/sgemm-peak trainrt-bench
	TRAIN_MLP=./train-mlp SGEMM_PEAK=./bench/sgemm-peak TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/train.sh
.PHONY: bench-train

# bench-accuracy: 784-256-10 on Fashion-MNIST reaches >= 88% on 1 and on 4 ranks; the same script
# is a make check test (tests/trainer/accuracy.sh), here for its wall times, plus a deeper model on
# 4 ranks with tensor and pipeline parallelism (TP=2 PP=2, about a minute more).
BENCH_TARGETS += bench-accuracy
bench-accuracy: train-mlp
	TRAIN_MLP=./train-mlp $(SHELL) $(srcdir)/tests/trainer/accuracy.sh --with-tp-pp
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
bench_port_collisions_LDADD = libttlayout.la libttbase.la
BENCH_TARGETS += bench-ports
bench-ports: bench/port-collisions train-run$(EXEEXT) train_topo.la
	$(SHELL) $(srcdir)/bench/ports.sh $(abs_top_builddir)
dist_noinst_SCRIPTS += bench/ports.sh
.PHONY: bench-ports

# bench-timeouts: how long libtrainrt takes to give up (no rank 0, a peer that never comes, a killed
# or a stopped peer) against TRAINRT_TIMEOUT; the unit tests assert only that and why it gives up.
dist_noinst_SCRIPTS += bench/timeouts.sh
BENCH_TARGETS += bench-timeouts
bench-timeouts: trainrt-bench
	TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/timeouts.sh
.PHONY: bench-timeouts

# bench-ckpt: checkpoint write throughput vs dd conv=fsync into the same directory (bench/ckpt.sh).
if BUILD_TRAINER
noinst_PROGRAMS += bench/ckpt-write
bench_ckpt_write_SOURCES = bench/ckpt_write.c
bench_ckpt_write_LDADD = libtrainmodel.la libttbase.la
endif
dist_noinst_SCRIPTS += bench/ckpt.sh
BENCH_TARGETS += bench-ckpt
bench-ckpt: bench/ckpt-write
	CKPT_WRITE=./bench/ckpt-write $(SHELL) $(srcdir)/bench/ckpt.sh
.PHONY: bench-ckpt

# bench-parallel: 3D layouts (samples/s, peak RSS, bytes per step measured vs computed, bubble),
# recomputation's memory, and PyTorch's pipeline (gloo send/recv) and DDP as peers (BENCHMARKS.md).
dist_noinst_SCRIPTS += bench/parallel.sh bench/torch_pipeline.py
BENCH_TARGETS += bench-parallel
bench-parallel: train-mlp
	TRAIN_MLP=./train-mlp $(SHELL) $(srcdir)/bench/parallel.sh
.PHONY: bench-parallel

# bench-scale: issue #20 at this machine's reach: nodelists of 10k nodes and the env contract of
# 100k tasks (vs scontrol), and a store rendezvous of 1k-16k ranks vs PyTorch TCPStore (bench/scale.sh).
noinst_PROGRAMS += bench/scale-layout
bench_scale_layout_SOURCES = bench/scale_layout.c
bench_scale_layout_LDADD = libttlayout.la libttbase.la
if BUILD_TRAINRT
noinst_PROGRAMS += bench/rdv-scale
bench_rdv_scale_SOURCES = bench/rdv_scale.c
bench_rdv_scale_LDADD = libtrainrt_core.la
endif
dist_noinst_SCRIPTS += bench/scale.sh bench/rdv_tcpstore.py
BENCH_TARGETS += bench-scale
bench-scale: bench/scale-layout bench/rdv-scale
	$(SHELL) $(srcdir)/bench/scale.sh $(abs_top_builddir)
.PHONY: bench-scale

# bench-ft: fault recovery on one node (issue #29): kill -9 and a hung worker, train-mlp and the
# PyTorch example under train-run, the example under torchrun, in one run (BENCHMARKS.md, "Fault
# recovery on one node"). Bounded (timeout inside); about 4 minutes, most of it torchrun's hang.
BENCH_TARGETS += bench-ft
bench-ft: train-run$(EXEEXT) train-mlp
	$(SHELL) $(srcdir)/bench/ft.sh ./train-run$(EXEEXT) ./train-mlp
dist_noinst_SCRIPTS += bench/ft.sh
EXTRA_DIST += bench/ft_drive.py
.PHONY: bench-ft

# bench-preflight: what --preflight adds to a launch of 2 and 8 nodes on loopback, against the same
# launch with --preflight=off, in one run (BENCHMARKS.md, "Preflight health check"). About 30 s.
BENCH_TARGETS += bench-preflight
bench-preflight: train-run$(EXEEXT)
	$(SHELL) $(srcdir)/bench/preflight.sh ./train-run$(EXEEXT)
dist_noinst_SCRIPTS += bench/preflight.sh
.PHONY: bench-preflight

# bench-ft-cluster: fault recovery across the nodes of the test cluster (issue #29), train-mlp and
# examples/pytorch_ddp.py: a worker on node 2 killed or hung, node 2's train-run killed with and
# without a spare and node 2's link down with a spare (3rd node; train-mlp); train-run against torchrun (bench/ft_cluster.sh; needs root
# and the cluster lock; brings a 3-node cluster up when none is). About 10 minutes;
# FT_PROGRAMS=pytorch runs only the example's rows. Then a slow node and a slow link, what names
# them (bench/ft_straggle.sh; the link needs 4 nodes up).
BENCH_TARGETS += bench-ft-cluster
bench-ft-cluster: train-run$(EXEEXT) train-mlp train_topo.la
	$(SHELL) $(srcdir)/bench/ft_cluster.sh ./train-run$(EXEEXT) ./train-mlp $(abs_top_builddir)/.libs/train_topo.so
dist_noinst_SCRIPTS += bench/ft_cluster.sh bench/ft_straggle.sh bench/ft_resubmit.sh
.PHONY: bench-ft-cluster

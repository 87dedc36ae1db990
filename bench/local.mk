# bench: build rules (filled by its owner)

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

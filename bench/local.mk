# bench: build rules (filled by its owner)

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

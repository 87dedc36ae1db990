# bench: build rules (filled by its owner)

# train-run's start-up against torchrun, measured in the same run (BENCHMARKS.md, "train-run launch").
BENCH_TARGETS += bench-launch
bench-launch: train-run$(EXEEXT)
	$(SHELL) $(srcdir)/bench/launch.sh ./train-run$(EXEEXT)
dist_noinst_SCRIPTS += bench/launch.sh
EXTRA_DIST += bench/torchrun_py311.py
.PHONY: bench-launch

# bench: build rules (filled by its owner)
# bench-topo: live discovery + NCCL XML vs lstopo's XML export (BENCHMARKS.md, Topology discovery).
BENCH_TARGETS += bench-topo
dist_noinst_SCRIPTS += bench/topo.sh
bench-topo: train-topo$(EXEEXT)
	$(SHELL) $(srcdir)/bench/topo.sh ./train-topo$(EXEEXT)
.PHONY: bench-topo

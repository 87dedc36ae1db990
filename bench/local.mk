# bench: build rules (filled by its owner)

# bench-comm: collectives vs memcpy, Gloo, Open MPI; rendezvous vs PyTorch TCPStore (bench/comm.sh).
dist_noinst_SCRIPTS += bench/comm.sh
BENCH_TARGETS += bench-comm
bench-comm: trainrt-bench
	TRAINRT_BENCH=./trainrt-bench $(SHELL) $(srcdir)/bench/comm.sh
.PHONY: bench-comm

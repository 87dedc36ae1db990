# SPDX-License-Identifier: MIT
# tests/comm/: the collective matrix shared by comm_check (host buffers; run across the test
# cluster's nodes by tests/cluster/t_runtime.sh) and tests/gpu/nccl_check (device buffers).
# comm_check uses trainrt.h alone, so it links libtrainrt.so as any program would.
if BUILD_TRAINRT
noinst_PROGRAMS += tests/comm/comm_check
tests_comm_comm_check_SOURCES = tests/comm/comm_check.c tests/comm/comm_matrix.c tests/comm/comm_matrix.h
tests_comm_comm_check_LDADD = libtrainrt.la -lm
endif

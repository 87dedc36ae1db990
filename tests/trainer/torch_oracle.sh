#!/bin/sh
# SPDX-License-Identifier: MIT
# torch_oracle.sh — train-mlp's float32 math against an independent implementation: mlp_dump
# runs the step train-mlp runs (tt_dp) on a small fixed problem and writes weights, batches and
# results; torch_oracle.py recomputes them with PyTorch (Debian python3-torch) and compares
# forward loss and hits, backward gradient, AdamW weights and moments, schedule and evaluation.
# SKIP (77) when PyTorch cannot be imported.
set -u
MLP_DUMP=${MLP_DUMP:-./tests/trainer/mlp_dump}
PYTHON=${PYTHON:-/usr/bin/python3}
here=$(dirname "$0")
if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
	echo "SKIP: $PYTHON cannot import torch: apt-get install python3-torch (scripts/install-deps.sh)"
	exit 77
fi
tmp=$(mktemp -d /tmp/tt-torch-oracle-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export OPENBLAS_NUM_THREADS=1
"$MLP_DUMP" "$tmp" || { echo "FAIL: mlp_dump failed"; exit 1; }
"$PYTHON" "$here/torch_oracle.py" "$tmp"

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torch_pipeline.py — the PyTorch peer for bench/parallel.sh: a minimal pipeline-parallel trainer
of the same MLP (Linear+ReLU, softmax cross-entropy, AdamW) with torch.distributed send/recv over
gloo, one process per stage, the layers split evenly, GPipe (every micro-batch's forward, then every
backward in micro-batch order), synthetic data in memory, same global batch, micro-batches and
threads per rank as train-mlp; prints one line "samples_per_sec N" from the last stage.
usage: torch_pipeline.py --layers 512x8 --batch 128 --micro 4 --stages 2 --steps 20 --threads 1"""
import argparse
import time

import torch
import torch.distributed as dist
from torch import nn

from torch_ddp import dims_of, join, spawn


def worker(rank, a, port):
    join(rank, a.stages, port, a.threads)
    dims = dims_of(a.layers)
    n_layers = len(dims) - 1
    per = n_layers // a.stages
    first, last = rank == 0, rank == a.stages - 1
    layers = []
    for i in range(rank * per, (rank + 1) * per):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < n_layers - 1:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss(reduction="sum")
    mb = a.batch // a.micro
    n = 4096
    x = torch.rand(n, dims[0]) * 2 - 1
    y = torch.randint(0, dims[-1], (n,))
    d_in, d_out = dims[rank * per], dims[(rank + 1) * per]

    def step(i):
        opt.zero_grad(set_to_none=True)
        inputs, outputs = [], []
        for k in range(a.micro):
            lo = (i * a.batch + k * mb) % (n - mb)
            if first:
                inp = x[lo:lo + mb]
            else:
                inp = torch.empty(mb, d_in)
                dist.recv(inp, rank - 1)
                inp.requires_grad_()
            out = model(inp)
            if last:
                out = loss_fn(out, y[lo:lo + mb]) / a.batch
            else:
                dist.send(out.detach(), rank + 1)
            inputs.append(inp)
            outputs.append(out)
        for k in range(a.micro):
            if last:
                outputs[k].backward()
            else:
                grad = torch.empty(mb, d_out)
                dist.recv(grad, rank + 1)
                outputs[k].backward(grad)
            if not first:
                dist.send(inputs[k].grad, rank - 1)
        opt.step()

    for i in range(3):
        step(i)
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(i)
    dist.barrier()
    dt = time.perf_counter() - t0
    if last:
        print("samples_per_sec %.1f" % (a.steps * a.batch / dt), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--micro", type=int, default=4)
    p.add_argument("--stages", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    a = p.parse_args()
    spawn(worker, a, a.stages)


if __name__ == "__main__":
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torch_ddp.py — the PyTorch peer for bench/train.sh: CPU DDP (gloo) training of the same MLP
(Linear+ReLU, softmax cross-entropy, AdamW), same global batch, same threads per rank, on synthetic
data already in memory; prints one line "samples_per_sec N" from rank 0.
usage: torch_ddp.py --layers 784,256,10 --batch 256 --world 2 --steps 200 --threads 1 [--bind]
--bind: each rank runs on CPU (rank mod the CPUs it may use), as train-run binds its workers,
for a comparison where both sides are bound the same way."""
import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP


def dims_of(spec):
    out = []
    for tok in spec.split(","):
        if "x" in tok:
            d, n = tok.split("x")
            out += [int(d)] * (int(n) + 1)
        else:
            out.append(int(tok))
    return out


def join(rank, world, port, threads):
    """This process as rank of a gloo world on 127.0.0.1 (also used by torch_pipeline.py)."""
    torch.set_num_threads(threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)


def spawn(worker, a, world):
    """Runs worker(rank, a, port) in world processes that meet on a free port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(worker, args=(a, port), nprocs=world, join=True)


def worker(rank, a, port):
    if a.bind:
        cpus = sorted(os.sched_getaffinity(0))
        os.sched_setaffinity(0, {cpus[rank % len(cpus)]})
    join(rank, a.world, port, a.threads)
    dims = dims_of(a.layers)
    layers = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(nn.ReLU())
    model = DDP(nn.Sequential(*layers), bucket_cap_mb=25)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
    loss_fn = nn.CrossEntropyLoss()
    local = a.batch // a.world
    n = 8192
    x = torch.rand(n, dims[0]) * 2 - 1
    y = torch.randint(0, dims[-1], (n,))

    def step(i):
        lo = (i * a.batch + rank * local) % (n - local)
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(model(x[lo:lo + local]), y[lo:lo + local])
        loss.backward()
        opt.step()

    for i in range(5):
        step(i)
    dist.barrier()
    t0 = time.perf_counter()
    for i in range(a.steps):
        step(i)
    dist.barrier()
    dt = time.perf_counter() - t0
    if rank == 0:
        print("samples_per_sec %.1f" % (a.steps * a.batch / dt), flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--layers", required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bind", action="store_true")
    a = p.parse_args()
    spawn(worker, a, a.world)


if __name__ == "__main__":
    main()

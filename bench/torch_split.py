#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""torch_split.py — the peer of bench/split-time (`make bench-split`): N gloo ranks on this machine
split the world in two by parity with PyTorch's torch.distributed.new_group (every rank creates
both groups, in the same order, as new_group requires) and rank 0 prints the seconds from a
barrier before to a barrier after.
usage: torch_split.py N PORT"""
import os
import sys
import time

import torch.distributed as dist
import torch.multiprocessing as mp


def rank(r, n, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=r, world_size=n)
    dist.barrier()
    t0 = time.monotonic()
    for parity in (0, 1):
        dist.new_group(ranks=list(range(parity, n, 2)))
    dist.barrier()
    if r == 0:
        print("%.4f" % (time.monotonic() - t0), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    n, port = int(sys.argv[1]), int(sys.argv[2])
    mp.spawn(rank, args=(n, port), nprocs=n, join=True)

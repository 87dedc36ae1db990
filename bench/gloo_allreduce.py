# SPDX-License-Identifier: MIT
# gloo_allreduce.py — bench peer: Gloo all-reduce (Debian's PyTorch) of float32 between N local
# ranks; prints busbw (GB/s).  usage: gloo_allreduce.py N PORT BYTES ITERS WARMUP
import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
def run(rank, n, port, size, iters, warm, q):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=n)
    x = torch.ones(size // 4, dtype=torch.float32)
    for _ in range(warm): dist.all_reduce(x)
    dist.barrier(); t0 = time.perf_counter()
    for _ in range(iters): dist.all_reduce(x)
    t = torch.tensor([(time.perf_counter() - t0) / iters])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0: q.put(t.item())
    dist.destroy_process_group()
if __name__ == "__main__":
    n, port, size, iters, warm = map(int, sys.argv[1:6])
    ctx = mp.get_context("fork"); q = ctx.SimpleQueue()
    ps = [ctx.Process(target=run, args=(r, n, port, size, iters, warm, q)) for r in range(n)]
    [p.start() for p in ps]; [p.join() for p in ps]
    t = q.get(); print("%.3f" % (size / t / 1e9 * 2 * (n - 1) / n))

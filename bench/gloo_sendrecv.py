# SPDX-License-Identifier: MIT
# gloo_sendrecv.py — bench peer of trainrt_sendrecv: Gloo isend/irecv swapping a buffer between 2
# local ranks; prints time per exchange (us) and GB/s per direction.  usage: gloo_sendrecv.py PORT BYTES ITERS WARMUP
import sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
def run(rank, port, size, iters, warm, q):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    out, inp = torch.ones(max(size // 4, 1)), torch.empty(max(size // 4, 1))
    def swap():
        a, b = dist.isend(out, 1 - rank), dist.irecv(inp, 1 - rank)
        a.wait(); b.wait()
    for _ in range(warm): swap()
    dist.barrier(); t0 = time.perf_counter()
    for _ in range(iters): swap()
    t = torch.tensor([(time.perf_counter() - t0) / iters])
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    if rank == 0: q.put(t.item())
    dist.destroy_process_group()
if __name__ == "__main__":
    port, size, iters, warm = map(int, sys.argv[1:5])
    ctx = mp.get_context("fork"); q = ctx.SimpleQueue()
    ps = [ctx.Process(target=run, args=(r, port, size, iters, warm, q)) for r in range(2)]
    [p.start() for p in ps]; [p.join() for p in ps]
    t = q.get(); print("%.1f %.3f" % (t * 1e6, size / t / 1e9))

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rdv_tcpstore.py — the peer of `bench/rdv-scale N --barrier add` (bench/rdv_scale.c): N ranks meeting through PyTorch's
TCPStore (Debian python3-torch), simulated the same way: the store in this process, the ranks as
threads in client processes of at most 2048 each, all started together once every thread exists.
A rank connects (TCPStore client), counts itself in (add), the last one sets "done", every rank
waits for it (get): the same all-arrived barrier a JOIN is.
usage: rdv_tcpstore.py N [TIMEOUT_S]   prints "<seconds> <ranks done>", then the first failure if any."""
import multiprocessing as mp
import resource
import sys
import threading
import time
from datetime import timedelta

from torch.distributed import TCPStore

# A torch 1.13 TCPStore client holds two sockets, a pipe and a background thread.
PER_PROC = 2048


def client(port, n, count, timeout, ready, go, out):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    threading.stack_size(256 * 1024)
    start = threading.Barrier(count + 1)
    done = [0]
    last = [0.0]
    err = []
    lock = threading.Lock()

    def rank():
        start.wait()
        try:
            s = TCPStore("127.0.0.1", port.value, n, False, timedelta(seconds=timeout))
            if s.add("count", 1) == n:
                s.set("done", "1")
            s.get("done")
            ok = 1
        except Exception as e:  # counted as not done; the first reason is printed
            with lock:
                if not err:
                    err.append(str(e))
            ok = 0
        with lock:
            done[0] += ok
            last[0] = max(last[0], time.monotonic())

    ts = [threading.Thread(target=rank) for _ in range(count)]
    for t in ts:
        t.start()
    ready.put(1)
    go.wait()
    start.wait()
    for t in ts:
        t.join()
    out.put((done[0], last[0], err[0] if err else ""))


def main():
    n = int(sys.argv[1])
    timeout = float(sys.argv[2]) if len(sys.argv) > 2 else 120
    ctx = mp.get_context("fork")
    procs = (n + PER_PROC - 1) // PER_PROC
    ready, out, go = ctx.Queue(), ctx.Queue(), ctx.Event()
    counts = [n * (i + 1) // procs - n * i // procs for i in range(procs)]
    # Clients fork before the store exists, as in trainrt-bench; their ranks read its port at go.
    port = ctx.Value("i", 0)
    ps = [ctx.Process(target=client, args=(port, n, c, timeout, ready, go, out)) for c in counts]
    for p in ps:
        p.start()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    master = TCPStore("127.0.0.1", 0, n, True, timedelta(seconds=timeout), wait_for_workers=False)
    port.value = master.port
    for _ in ps:
        ready.get()
    t0 = time.monotonic()
    go.set()
    results = [out.get() for _ in ps]
    for p in ps:
        p.join()
    print("%.3f %d" % (max(r[1] for r in results) - t0, sum(r[0] for r in results)))
    for r in results:
        if r[2]:
            print("first failure:", r[2])
            break


if __name__ == "__main__":
    main()

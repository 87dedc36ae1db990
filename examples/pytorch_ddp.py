#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""pytorch_ddp.py -- a PyTorch DDP trainer that follows traintopo's protocol, to copy from.

    sbatch --nodes=2 --gres=gpu:8 job.sh python3 pytorch_ddp.py --data /usr/share/datasets/fashion-mnist
    sbatch --nodes=2 --gres=gpu:8 requeue.sh python3 pytorch_ddp.py --steps 20000
    sbatch --array=0-3 sweep.sh my.sweep python3 pytorch_ddp.py      # my.sweep: lr = ..., hidden = ...

What it shows, each in one place below:
- init_process_group() from the environment only: train-run (or srun --train-topo) sets RANK,
  WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; nccl when CUDA is usable, else gloo.
  Without WORLD_SIZE it runs as one process.
- Data: synthetic (the default, deterministic) or Fashion-MNIST's IDX files (--data DIR). The
  order of the samples is a function of the seed and the step, so a resumed run sees exactly
  the batches the uninterrupted run would have.
- The checkpoint protocol: on SIGUSR1 (or TRAIN_CKPT_SIGNAL) the ranks agree on the next step
  boundary, rank 0 saves atomically (write a temporary file, fsync, rename, fsync the
  directory), and every rank exits with $TRAIN_TOPO_CKPT_EXIT (99), which train-run and the
  templates take for a clean stop. A start resumes from the newest checkpoint in --ckpt-dir
  ($TRAIN_CKPT_DIR) that loads; a torn or corrupt one is skipped with a line saying so.
- Progress heartbeats for train-run's hang detection (heartbeat() below: 'step N' after each
  step, 'section NAME' around the rest), so a rank stuck in a collective is named and the group
  restarted in seconds, not after NCCL's timeout; outside train-run they cost nothing. The line
  may also carry the rank's busy time ('step N busy US', its step without the waits for other
  ranks), which train-run's straggler report judges when every rank gives one; DDP overlaps its
  all-reduce with the backward pass, so this example cannot tell its waits apart and gives none
  (its stragglers are judged by step times).
- The result line a sweep ranks points by: TRAIN_RESULT {"metric": "val_loss", ...}, also
  written to $TRAIN_TOPO_RESULT_FILE when set.
Rank 0 prints 'step N loss X' every --log-every steps (X with 9 significant digits: a resumed
run's lines equal an uninterrupted run's at the same world size).
"""
import os
import signal

# The checkpoint request is remembered from the first moment: importing torch takes seconds,
# and a time-limit signal may come while it does.
STOP = {"asked": False}
signal.signal(getattr(signal, "SIG" + os.environ.get("TRAIN_CKPT_SIGNAL", "USR1")),
              lambda *_: STOP.__setitem__("asked", True))

import argparse  # noqa: E402
import glob  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import struct  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", default="synthetic", help="synthetic, or an IDX directory such as "
                   "/usr/share/datasets/fashion-mnist (default: synthetic)")
    p.add_argument("--samples", type=int, default=4096, help="synthetic training samples (default 4096)")
    p.add_argument("--hidden", type=int, default=64, help="hidden width of the MLP (default 64)")
    p.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (default 1e-3)")
    p.add_argument("--batch", type=int, default=64, help="global batch per step (default 64)")
    p.add_argument("--steps", type=int, default=200, help="optimizer steps in all (default 200)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--ckpt-dir", default=os.environ.get("TRAIN_CKPT_DIR"),
                   help="checkpoints; resumes from the newest valid one (default $TRAIN_CKPT_DIR)")
    p.add_argument("--ckpt-every", type=int, default=0, help="also checkpoint every N steps (0: off)")
    p.add_argument("--keep", type=int, default=2, help="checkpoints kept (default 2)")
    p.add_argument("--sleep-per-step", type=float, default=0.0,
                   help="seconds to wait each step: stretches a tiny demo so a time-limit signal finds it training")
    a = p.parse_args()
    if a.batch < 1 or a.steps < 1 or a.hidden < 1 or a.samples < a.batch:
        p.error("--batch, --steps, --hidden must be >= 1 and --samples >= --batch")
    return a


def say(rank, *words):
    if rank == 0:
        print("pytorch_ddp:", *words, flush=True)


# ---- data -----------------------------------------------------------------------------------

def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = struct.unpack(">" + "I" * ndim, raw[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(raw[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load_data(args):
    """(train_x, train_y, test_x, test_y) as float32 / int64 tensors."""
    if args.data == "synthetic":
        g = torch.Generator().manual_seed(1234)
        w = torch.randn(784, 10, generator=g)
        x = torch.randn(args.samples + 512, 784, generator=g)
        y = (x @ w).argmax(dim=1)
        return x[:args.samples], y[:args.samples], x[args.samples:], y[args.samples:]
    files = {}
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                 "t10k-labels-idx1-ubyte"):
        found = glob.glob(os.path.join(args.data, name)) + glob.glob(os.path.join(args.data, name + ".gz"))
        if not found:
            sys.exit(f"pytorch_ddp: --data {args.data}: no {name}[.gz] there (Debian: dataset-fashion-mnist)")
        files[name] = found[0]
    tx = read_idx(files["train-images-idx3-ubyte"]).reshape(-1, 784).float() / 255.0
    ty = read_idx(files["train-labels-idx1-ubyte"]).long()
    vx = read_idx(files["t10k-images-idx3-ubyte"]).reshape(-1, 784).float() / 255.0
    vy = read_idx(files["t10k-labels-idx1-ubyte"]).long()
    return tx, ty, vx, vy


def batch_indices(n, batch, step, seed):
    """The global batch of a step: a fixed permutation per epoch, so a resume replays it."""
    per_epoch = n // batch
    epoch, k = divmod(step, per_epoch)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed * 100003 + epoch))
    return perm[k * batch:(k + 1) * batch]


# ---- checkpoints ----------------------------------------------------------------------------

def save_checkpoint(ckpt_dir, step, model, opt, losses, keep):
    """Atomic: readers see the old set of checkpoints or the new one, never half a file."""
    os.makedirs(ckpt_dir, exist_ok=True)
    final = os.path.join(ckpt_dir, f"step-{step:08d}.pt")
    tmp = final + f".tmp.{os.getpid()}"
    with open(tmp, "wb") as f:
        torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict(), "losses": losses}, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, final)
    fd = os.open(ckpt_dir, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    for old in sorted(glob.glob(os.path.join(ckpt_dir, "step-*.pt")))[:-keep]:
        os.unlink(old)
    return final


def load_newest(ckpt_dir, rank):
    """The newest checkpoint that loads, or None; a bad one is named and skipped."""
    for path in sorted(glob.glob(os.path.join(ckpt_dir or "", "step-*.pt")), reverse=True):
        try:
            state = torch.load(path, map_location="cpu")
            if not isinstance(state, dict) or not {"step", "model", "opt"} <= state.keys():
                raise ValueError("not a checkpoint of this program")
            return path, state
        except Exception as e:  # a torn or foreign file: the next older one may be good
            say(rank, f"skipping checkpoint {path}: {e}")
    return None, None


# ---- training -------------------------------------------------------------------------------

class Mlp(nn.Module):
    def __init__(self, hidden):
        super().__init__()
        self.fc1 = nn.Linear(784, hidden)
        self.fc2 = nn.Linear(hidden, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


HEARTBEAT_FD = int(os.environ.get("TRAIN_HEARTBEAT_FD", "-1"))


def heartbeat(line):
    """One progress line for train-run (see train-run(1), FAULT TOLERANCE); never blocks."""
    global HEARTBEAT_FD
    if HEARTBEAT_FD < 0:
        return
    try:
        os.write(HEARTBEAT_FD, (line + "\n").encode())
    except BlockingIOError:
        pass  # train-run is busy: a dropped line is harmless
    except OSError:
        HEARTBEAT_FD = -1  # the channel is gone: stop writing


def main():
    heartbeat("section setup")
    args = parse_args()
    ckpt_exit = int(os.environ.get("TRAIN_TOPO_CKPT_EXIT", "99"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    use_cuda = torch.cuda.is_available()
    if world > 1:
        dist.init_process_group("nccl" if use_cuda else "gloo")  # env:// from train-run's contract
    rank = dist.get_rank() if world > 1 else 0
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")) % torch.cuda.device_count()) \
        if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)
    if args.batch % world:
        sys.exit(f"pytorch_ddp: --batch {args.batch} is not divisible by the world size {world}")

    torch.manual_seed(args.seed)
    tx, ty, vx, vy = load_data(args)
    model = Mlp(args.hidden).to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
    step, losses = 0, []
    path, state = load_newest(args.ckpt_dir, rank)
    if state:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, losses = state["step"], state.get("losses", [])
        say(rank, f"resumed from {path} at step {step}")
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    say(rank, f"{world} rank(s), {'nccl' if use_cuda and world > 1 else 'gloo' if world > 1 else 'alone'}, "
        f"device {device}, data {args.data}, {args.steps} steps, batch {args.batch}, lr {args.lr}")

    local = args.batch // world
    saved = None
    while step < args.steps:
        idx = batch_indices(len(tx), args.batch, step, args.seed)[rank * local:(rank + 1) * local]
        x, y = tx[idx].to(device), ty[idx].to(device)
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        step += 1
        # The global mean loss, the same number on every rank.
        mean = loss.detach().clone()
        flag = torch.tensor([1.0 if STOP["asked"] else 0.0], device=device)  # the agreed stop
        if world > 1:
            dist.all_reduce(mean)
            mean /= world
            dist.all_reduce(flag, op=dist.ReduceOp.MAX)  # one rank's signal stops all at this step
        losses.append(float(mean))
        heartbeat(f"step {step}")
        if step % args.log_every == 0 or step == args.steps:
            say(rank, f"step {step} loss {float(mean):.9g}")
        checkpoint_now = args.ckpt_dir and (flag.item() > 0 or (args.ckpt_every and step % args.ckpt_every == 0))
        if checkpoint_now:
            heartbeat("section checkpoint")
        if checkpoint_now and rank == 0:
            saved = save_checkpoint(args.ckpt_dir, step, model, opt, losses, args.keep)
        if flag.item() > 0:
            if world > 1:
                dist.barrier()  # the checkpoint is on disk before any rank reports the stop
                dist.destroy_process_group()
            say(rank, f"checkpoint signal: saved {saved} at step {step}, exiting with {ckpt_exit}"
                if args.ckpt_dir else f"checkpoint signal at step {step}: no --ckpt-dir, nothing saved; "
                f"exiting with {ckpt_exit}")
            sys.exit(ckpt_exit)
        if args.sleep_per_step:
            time.sleep(args.sleep_per_step)

    heartbeat("section eval")
    model.eval()
    with torch.no_grad():
        out = model(vx.to(device))
        val_loss = float(F.cross_entropy(out, vy.to(device)))
        val_acc = float((out.argmax(dim=1).cpu() == vy).float().mean())
    if args.ckpt_dir and rank == 0:
        save_checkpoint(args.ckpt_dir, step, model, opt, losses, args.keep)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
    if rank == 0:
        result = {"metric": "val_loss", "value": round(val_loss, 6), "goal": "min",
                  "val_accuracy": round(val_acc, 6), "steps": step}
        say(rank, f"done: {step} steps, val loss {val_loss:.4f}, val accuracy {val_acc:.4f}")
        print("TRAIN_RESULT " + json.dumps(result), flush=True)
        if os.environ.get("TRAIN_TOPO_RESULT_FILE"):
            tmp = os.environ["TRAIN_TOPO_RESULT_FILE"] + ".tmp"
            with open(tmp, "w") as f:
                f.write(json.dumps(result) + "\n")
            os.rename(tmp, os.environ["TRAIN_TOPO_RESULT_FILE"])


if __name__ == "__main__":
    main()

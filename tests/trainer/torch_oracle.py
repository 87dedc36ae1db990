# SPDX-License-Identifier: MIT
"""torch_oracle.py — PyTorch recomputes what tests/trainer/mlp_dump wrote (train-mlp's float32
step on the same weights and batches) and compares: the loss and hits of every step, the first
step's gradient (autograd), the weights and AdamW moments after the last step (torch.optim.AdamW
with the documented schedule: linear warmup from lr/warmup, then cosine to 0 at the last step),
and an evaluation with the final weights.

Tolerances: both sides compute in float32 but sum in different orders (OpenBLAS vs PyTorch's
GEMMs, 32-row batches), so results agree to rounding, not bit for bit. Losses: |d| <= 1e-5 *
max(1, |loss|). Gradient, moments and weights: max |d| over the tensor <= 1e-4 * max |torch value|
(the measured gap is about 1e-7 to 1e-6; a wrong bias correction, weight decay or learning rate
moves the weights by 1e-3 or more of their scale). Hits: equal.
usage: torch_oracle.py DIR"""
import math
import sys

import torch

TOL_REL = 1e-4
failures = []


def read(dir_, name, dtype, shape):
    with open(f"{dir_}/{name}", "rb") as f:
        t = torch.frombuffer(bytearray(f.read()), dtype=dtype)
    return t.reshape(shape).clone()


def check_close(what, got, want):
    scale = max(want.abs().max().item(), 1e-30)
    diff = (got - want).abs().max().item()
    verdict = "ok" if diff <= TOL_REL * scale and not math.isnan(diff) else "FAIL"
    print(f"{what}: max |train-mlp - torch| = {diff:.3e} (scale {scale:.3e}, relative {diff / scale:.2e}) {verdict}")
    if verdict != "ok":
        failures.append(what)


def check_loss(what, got, want):
    diff = abs(got - want)
    verdict = "ok" if diff <= 1e-5 * max(1.0, abs(want)) else "FAIL"
    print(f"{what}: train-mlp {got:.7f} torch {want:.7f} {verdict}")
    if verdict != "ok":
        failures.append(what)


def check_equal(what, got, want):
    verdict = "ok" if got == want else "FAIL"
    print(f"{what}: train-mlp {got} torch {want} {verdict}")
    if verdict != "ok":
        failures.append(what)


def main(dir_):
    cfg, steps = {}, []
    with open(f"{dir_}/results.txt") as f:
        for line in f:
            k, *vals = line.split()
            if k == "step":
                steps.append((float(vals[2]), int(vals[4])))
            else:
                cfg[k] = vals
    dims = [int(d) for d in cfg["layers"][0].split(",")]
    batch, n_steps, warmup = int(cfg["batch"][0]), int(cfg["steps"][0]), int(cfg["warmup"][0])
    lr, wd = float(cfg["lr"][0]), float(cfg["weight_decay"][0])
    betas, eps = (float(cfg["betas"][0]), float(cfg["betas"][1])), float(cfg["eps"][0])

    layers = []
    for i in range(len(dims) - 1):
        layers.append(torch.nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers)
    linears = [l for l in layers if isinstance(l, torch.nn.Linear)]
    n_params = sum(l.weight.numel() + l.bias.numel() for l in linears)

    def load(flat):  # tt_mlp's layout: per layer W (out x in, row-major) then b
        off = 0
        with torch.no_grad():
            for l in linears:
                for t in (l.weight, l.bias):
                    t.copy_(flat[off:off + t.numel()].reshape(t.shape))
                    off += t.numel()

    def flatten(tensors):
        return torch.cat([t.reshape(-1) for t in tensors])

    p0 = read(dir_, "params0.f32", torch.float32, (n_params,))
    load(p0)
    # The documented initialisation: PyTorch nn.Linear's bounds, +-1/sqrt(fan_in), weights and biases.
    for i, l in enumerate(linears):
        bound = 1.0 / math.sqrt(dims[i])
        for name, t in (("weights", l.weight), ("biases", l.bias)):
            inside = t.abs().max().item() <= bound
            spread = t.abs().max().item() > 0.5 * bound
            if not (inside and spread):
                failures.append(f"layer {i} initial {name}")
                print(f"layer {i} initial {name}: max |value| {t.abs().max().item():.4f}, bound {bound:.4f} FAIL")
    x = read(dir_, "x.f32", torch.float32, (n_steps * batch, dims[0]))
    y = read(dir_, "y.i32", torch.int32, (n_steps * batch,)).long()

    def schedule(step):  # man train-mlp: --warmup N linear warmup, then cosine decay to 0
        if step < warmup:
            return (step + 1) / warmup
        progress = min(1.0, (step - warmup) / (n_steps - warmup))
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    opt = torch.optim.AdamW(model.parameters(), lr=lr, betas=betas, eps=eps, weight_decay=wd)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, schedule)
    for s in range(n_steps):
        xb, yb = x[s * batch:(s + 1) * batch], y[s * batch:(s + 1) * batch]
        opt.zero_grad()
        logits = model(xb)
        loss = torch.nn.functional.cross_entropy(logits, yb)
        loss.backward()
        check_loss(f"step {s} loss", steps[s][0], loss.item())
        check_equal(f"step {s} hits", steps[s][1], int((logits.argmax(dim=1) == yb).sum()))
        if s == 0:
            grad = flatten([t.grad for l in linears for t in (l.weight, l.bias)])
            check_close("step 0 gradient (backward)", read(dir_, "grad0.f32", torch.float32, (n_params,)), grad)
        opt.step()
        sched.step()

    params = flatten([t.detach() for l in linears for t in (l.weight, l.bias)])
    check_close(f"weights after {n_steps} AdamW steps", read(dir_, "params.f32", torch.float32, (n_params,)), params)
    state = [opt.state[t] for l in linears for t in (l.weight, l.bias)]
    check_close("AdamW first moments", read(dir_, "m.f32", torch.float32, (n_params,)),
                flatten([st["exp_avg"] for st in state]))
    check_close("AdamW second moments", read(dir_, "v.f32", torch.float32, (n_params,)),
                flatten([st["exp_avg_sq"] for st in state]))

    eval_loss, eval_hits, test_n = float(cfg["eval"][1]), int(cfg["eval"][3]), int(cfg["eval"][5])
    tx = read(dir_, "test_x.f32", torch.float32, (test_n, dims[0]))
    ty = read(dir_, "test_y.i32", torch.int32, (test_n,)).long()
    with torch.no_grad():
        logits = model(tx)
        check_loss("evaluation loss", eval_loss, torch.nn.functional.cross_entropy(logits, ty).item())
        check_equal("evaluation hits", eval_hits, int((logits.argmax(dim=1) == ty).sum()))
    if failures:
        print("FAIL: train-mlp and PyTorch disagree on: " + ", ".join(failures))
        return 1
    print("torch_oracle: train-mlp's forward, backward, AdamW and schedule agree with PyTorch")
    return 0


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    sys.exit(main(sys.argv[1]))

#!/usr/bin/env python3
"""Gauss-Newton (Levenberg-Marquardt) on an Adam client's exact replay, with a robust loss.

A measurement for issue 45, not part of the engine. scripts/adam_basin.py found the exact loss
(1 − cos of the replayed update) to have a narrow basin that first-order steps leave. This asks
whether a second-order step reaches the rows, and finds why it did not on 1 − cos: Adam's first
local step moves every coordinate by lr · sign(g), so wherever a candidate's gradient has the
other sign than the client's at a coordinate, the residual there is about 2·lr however close the
rows are. Those coordinates are outliers of a least-squares fit; a Cauchy loss
ρ(r) = s²/2 · log(1 + r²/s²) on each coordinate's residual (relative to the update's norm) lets
them go, and the rest of the update leads to the rows.

The client is one scripts/export_update.py wrote into DIR (an Adam client, rows in the given
order: scripts/bench_recipes.py --recipes adam writes them under OUT/runs). The unknowns are the
batch's encoded rows, every entry free (3,328 for 32 Adult rows), with the client's own labels
and order (oracles, see below). Each iteration forms the Jacobian of the replay (forward-mode,
vmapped in chunks) and takes an LM step on the IRLS-weighted normal equations.

  --start η        the true rows, continuous cells + η·N(0, 1) std
  --start basin:η  adam_basin.py's start: that, and categorical logits 10·one-hot + 3η·N(0, 1)
                   through the softmax (categories all but never changed)
  --start cats     the true rows, every continuous cell at its column's mean
  --start marginal the true rows, every continuous cell drawn from its column in the table
  --flip p         with either: each categorical cell changed to another at random with
                   probability p
  --start engine   the engine's reconstruction (DIR/told.json), each row placed at the position
                   of the true row it is nearest to (an oracle for the order)
  --scale s        the Cauchy scale s (0: plain least squares)
  --first-order N  N steps of Adam (--lr) on the same loss instead of LM
  --sweeps N       first N passes of a search over each categorical cell on the same loss

Prints the residual's norm and the cells right (Hungarian matching, SPEC §6's tolerances), raw
and with each categorical feature hardened to its largest entry.

  python3 scripts/adam_lm.py /tmp/adam/runs/adam-e1-s0 --csv ../shared/datasets/adult.csv \\
      --encoding /tmp/adam/encoding.json --start 0.6 --scale 2.5e-4 --iters 10

Needs torch, scipy and safetensors.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
from scipy.optimize import linear_sum_assignment
from torch.func import functional_call, grad, jvp, vmap

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import adam_basin  # noqa: E402
import export_update  # noqa: E402


class Replay:
    """The client's Adam epochs as a function of its rows (flattened), torch.func throughout so
    that forward-mode derivatives pass through each local step's gradient."""

    def __init__(self, client, update):
        self.c = client
        self.keys = sorted(update)
        self.target = torch.cat([update[k].flatten() for k in self.keys])
        self.norm = self.target.norm()
        loss = lambda p, xb, yb: export_update.loss_of("softmax", functional_call(client.model, p, (xb,)), yb)
        self.grad = grad(loss)

    def update(self, x):
        c, b1, b2 = self.c, *adam_basin.BETAS
        p = dict(c.w0)
        m = {k: torch.zeros_like(v) for k, v in p.items()}
        v2 = {k: torch.zeros_like(v) for k, v in p.items()}
        t = 0
        for _ in range(c.epochs):
            for s in range(0, len(c.y), c.local_batch):
                t += 1
                g = self.grad(p, x[s : s + c.local_batch], c.y[s : s + c.local_batch])
                new = {}
                for k in p:
                    m[k] = b1 * m[k] + (1 - b1) * g[k]
                    v2[k] = b2 * v2[k] + (1 - b2) * g[k] * g[k]
                    denom = torch.sqrt(v2[k] + 1e-300) / math.sqrt(1 - b2**t) + c.eps
                    new[k] = p[k] - c.lr / (1 - b1**t) * m[k] / denom
                p = new
        return torch.cat([(c.w0[k] - p[k]).flatten() for k in self.keys])

    def residual(self, xf, shape):
        return (self.update(xf.view(shape)) - self.target) / self.norm

    def jacobian(self, xf, shape, chunk):
        along = lambda v: jvp(lambda z: self.residual(z, shape), (xf,), (v,))[1]
        eye = torch.eye(xf.numel())
        return torch.cat([vmap(along)(eye[s : s + chunk]) for s in range(0, xf.numel(), chunk)]).T


def harden(rows_of, x):
    """Each categorical feature's relaxed entries set to the one-hot of its largest."""
    out = x.clone()
    for o, k in rows_of.cats:
        raw = x[:, o : o + k] * rows_of.std[o : o + k] + rows_of.mean[o : o + k]
        one_hot = torch.zeros_like(raw)
        one_hot[torch.arange(len(x)), raw.argmax(1)] = 1
        out[:, o : o + k] = (one_hot - rows_of.mean[o : o + k]) / rows_of.std[o : o + k]
    return out


def category_sweep(rows_of, cost, x):
    """Each row's each categorical cell set to whichever category lowers the cost most, the
    others held (one pass, rows in order); returns the rows, hardened, and how many changed."""
    x = harden(rows_of, x)
    now, changed = cost(x), 0
    with torch.no_grad():
        for i in range(len(x)):
            for o, k in rows_of.cats:
                mean, std = rows_of.mean[o : o + k], rows_of.std[o : o + k]
                was = int((x[i, o : o + k] * std + mean).argmax())
                best, pick = now, was
                for j in range(k):
                    if j != was:
                        x[i, o : o + k] = (torch.eye(k)[j] - mean) / std
                        if (c := cost(x)) < best:
                            best, pick = c, j
                x[i, o : o + k] = (torch.eye(k)[pick] - mean) / std
                changed += pick != was
                now = best
    return x, changed


def start_rows(args, rows_of, truth, header, encoding, table):
    if args.start == "engine":
        report = json.load(open(os.path.join(args.client, "told.json")))["reconstruction"]
        names = [f["name"] for f in report["features"]] + [encoding["label"]]
        at = {h: i for i, h in enumerate(header)}
        encoded = []
        for row, label in zip(report["rows"], report["labels"]):
            cells = [""] * len(header)
            for name, v in zip(names, row["cells"] + [label]):
                cells[at[name]] = v
            encoded.append(export_update.encode(cells, header, encoding))
        ex = torch.tensor(encoded)
        r, c = linear_sum_assignment(torch.cdist(ex, truth, p=1).numpy())
        x = torch.zeros_like(truth)
        x[c] = ex[r]
        return x
    if args.start.startswith("basin:"):
        return rows_of.decode(rows_of.start(truth, float(args.start[6:])))
    x = truth.clone()
    if args.start == "cats":
        x[:, rows_of.cont] = 0.0
    elif args.start == "marginal":
        pool = torch.tensor([export_update.encode(table[i], header, encoding) for i in torch.randint(len(table), (4 * len(x),))])
        for c in rows_of.cont:
            x[:, c] = pool[torch.randint(len(pool), (len(x),)), c]
    else:
        x[:, rows_of.cont] += float(args.start) * torch.randn(len(x), len(rows_of.cont))
    for i in range(len(x)):
        for o, k in rows_of.cats:
            if torch.rand(1).item() < args.flip:
                now = int((x[i, o : o + k] * rows_of.std[o : o + k] + rows_of.mean[o : o + k]).argmax())
                j = (now + 1 + int(torch.randint(k - 1, (1,)))) % k
                one_hot = torch.zeros(k)
                one_hot[j] = 1
                x[i, o : o + k] = (one_hot - rows_of.mean[o : o + k]) / rows_of.std[o : o + k]
    return x


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", required=True)
    ap.add_argument("--start", default="0.6", help="η (noise around the truth), cats or engine")
    ap.add_argument("--flip", type=float, default=0.0)
    ap.add_argument("--scale", type=float, default=2.5e-4, help="the Cauchy scale; 0: least squares")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--first-order", type=int, default=0)
    ap.add_argument("--sweeps", type=int, default=0, help="passes of the category search before LM")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--chunk", type=int, default=208)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(args.seed)
    encoding, update, client, truth, header, table = adam_basin.load_client(args.client, args.csv, args.encoding)
    rows_of = adam_basin.Rows(encoding)
    replay = Replay(client, update)
    shape = truth.shape
    s2 = args.scale**2

    def cost(r):
        return 0.5 * r.dot(r) if s2 == 0 else 0.5 * s2 * torch.log1p(r * r / s2).sum()

    def report(tag, x, r):
        xv = x.view(shape)
        print(f"{tag}: |r| {r.norm():.4e}, cells right {rows_of.accuracy(xv, truth):.3f}, "
              f"hardened {rows_of.accuracy(harden(rows_of, xv), truth):.3f}", flush=True)

    x = start_rows(args, rows_of, truth, header, encoding, table).flatten()
    r = replay.residual(x, shape)
    report("start", x, r)
    for sweep in range(args.sweeps):
        x, changed = category_sweep(rows_of, lambda z: cost(replay.residual(z.flatten(), shape)), x.view(shape))
        x = x.flatten()
        r = replay.residual(x, shape)
        report(f"category sweep {sweep + 1} ({changed} changed)", x, r)
    if args.first_order:
        z = x.clone().requires_grad_(True)
        opt = torch.optim.Adam([z], lr=args.lr)
        for it in range(1, args.first_order + 1):
            opt.zero_grad()
            cost(replay.residual(z, shape)).backward()
            opt.step()
            if it % 100 == 0:
                report(f"step {it}", z.detach(), replay.residual(z.detach(), shape))
        return
    lam, now = 1e-3, cost(r)
    for it in range(args.iters):
        t0 = time.time()
        J = replay.jacobian(x, shape, args.chunk)
        w = torch.ones_like(r) if s2 == 0 else 1.0 / (1.0 + r * r / s2)  # IRLS weights of ρ
        A, g = J.T @ (w[:, None] * J), J.T @ (w * r)
        while lam <= 1e8:
            x_new = x + torch.linalg.solve(A + lam * torch.diag(torch.diag(A) + 1e-12), -g)
            r_new = replay.residual(x_new, shape)
            if (c := cost(r_new)) < now:
                x, r, now, lam = x_new, r_new, c, max(lam / 3, 1e-9)
                break
            lam *= 4
        report(f"iteration {it + 1} ({time.time() - t0:.0f} s)", x, r)
        if lam > 1e8:
            break


if __name__ == "__main__":
    main()

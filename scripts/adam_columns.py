#!/usr/bin/env python3
"""What an Adam client's first-layer update says of each column of its batch (issue 45).

A measurement, not part of the engine. Adam moves each coordinate by lr · Σ_t m̂_t / (√v̂_t + ε),
which (ε aside) does not change when that coordinate's local-step gradients are all scaled
together. At the first layer the gradient of unit j and input column k in local step t is
Σ_{i in step t} δ_ij x_ik: linear in column k of the batch once the deltas δ are given, so given
the deltas a column is fixed by the first layer's update only up to a positive scale. On a client
scripts/export_update.py wrote (Adam, rows in the given order, softmax head, ReLU layers):

  columns   the deltas of the client's own rows (an oracle): each continuous column solved from
            the first layer's update alone (one equation a unit, a column's 32 cells unknown,
            several starts): its direction's cosine with the truth, its cells right at the
            best scale and at the scale the solve landed on
  deltas    the true categories known: each unit's deltas (up to scale) solved from the update of
            the categorical columns and the bias, starting from the deltas of the rows with every
            continuous cell at its column's mean, ε annealed from 0.1 to the client's; then the
            continuous columns from those deltas
  moves     how far the whole update moves (of its norm) when a continuous column is scaled, one
            of its cells moved by the scoring tolerance (0.319 std), or the whole column shifted

  python3 scripts/adam_columns.py DIR --encoding ENC --csv ../shared/datasets/adult.csv columns

Needs torch, scipy and safetensors, and adam_basin.py beside it.
"""
import argparse
import math
import os
import sys

import torch

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from adam_basin import BETAS, Rows, flat, load_client  # noqa: E402
import export_update  # noqa: E402

TOLERANCE = 0.319  # SPEC §6: a continuous cell is right within 0.319 std
ANNEAL = [1e-1, 3e-2, 1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5, 1e-6, 1e-8]


def rest_of_network(q, pre):
    """The network's output from its first pre-activation (ReLU layers at 0, 2, 4, ...)."""
    layers = len(q) // 2
    h = torch.relu(pre)
    for i in range(1, layers):
        h = h @ q[f"{2 * i}.weight"].T + q[f"{2 * i}.bias"]
        if i < layers - 1:
            h = torch.relu(h)
    return h


def trajectory_deltas(client, x):
    """Per local step, [units, rows of the step]: d(the step's loss)/d(first pre-activation)."""
    p = {k: v.clone() for k, v in client.w0.items()}
    m = {k: torch.zeros_like(v) for k, v in p.items()}
    v2 = {k: torch.zeros_like(v) for k, v in p.items()}
    deltas, t = [], 0
    for _ in range(client.epochs):
        for xb, yb in client.batches(x):
            t += 1
            q = {k: v.clone().requires_grad_(True) for k, v in p.items()}
            pre = xb @ q["0.weight"].T + q["0.bias"]
            loss = export_update.loss_of("softmax", rest_of_network(q, pre), yb)
            grads = torch.autograd.grad(loss, [pre] + list(q.values()))
            deltas.append(grads[0].T)
            for k, g in zip(q, grads[1:]):
                m[k] = BETAS[0] * m[k] + (1 - BETAS[0]) * g
                v2[k] = BETAS[1] * v2[k] + (1 - BETAS[1]) * g * g
                denom = torch.sqrt(v2[k]) / math.sqrt(1 - BETAS[1] ** t) + client.eps
                p[k] = p[k] - client.lr / (1 - BETAS[0] ** t) * m[k] / denom
    return deltas


def adam_steps(G, lr, eps):
    """G [steps, ...]: each coordinate's local-step gradients -> Adam's summed step."""
    m, v, u = torch.zeros_like(G[0]), torch.zeros_like(G[0]), torch.zeros_like(G[0])
    for t in range(1, len(G) + 1):
        m = BETAS[0] * m + (1 - BETAS[0]) * G[t - 1]
        v = BETAS[1] * v + (1 - BETAS[1]) * G[t - 1] ** 2
        u = u + lr / (1 - BETAS[0] ** t) * m / (torch.sqrt(v + 1e-300) / math.sqrt(1 - BETAS[1] ** t) + eps)
    return u


def lbfgs(v, loss):
    opt = torch.optim.LBFGS([v], max_iter=2000, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-15, tolerance_change=1e-20)

    def closure():
        opt.zero_grad()
        value = loss(v)
        value.backward()
        return value

    opt.step(closure)
    return loss(v).item()


def solve_column(client, deltas, steps, u, n, starts):
    """A column of n cells whose first-layer update under these deltas is u, best of `starts`."""
    def loss(v):
        G = torch.stack([deltas[t] @ v[idx] for t, idx in enumerate(steps)])
        return ((adam_steps(G, client.lr, client.eps) - u) ** 2).sum() / (u ** 2).sum()

    best = None
    for s in range(starts):
        v = (torch.zeros(n) if s == 0 else torch.randn(n)).requires_grad_(True)
        value = lbfgs(v, loss)
        if best is None or value < best[0]:
            best = (value, v.detach().clone())
    return best


def report_column(name, value, col, truth):
    cos = torch.dot(col, truth) / col.norm() / truth.norm()
    scale = torch.dot(col, truth) / torch.dot(col, col)
    right = lambda c: (c - truth).abs().le(TOLERANCE).double().mean().item()
    print(f"{name}: fit {value:.2e}, cosine with the truth {cos.item():.6f}, right {right(col):.3f}, "
          f"right at the best scale ({scale.item():.3f}) {right(scale * col):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", required=True)
    ap.add_argument("--starts", type=int, default=8)
    ap.add_argument("question", choices=["columns", "deltas", "moves"])
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(0)
    encoding, update, client, truth, _, _ = load_client(args.client, args.csv, args.encoding)
    rows_of = Rows(encoding)
    n = len(truth)
    steps = [list(range(s, min(s + client.local_batch, n))) for s in range(0, n, client.local_batch)]
    steps = steps * client.epochs
    u1, ub = update["0.weight"], update["0.bias"]

    if args.question == "columns":
        deltas = trajectory_deltas(client, truth)
        for c in rows_of.cont:
            value, col = solve_column(client, deltas, steps, u1[:, c], n, args.starts)
            report_column(f"column {c}", value, col, truth[:, c])
    elif args.question == "deltas":
        if client.epochs != 1:
            sys.exit("deltas: one local epoch (each row in one step)")
        K = [c for o, k in rows_of.cats for c in range(o, o + k)]
        Xk = torch.cat([truth[:, K], torch.ones(n, 1)], 1)
        Uk = torch.cat([u1[:, K], ub[:, None]], 1)
        weight = 1.0 / (Uk ** 2).sum(1, keepdim=True)
        true = torch.cat(trajectory_deltas(client, truth), 1)
        at_mean = truth.clone()
        at_mean[:, rows_of.cont] = 0.0
        start = torch.cat(trajectory_deltas(client, at_mean), 1)

        def per_unit(D, eps=client.eps):
            G = torch.stack([D[:, idx] @ Xk[idx] for idx in steps])
            return (((adam_steps(G, client.lr, eps) - Uk) ** 2) * weight).sum(1)

        unit = lambda D: D / D.norm(dim=1, keepdim=True).clamp_min(1e-300)
        cosine = lambda D: (unit(D) * unit(true)).sum(1)
        quantiles = lambda t: ", ".join(f"{q:.3f}" for q in torch.quantile(t, torch.tensor([0.1, 0.5, 0.9])).tolist())
        print(f"the true deltas: per-unit misfit median {per_unit(unit(true)).median().item():.2e}")
        print(f"the start: cosine with the true deltas (10/50/90 %) {quantiles(cosine(start))}, "
              f"misfit median {per_unit(unit(start)).median().item():.2e}")
        v = start.clone().requires_grad_(True)
        # ε lowered in stages: a large ε smooths the first step's sign, which plain descent
        # cannot cross (from this start it stops at a misfit near 0.08)
        for eps in ANNEAL:
            lbfgs(v, lambda v: per_unit(unit(v), eps).sum())
        solved = unit(v.detach())
        print(f"solved: cosine with the true deltas {quantiles(cosine(solved))}, "
              f"misfit median {per_unit(solved).median().item():.2e}")
        per_step = [solved[:, idx] for idx in steps]
        for c in rows_of.cont:
            value, col = solve_column(client, per_step, steps, u1[:, c], n, args.starts)
            report_column(f"column {c} from the solved deltas", value, col, truth[:, c])
    else:
        replay = lambda x: flat(client.adam(x, graph=False)).detach()
        base = replay(truth)
        moved = lambda x: ((replay(x) - base).norm() / base.norm()).item()
        for c in rows_of.cont:
            col = truth[:, c]
            line = []
            for s in (0.5, 0.8, 1.25, 2.0):
                x = truth.clone()
                x[:, c] = s * col
                past = ((s - 1) * col).abs().gt(TOLERANCE).double().mean().item()
                line.append(f"×{s}: {moved(x):.2e} ({past:.0%} of cells past)")
            x = truth.clone()
            x[col.abs().argsort()[n // 2], c] += TOLERANCE
            one = moved(x)
            x = truth.clone()
            x[:, c] += TOLERANCE
            print(f"column {c}: scaled {'; '.join(line)}; its median cell moved {one:.2e}; "
                  f"the column shifted {moved(x):.2e}", flush=True)


if __name__ == "__main__":
    main()

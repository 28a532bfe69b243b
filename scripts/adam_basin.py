#!/usr/bin/env python3
"""Where an Adam client's update leads an inversion that starts near the client's own rows.

A measurement for issue 45, not part of the engine: it asks whether the exact loss of an Adam
(or any torch.optim) client has a basin around the true rows that gradient descent can stay in
or return to, and whether a smooth stand-in for the client (the sum of its local batches'
gradients at θ0, which Adam's update follows in sign) leads to the rows from afar.

The client is one scripts/export_update.py wrote into DIR (rows in the given order). Its rows are
read back from the table (update.safetensors' table_rows), encoded as the encoding says, and
replayed differentiably in float64: torch.optim.Adam's own rule (bias-corrected moments,
denominator √v̂ + ε) written out so that the replay has a second-order gradient. The attacker's
rows are relaxed as TabLeak's are (a softmax per categorical feature, its one-hot standardised
as the encoding says; continuous cells free, in standardised units) and optimised by Adam at
--lr on 1 − cos(simulated update, received update) for --steps steps, from

  --noise η ≥ 0   the true rows: continuous cells plus η·N(0, 1), categorical logits 10·one-hot
                  plus 3η·N(0, 1)
  --noise -1      random rows (N(0, 0.25) in every input)

and with --model gsum the stand-in for the client instead of its replay, the last --refine
steps on the replay. With --eps-from E the replay's ε starts at E and falls geometrically to the
client's over the first --anneal share of the steps (a smoothed sign where gradients are small). Every 100 steps it prints the loss and the rows' cell accuracy (Hungarian
matching on the share of wrong cells; a continuous cell right within 0.319 standard deviations,
SPEC §6), and once, up front, how far the stand-in's signs agree with the update's, per tensor.

  python3 scripts/adam_basin.py DIR --csv ../shared/datasets/adult.csv --encoding DIR/../encoding.json \
      --noise 0.3 --steps 500 --lr 0.001

--cell-search SWEEPS asks the question one cell at a time instead (`cell_search`): the true
categories, the continuous cells searched on their columns' quantiles against the exact replay.

Needs torch, scipy and safetensors. Handles clients of scripts/export_update.py's default network
(ReLU hidden layers of any widths, softmax head) trained with Adam (its default betas).
"""
import argparse
import json
import math
import os
import sys

import torch
from safetensors import safe_open
from safetensors.torch import load_file
from scipy.optimize import linear_sum_assignment

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_update  # noqa: E402

BETAS = (0.9, 0.999)


class Client:
    def __init__(self, weights, labels, meta, eps):
        self.w0, self.y, self.eps = weights, labels, eps
        # export_update's network, its parameters passed in (torch.func) so that they can be
        # functions of the rows; it seeds torch to build the network, so the caller's draws are
        # kept apart.
        hidden = [weights[f"{2 * i}.weight"].shape[0] for i in range(len(weights) // 2 - 1)]
        inputs, classes = weights["0.weight"].shape[1], weights[f"{2 * len(hidden)}.weight"].shape[0]
        with torch.random.fork_rng():
            self.model = export_update.network(inputs, hidden, classes, 0).double()
        self.lr = float(meta["client_lr"])
        self.local_batch = int(meta["local_batch"])
        self.epochs = int(meta["local_epochs"])

    def batches(self, x):
        for start in range(0, len(self.y), self.local_batch):
            yield x[start : start + self.local_batch], self.y[start : start + self.local_batch]

    def adam(self, x, eps=None, graph=True):
        """θ0 − θE under Adam, differentiable in x (torch.optim.Adam's rule, weight decay 0), with
        eps in place of the client's where given (a smoothed replay); graph=False: its value only."""
        eps = self.eps if eps is None else eps
        p = {k: v.clone().requires_grad_(True) for k, v in self.w0.items()}
        m = {k: torch.zeros_like(v) for k, v in p.items()}
        v2 = {k: torch.zeros_like(v) for k, v in p.items()}
        t = 0
        for _ in range(self.epochs):
            for xb, yb in self.batches(x):
                t += 1
                keys = list(p)
                loss = export_update.loss_of("softmax", torch.func.functional_call(self.model, p, (xb,)), yb)
                grads = torch.autograd.grad(loss, [p[k] for k in keys], create_graph=graph)
                step = {}
                for k, g in zip(keys, grads):
                    m[k] = BETAS[0] * m[k] + (1 - BETAS[0]) * g
                    v2[k] = BETAS[1] * v2[k] + (1 - BETAS[1]) * g * g
                    # 1e-300 keeps √'s derivative finite where a unit saw no gradient yet.
                    denom = torch.sqrt(v2[k] + 1e-300) / math.sqrt(1 - BETAS[1] ** t) + eps
                    step[k] = p[k] - self.lr / (1 - BETAS[0] ** t) * m[k] / denom
                p = step if graph else {k: v.detach().requires_grad_(True) for k, v in step.items()}
        return {k: self.w0[k] - p[k] for k in self.w0}

    def gradient_sum(self, x):
        """The stand-in: Σ over local batches of their mean loss's gradient at θ0."""
        p = {k: v.clone().requires_grad_(True) for k, v in self.w0.items()}
        keys = list(p)
        total = {k: 0.0 for k in keys}
        for xb, yb in self.batches(x):
            loss = export_update.loss_of("softmax", torch.func.functional_call(self.model, p, (xb,)), yb)
            for k, g in zip(keys, torch.autograd.grad(loss, [p[k] for k in keys], create_graph=True)):
                total[k] = total[k] + g
        return total


def load_client(directory, csv, encoding_path):
    """An Adam client scripts/export_update.py wrote into `directory` (default betas, no weight
    decay, rows in the given order; anything else exits): the encoding, its update, the client
    to replay, its rows encoded, and the table's header and rows."""
    with open(encoding_path) as f:
        encoding = json.load(f)
    path = os.path.join(directory, "update.safetensors")
    with safe_open(path, "pt") as f:
        meta = f.metadata()
    if meta.get("optimizer") != "adam" or "local_order" in meta or "weight_decay" in meta or "betas" in meta:
        sys.exit("an Adam client with torch's default betas, no weight decay, rows in the given order")
    update = {k: v.double() for k, v in load_file(path).items()}
    weights = {k: v.double() for k, v in load_file(os.path.join(directory, "weights.safetensors")).items()}
    header, rows = export_update.read_rows(csv, encoding)
    batch = [rows[i] for i in json.loads(meta["table_rows"])]
    truth = torch.tensor([export_update.encode(r, header, encoding) for r in batch])
    at = header.index(encoding["label"])
    labels = torch.tensor([encoding["classes"].index(r[at]) for r in batch])
    client = Client(weights, labels, meta, float(meta.get("adam_eps", 1e-8)))
    return encoding, update, client, truth, header, rows


def flat(u):
    return torch.cat([u[k].flatten() for k in sorted(u)])


class Rows:
    """The encoding's relaxation: continuous cells free, a softmax per categorical feature."""

    def __init__(self, encoding):
        self.mean, self.std = torch.tensor(encoding["mean"]), torch.tensor(encoding["std"])
        feats = encoding["features"]
        self.cont = [f["offset"] for f in feats if f["kind"] == "continuous"]
        self.cats = [(f["offset"], len(f["categories"])) for f in feats if f["kind"] == "categorical"]

    def decode(self, z):
        x = torch.zeros_like(z)
        for c in self.cont:
            x[:, c] = z[:, c]
        for o, k in self.cats:
            x[:, o : o + k] = (torch.softmax(z[:, o : o + k], -1) - self.mean[o : o + k]) / self.std[o : o + k]
        return x

    def start(self, truth, noise):
        n, d = truth.shape
        if noise < 0:
            return torch.randn(n, d) * 0.5
        z = torch.zeros(n, d)
        for c in self.cont:
            z[:, c] = truth[:, c] + noise * torch.randn(n)
        for o, k in self.cats:
            one_hot = (truth[:, o : o + k] * self.std[o : o + k] + self.mean[o : o + k]).round()
            z[:, o : o + k] = 10 * one_hot + 3 * noise * torch.randn(n, k)
        return z

    def accuracy(self, x, truth):
        n = len(truth)
        features = len(self.cont) + len(self.cats)
        cost = torch.zeros(n, n)
        for i in range(n):
            wrong = sum((x[i, c] - truth[:, c]).abs() > 0.319 for c in self.cont)
            for o, k in self.cats:
                wrong = wrong + (x[i, o : o + k].argmax() != truth[:, o : o + k].argmax(1)).double()
            cost[i] = wrong / features
        r, c = linear_sum_assignment(cost.numpy())
        return 1 - cost[r, c].mean().item()


def cell_search(client, rows_of, truth, target, table, sweeps):
    """The true categories, every continuous cell at the column's mean, then each cell in turn set
    to the one of 41 quantiles of its column (over `table`) whose exact replay fits the update best
    (1 − cos), for `sweeps` passes over the cells: whether the update, read one cell at a time,
    leads to the continuous values once every category is right."""
    fit = lambda x: 1 - torch.cosine_similarity(flat(client.adam(x, graph=False)), target, 0).item()
    grids = {c: torch.unique(torch.quantile(table[:, c], torch.linspace(0, 1, 41))) for c in rows_of.cont}
    x = truth.clone()
    x[:, rows_of.cont] = 0.0
    right = lambda x: (x[:, rows_of.cont] - truth[:, rows_of.cont]).abs().le(0.319).double().mean().item()
    print(f"start: 1 − cos {fit(x):.4f}, cells right {rows_of.accuracy(x, truth):.3f}, continuous {right(x):.3f}")
    for sweep in range(sweeps):
        for i in range(len(x)):
            for c in rows_of.cont:
                best, value = fit(x), x[i, c].item()
                for v in grids[c]:
                    x[i, c] = v
                    if (f := fit(x)) < best:
                        best, value = f, v.item()
                x[i, c] = value
        print(f"sweep {sweep + 1}: 1 − cos {fit(x):.4f}, cells right {rows_of.accuracy(x, truth):.3f}, "
              f"continuous {right(x):.3f}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", help="a directory scripts/export_update.py wrote (an Adam FedAvg client, rows in order)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", required=True)
    ap.add_argument("--noise", type=float, default=-1.0)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--lr", type=float, default=0.001)
    ap.add_argument("--model", choices=["adam", "gsum"], default="adam")
    ap.add_argument("--refine", type=int, default=0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eps-from", type=float, help="replay with this eps first, annealed geometrically to the client's")
    ap.add_argument("--anneal", type=float, default=0.8, help="share of the steps the annealing takes")
    ap.add_argument("--cell-search", type=int, metavar="SWEEPS",
                    help="instead: the true categories, each continuous cell searched on a grid (cell_search)")
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    torch.manual_seed(args.seed)
    encoding, update, client, truth, header, rows = load_client(args.client, args.csv, args.encoding)
    target = flat(update)
    replay = flat(client.adam(truth))
    print(f"replay at the true rows: 1 − cos {1 - torch.cosine_similarity(replay, target, 0).item():.2e}")
    stand_in = client.gradient_sum(truth)
    for k in sorted(update):
        a, b = stand_in[k].flatten(), update[k].flatten()
        print(f"stand-in {k}: signs agree {(a.sign() == b.sign()).double().mean().item():.3f}, "
              f"cos {torch.cosine_similarity(a, b, 0).item():.3f}")
    rows_of = Rows(encoding)
    if args.cell_search:
        table = torch.tensor([export_update.encode(r, header, encoding) for r in rows[:20000]])
        return cell_search(client, rows_of, truth, target, table, args.cell_search)
    z = rows_of.start(truth, args.noise).requires_grad_(True)
    opt = torch.optim.Adam([z], lr=args.lr)
    for it in range(args.steps + 1):
        opt.zero_grad()
        x = rows_of.decode(z)
        exact = args.model == "adam" or it >= args.steps - args.refine
        eps = client.eps
        if args.eps_from:
            share = min(1.0, it / max(1.0, args.anneal * args.steps))
            eps = math.exp(math.log(args.eps_from) * (1 - share) + math.log(client.eps) * share)
        simulated = flat(client.adam(x, eps) if exact else client.gradient_sum(x))
        loss = 1 - torch.cosine_similarity(simulated, target, 0)
        if it % 100 == 0:
            print(f"step {it}: 1 − cos {loss.item():.4f} ({'replay' if exact else 'stand-in'}, eps {eps:.1e}), "
                  f"cells right {rows_of.accuracy(x.detach(), truth):.3f}", flush=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    main()

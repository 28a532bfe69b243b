#!/usr/bin/env python3
"""How far off a row the second layer's refinement still finds it, with and without the first
layer's span (docs/results/continuous.md): a numpy model, not the engine. A FedSGD batch of B
rows of d Gaussian columns on a [100, 100] ReLU network (PyTorch's initialisation, float64);
each start is a batch row plus Gaussian noise; the refinement is least squares on the start's
ReLU pattern for the part of its activation outside the second layer's span, within the first
layer's span or not, for 3 or 30 rounds (until the pattern repeats); then the same with some
rows peeled off both layers' gradients.

  python3 scripts/first_layer_basin.py            # d = 40, B = 32
  python3 scripts/first_layer_basin.py --d 40 --b 24
"""
import argparse

import numpy as np
import torch


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--d", type=int, default=40)
    parser.add_argument("--b", type=int, default=32)
    parser.add_argument("--width", type=int, default=100)
    parser.add_argument("--tries", type=int, default=4, help="starts per row and noise")
    args = parser.parse_args()
    torch.manual_seed(0)
    np.random.seed(0)
    torch.set_default_dtype(torch.float64)
    d, b, h = args.d, args.b, args.width
    net = torch.nn.Sequential(torch.nn.Linear(d, h), torch.nn.ReLU(), torch.nn.Linear(h, h), torch.nn.ReLU(),
                              torch.nn.Linear(h, 2))
    x = torch.randn(b, d)
    y = torch.randint(0, 2, (b,))
    w1, b1 = net[0].weight.detach().numpy(), net[0].bias.detach().numpy()
    rows = x.numpy()

    def spans(left):
        loss = torch.nn.functional.cross_entropy(net(x[left]), y[left], reduction="sum") / b
        g = torch.autograd.grad(loss, list(net.parameters()))
        _, s, vt = np.linalg.svd(g[0].numpy(), full_matrices=False)
        first = vt[: int((s > s[0] * 1e-9).sum())].T
        u, s, _ = np.linalg.svd(g[2].numpy().T, full_matrices=False)
        second = u[:, : int((s > s[0] * 1e-9).sum())]
        return first, np.eye(h) - second @ second.T

    def refine(start, basis, outside, rounds):
        c, seen = basis.T @ start, None
        for _ in range(rounds):
            z = w1 @ (basis @ c) + b1
            live = (z > 0).astype(float)
            c, *_ = np.linalg.lstsq(outside @ (live[:, None] * (w1 @ basis)), -outside @ (live * b1), rcond=None)
            z = w1 @ (basis @ c) + b1
            a = np.maximum(z, 0)
            gap = np.linalg.norm(outside @ a) / max(np.linalg.norm(a), 1e-12)
            pattern = tuple(z > 0)
            if gap < 1e-8 or pattern == seen:
                break
            seen = pattern
        return basis @ c

    def reached(left, basis, outside, rounds, noise):
        hits = tries = 0
        for i in left:
            for _ in range(args.tries):
                found = refine(rows[i] + noise * np.random.randn(d), basis, outside, rounds)
                hits += np.linalg.norm(found - rows[i]) < 1e-6
                tries += 1
        return hits / tries

    everyone = list(range(b))
    first, outside = spans(everyone)
    print(f"d = {d}, B = {b}: the first layer's span has rank {first.shape[1]}")
    print("| refinement | start off by 0.3 std | 0.5 | 0.8 |\n|---|---|---|---|")
    for name, basis in [("free", np.eye(d)), ("within the first layer's span", first)]:
        for rounds in [3, 30]:
            shares = [reached(everyone, basis, outside, rounds, n) for n in [0.3, 0.5, 0.8]]
            print(f"| {name}, {rounds} rounds | " + " | ".join(f"{s:.0%}" for s in shares) + " |")
    print("\n| rows peeled | start off by 0.8 std, within the rows left's spans, 30 rounds |\n|---|---|")
    for peeled in range(0, b, 8):
        left = everyone[peeled:]
        first, outside = spans(left)
        print(f"| {peeled} | {reached(left, first, outside, 30, 0.8):.0%} |")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Synthetic tables of many continuous columns, for the attack on tables unlike Adult: where the
first layer's span fixes few values per row and the ensemble alone recovers little
(docs/results/continuous.md). Nothing of them is committed; the seed fixes them.

  python3 scripts/continuous_tables.py --out /tmp/continuous
  # then, e.g.
  leakscope attack --csv /tmp/continuous/gauss40.csv --label y --batch-size 24 --seed 0

Tables (2,000 rows each, label `y`):
  gauss40   40 independent near-Gaussian columns, two decimals, a coin-flip label
  factor30  30 columns from 6 latent factors plus noise, one decimal, the label a noisy
            threshold of the factors' sum
  mixed24   20 continuous columns (integers, log-normal amounts, proportions) and 4 categorical
            ones (3-6 categories), the label from a score of both
"""
import argparse
import csv
import math
import os
import random


def gauss40(rng):
    header = [f"c{i}" for i in range(40)] + ["y"]
    rows = []
    for _ in range(2000):
        rows.append([f"{sum(rng.uniform(-1, 1) for _ in range(3)):.2f}" for _ in range(40)] + [rng.choice("ab")])
    return header, rows


def factor30(rng):
    loadings = [[rng.gauss(0, 1) for _ in range(6)] for _ in range(30)]
    header = [f"s{i}" for i in range(30)] + ["y"]
    rows = []
    for _ in range(2000):
        f = [rng.gauss(0, 1) for _ in range(6)]
        values = [sum(l * x for l, x in zip(row, f)) + rng.gauss(0, 0.5) for row in loadings]
        label = "hi" if sum(f) + rng.gauss(0, 1) > 0 else "lo"
        rows.append([f"{v:.1f}" for v in values] + [label])
    return header, rows


def mixed24(rng):
    cats = [["north", "south", "east"], ["a", "b", "c", "d"], ["x1", "x2", "x3", "x4", "x5"], list("pqrstu")]
    header = [f"n{i}" for i in range(20)] + ["region", "grade", "kind", "group", "y"]
    rows = []
    for _ in range(2000):
        nums = []
        for i in range(20):
            if i % 3 == 0:
                nums.append(str(rng.randint(18, 90)))
            elif i % 3 == 1:
                nums.append(f"{math.exp(rng.gauss(8, 1)):.0f}")
            else:
                nums.append(f"{rng.betavariate(2, 5):.3f}")
        picks = [rng.choice(c) for c in cats]
        score = float(nums[0]) / 50 + (picks[0] == "south") - (picks[1] in "cd") + rng.gauss(0, 1)
        rows.append(nums + picks + ["yes" if score > 1 else "no"])
    return header, rows


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for name, make in [("gauss40", gauss40), ("factor30", factor30), ("mixed24", mixed24)]:
        header, rows = make(random.Random(f"{args.seed}-{name}"))
        path = os.path.join(args.out, f"{name}.csv")
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
        print(path)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Tables whose columns hold (nearly) nothing of one another, for the fallback's guess.

A server that holds the table guesses a batch from its rows (`assess::table_guess`); on real
tables that guess beats the marginals' draw (the report's guessing) on every batch, on these it
does not. Four tables of 600 rows, written with numpy's generator at seed 7:

  allcont.csv  seven continuous columns on scales from 0.1 to 100; label `y` from two of them
  allcat.csv   six independent categorical columns (2-12 categories); label `y` a coin flip
  multi.csv    age, income, city (7), job (3); label `tier` of four classes, independent
  odd.csv      a constant column, a 200-category column, a normal column and a 97/3 flag;
               label `y` a coin flip
  (and reg.csv, a regression's table: label `target`)

  python3 scripts/structureless_tables.py --out /tmp/structureless
  leakscope attack --csv /tmp/structureless/allcat.csv --label y --hidden 32,32 --train-epochs 1 \\
      --protocol fedavg --client-lr 0.05 --momentum 0.9 --local-batch 8 --local-order shuffled
"""
import argparse
import os

import numpy as np
import pandas as pd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder the tables are written to")
    out = ap.parse_args().out
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(7)
    n = 600
    x = rng.normal(size=(n, 7)) * [1, 10, 100, 0.1, 3, 50, 2] + [0, 5, 1000, 0, 0, 200, 1]
    df = pd.DataFrame(np.round(x, 2), columns=[f"c{i}" for i in range(7)])
    df["y"] = np.where(x[:, 0] + x[:, 3] * 10 > 0, "pos", "neg")
    df.to_csv(os.path.join(out, "allcont.csv"), index=False)
    cats = {f"k{i}": rng.choice([f"v{j}" for j in range(m)], n) for i, m in enumerate([2, 3, 5, 8, 4, 12])}
    df = pd.DataFrame(cats)
    df["y"] = rng.choice(["a", "b"], n)
    df.to_csv(os.path.join(out, "allcat.csv"), index=False)
    df = pd.DataFrame({
        "age": rng.integers(18, 90, n),
        "inc": np.round(rng.lognormal(10, 1, n), 0),
        "city": rng.choice(list("ABCDEFG"), n),
        "job": rng.choice(["x", "y", "z"], n),
    })
    df["tier"] = rng.choice(["t1", "t2", "t3", "t4"], n)
    df.to_csv(os.path.join(out, "multi.csv"), index=False)
    df = pd.DataFrame({
        "const": 1.0,
        "id_like": rng.choice([f"p{j}" for j in range(200)], n),
        "x": rng.normal(size=n),
        "flag": rng.choice(["yes", "no"], n, p=[0.97, 0.03]),
    })
    df["y"] = rng.choice([0, 1], n)
    df.to_csv(os.path.join(out, "odd.csv"), index=False)
    df = pd.DataFrame({"a": rng.normal(size=n), "b": rng.choice(["u", "v", "w"], n), "c": rng.integers(0, 5, n)})
    df["target"] = np.round(df.a * 3 + df.c + rng.normal(size=n), 3)
    df.to_csv(os.path.join(out, "reg.csv"), index=False)


if __name__ == "__main__":
    main()

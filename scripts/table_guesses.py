#!/usr/bin/env python3
"""What a server guesses with no update: the controls behind `table_baseline` and
`imputed_without_update` (docs/results/rounds.md).

For `--trials` batches of B rows drawn from a table, each guess is scored as leakscope scores
(rows matched by the Hungarian method on cells right; a continuous cell is right within 0.319 of
its column's standard deviation; the label is not scored):

  marginals           rows drawn cell by cell from the column distributions (the random baseline)
  table rows          B rows of the table outside the batch, drawn whole
  the table's guess   rows outside the batch chosen as a set (`assess::table_guess`, the report's
                      `table_baseline`): from a draw of the batch's labels, rows swapped in while
                      the set's matched agreement with 8 simulated batches of those labels rises
                      (4 swaps a row tried)
  imputed, half kept  half the cells drawn from the marginals, the rest imputed from the √n rows of
                      the table most like them (`assess::imputed`): no cell carries information
  imputed, categories the categorical cells drawn, the continuous ones imputed so

  python3 scripts/table_guesses.py --csv ../shared/datasets/adult.csv --label salary

Needs numpy, pandas and scipy. Rows with a missing value ('?' or empty) are dropped, as leakscope
drops them. A column is categorical unless it is numeric with more than two values (leakscope's
own inference may differ on other tables).
"""
import argparse

import numpy as np
import pandas as pd
from scipy.optimize import linear_sum_assignment


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--label", required=True)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    df = pd.read_csv(a.csv, skipinitialspace=True).replace("?", np.nan).dropna()
    y = pd.factorize(df[a.label])[0]
    df = df.drop(columns=[a.label]).reset_index(drop=True)
    cat = np.array([not (pd.api.types.is_numeric_dtype(df[c]) and df[c].nunique() > 2) for c in df.columns])
    x = np.stack([pd.factorize(df[c])[0] if cat[j] else df[c].astype(float).to_numpy()
                  for j, c in enumerate(df.columns)], 1).astype(float)
    tol = np.where(cat, 0.0, 0.319 * x.std(0)) + 1e-9
    rng = np.random.default_rng(a.seed)

    def score(truth, rows):
        right = (np.abs(truth[:, None, :] - rows[None, :, :]) <= tol).sum(-1)
        r, c = linear_sum_assignment(-right)
        return right[r, c].sum() / truth.size

    def draw(n):
        return np.stack([x[rng.integers(0, len(x), n), j] for j in range(x.shape[1])], 1)

    def likeliest(values, j):
        if cat[j]:
            u, k = np.unique(values, return_counts=True)
            return u[np.argmax(k)]
        v = np.sort(values)
        held = np.searchsorted(v, v + tol[j], "right") - np.searchsorted(v, v - tol[j], "left")
        return v[np.argmax(held)]

    def impute(rows, fell, sample):
        out, k = rows.copy(), int(np.ceil(np.sqrt(len(sample))))
        for i in range(len(rows)):
            kept = np.where(~fell[i])[0]
            if len(kept) in (0, rows.shape[1]):
                continue
            disagree = (np.abs(sample[:, kept] - rows[i, kept]) > tol[kept]).sum(1)
            near = sample[np.argsort(disagree, kind="stable")[:k]]
            for j in np.where(fell[i])[0]:
                out[i, j] = likeliest(near[:, j], j)
        return out

    def labelled(outside, labels):
        out = []
        for c in labels:
            pool = outside[y[outside] == c]
            while True:
                i = pool[rng.integers(len(pool))]
                if i not in out:
                    out.append(i)
                    break
        return np.array(out)

    def agree(a, b):
        return (np.abs(x[a][:, None, :] - x[b][None, :, :]) <= tol).sum(-1)

    def matched(m):
        return m[linear_sum_assignment(-m)].sum()

    def table_guess(outside, labels, simulated=8, swaps_per_row=4):
        sims = [labelled(outside, labels) for _ in range(simulated)]
        chosen = labelled(outside, labels)
        value = lambda rows: sum(matched(agree(s, rows)) for s in sims)
        best = value(chosen)
        for _ in range(swaps_per_row * len(labels)):
            slot = rng.integers(len(labels))
            pool = outside[y[outside] == labels[slot]]
            tried = chosen.copy()
            tried[slot] = pool[rng.integers(len(pool))]
            if tried[slot] in chosen:
                continue
            v = value(tried)
            if v > best:
                best, chosen = v, tried
        return x[chosen]

    names = ["marginals", "table rows", "the table's guess", "imputed, half kept", "imputed, categories kept"]
    scores = {n: [] for n in names}
    b = a.batch_size
    for _ in range(a.trials):
        at = rng.choice(len(x), b, replace=False)
        truth, sample = x[at], np.delete(x, at, 0)
        scores["the table's guess"].append(score(truth, table_guess(np.setdiff1d(np.arange(len(x)), at), y[at])))
        guess, kept = draw(b), draw(b)
        scores["marginals"].append(score(truth, guess))
        scores["table rows"].append(score(truth, sample[rng.choice(len(sample), b, replace=False)]))
        half = rng.random((b, x.shape[1])) < 0.5
        scores["imputed, half kept"].append(score(truth, impute(np.where(half, guess, kept), half, sample)))
        cont = np.tile(~cat, (b, 1))
        scores["imputed, categories kept"].append(score(truth, impute(np.where(cont, guess, kept), cont, sample)))
    print(f"{a.csv.split('/')[-1]}, B = {b}, {a.trials} batches (seed {a.seed}): cells right, mean ± standard error")
    print("| guess, no update | cells right |\n|---|---|")
    for n in names:
        v = 100 * np.array(scores[n])
        print(f"| {n} | {v.mean():.1f} ± {v.std(ddof=1) / np.sqrt(len(v)):.1f} % |")


if __name__ == "__main__":
    main()

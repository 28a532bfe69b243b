#!/usr/bin/env python3
"""The encoding agreement table: for the Adult sample and German Credit, each scikit-learn
preprocessing python/tests/test_sklearn.py holds leakscope to (and pandas.get_dummies), the
largest gap between the client's own `transform` and `leakscope.encode` under the encoding
`leakscope.encoding_from_sklearn` (or `encoding_from_dummies`) reads from it: absolute, and
relative to max(1, |value|) (leakscope's inputs are float32). Prints a markdown table.

  python3 scripts/bench_encodings.py        # needs the leakscope wheel, pandas, scikit-learn
"""
import os

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MinMaxScaler, OneHotEncoder, OrdinalEncoder, RobustScaler, StandardScaler

import leakscope

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TABLES = {"Adult sample": ("data/adult-sample.csv", "salary"), "German Credit": ("data/german-credit.csv", "credit_risk")}


def preprocessings(cat, num):
    scalers = {"StandardScaler": StandardScaler, "MinMaxScaler": MinMaxScaler, "RobustScaler": RobustScaler,
               "passthrough": lambda: "passthrough"}
    for drop in [None, "first", "if_binary"]:
        for name, scaler in scalers.items():
            onehot = OneHotEncoder(drop=drop, handle_unknown="ignore", sparse_output=False)
            yield f"OneHotEncoder(drop={drop!r}) + {name}", ColumnTransformer([("cat", onehot, cat), ("num", scaler(), num)])
    yield "OrdinalEncoder + StandardScaler", ColumnTransformer([("cat", OrdinalEncoder(), cat), ("num", StandardScaler(), num)])
    yield "Pipeline(OneHotEncoder, StandardScaler(with_mean=False)), numbers first", ColumnTransformer([
        ("num", StandardScaler(), num),
        ("cat", Pipeline([("oh", OneHotEncoder(sparse_output=False)), ("sc", StandardScaler(with_mean=False))]), cat)])


def gaps(path, encoding, want):
    got, _ = leakscope.encode(path, encoding)
    want = np.asarray(want, dtype=np.float64)
    diff = np.abs(got.astype(np.float64) - want)
    return got.shape[1], diff.max(), (diff / np.maximum(1.0, np.abs(want))).max()


def main():
    print("| table | preprocessing | inputs | largest gap | relative to max(1, abs) |")
    print("|---|---|---|---|---|")
    for table, (rel, label) in TABLES.items():
        path = os.path.join(ROOT, rel)
        frame = pd.read_csv(path, na_values=["?"]).dropna().reset_index(drop=True)
        features = frame.drop(columns=label)
        cat = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
        num = [c for c in features.columns if c not in cat]
        for name, ct in preprocessings(cat, num):
            ct.fit(features)
            enc = leakscope.encoding_from_sklearn(ct, label=label, table=path)
            d, absolute, relative = gaps(path, enc, ct.transform(features))
            print(f"| {table} | {name} | {d} | {absolute:.1e} | {relative:.1e} |")
        for drop_first in [False, True]:
            dummies = pd.get_dummies(features, columns=cat, drop_first=drop_first, dtype=float)
            enc = leakscope.encoding_from_dummies(dummies, label=label, table=path)
            d, absolute, relative = gaps(path, enc, dummies.to_numpy(dtype=np.float64))
            print(f"| {table} | pandas.get_dummies(drop_first={drop_first}) | {d} | {absolute:.1e} | {relative:.1e} |")


if __name__ == "__main__":
    main()

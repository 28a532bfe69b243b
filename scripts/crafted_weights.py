#!/usr/bin/env python3
"""Networks a server crafted, against the proofs, end to end (issue 43: "weights crafted by the
server are inputs too").

A FedSGD client's update (the gradient of the mean cross-entropy, float64, sent as float32) on a
[w, w] ReLU network (w 64, 100 or 200; B 8, 16 or 32 rows of the table) whose units the server
laid out on purpose, attacked as a received update by `leakscope attack-update --truth`; every
row the report calls proved is held to the batch (each continuous cell within 0.05 std, every
category the same). The kinds:

  natural   the network as torch.nn.Linear initialises it
  dup1      a quarter of the first layer's units copies of others
  imprint   half the first layer's units share one direction, their biases at the table's
            quantiles along it (the binning of Fowl et al., "Robbing the Fed", ICLR 2022)
  linear    a third of the first layer's units active on every row (bias 10^2)
  lowrank   a first layer of rank 2 to d/3
  sparse    each first-layer unit reads one or two input columns
  dup2      a quarter of the second layer's units copies of others, output weights too
  scale2    a quarter of the second layer's output weights scaled by 10^-4, 10^-2, 10^2 or 10^4
  deadout   a third of the second layer's units with output weights zero
  mix       two of the above

Needs numpy and pandas. e.g.

  leakscope encoding --csv adult.csv --label salary --out adult-encoding.json
  python3 scripts/crafted_weights.py --leakscope BIN --csv adult.csv \
      --encoding adult-encoding.json --seeds 0-9 --out /tmp/crafted

The Rust generator `tests/near_dependent.rs` (`no_network_the_server_crafted_gets_a_false_proof`)
crafts the same first- and second-layer layouts beside a near-dependent pair."""
import argparse, json, os, subprocess, sys, time
import numpy as np
import pandas as pd

KINDS = ["natural", "dup1", "imprint", "linear", "lowrank", "sparse", "dup2", "scale2", "deadout", "mix"]


def encode(df, enc):
    cols = []
    for f in enc["features"]:
        if f["kind"] == "continuous":
            cols.append(df[f["name"]].astype(float).values[:, None])
        else:
            cats = f["categories"]
            v = np.asarray(df[f["name"]].astype(str).values, dtype=object)
            cols.append((v[:, None] == np.array(cats, dtype=object)[None, :]).astype(float))
    raw = np.hstack(cols)
    return (raw - np.array(enc["mean"])) / np.array(enc["std"])


def valid(df, enc):
    keep = np.ones(len(df), bool)
    for f in enc["features"]:
        if f["kind"] == "categorical":
            keep &= df[f["name"]].astype(str).isin(f["categories"]).values
        else:
            keep &= pd.to_numeric(df[f["name"]], errors="coerce").notna().values
    keep &= df[enc["label"]].astype(str).isin(enc["classes"]).values
    return df[keep].reset_index(drop=True)


def init(rng, fi, fo):
    b = 1 / np.sqrt(fi)
    return rng.uniform(-b, b, (fo, fi)), rng.uniform(-b, b, fo)


def craft(kind, rng, W, b, X_table):
    """W, b: lists of the layers' weights and biases (float64), changed in place."""
    W1, b1, W2, b2 = W[0], b[0], W[1], b[1]
    h1, d = W1.shape
    if kind == "mix":
        for k in rng.choice(KINDS[1:-1], 2, replace=False):
            craft(k, rng, W, b, X_table)
        return
    if kind == "dup1":  # pairs of identical first-layer units
        k = h1 // 4
        src = rng.choice(h1, k, replace=False)
        dst = rng.choice(np.setdiff1d(np.arange(h1), src), k, replace=False)
        W1[dst], b1[dst] = W1[src], b1[src]
    elif kind == "imprint":  # one direction, biases at the table's quantiles (bins)
        k = h1 // 2
        v = rng.normal(size=d); v /= np.linalg.norm(v)
        proj = X_table @ v
        qs = np.quantile(proj, np.linspace(0.02, 0.98, k))
        W1[:k] = v; b1[:k] = -qs
    elif kind == "linear":  # units always active
        k = h1 // 3
        b1[rng.choice(h1, k, replace=False)] = 1e2
    elif kind == "lowrank":
        r = int(rng.integers(2, max(3, d // 3)))
        W1[:] = rng.normal(size=(h1, r)) @ rng.normal(size=(r, d)) / np.sqrt(r * d)
    elif kind == "sparse":  # each unit reads one or two input columns
        W1[:] = 0
        for j in range(h1):
            cols = rng.choice(d, int(rng.integers(1, 3)), replace=False)
            W1[j, cols] = rng.normal(size=len(cols))
    elif kind == "dup2":  # second-layer units duplicated, their output weights too
        h2 = W2.shape[0]
        k = h2 // 4
        src = rng.choice(h2, k, replace=False)
        dst = rng.choice(np.setdiff1d(np.arange(h2), src), k, replace=False)
        W2[dst], b2[dst] = W2[src], b2[src]
        W[2][:, dst] = W[2][:, src]
    elif kind == "scale2":
        h2 = W2.shape[0]
        sel = rng.choice(h2, h2 // 4, replace=False)
        f = 10.0 ** rng.choice([-4, -2, 2, 4])
        W[2][:, sel] *= f
    elif kind == "deadout":  # second-layer units whose output weights are zero
        h2 = W2.shape[0]
        W[2][:, rng.choice(h2, h2 // 3, replace=False)] = 0


def grads(W, b, X, y):
    hs, zs = [X], []
    a = X
    for l in range(len(W) - 1):
        z = a @ W[l].T + b[l]; zs.append(z); a = np.maximum(z, 0); hs.append(a)
    o = a @ W[-1].T + b[-1]
    o = o - o.max(1, keepdims=True); p = np.exp(o); p /= p.sum(1, keepdims=True)
    e = p.copy(); e[np.arange(len(y)), y] -= 1; e /= len(y)
    gW, gb = [None] * len(W), [None] * len(W)
    delta = e
    for l in range(len(W) - 1, -1, -1):
        gW[l] = delta.T @ hs[l]; gb[l] = delta.sum(0)
        if l > 0:
            delta = (delta @ W[l]) * (zs[l - 1] > 0)
    return gW, gb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakscope", required=True)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", required=True)
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--out", required=True)
    ap.add_argument("--kinds", default=",".join(KINDS))
    args = ap.parse_args()
    enc = json.load(open(args.encoding))
    df = valid(pd.read_csv(args.csv, skipinitialspace=True), enc)
    X_all = encode(df, enc)
    y_all = df[enc["label"]].astype(str).map({c: i for i, c in enumerate(enc["classes"])}).values
    a, b_ = (int(s) for s in args.seeds.split("-"))
    os.makedirs(args.out, exist_ok=True)
    kinds = args.kinds.split(",")
    total = {"batches": 0, "proved": 0, "false": 0, "twice": 0}
    per_kind = {k: [0, 0, 0, 0, 0, 0.0] for k in kinds}
    for seed in range(a, b_ + 1):
        for kind in kinds:
            rng = np.random.default_rng(seed * 1000 + KINDS.index(kind))
            width = int(rng.choice([64, 100, 200]))
            B = int(rng.choice([8, 16, 32]))
            C = len(enc["classes"])
            d = X_all.shape[1]
            W, b = [], []
            for fi, fo in [(d, width), (width, width), (width, C)]:
                w_, bb = init(rng, fi, fo); W.append(w_); b.append(bb)
            craft(kind, rng, W, b, X_all[rng.choice(len(X_all), min(5000, len(X_all)), replace=False)])
            idx = rng.choice(len(X_all), B, replace=False)
            gW, gb = grads(W, b, X_all[idx], y_all[idx])
            names = ["net.0", "net.2", "net.4"]
            tl = lambda m: np.asarray(m, dtype=np.float32).astype(float).tolist()
            doc = {"format": "leakscope-update/1",
                   "weights": {f"{n}.{s}": tl(t) for n, w_, bb in zip(names, W, b) for s, t in (("weight", w_), ("bias", bb))},
                   "update": {f"{n}.{s}": tl(t) for n, w_, bb in zip(names, gW, gb) for s, t in (("weight", w_), ("bias", bb))},
                   "rows": B, "labels": [enc["classes"][i] for i in y_all[idx]]}
            base = f"{args.out}/{kind}-s{seed}"
            json.dump(doc, open(base + ".update.json", "w"))
            df.iloc[idx].to_csv(base + ".truth.csv", index=False)
            t0 = time.time()
            r = subprocess.run([args.leakscope, "attack-update", "--encoding", args.encoding, "--update",
                                base + ".update.json", "--truth", base + ".truth.csv", "--json", base + ".report.json"],
                               capture_output=True, text=True, env={**os.environ, "RAYON_NUM_THREADS": "1"})
            dt = time.time() - t0
            if r.returncode != 0:
                print(f"{kind} s{seed}: exit {r.returncode}: {r.stderr.strip()[-300:]}", flush=True)
                continue
            rep = json.load(open(base + ".report.json"))
            proved, false, twice = check(rep, df.iloc[idx], enc)
            total["batches"] += 1; total["proved"] += proved; total["false"] += false; total["twice"] += twice
            acc = rep["accuracy"]["total"]
            pk = per_kind[kind]
            per_kind[kind] = [pk[0] + 1, pk[1] + B, pk[2] + proved, pk[3] + false, pk[4] + twice, pk[5] + acc]
            print(f"{kind:8s} s{seed} w{width} B{B}: proved {proved:2d} false {false} twice {twice} accuracy {100 * acc:.1f} % ({dt:.1f} s)", flush=True)
    print(json.dumps(total))
    print("| kind | batches | rows | proved | false proofs | claimed twice | accuracy (mean) |")
    print("|---|---|---|---|---|---|---|")
    for k, v in per_kind.items():
        print(f"| {k} | {v[0]} | {v[1]} | {v[2]} | {v[3]} | {v[4]} | {100 * v[5] / max(v[0], 1):.1f} % |")


def check(rep, truth, enc):
    """The rows the report proved, those no row of the batch, and batch rows claimed more often
    than the batch holds them."""
    rows = rep["reconstruction"]["rows"]
    names = [f["name"] for f in rep["reconstruction"]["features"]]
    proved = [r for r in rows if r.get("provenance") == "proved"]
    false = 0
    claimed = {}
    for r in proved:
        vals = dict(zip(names, r["cells"]))
        hit = None
        for ti, (_, t) in enumerate(truth.iterrows()):
            ok = True
            for f in enc["features"]:
                v = vals[f["name"]]
                if f["kind"] == "continuous":
                    if abs(float(v) - float(t[f["name"]])) > 0.05 * f["std"]:
                        ok = False; break
                elif str(v) != str(t[f["name"]]):
                    ok = False; break
            if ok:
                hit = ti; break
        if hit is None:
            false += 1
        else:
            claimed[hit] = claimed.get(hit, 0) + 1
    twice = sum(max(0, c - held(truth, ti)) for ti, c in claimed.items())
    return len(proved), false, twice


def held(truth, ti):
    """How many rows of the batch equal its row `ti` (a batch may repeat a row)."""
    row = truth.iloc[ti]
    return int((truth == row).all(axis=1).sum())


if __name__ == "__main__":
    main()

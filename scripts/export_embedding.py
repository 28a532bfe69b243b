#!/usr/bin/env python3
r"""Export a PyTorch client with categorical embeddings: its FedSGD update and its encoding.

The client a tabular PyTorch user writes: each categorical column through its own nn.Embedding
(an nn.ModuleList in the columns' order, or an nn.ModuleDict keyed by column with --module-dict),
the embeddings and the standardised continuous columns concatenated in the table's column order,
then a ReLU MLP with a softmax head (cross-entropy), one gradient of the mean loss on the batch.
It writes

  DIR/encoding.json         leakscope's encoding of the table with every categorical column coded
                            "embedding" and its width (the file `attack-update` reads)
  DIR/weights.safetensors   model.state_dict(): embeddings.*.weight [categories, width], then the
                            Linear layers
  DIR/update.safetensors    the gradient, same names; metadata: rows, labels, table_rows
  DIR/rows.csv              the batch's rows, in order (for --truth)

Widths: --width fastai gives min(50, (k + 1) // 2) per column of k categories (fastai's rule),
--width full gives k, a number gives min(that, k).

  ./scripts/leakscope encoding --csv data/adult-sample.csv --label salary --out enc.json
  python3 scripts/export_embedding.py --csv data/adult-sample.csv --encoding enc.json \
      --rows 0,1,2,3,4,5,6,7 --out client
  ./scripts/leakscope attack-update --encoding client/encoding.json \
      --weights client/weights.safetensors --update client/update.safetensors \
      --truth client/rows.csv
"""
import argparse
import csv
import json
import os

import torch
from safetensors.torch import save_file


def width_of(rule: str, k: int) -> int:
    if rule == "fastai":
        return min(50, (k + 1) // 2)
    if rule == "full":
        return k
    return min(int(rule), k)


class EmbeddingMLP(torch.nn.Module):
    def __init__(self, encoding, widths, hidden, module_dict):
        super().__init__()
        cats = [f for f in encoding["features"] if f["kind"] == "categorical"]
        tables = [torch.nn.Embedding(len(f["categories"]), widths[f["name"]]) for f in cats]
        if module_dict:
            self.embeddings = torch.nn.ModuleDict({f["name"]: t for f, t in zip(cats, tables)})
        else:
            self.embeddings = torch.nn.ModuleList(tables)
        self.features = encoding["features"]
        inputs = sum(widths[f["name"]] if f["kind"] == "categorical" else 1 for f in self.features)
        layers, width = [], inputs
        for h in hidden:
            layers += [torch.nn.Linear(width, h), torch.nn.ReLU()]
            width = h
        layers.append(torch.nn.Linear(width, len(encoding["classes"])))
        self.layers = torch.nn.Sequential(*layers)

    def table(self, i, name):
        return self.embeddings[name] if isinstance(self.embeddings, torch.nn.ModuleDict) else self.embeddings[i]

    def forward(self, codes, numbers):
        parts, c, n = [], 0, 0
        for f in self.features:
            if f["kind"] == "categorical":
                parts.append(self.table(c, f["name"])(codes[:, c]))
                c += 1
            else:
                parts.append(numbers[:, n : n + 1])
                n += 1
        return self.layers(torch.cat(parts, dim=1))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", required=True, help="leakscope's own encoding of the table")
    ap.add_argument("--rows", required=True, help="complete-row indices of the batch, e.g. 0,1,2")
    ap.add_argument("--width", default="fastai", help="fastai, full, or a number (capped at k)")
    ap.add_argument("--hidden", default="100,100")
    ap.add_argument("--module-dict", action="store_true", help="embeddings in an nn.ModuleDict keyed by column")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.manual_seed(args.seed)
    enc = json.load(open(args.encoding))
    with open(args.csv, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        table = [r for r in reader]
    names = [f["name"] for f in enc["features"]] + [enc["label"]]
    at = [header.index(n) for n in names]
    complete = [r for r in table if all(r[j].strip() not in ("", "?", "NA") for j in at)]
    picked = [int(i) for i in args.rows.split(",")]
    rows = [complete[i] for i in picked]
    cats = [f for f in enc["features"] if f["kind"] == "categorical"]
    widths = {f["name"]: width_of(args.width, len(f["categories"])) for f in cats}
    codes = torch.tensor(
        [[f["categories"].index(r[header.index(f["name"])]) for f in cats] for r in rows], dtype=torch.long
    )
    nums = [f for f in enc["features"] if f["kind"] == "continuous"]
    numbers = torch.tensor(
        [
            [(float(r[header.index(f["name"])]) - enc["mean"][f["offset"]]) / enc["std"][f["offset"]] for f in nums]
            for r in rows
        ],
        dtype=torch.float32,
    )
    labels = [r[header.index(enc["label"])] for r in rows]
    y = torch.tensor([enc["classes"].index(v) for v in labels])
    hidden = [] if args.hidden == "none" else [int(h) for h in args.hidden.split(",")]
    model = EmbeddingMLP(enc, widths, hidden, args.module_dict)
    weights = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    loss = torch.nn.functional.cross_entropy(model(codes, numbers), y)
    grads = torch.autograd.grad(loss, list(model.parameters()))
    update = {name: g.detach().contiguous() for (name, _), g in zip(model.named_parameters(), grads)}

    # The client's encoding: its columns in the table's order, each categorical one embedded.
    out_enc = {k: v for k, v in enc.items() if k not in ("features", "mean", "std", "model")}
    features, mean, std = [], [], []
    for f in enc["features"]:
        g = dict(f, offset=len(mean))
        if f["kind"] == "categorical":
            g.update(coding="embedding", width=widths[f["name"]])
            mean += [0.0] * widths[f["name"]]
            std += [1.0] * widths[f["name"]]
        else:
            mean.append(enc["mean"][f["offset"]])
            std.append(enc["std"][f["offset"]])
        features.append(g)
    out_enc.update(features=features, mean=mean, std=std)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "encoding.json"), "w") as f:
        json.dump(out_enc, f, indent=1)
    meta = {"rows": str(len(rows)), "labels": json.dumps(labels), "table_rows": json.dumps(picked)}
    save_file(weights, os.path.join(args.out, "weights.safetensors"))
    save_file(update, os.path.join(args.out, "update.safetensors"), metadata=meta)
    with open(os.path.join(args.out, "rows.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(names)
        for r in rows:
            w.writerow([r[j] for j in at])
    print(f"fedsgd update of {len(rows)} rows on an embedding MLP ({json.dumps(widths)}) written to {args.out}")


if __name__ == "__main__":
    main()

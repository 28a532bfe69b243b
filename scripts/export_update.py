#!/usr/bin/env python3
r"""Export a PyTorch client's update for `leakscope attack-update`.

The client's side of a federated round, written the way a PyTorch (or Flower) client computes it:
rows encoded with the table's encoding (`leakscope encoding --csv ... --out encoding.json`), a
fully connected network (ReLU or another activation, or no hidden layer) with a softmax head
(one logit per class, cross-entropy) or a sigmoid head (one logit, BCEWithLogitsLoss, for a
two-class label) or, where the encoding's label is a regression's (`leakscope encoding --task
regression`), one linear output under MSELoss on the label standardised as the encoding states,
and either the gradient of the mean loss on one batch
(FedSGD) or θ0 − θE after E epochs of local training (FedAvg): plain SGD over the rows in order
by default, or the client's own recipe, as a PyTorch (or Flower) user writes it:

  --optimizer sgd|adam|adamw   torch.optim.SGD / Adam / AdamW at --client-lr, created fresh at
                               the start of local training (default: sgd)
  --momentum M --dampening D --nesterov --weight-decay W   SGD's arguments (torch's defaults
                               when not given: 0, 0, off, 0)
  --betas B1,B2 --adam-eps E --weight-decay W   Adam's / AdamW's (torch's defaults when not
                               given: 0.9,0.999, 1e-8, and weight decay 0 for Adam, 0.01 AdamW)
  --shuffle SEED               the rows reshuffled every epoch: DataLoader(TensorDataset(x, y),
                               batch_size=b, shuffle=True, generator=torch.Generator()
                               .manual_seed(SEED)); the labels travel with their rows
  --dtype float64              the network and rows in float64 (model.double()); the files then
                               hold float64 tensors (default float32)

  --sklearn onehot|onehot-drop|ordinal   the rows encoded as a scikit-learn user encodes them:
                               ColumnTransformer([("cat", OneHotEncoder(handle_unknown="ignore",
                               sparse_output=False) (drop="first" for onehot-drop) or
                               OrdinalEncoder(), the columns leakscope reads as categorical),
                               ("num", StandardScaler(), the others)]) fitted on the table's
                               complete rows; writes DIR/encoding.json, its encoding as
                               leakscope.encoding_from_sklearn reads it (needs the leakscope
                               package, pandas and scikit-learn). --encoding is then optional
                               (without it: --label, and leakscope's own encoding picks the rows
                               and the label's classes)

e.g. a client with momentum, reshuffling its rows, in float64:

  python3 scripts/export_update.py --csv adult.csv --encoding encoding.json --rows 0,1,2,3 \
      --protocol fedavg --local-epochs 5 --local-batch 2 --client-lr 0.01 --momentum 0.9 \
      --shuffle 7 --dtype float64 --out client
  leakscope attack-update --encoding encoding.json --weights client/weights.safetensors \
      --update client/update.safetensors --protocol fedavg --local-epochs 5 --local-batch 2 \
      --client-lr 0.01 --momentum 0.9 --local-order shuffled

The update's metadata keeps the rows and labels in the client's original row order whatever the
shuffle; a recipe's settings (only those given), the shuffle's seed and each epoch's order
(local_orders, a JSON list of lists of positions in that original order) are written beside
them. Without any of these flags the files are those the script always wrote. It writes

  DIR/weights.safetensors   the network the server sent (model.state_dict())
  DIR/update.safetensors    the update, same names and shapes; metadata: rows, labels, table_rows
  DIR/weights.npz           the same as numpy archives by name: numpy.savez(f, **state_dict);
  DIR/update.npz              the update's beside its tensors: rows, labels
  DIR/weights-arrays.npz    by position, as a Flower client holds its parameters (a list of
  DIR/update-arrays.npz       arrays in state_dict order): numpy.savez(f, *arrays)
  DIR/update.json           both as leakscope-update/1 JSON (with --json)

In a Flower NumPyClient, the same files come from the arrays it already has:

  class Client(fl.client.NumPyClient):
      def fit(self, parameters, config):           # parameters: the model the server sent
          theta0 = [p.copy() for p in parameters]
          set_weights(model, parameters); train(model, ...)
          theta = [v.cpu().numpy() for v in model.state_dict().values()]
          numpy.savez("weights.npz", *theta0)        # the network the server sent
          numpy.savez("update.npz", *[a - b for a, b in zip(theta0, theta)])   # θ0 − θE
          return theta, n_rows, {}

and `leakscope attack-update --encoding encoding.json --weights weights.npz --update update.npz
--protocol fedavg --local-epochs E --local-batch b --batch-size n` attacks what the server got.

The tests attack the files this script wrote into tests/data/pytorch-update/ and check that they
give what leakscope's own simulation of the same client gives:

  python3 scripts/export_update.py --csv data/adult-sample.csv \
      --encoding tests/data/pytorch-update/encoding.json --rows 0,1,2,3,4,5,6,7 \
      --hidden 32,32 --seed 0 --json --out tests/data/pytorch-update
  python3 scripts/export_update.py --csv data/adult-sample.csv \
      --encoding tests/data/pytorch-update/encoding.json --rows 8,9,10,11,12,13,14,15 \
      --hidden 32,32 --seed 1 --protocol fedavg --local-epochs 2 --local-batch 4 \
      --out tests/data/pytorch-update/fedavg
  python3 scripts/export_update.py ... --rows 16,17,18,19,20,21,22,23 --hidden 32,32 --seed 2 \
      --activation gelu --out tests/data/pytorch-update/gelu
  python3 scripts/export_update.py ... --rows 24,25,26,27 --hidden none --seed 3 --json \
      --out tests/data/pytorch-update/logistic
  python3 scripts/export_update.py ... --rows 28,29,30,31,32,33,34,35 --hidden 32,32 --seed 4 \
      --head sigmoid --json --out tests/data/pytorch-update/sigmoid-head
  python3 scripts/export_update.py --csv data/adult-sample.csv \
      --encoding tests/data/pytorch-update/regression/encoding.json --rows 44,45,46,47,48,49,50,51 \
      --hidden 32,32 --seed 6 --json --out tests/data/pytorch-update/regression

A regression's update carries no labels: they are what the server reconstructs.

The functions (read_rows, encode, network, fedavg_update, make_optimiser) and run(args) with
parser() serve scripts/bench_recipes.py, which imports this file.

Needs torch, numpy and safetensors (pip install torch numpy safetensors).
"""
import argparse
import csv
import json
import os
import sys

import numpy
import torch
from safetensors.torch import save_file

MISSING = {"", "?", "na", "nan", "null"}


def is_missing(cell):
    return cell.lower() in MISSING


def read_rows(path, encoding):
    """The table's complete rows (no missing cell among the features and the label), in order:
    the rows leakscope's table reader keeps, so row k here is row k there."""
    names = [f["name"] for f in encoding["features"]]
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader)]
        index = {h: i for i, h in enumerate(header)}
        used = [index[n] for n in names] + [index[encoding["label"]]]
        rows = []
        for record in reader:
            cells = [c.strip() for c in record]
            if any(is_missing(cells[j]) for j in used):
                continue
            rows.append(cells)
    return header, rows


def encode(cells, header, encoding):
    """One row as the network's input: one-hot categories, raw numbers, then (v − mean) / std."""
    index = {h: i for i, h in enumerate(header)}
    out = [0.0] * len(encoding["mean"])
    for f in encoding["features"]:
        value = cells[index[f["name"]]]
        if f["kind"] == "categorical":
            out[f["offset"] + f["categories"].index(value)] = 1.0
        else:
            out[f["offset"]] = float(value)
    return [(v - m) / s for v, m, s in zip(out, encoding["mean"], encoding["std"])]


def activation(spec):
    """relu, leaky_relu (or leaky_relu=SLOPE), gelu, tanh, sigmoid: as leakscope's --activation."""
    name, _, slope = spec.partition("=")
    if name == "leaky_relu":
        return torch.nn.LeakyReLU(float(slope) if slope else 0.01)
    return {"relu": torch.nn.ReLU, "gelu": torch.nn.GELU, "tanh": torch.nn.Tanh, "sigmoid": torch.nn.Sigmoid}[name]()


def network(d, hidden, classes, seed, act="relu"):
    torch.manual_seed(seed)
    sizes = [d] + hidden + [classes]
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(torch.nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2:
            layers.append(activation(act))
    return torch.nn.Sequential(*layers)


def loss_of(head, logits, y):
    """Softmax cross-entropy over classes, BCE on one logit (the target: the second class), or a
    regression's squared error on one output."""
    if head == "linear":
        return torch.nn.functional.mse_loss(logits[:, 0], y)
    if head == "sigmoid":
        return torch.nn.functional.binary_cross_entropy_with_logits(logits[:, 0], y.to(logits.dtype))
    return torch.nn.functional.cross_entropy(logits, y)


def fedsgd_update(model, x, y, head):
    loss = loss_of(head, model(x), y)
    names = [n for n, _ in model.named_parameters()]
    grads = torch.autograd.grad(loss, [p for _, p in model.named_parameters()])
    return {n: g.detach().contiguous() for n, g in zip(names, grads)}


def make_optimiser(params, lr, name="sgd", **given):
    """torch.optim.SGD / Adam / AdamW at lr with only the arguments given (the rest torch's
    defaults): momentum, dampening, nesterov, weight_decay for SGD; betas, eps, weight_decay
    for Adam and AdamW."""
    allowed = {
        "sgd": ("momentum", "dampening", "nesterov", "weight_decay"),
        "adam": ("betas", "eps", "weight_decay"),
        "adamw": ("betas", "eps", "weight_decay"),
    }[name]
    given = {k: v for k, v in given.items() if v is not None}
    wrong = [k for k in given if k not in allowed]
    if wrong:
        raise ValueError(f"{name} takes no {', '.join(wrong)} (it takes {', '.join(allowed)})")
    kind = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[name]
    return kind(params, lr=lr, **given)


def fedavg_update(model, x, y, head, epochs, local_batch, lr, optimiser=None, shuffle=None, orders=None):
    """E epochs of local training; the update is θ0 − θE. By default plain SGD over the rows in
    order, no reshuffle. optimiser: a function of the parameters giving a torch.optim optimiser
    (called once, before the first step). shuffle: a seed, the rows reshuffled every epoch by a
    DataLoader(shuffle=True) with a torch.Generator seeded so; each epoch's order (positions in
    x) is appended to the list orders where one is given."""
    theta0 = {n: p.detach().clone() for n, p in model.named_parameters()}
    optimiser = optimiser(model.parameters()) if optimiser else torch.optim.SGD(model.parameters(), lr=lr)
    if shuffle is None:
        batches = lambda: (
            (x[start : start + local_batch], y[start : start + local_batch], None)
            for start in range(0, len(y), local_batch)
        )
    else:
        generator = torch.Generator()
        generator.manual_seed(shuffle)
        dataset = torch.utils.data.TensorDataset(x, y, torch.arange(len(y)))
        loader = torch.utils.data.DataLoader(dataset, batch_size=local_batch, shuffle=True, generator=generator)
        batches = lambda: iter(loader)
    for _ in range(epochs):
        order = []
        for xb, yb, at in batches():
            optimiser.zero_grad()
            loss = loss_of(head, model(xb), yb)
            loss.backward()
            optimiser.step()
            if at is not None:
                order += at.tolist()
        if orders is not None and order:
            orders.append(order)
    update = {n: (theta0[n] - p.detach()).contiguous() for n, p in model.named_parameters()}
    # The server holds the model it sent: put θ0 back.
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(theta0[n])
    return update


def parser():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--csv", required=True)
    ap.add_argument("--encoding", help="the table's encoding (optional with --sklearn)")
    ap.add_argument("--label", help="with --sklearn and no --encoding: the label column")
    ap.add_argument("--sklearn", choices=["onehot", "onehot-drop", "ordinal"],
                    help="encode the rows with a scikit-learn ColumnTransformer; writes DIR/encoding.json")
    ap.add_argument("--rows", required=True, help="complete-row indices of the client's batch, e.g. 0,1,2")
    ap.add_argument("--hidden", default="100,100", help="widths, or none (logistic regression)")
    ap.add_argument("--activation", default="relu", help="relu, leaky_relu[=SLOPE], gelu, tanh, sigmoid")
    ap.add_argument("--head", choices=["softmax", "sigmoid"], default="softmax")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--protocol", choices=["fedsgd", "fedavg"], default="fedsgd")
    ap.add_argument("--local-epochs", type=int, default=1)
    ap.add_argument("--local-batch", type=int, default=32)
    ap.add_argument("--client-lr", type=float, default=0.01)
    ap.add_argument("--optimizer", choices=["sgd", "adam", "adamw"], help="FedAvg: the client's torch.optim (default sgd)")
    ap.add_argument("--momentum", type=float, help="SGD's momentum (default 0)")
    ap.add_argument("--dampening", type=float, help="SGD's dampening (default 0)")
    ap.add_argument("--nesterov", action="store_const", const=True, help="SGD's Nesterov momentum")
    ap.add_argument("--weight-decay", type=float, help="L2 (SGD, Adam) or decoupled (AdamW) weight decay")
    ap.add_argument("--betas", help="Adam's / AdamW's B1,B2 (default 0.9,0.999)")
    ap.add_argument("--adam-eps", type=float, help="Adam's / AdamW's eps (default 1e-8)")
    ap.add_argument("--shuffle", type=int, metavar="SEED", help="FedAvg: reshuffle the rows every epoch (DataLoader, generator seeded SEED)")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32", help="the network's and rows' dtype")
    ap.add_argument("--json", action="store_true", help="also write update.json")
    ap.add_argument("--out", required=True)
    return ap


def recipe_of(args):
    """The optimiser's arguments given (None where not), and whether any recipe flag was."""
    betas = tuple(float(b) for b in args.betas.split(",")) if args.betas else None
    if betas is not None and len(betas) != 2:
        sys.exit(f"--betas takes B1,B2, not {args.betas}")
    given = dict(momentum=args.momentum, dampening=args.dampening, nesterov=args.nesterov,
                 weight_decay=args.weight_decay, betas=betas, eps=args.adam_eps)
    custom = args.optimizer is not None or any(v is not None for v in given.values())
    return given, custom


def sklearn_inputs(args, own, header, rows, batch):
    """The batch as a scikit-learn client encodes it (--sklearn): a ColumnTransformer fitted on the
    table's complete rows `rows`, over the columns of leakscope's encoding `own` (its categorical
    ones encoded, its continuous ones standardised); and that transformer's encoding."""
    import pandas
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder, StandardScaler

    import leakscope

    cat = [f["name"] for f in own["features"] if f["kind"] == "categorical"]
    num = [f["name"] for f in own["features"] if f["kind"] == "continuous"]

    def frame(cells):
        return pandas.DataFrame(cells, columns=header)[cat + num].astype({c: float for c in num})

    if args.sklearn == "ordinal":
        encoder = OrdinalEncoder()
    else:
        drop = "first" if args.sklearn == "onehot-drop" else None
        encoder = OneHotEncoder(handle_unknown="ignore", sparse_output=False, drop=drop)
    ct = ColumnTransformer([("cat", encoder, cat), ("num", StandardScaler(), num)]).fit(frame(rows))
    encoding = leakscope.encoding_from_sklearn(
        ct, label=own["label"], table=args.csv, classes=own["classes"] or None,
        task="regression" if own.get("target") else None,
    )
    return encoding, ct.transform(frame(batch)).tolist()


def run(args):
    """Export the update args describe (parser()'s arguments) into args.out."""
    given, custom = recipe_of(args)
    if args.protocol == "fedsgd" and (custom or args.shuffle is not None):
        sys.exit("--optimizer, its settings and --shuffle describe FedAvg's local training (--protocol fedavg)")
    dtype = {"float32": torch.float32, "float64": torch.float64}[args.dtype]
    if args.encoding:
        with open(args.encoding) as f:
            encoding = json.load(f)
    elif args.sklearn and args.label:
        import leakscope

        encoding = leakscope.encoding(args.csv, args.label)
    else:
        sys.exit("--encoding is required (or --sklearn with --label)")
    header, rows = read_rows(args.csv, encoding)
    picked = [int(i) for i in args.rows.split(",")]
    batch = [rows[i] for i in picked]
    label_at = header.index(encoding["label"])
    labels = [r[label_at] for r in batch]
    if args.sklearn:
        # The rows and labels as leakscope's encoding reads them; the inputs the transformer's.
        encoding, inputs = sklearn_inputs(args, encoding, header, rows, batch)
    else:
        inputs = [encode(r, header, encoding) for r in batch]
    x = torch.tensor(inputs, dtype=dtype)
    hidden = [] if args.hidden == "none" else [int(h) for h in args.hidden.split(",")]
    target = encoding.get("target")
    if target:
        # A regression: the label standardised as the encoding states it; no labels written.
        args.head = "linear"
        y = torch.tensor([(float(l) - target["mean"]) / target["std"] for l in labels], dtype=dtype)
        labels = None
        outputs = 1
    else:
        y = torch.tensor([encoding["classes"].index(l) for l in labels])
        classes = len(encoding["classes"])
        if args.head == "sigmoid" and classes != 2:
            sys.exit(f"a sigmoid head is one logit for a two-class label; {encoding['label']} has {classes} classes")
        outputs = 1 if args.head == "sigmoid" else classes
    model = network(x.shape[1], hidden, outputs, args.seed, args.activation)
    if dtype != torch.float32:
        model = model.to(dtype)
    orders = []
    if args.protocol == "fedsgd":
        update = fedsgd_update(model, x, y, args.head)
    else:
        optimiser = None
        if custom:
            name = args.optimizer or "sgd"
            try:  # torch's own checks too (Nesterov needs momentum and no dampening)
                make_optimiser([torch.zeros(1, requires_grad=True)], args.client_lr, name, **given)
            except ValueError as e:
                sys.exit(f"the client's optimiser: {e}")
            optimiser = lambda params: make_optimiser(params, args.client_lr, name, **given)
        update = fedavg_update(model, x, y, args.head, args.local_epochs, args.local_batch, args.client_lr,
                               optimiser=optimiser, shuffle=args.shuffle, orders=orders)

    os.makedirs(args.out, exist_ok=True)
    weights = {n: t.detach().contiguous() for n, t in model.state_dict().items()}
    meta = {
        "rows": str(len(batch)),
        "table_rows": json.dumps(picked),
        "protocol": args.protocol,
        "activation": args.activation,
        "head": args.head,
    }
    if labels is not None:
        meta["labels"] = json.dumps(labels)
    if args.protocol == "fedavg":
        meta.update(local_epochs=str(args.local_epochs), local_batch=str(args.local_batch), client_lr=str(args.client_lr))
    # Only what was given: without the new flags the metadata is what it always was.
    if custom:
        meta["optimizer"] = args.optimizer or "sgd"
        for k, v in given.items():
            if v is not None:
                meta["adam_eps" if k == "eps" else k] = ",".join(map(str, v)) if k == "betas" else str(v).lower()
    if args.shuffle is not None:
        meta.update(local_order="shuffled", shuffle_seed=str(args.shuffle), local_orders=json.dumps(orders))
    if args.dtype != "float32":
        meta["dtype"] = args.dtype
    if args.sklearn:
        meta["sklearn"] = args.sklearn
        with open(os.path.join(args.out, "encoding.json"), "w") as f:
            json.dump(encoding, f)
    save_file(weights, os.path.join(args.out, "weights.safetensors"))
    save_file(update, os.path.join(args.out, "update.safetensors"), metadata=meta)
    as_numpy = lambda tensors: {n: t.numpy() for n, t in tensors.items()}
    numpy.savez(os.path.join(args.out, "weights.npz"), **as_numpy(weights))
    numpy.savez(
        os.path.join(args.out, "update.npz"),
        **as_numpy(update),
        rows=numpy.array(len(batch)),
        **({} if labels is None else {"labels": numpy.array(labels)}),
    )
    # By position, in state_dict order: what Flower's parameters_to_ndarrays gives.
    numpy.savez(os.path.join(args.out, "weights-arrays.npz"), *as_numpy(weights).values())
    numpy.savez(os.path.join(args.out, "update-arrays.npz"), *[update[n].numpy() for n in weights])
    if args.json:
        doc = {
            "format": "leakscope-update/1",
            "weights": {n: t.tolist() for n, t in weights.items()},
            "update": {n: t.tolist() for n, t in update.items()},
            "rows": len(batch),
            **({} if labels is None else {"labels": labels}),
        }
        with open(os.path.join(args.out, "update.json"), "w") as f:
            json.dump(doc, f)
    recipe = "".join(f", {k}={v}" for k, v in meta.items() if k in ("optimizer", "momentum", "dampening", "nesterov", "weight_decay", "betas", "adam_eps", "shuffle_seed", "dtype", "sklearn"))
    print(f"{args.protocol} update of {len(batch)} rows on a {x.shape[1]}-{args.hidden}-{outputs} network ({args.head} head{recipe}) written to {args.out}")
    return meta


def main():
    run(parser().parse_args())


if __name__ == "__main__":
    main()

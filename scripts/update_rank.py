#!/usr/bin/env python3
"""What a FedAvg client's update determines about its rows, locally: the numerical rank of the
Jacobian d(update)/d(encoded rows) at the client's own rows, against the float32 rounding the
update is stored with.

The client is the one scripts/export_update.py wrote into DIR (weights.safetensors,
update.safetensors and its metadata: the rows, the recipe): it is replayed in float64 by the same
torch.optim code (export_update.fedavg_update) with each encoded cell moved by ±h (central
differences), and the Jacobian J [update entries × rows·inputs] is reduced to its singular
values. A direction of the rows (a unit change of the encoded rows) whose effect on the update,
σ, exceeds k times the update's own float32 rounding (‖update‖·2⁻²⁴) is determined by the update
to first order; the script prints how many directions clear k = 1, 10, ..., 10⁴, the smallest and
largest σ, and the same for plain SGD on the same rows and network (lr 0.01) for comparison.

A local statement: it says the update changes, to first order and beyond its rounding, with every
small change of the rows, not that no other rows far away give the same update, nor that an
attack can find them.

  python3 scripts/update_rank.py --csv ../shared/datasets/adult.csv --encoding DIR/../encoding.json DIR

Needs torch, numpy and safetensors (as export_update.py).
"""
import argparse
import json
import os
import sys

import torch

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_update  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file  # noqa: E402


def client(meta):
    """The recipe in the update's metadata as make_optimiser's name and arguments."""
    name = meta.get("optimizer", "sgd")
    keys = ["momentum", "dampening", "nesterov", "weight_decay"] if name == "sgd" else ["betas", "adam_eps", "weight_decay"]
    given = {}
    for key in (k for k in keys if k in meta):
        value = meta[key]
        if key == "nesterov":
            given[key] = value == "true"
        elif key == "betas":
            given[key] = tuple(float(b) for b in value.split(","))
        else:
            given["eps" if key == "adam_eps" else key] = float(value)
    return name, given


def jacobian(model, weights, x, y, head, epochs, local_batch, lr, optimiser, h):
    names = list(weights)

    def update(rows):
        model.load_state_dict(weights)
        u = export_update.fedavg_update(model, rows, y, head, epochs, local_batch, lr, optimiser=optimiser)
        return torch.cat([u[n].flatten() for n in names if n in u])

    base = update(x)
    flat = x.flatten()
    cols = []
    for i in range(flat.numel()):
        up, down = flat.clone(), flat.clone()
        up[i] += h
        down[i] -= h
        cols.append((update(up.view_as(x)) - update(down.view_as(x))) / (2 * h))
    return base, torch.stack(cols, 1)


def report(label, base, j):
    s = torch.linalg.svdvals(j)
    rounding = base.norm().item() * 2.0 ** -24
    counts = ", ".join(f"{int((s > k * rounding).sum())} (k = {k:g})" for k in (1, 10, 100, 1e3, 1e4))
    print(f"{label}: {j.shape[1]} unknowns, {j.shape[0]} update entries, ‖update‖ {base.norm():.3e}; "
          f"σ max {s[0]:.3e}, σ min {s[-1]:.3e} = {s[-1] / rounding:.3g}× the rounding; directions over k× it: {counts}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("client", help="a directory scripts/export_update.py wrote (a FedAvg client)")
    ap.add_argument("--csv", required=True, help="the table the client's rows were drawn from")
    ap.add_argument("--encoding", required=True)
    ap.add_argument("--hidden", default="100,100")
    ap.add_argument("--seed", type=int, default=0, help="the network's seed, as export_update was given")
    ap.add_argument("--h", type=float, default=1e-7, help="the central differences' step (encoded units)")
    args = ap.parse_args()
    with open(args.encoding) as f:
        encoding = json.load(f)
    with safe_open(os.path.join(args.client, "update.safetensors"), "pt") as f:
        meta = f.metadata()
    if meta.get("protocol") != "fedavg" or "local_order" in meta:
        sys.exit("a FedAvg client whose rows come in the given order (the replay needs the order)")
    header, rows = export_update.read_rows(args.csv, encoding)
    batch = [rows[i] for i in json.loads(meta["table_rows"])]
    torch.set_default_dtype(torch.float64)
    x = torch.tensor([export_update.encode(r, header, encoding) for r in batch])
    at = header.index(encoding["label"])
    y = torch.tensor([encoding["classes"].index(r[at]) for r in batch])
    weights = {n: t.double() for n, t in load_file(os.path.join(args.client, "weights.safetensors")).items()}
    hidden = [int(h) for h in args.hidden.split(",")]
    model = export_update.network(x.shape[1], hidden, len(encoding["classes"]), args.seed).double()
    epochs, local_batch = int(meta["local_epochs"]), int(meta["local_batch"])
    for label, (name, given), lr in [
        ("the client's recipe", client(meta), float(meta["client_lr"])),
        ("plain SGD, lr 0.01", ("sgd", {}), 0.01),
    ]:
        opt = lambda params, name=name, given=given, lr=lr: export_update.make_optimiser(params, lr, name, **given)
        base, j = jacobian(model, weights, x, y, "softmax", epochs, local_batch, lr, opt, args.h)
        report(f"{label} ({name} {given or ''}, lr {lr}, E {epochs}, batches of {local_batch})", base, j)


if __name__ == "__main__":
    main()

"""A PyTorch client of the Adult sample as a Flower ClientApp trains it: rows encoded with
leakscope's encoding of the whole table, a ReLU MLP, and either one SGD step on all the client's
rows (FedSGD) or plain SGD over them in order (FedAvg)."""
import csv
import io
from pathlib import Path
from typing import List

import numpy as np
import torch

import leakscope

ADULT = Path(__file__).resolve().parents[2] / "data" / "adult-sample.csv"


def encoding() -> dict:
    return leakscope.encoding(ADULT, label="salary")


def client_rows(first: int, count: int) -> bytes:
    """Complete rows first .. first + count of the sample, as a CSV of their own."""
    with open(ADULT, newline="") as f:
        rows = list(csv.reader(f))
    body = [r for r in rows[1:] if not any(c.strip() in ("", "?") for c in r)]
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(rows[0])
    w.writerows(body[first : first + count])
    return out.getvalue().encode()


def network(d: int, seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(
        torch.nn.Linear(d, 32), torch.nn.ReLU(), torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 2)
    )


def train(model: torch.nn.Module, x: np.ndarray, y: np.ndarray, protocol: str, epochs: int, batch: int, lr: float):
    xs, ys = torch.from_numpy(x), torch.from_numpy(y)
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    steps = [(0, len(ys))] if protocol == "fedsgd" else [(s, s + batch) for s in range(0, len(ys), batch)]
    for _ in range(1 if protocol == "fedsgd" else epochs):
        for a, b in steps:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(xs[a:b]), ys[a:b]).backward()
            opt.step()


def state(model: torch.nn.Module) -> List[np.ndarray]:
    return [v.detach().numpy().copy() for v in model.state_dict().values()]

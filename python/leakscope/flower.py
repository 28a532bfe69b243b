"""A Flower client Mod that attacks every training reply before it leaves, as an honest-but-curious
server would, and scores the attack against the client's own rows.

    app = ClientApp(client_fn, mods=[leakage_mod("client.csv", label="salary", ...)])

The client's recipe says what the update is: FedSGD (one SGD step of `client_lr` on all its rows:
the server reads the gradient as (θ0 − θ1) / client_lr) or FedAvg (`local_epochs` passes over its
rows in order, batches of `local_batch`, plain SGD of `client_lr`: the update is θ0 − θE). It is
given once, as the mod's options, and any of `protocol`, `local_epochs`, `local_batch`,
`client_lr` found in the round's ConfigRecord overrides it for that round. `table` holds the rows
the client trains on every round, in the order it trains on them."""
from __future__ import annotations

import io
import json
import os
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native, defaults
from ._convert import call, encoding_json, options_json, table_bytes, update_bytes

RECIPE = ("protocol", "local_epochs", "local_batch", "client_lr")
#: The metric a DP step before this mod leaves in the reply for ε spent so far (Opacus's
#: accountant gives it); absent, the record's epsilon is null.
EPSILON_KEY = "epsilon"


def _arrays(content: Any) -> Tuple[List[str], List[np.ndarray]]:
    """The first ArrayRecord of a message's content: names and arrays, in order."""
    records = content.array_records
    if not records:
        raise ValueError("leakage_mod: the message carries no ArrayRecord (no model to audit)")
    record = next(iter(records.values()))
    names = list(record.keys())
    return names, [record[n].numpy() for n in names]


def _config(content: Any) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for record in content.config_records.values():
        out.update(dict(record))
    return out


def _metric(content: Any, key: str) -> Optional[float]:
    for record in content.metric_records.values():
        if key in record:
            return float(record[key])
    return None


def _round_of(config: Dict[str, Any], group_id: str, fallback: int) -> int:
    """The round's number: the strategy's `server-round`, else the message's group (Flower uses
    it for the round), else this mod's count of rounds."""
    for value in (config.get("server-round"), group_id):
        try:
            return int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            continue
    return fallback


def _named(names: List[str], arrays: List[np.ndarray]) -> Union[Dict[str, np.ndarray], List[np.ndarray]]:
    # State-dict names (fc1.weight, 0.bias) are kept; anything else goes by position.
    if all(n.endswith((".weight", ".bias")) for n in names):
        return dict(zip(names, arrays))
    return arrays


def _with_labels(arrays: Union[Dict[str, np.ndarray], List[np.ndarray]], labels: np.ndarray) -> bytes:
    """The update as a numpy archive with the client's labels beside its tensors."""
    out = io.BytesIO()
    if isinstance(arrays, dict):
        np.savez(out, **arrays, labels=labels)  # type: ignore[arg-type]  # as in _convert
    else:
        np.savez(out, *arrays, labels=labels)
    return out.getvalue()


class _Rows:
    """A client's rows as the engine reads them under the encoding: the CSV, how many, and their
    labels in order (a FedAvg server is given them, as the reference assumes; a FedSGD server
    reads them off the gradient itself)."""

    def __init__(self, table: bytes, encoding: str) -> None:
        _, _, y, regression = _native.encode(table, encoding)
        classes = json.loads(encoding)["classes"]
        self.table = table
        self.count = len(y)
        self.labels = None if regression else np.array([classes[int(v)] for v in y])


def _client_of(context: Any) -> str:
    """A simulation's partition id where there is one (stable across runs), else the node's id."""
    node_config = getattr(context, "node_config", None) or {}
    return str(node_config.get("partition-id", context.node_id))


class LeakageMod:
    """The Mod `leakage_mod` returns; `records` holds this process's records."""

    def __init__(
        self,
        table: Any,
        label: str,
        *,
        encoding: Any = None,
        protocol: Optional[str] = None,
        local_epochs: Optional[int] = None,
        local_batch: Optional[int] = None,
        client_lr: Optional[float] = None,
        block_above: Optional[float] = None,
        max_seconds: Optional[float] = None,
        records: Optional[Union[str, "os.PathLike[str]"]] = "leakscope-records.jsonl",
        client: Optional[str] = None,
        **options: Any,
    ) -> None:
        if callable(table) and encoding is None:
            raise ValueError("leakage_mod: with a table per client (a callable), give the federation's encoding")
        if encoding is None:
            encoding = _native.encoding(table_bytes(table), options_json({"label": label}))
        self.encoding = encoding_json(encoding)
        self.label = label
        # The recipe's parts left out are the engine's defaults.
        given = {"protocol": protocol, "local_epochs": local_epochs, "local_batch": local_batch, "client_lr": client_lr}
        engine = defaults()
        self.recipe: Dict[str, Any] = {k: engine[k] if v is None else v for k, v in given.items()}
        self.block_above = block_above
        self.max_seconds = max_seconds
        self.path = records
        self.client = client
        self.options = options
        self.records: List[Dict[str, Any]] = []
        # One ClientApp serves every node of a simulation: a callable table gives each its rows.
        self.table_of: Optional[Callable[[Any], Any]] = table if callable(table) else None
        self.clients: Dict[Any, _Rows] = {} if callable(table) else {None: _Rows(table_bytes(table), self.encoding)}

    def rows_for(self, context: Any) -> "_Rows":
        if self.table_of is None:
            return self.clients[None]
        key = context.node_id
        if key not in self.clients:
            self.clients[key] = _Rows(table_bytes(self.table_of(context)), self.encoding)
        return self.clients[key]

    def __call__(self, msg: Any, context: Any, call_next: Callable[[Any, Any], Any]) -> Any:
        from flwr.app import Error, Message, MessageType, MetricRecord

        if msg.metadata.message_type != MessageType.TRAIN:
            return call_next(msg, context)
        names, sent = _arrays(msg.content)
        config = _config(msg.content)
        reply = call_next(msg, context)
        if reply.has_error():
            return reply
        reply_names, got = _arrays(reply.content)
        if reply_names != names or any(a.shape != b.shape for a, b in zip(sent, got)):
            raise ValueError("leakage_mod: the reply's arrays are not the model the server sent")
        recipe = {k: config.get(k, v) for k, v in self.recipe.items()}
        record = self.audit(names, sent, got, recipe, self.rows_for(context), epsilon=_metric(reply.content, EPSILON_KEY))
        record["round"] = _round_of(config, msg.metadata.group_id, len(self.records) + 1)
        record["client"] = self.client if self.client is not None else _client_of(context)
        why = self.blocks(record)
        record["blocked"] = why
        self.write(record)
        if why is not None:
            return Message(Error(code=6, reason=f"leakscope blocked this update: {why}"), reply_to=msg)
        metrics = {
            "leakscope.accuracy": record["accuracy"],
            "leakscope.gain_over_random": record["gain_over_random"],
            "leakscope.rows_proved": record["rows_proved"],
            "leakscope.seconds": record["seconds"],
        }
        # Into the reply's own MetricRecord: Flower's strategies take exactly one per reply (and
        # then average these figures over the clients, weighted as the rest).
        present: Dict[str, Any] = {k: float(v) for k, v in metrics.items() if v is not None}
        records = reply.content.metric_records
        if records:
            next(iter(records.values())).update(present)
        else:
            reply.content["metrics"] = MetricRecord(present)
        return reply

    def audit(
        self,
        names: List[str],
        sent: Sequence[np.ndarray],
        got: Sequence[np.ndarray],
        recipe: Dict[str, Any],
        rows: "_Rows",
        epsilon: Optional[float] = None,
    ) -> Dict[str, Any]:
        """One round's record from the model sent and the model about to be sent back."""
        start = time.perf_counter()
        if recipe["protocol"] == "fedsgd":
            update = [(a - b) / recipe["client_lr"] for a, b in zip(sent, got)]
        else:
            update = [a - b for a, b in zip(sent, got)]
        options = {**self.options, **recipe, "batch_size": rows.count}
        arrays = _named(names, update)
        if recipe["protocol"] == "fedavg" and rows.labels is not None:
            archive = _with_labels(arrays, rows.labels)
        else:
            archive = update_bytes(arrays) or b""
        out = call(
            _native.audit_round,
            self.encoding,
            archive,
            update_bytes(_named(names, list(sent))),
            options_json(options),
            rows.table,
            self.max_seconds,
            lambda p: True,
        )
        scored = out["scored"] or {}
        acc = scored.get("accuracy") or {}
        return {
            "attacked": out["attacked"],
            "budget": out["budget"],
            "accuracy": acc.get("total"),
            "categorical": acc.get("categorical"),
            "continuous": acc.get("continuous"),
            "random_baseline": scored.get("random_baseline"),
            "gain_over_random": scored.get("gain_over_random"),
            "rows_proved": scored.get("rows_proved"),
            "rows_consistent": scored.get("rows_consistent"),
            "rows": scored.get("rows"),
            "epsilon": epsilon,
            "seconds": time.perf_counter() - start,
            **{k: recipe[k] for k in RECIPE},
        }

    def blocks(self, record: Dict[str, Any]) -> Optional[str]:
        acc = record["accuracy"]
        if self.block_above is None or acc is None or acc <= self.block_above:
            return None
        return (
            f"the server would reconstruct {100 * acc:.1f} % of this client's cells "
            f"({record['rows_proved']} of {record['rows']} rows proved), over block_above = {self.block_above}"
        )

    def write(self, record: Dict[str, Any]) -> None:
        self.records.append(record)
        if self.path is not None:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")


def leakage_mod(table: Any, label: str, **options: Any) -> LeakageMod:
    """A Mod for `ClientApp(client_fn, mods=[...])` that attacks each training reply against the
    client's rows `table` (CSV path, CSV bytes or DataFrame, or a function of the node's Context
    giving them, for one ClientApp serving many nodes), records accuracy, gain over the
    random guess, rows proved, ε and seconds per round (JSON lines in `records`, and Flower
    metrics), and with `block_above=x` replaces a reply whose accuracy passes x by an error reply
    saying why. `encoding`: the federation's encoding (default: `table`'s own); `max_seconds`: a
    round projected to take longer is attacked on its first local batch instead. Other options
    are `attack`'s (ensemble, iterations, …)."""
    return LeakageMod(table, label, **options)


def read_records(*paths: Union[str, "os.PathLike[str]"]) -> Any:
    """Every record in these JSON-lines files as one table: a pandas DataFrame sorted by client
    and round where pandas is installed, else a list of dicts."""
    rows: List[Dict[str, Any]] = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            rows.extend(json.loads(line) for line in f if line.strip())
    rows.sort(key=lambda r: (str(r.get("client")), r.get("round", 0)))
    try:
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def plot_records(records: Any, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> Any:
    """One panel per client: the attack's accuracy and the random guess over rounds, blocked
    rounds marked. Needs matplotlib; saved to `path` where given; returns the figure."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = records.to_dict("records") if hasattr(records, "to_dict") else list(records)
    clients = sorted({str(r["client"]) for r in rows})
    fig, axes = plt.subplots(len(clients), 1, figsize=(6, 2.4 * len(clients)), squeeze=False, sharex=True)
    for ax, client in zip(axes[:, 0], clients):
        mine = sorted((r for r in rows if str(r["client"]) == client), key=lambda r: r["round"])
        rounds = [r["round"] for r in mine]
        ax.plot(rounds, [r["accuracy"] for r in mine], "o-", label="server's reconstruction")
        ax.plot(rounds, [r["random_baseline"] for r in mine], "s--", label="random guess")
        blocked = [r for r in mine if isinstance(r.get("blocked"), str)]  # NaN in a DataFrame
        ax.plot([r["round"] for r in blocked], [r["accuracy"] for r in blocked], "rx", ms=10, label="blocked")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(rounds)
        ax.set_title(f"client {client}")
        ax.set_ylabel("cells right")
    axes[-1, 0].set_xlabel("round")
    axes[0, 0].legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig

"""leakscope: how much of a table a federated-learning server can reconstruct from one client's
update. The npm package's API for Python: tables as CSV paths, CSV bytes or pandas DataFrames,
options as keyword arguments (the npm package's, in snake_case, with the engine's defaults),
reports as the CLI's JSON. `leakscope.flower` holds the Flower client Mod; `encoding_from_sklearn`
and `encoding_from_dummies` read a client's own scikit-learn or pandas preprocessing into an
encoding."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _native
from ._convert import (
    ProgressArg,
    Reporter,
    call,
    encoding_json,
    options_json,
    snake_keys,
    table_bytes,
    update_bytes,
)
from ._native import Cancelled, LeakscopeError
from ._sklearn import encoding_from_dummies, encoding_from_sklearn

__all__ = [
    "Cancelled",
    "LeakscopeError",
    "attack",
    "attack_update",
    "attacks",
    "audit",
    "defaults",
    "encode",
    "encoding",
    "encoding_from_dummies",
    "encoding_from_sklearn",
    "inspect",
    "privacy",
]


def inspect(table: Any) -> Dict[str, Any]:
    """Columns, inferred kinds, label candidates and rows with missing values."""
    return call(_native.inspect, table_bytes(table))  # type: ignore[no-any-return]


def defaults() -> Dict[str, Any]:
    """The options a run gets for every one it leaves out (snake_case)."""
    return snake_keys(json.loads(_native.defaults()))


def attacks() -> List[Dict[str, Any]]:
    """The attacks this engine offers, with their settings, defaults and limits."""
    return json.loads(_native.attacks())  # type: ignore[no-any-return]


def encoding(table: Any, label: str, **options: Any) -> Dict[str, Any]:
    """The table's encoding (one-hot categories, standardised columns), as `leakscope encoding`
    writes it: what a client trains on and what `attack_update` reads an update against."""
    return call(_native.encoding, table_bytes(table), options_json({"label": label, **options}))  # type: ignore[no-any-return]


def encode(table: Any, encoding: Any) -> Any:
    """The table's complete rows as the network's inputs under `encoding`: (X float32 [n, d],
    y) with y the class indices (int64) or a regression's standardised labels (float32)."""
    import numpy as np

    x, d, y, regression = _native.encode(table_bytes(table), encoding_json(encoding))
    xs = np.asarray(x, dtype=np.float32).reshape(-1, d)
    return xs, np.asarray(y, dtype=np.float32 if regression else np.int64)


def attack(table: Any, label: str, *, progress: ProgressArg = None, **options: Any) -> Dict[str, Any]:
    """Attack one batch drawn from the table: the report (the JSON report's fields)."""
    reporter = Reporter(progress)
    try:
        return call(  # type: ignore[no-any-return]
            _native.attack, table_bytes(table), options_json({"label": label, **options}), reporter
        )
    finally:
        reporter.close()


def audit(
    table: Any,
    label: str,
    *,
    run: Optional[Dict[str, Any]] = None,
    quick: bool = False,
    progress: ProgressArg = None,
    **grid: Any,
) -> Dict[str, Any]:
    """The table's exposure over a grid of settings: `run` holds the attack's options (as
    `attack` takes them), `grid` the audit's (batch_sizes, noise_scales, batches, …); `quick`
    starts from the smaller grid the page runs."""
    options = snake_keys(json.loads(_native.audit_defaults(quick)))
    options.update({k: v for k, v in grid.items() if v is not None})
    options["run"] = json.loads(options_json({"label": label, **(run or {})}))
    reporter = Reporter(progress)
    try:
        return call(_native.audit, table_bytes(table), options_json(options), reporter)  # type: ignore[no-any-return]
    finally:
        reporter.close()


def privacy(
    noise_multiplier: float,
    rounds: int,
    sample_rate: Optional[float] = None,
    delta: Optional[float] = None,
    canaries: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """ε over rounds of clipped, noised updates with client sampling (RDP, as Opacus), per round
    and against the server that knows whom it sampled. `canaries` ({"inserted", "dimension",
    optionally "held_out" and "seed"}) also runs that many random canaries through the Gaussian
    mechanism for an ε measured beside the accountant's (under "canaries" in the answer)."""
    query: Dict[str, Any] = {"noise_multiplier": noise_multiplier, "rounds": rounds, "sample_rate": sample_rate, "delta": delta}
    if canaries is not None:
        query["canaries"] = json.loads(options_json(canaries))
    return call(_native.privacy, options_json(query))  # type: ignore[no-any-return]


def attack_update(
    encoding: Any,
    weights: Any,
    update: Any,
    *,
    truth: Any = None,
    progress: ProgressArg = None,
    **options: Any,
) -> Dict[str, Any]:
    """Attack an update a real client sent, as the server would: `encoding` the table's encoding,
    `weights` the network the server sent and `update` the update (files: safetensors, npz, or
    one leakscope-update/1 JSON as `update` with `weights=None`; or in memory: a dict of arrays
    by name, or a list of arrays in state_dict order). With `truth` (the rows the update was
    computed on, a table), the reconstruction is scored against them."""
    truth_csv = None if truth is None else table_bytes(truth)
    reporter = Reporter(progress)
    try:
        return call(  # type: ignore[no-any-return]
            _native.attack_update,
            encoding_json(encoding),
            update_bytes(update),
            update_bytes(weights),
            options_json(options),
            truth_csv,
            reporter,
        )
    finally:
        reporter.close()

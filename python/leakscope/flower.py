"""A Flower client Mod that attacks every training reply before it leaves, as an honest-but-curious
server would, and scores the attack against the client's own rows.

    app = ClientApp(client_fn, mods=[leakage_mod("client.csv", label="salary", ...)])

The client's recipe says what the update is: FedSGD (one step of `client_lr` on all its rows: the
server reads the gradient as (θ0 − θ1) / client_lr) or FedAvg (`local_epochs` passes over its rows
in batches of `local_batch`: the update is θ0 − θE). The optimiser is plain SGD of `client_lr`
unless the Mod is told otherwise, by the client's own optimiser or by name:

    leakage_mod(rows, "salary", protocol="fedavg", optimizer=torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9))
    leakage_mod(rows, "salary", protocol="fedavg", optimizer=lambda p: torch.optim.Adam(p, lr=1e-3))
    leakage_mod(rows, "salary", protocol="fedavg", optimizer="adam", client_lr=1e-3, betas=(0.8, 0.99))

`optimizer` is a torch.optim SGD, Adam or AdamW (only its class name and `param_groups` are read:
lr → client_lr, momentum, dampening, nesterov, weight_decay, betas, eps → adam_eps), a function of
the parameters returning one (the one the client calls in its fit(), so that the two cannot
drift apart; the Mod calls it once on a dummy parameter), or the name "sgd", "adam" or "adamw",
with the settings as keywords (`momentum`, `dampening`, `nesterov`, `weight_decay`, `betas`,
`adam_eps`); a setting left out is the engine's default (0, False, betas (0.9, 0.999), adam_eps
1e-8: weight_decay is 0 for "adamw" too, where torch's AdamW defaults to 0.01). Refused, with the
reason: another optimiser class, param groups whose settings differ (one recipe covers every
parameter), amsgrad, maximize, nesterov without momentum or with dampening, a setting the
optimiser does not take (momentum for Adam, betas for SGD), and a setting stated twice that
disagrees (client_lr=0.1 beside an optimiser whose lr is 0.01). The Mod assumes the client makes a
fresh optimiser every round (no state carried from the last), as Flower's clients do.
`shuffle=True` (local_order "shuffled") says the client reshuffles its rows every epoch (a
DataLoader with shuffle=True); the default is the rows of `table` in the same order every epoch.

The recipe is given once, as the Mod's options, and any of its keys (RECIPE: `protocol`,
`local_epochs`, `local_batch`, `client_lr`, `optimizer`, `momentum`, `dampening`, `nesterov`,
`weight_decay`, `betas`, `adam_eps`, `local_order`) found in the round's ConfigRecord overrides it
for that round; a round whose optimiser differs from the Mod's leaves out the Mod's settings that
its optimiser does not take. `table` holds the rows the client trains on every round, in the order
it trains on them.

A client that encodes its rows with scikit-learn gives the Mod its fitted ColumnTransformer:

    leakage_mod(rows, "salary", transformer=preprocess, fitted_on="federation.csv", ...)

The attack then reads the update in the transformer's terms (its categories and their order, a
dropped category, ordinal codes, each scaler's centre and scale: `leakscope.encoding_from_sklearn`,
which names what it cannot read), not leakscope's own one-hot encoding. `fitted_on` is the table it
was fitted on (default: `table`; needed where `table` is a function of the Context); give either
`transformer` or `encoding`, not both.

The engine replays the stated recipe on the client's rows and compares the result with the update
(the record's `recipe_check`: matches true, false, or null where it cannot tell; for shuffled
rows true only where the rows replayed in the orders the attack chose reproduce the update, null
otherwise). Where it does not match, the record's `recipe_mismatch` says so: its accuracy is then what
a server assuming the stated recipe reconstructs, not what this update gives away, and with
`block_above` (a gate) the update is blocked, since the audit did not test what the client sends.

Two modes. A gate (`mode="gate"`, the default) audits before the reply leaves and can block it; it
adds the audit's time to every round. A monitor (`mode="monitor"`) lets the reply leave at once
and audits it in a process of its own beside the training (`leakscope._monitor`, started as
`leakscope._monitor_main`), writing the record when it is done; it cannot block.

`budget_gflop` bounds a round's audit in work, not seconds: the engine counts what the attack's
optimisation (every run of it) and its replays of the client's update cost at most, from the
problem's sizes (`work_gflop` in every record), so whether a round is
attacked is the same on a quiet and on a busy machine. A round past the budget is not attacked
(its record's accuracy is null and `skipped` says why) and `over_budget` says what its reply does:
"block" (the default of a gate with `block_above`: an update not audited is held back), "send"
(the default otherwise) or "attack" (the budget is ignored: take the time). With `first_batch`
(default True) such a round has its first local batch attacked instead: the gradient of the
table's first `local_batch` rows at the weights the server sent. That is a view the server never
has, so its figure is recorded apart (the record's `first_batch`, with `bounds` saying what it
says of the server's: nothing either way), drawn apart by `plot_records`, never sent as the
round's metric and never compared with `block_above`."""
from __future__ import annotations

import io
import json
import math
import os
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _monitor, _native, defaults
from ._convert import call, encoding_json, options_json, table_bytes, update_bytes
from ._sklearn import encoding_from_sklearn

RECIPE = (
    "protocol",
    "local_epochs",
    "local_batch",
    "client_lr",
    "optimizer",
    "momentum",
    "dampening",
    "nesterov",
    "weight_decay",
    "betas",
    "adam_eps",
    "local_order",
)
OPTIMIZERS = ("sgd", "adam", "adamw")
LOCAL_ORDERS = ("given", "shuffled")
#: A gate audits before the reply leaves; a monitor lets it leave and audits beside the training.
MODES = ("gate", "monitor")
#: What a round whose attack passes `budget_gflop` does: held back, sent unaudited, or attacked anyway.
OVER_BUDGET = ("block", "send", "attack")
#: The recipe's settings each optimiser takes; the others are left out of its rounds.
_ADAM_TAKES = frozenset({"weight_decay", "betas", "adam_eps"})
TAKES = {"sgd": frozenset({"momentum", "dampening", "nesterov", "weight_decay"}), "adam": _ADAM_TAKES, "adamw": _ADAM_TAKES}
_SETTINGS = frozenset().union(*TAKES.values())
#: torch.optim's names for the recipe's keys where they differ.
_TORCH_NAME = {"client_lr": "lr", "adam_eps": "eps"}
#: The torch.optim classes the engine replays, by class name.
_TORCH_CLASSES = {"SGD": "sgd", "Adam": "adam", "AdamW": "adamw"}
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


def _number(value: Any) -> float:
    return float(value)  # a tensor's (torch keeps lr or betas as tensors on request) or a number's


def _group_recipe(name: str, group: Dict[str, Any]) -> Dict[str, Any]:
    """One torch param group as the recipe's keys, refusing what the engine does not replay."""
    if group.get("maximize"):
        raise ValueError("leakage_mod: the optimiser maximises (maximize=True); the engine replays a client that minimises its loss")
    out: Dict[str, Any] = {"client_lr": _number(group["lr"]), "weight_decay": _number(group.get("weight_decay", 0.0))}
    if name == "sgd":
        out.update(
            momentum=_number(group.get("momentum", 0.0)),
            dampening=_number(group.get("dampening", 0.0)),
            nesterov=bool(group.get("nesterov", False)),
        )
    else:
        if group.get("amsgrad"):
            raise ValueError("leakage_mod: the optimiser uses amsgrad=True; the engine replays Adam and AdamW without it")
        b1, b2 = group.get("betas", (0.9, 0.999))
        out.update(betas=[_number(b1), _number(b2)], adam_eps=_number(group.get("eps", 1e-8)))
    return out


def optimizer_recipe(optimizer: Any) -> Dict[str, Any]:
    """The recipe's keys a torch.optim SGD, Adam or AdamW gives (`optimizer`, `client_lr` and the
    settings its optimiser takes), read off its class name and `param_groups` (torch itself is not
    imported for an instance); or those of the optimiser a function of the parameters returns."""
    if not hasattr(optimizer, "param_groups") and callable(optimizer):
        import torch  # type: ignore[import-not-found, unused-ignore]

        try:
            optimizer = optimizer([torch.nn.Parameter(torch.zeros(1))])
        except Exception as e:
            raise ValueError(
                "leakage_mod: optimizer= as a function is called with a list of parameters and must return the "
                f"client's optimiser; calling it failed: {e!r}"
            ) from e
    cls = type(optimizer).__name__
    groups = getattr(optimizer, "param_groups", None)
    if not isinstance(groups, (list, tuple)) or not groups:
        raise ValueError(
            "leakage_mod: optimizer= is a torch.optim SGD, Adam or AdamW, a function of the parameters returning "
            f"one, or one of {', '.join(OPTIMIZERS)}; not {cls}"
        )
    if cls not in _TORCH_CLASSES:
        raise ValueError(
            f"leakage_mod: the engine replays torch.optim's SGD, Adam and AdamW, not {cls}; "
            "state a client that trains with one of those"
        )
    name = _TORCH_CLASSES[cls]
    if name == "adam" and groups[0].get("decoupled_weight_decay"):
        name = "adamw"  # torch's Adam(decoupled_weight_decay=True) is AdamW
    recipes = [_group_recipe(name, dict(g)) for g in groups]
    for i, other in enumerate(recipes[1:], start=1):
        differ = [k for k in recipes[0] if not _same(recipes[0][k], other[k])]
        if differ:
            k = differ[0]
            raise ValueError(
                f"leakage_mod: the optimiser's param groups differ ({_TORCH_NAME.get(k, k)} is {recipes[0][k]!r} in "
                f"group 0, {other[k]!r} in group {i}); the Mod states one recipe for every parameter"
            )
    out = {"optimizer": name, **recipes[0]}
    _check_settings(out, "the optimiser")
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, bool) or isinstance(b, bool) or isinstance(a, str) or isinstance(b, str):
        return bool(a == b)
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-6, abs_tol=1e-12)
    except (TypeError, ValueError):
        return bool(a == b)


def _check_settings(recipe: Dict[str, Any], where: str, stated: Sequence[str] = ()) -> None:
    """The recipe's optimiser and order are ones the engine knows, the settings `stated` together
    are ones its optimiser takes, and nesterov has what it needs (torch's rule)."""
    name = recipe.get("optimizer")
    if name is not None and name not in OPTIMIZERS:
        raise ValueError(f"leakage_mod: {where} names the optimiser {name!r}; the engine replays {', '.join(OPTIMIZERS)}")
    order = recipe.get("local_order")
    if order is not None and order not in LOCAL_ORDERS:
        raise ValueError(f"leakage_mod: {where} gives local_order {order!r}; it is one of {', '.join(LOCAL_ORDERS)}")
    takes = TAKES[name or "sgd"]
    foreign = [k for k in stated if k in _SETTINGS and k not in takes and recipe.get(k) is not None]
    if foreign:
        raise ValueError(
            f"leakage_mod: {where} gives {', '.join(foreign)}, which {name or 'sgd'} does not take "
            f"(it takes {', '.join(sorted(takes))})"
        )
    betas = recipe.get("betas")
    if betas is not None and (not isinstance(betas, (list, tuple)) or len(betas) != 2):
        raise ValueError(f"leakage_mod: {where} gives betas {betas!r}; they are two numbers (b1, b2)")
    if (name or "sgd") == "sgd" and recipe.get("nesterov"):
        if not (recipe.get("momentum") or 0) > 0 or (recipe.get("dampening") or 0) != 0:
            raise ValueError(
                f"leakage_mod: {where} asks for nesterov with momentum {recipe.get('momentum') or 0} and dampening "
                f"{recipe.get('dampening') or 0}; Nesterov momentum needs a momentum above 0 and no dampening (as in torch)"
            )


def _normal(recipe: Dict[str, Any]) -> Dict[str, Any]:
    """The recipe's values as the engine and the records take them: names in lower case, betas a list."""
    out = dict(recipe)
    for key in ("optimizer", "local_order"):
        if isinstance(out.get(key), str):
            out[key] = out[key].lower()
    if isinstance(out.get("betas"), tuple):
        out["betas"] = list(out["betas"])
    return out


def _stated_recipe(given: Dict[str, Any], optimizer: Any, shuffle: Optional[bool]) -> Dict[str, Any]:
    """The recipe's keys the Mod's options state, each once."""
    stated = {k: v for k, v in given.items() if v is not None}
    if shuffle is not None:
        order = "shuffled" if shuffle else "given"
        if stated.get("local_order", order) != order:
            raise ValueError(f"leakage_mod: shuffle={shuffle} disagrees with local_order={stated['local_order']!r}; state it once")
        stated["local_order"] = order
    if isinstance(optimizer, str):
        stated["optimizer"] = optimizer
    elif optimizer is not None:
        for key, value in optimizer_recipe(optimizer).items():
            if key in stated and not _same(stated[key], value):
                raise ValueError(
                    f"leakage_mod: {key}={stated[key]!r} disagrees with the optimiser's "
                    f"{_TORCH_NAME.get(key, key)}={value!r}; state it once"
                )
            stated[key] = value
    stated = _normal(stated)
    _check_settings(stated, "the Mod's recipe", list(stated))
    return stated


def _round_recipe(base: Dict[str, Any], config: Dict[str, Any]) -> Dict[str, Any]:
    """This round's recipe: the Mod's, with the ConfigRecord's keys over it, and the settings its
    optimiser does not take left out (None)."""
    override = _normal({k: config[k] for k in RECIPE if k in config})
    recipe = {**base, **override}
    _check_settings(recipe, "the round's ConfigRecord", list(override))
    takes = TAKES[recipe.get("optimizer") or "sgd"]
    return {k: None if k in _SETTINGS and k not in takes else v for k, v in recipe.items()}


def _figure(value: Any) -> str:
    return "?" if value is None else f"{value:.3g}"


def recipe_mismatch(check: Optional[Dict[str, Any]]) -> Optional[str]:
    """A sentence where the engine's recipe check says the stated recipe does not reproduce the
    update; None where it matches or cannot tell."""
    if not check or check.get("matches") is not False:
        return None
    why = f"; {check['reason']}" if check.get("reason") else ""
    return (
        f"the stated recipe does not reproduce this update (replayed on the client's rows it is off by a relative "
        f"gap of {_figure(check.get('relative_gap'))}, over the tolerance {_figure(check.get('tolerance'))}{why}): "
        "the client trains otherwise (its optimiser, settings, lr or row order), so this accuracy is what a server "
        "assuming the stated recipe reconstructs, not what the update gives away"
    )


class _Rows:
    """A client's rows as the engine reads them under the encoding: the CSV, how many, and their
    labels in order (a FedAvg server is given them, as the reference assumes; a FedSGD server
    reads them off the gradient itself)."""

    def __init__(self, table: bytes, encoding: str) -> None:
        _, _, y, regression = _native.encode(table, encoding)
        classes = json.loads(encoding)["classes"]
        self.table = table
        self.count = len(y)
        self.labels = None if regression else [classes[int(v)] for v in y]


def _client_of(context: Any) -> str:
    """A simulation's partition id where there is one (stable across runs), else the node's id."""
    node_config = getattr(context, "node_config", None) or {}
    return str(node_config.get("partition-id", context.node_id))


def _scored(scored: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    """A scored attack's figures as a record holds them (None where nothing was attacked)."""
    scored = scored or {}
    acc = scored.get("accuracy") or {}
    # The cells the server took from the marginals where a shadow client said guessing wins.
    details = (scored.get("reconstruction") or {}).get("details") or {}
    fallback = details.get("fallback") or {}
    # What the round's update shows of the client's batch, cell by cell, checked against its rows
    # (a FedAvg client the engine can replay: its rows in the order given, no noise).
    cells = details.get("cells_shown") or {}
    return {
        "accuracy": acc.get("total"),
        "categorical": acc.get("categorical"),
        "continuous": acc.get("continuous"),
        "random_baseline": scored.get("random_baseline"),
        "gain_over_random": scored.get("gain_over_random"),
        "rows_proved": scored.get("rows_proved"),
        "rows_consistent": scored.get("rows_consistent"),
        "prior_cells": fallback.get("prior_cells", 0 if scored else None),
        # The guess explains the update as well as the attack's rows (where the server can replay
        # it): the attack, not necessarily the client, ran out of strength.
        "exhausted": fallback.get("exhausted", False if scored else None),
        # The shadow client's update held every row of its batch: the ensemble's rows left beside
        # the rows this update holds were never tested, and fell back whole.
        "untested": fallback.get("untested", False if scored else None),
        # The client's reconstruction explains its update far worse than the shadow's its own:
        # the shadow's thresholds do not speak for it, and the rows the update does not hold fell
        # back whole.
        "unlike_shadow": fallback.get("unlike_shadow", False if scored else None),
        # The mirror: the client's rows, picked by its update among the span's, fit its update
        # far better than the shadow's its own, so every cell the ensemble gives is kept.
        "shadow_harder": fallback.get("shadow_harder", False if scored else None),
        # A reshuffling client's thresholds weighed on several shadow batches, each with rows and
        # orders of its own: its orders fell worse than any of theirs, or the gain over the guess
        # was not sure across them; either way the rows the update does not hold fell back whole.
        "unlike_every_shadow": fallback.get("unlike_every_shadow", False if scored else None),
        "unsure_across_shadows": fallback.get("unsure_across_shadows", False if scored else None),
        "cells_shown": cells.get("shown"),
        "cells_moved": cells.get("tested"),
    }


def audit_job(job: Dict[str, Any], progress: Optional[Callable[[Dict[str, Any]], Any]] = None) -> Dict[str, Any]:
    """One round's record from the model sent and the model about to be sent back (`job`: what
    `LeakageMod` queues, in this process for a gate, in a monitor's for a monitor)."""
    start = time.perf_counter()
    recipe, names = job["recipe"], job["names"]
    if recipe["protocol"] == "fedsgd":
        update = [(a - b) / recipe["client_lr"] for a, b in zip(job["sent"], job["got"])]
    else:
        update = [a - b for a, b in zip(job["sent"], job["got"])]
    # FedSGD's update is one gradient: the local training's settings are FedAvg's (the engine
    # refuses them there). Its recipe check still replays one plain gradient, which an Adam or
    # weight-decayed client's first step does not reproduce.
    fedsgd = recipe["protocol"] == "fedsgd"
    local = _SETTINGS | {"optimizer", "local_order"}
    sent_recipe = {k: v for k, v in recipe.items() if v is not None and not (fedsgd and k in local)}
    options = {**job["options"], **sent_recipe, "batch_size": job["rows"]}
    arrays = _named(names, update)
    if recipe["protocol"] == "fedavg" and job["labels"] is not None:
        archive = _with_labels(arrays, np.array(job["labels"]))
    else:
        archive = update_bytes(arrays) or b""
    # Past the budget, "attack" takes the time: the engine is given no budget.
    budget = None if job["over_budget"] == "attack" else job["budget_gflop"]
    out = call(
        _native.audit_round,
        job["encoding"],
        archive,
        update_bytes(_named(names, list(job["sent"]))),
        options_json(options),
        job["table"],
        budget,
        job["first_batch"],
        progress or (lambda p: True),
    )
    work = out["work"]["gflop"]
    over = job["budget_gflop"] is not None and work > job["budget_gflop"]
    first = out.get("first_batch")
    scored = out["scored"] or {}
    return {
        "attacked": "round" if out["scored"] else "nothing",
        **_scored(out["scored"]),
        "rows": job["rows"],
        "epsilon": job["epsilon"],
        "seconds": time.perf_counter() - start,
        "work_gflop": work,
        "budget_gflop": job["budget_gflop"],
        # What was done where the round's attack passed the budget (None where it did not).
        "over_budget": job["over_budget"] if over else None,
        "skipped": out["skipped"],
        # Apart from the round's figures: a view the server never has (its `bounds` says so).
        "first_batch": None if first is None else {
            "rows": first["rows"],
            **_scored(first["scored"]),
            "work_gflop": first["work"]["gflop"],
            "skipped": first["skipped"],
            "bounds": first["bounds"],
        },
        **{k: recipe.get(k) for k in RECIPE},
        "recipe_check": scored.get("recipe_check"),
        "recipe_mismatch": recipe_mismatch(scored.get("recipe_check")),
        "mode": job["mode"],
        "blocked": None,  # a gate's verdict (`LeakageMod.blocks`); a monitor never blocks
        "held_seconds": job.get("held_seconds"),
        "round": job["round"],
        "client": job["client"],
        **({"job": job["job"]} if "job" in job else {}),
    }


class LeakageMod:
    """The Mod `leakage_mod` returns; `records` holds this process's records (a monitor's, once
    `wait` has read them back)."""

    def __init__(
        self,
        table: Any,
        label: str,
        *,
        encoding: Any = None,
        transformer: Any = None,
        fitted_on: Any = None,
        protocol: Optional[str] = None,
        local_epochs: Optional[int] = None,
        local_batch: Optional[int] = None,
        client_lr: Optional[float] = None,
        optimizer: Any = None,
        momentum: Optional[float] = None,
        dampening: Optional[float] = None,
        nesterov: Optional[bool] = None,
        weight_decay: Optional[float] = None,
        betas: Optional[Sequence[float]] = None,
        adam_eps: Optional[float] = None,
        local_order: Optional[str] = None,
        shuffle: Optional[bool] = None,
        mode: str = "gate",
        block_above: Optional[float] = None,
        budget_gflop: Optional[float] = None,
        over_budget: Optional[str] = None,
        first_batch: bool = True,
        records: Optional[Union[str, "os.PathLike[str]"]] = "leakscope-records.jsonl",
        client: Optional[str] = None,
        progress: Optional[Callable[[Dict[str, Any]], Any]] = None,
        max_seconds: Any = None,
        **options: Any,
    ) -> None:
        if max_seconds is not None:
            raise ValueError(
                "leakage_mod: max_seconds is gone: a budget in seconds made whether a round was attacked depend on "
                "how busy the machine was. Give budget_gflop=, the engine's counted work (each record's work_gflop "
                "and seconds show this machine's pace), and over_budget= for what happens to a round past it"
            )
        if mode not in MODES:
            raise ValueError(f"leakage_mod: mode={mode!r}; it is one of {', '.join(MODES)}")
        if over_budget is None:
            over_budget = "block" if mode == "gate" and block_above is not None else "send"
        if over_budget not in OVER_BUDGET:
            raise ValueError(f"leakage_mod: over_budget={over_budget!r}; it is one of {', '.join(OVER_BUDGET)}")
        if budget_gflop is not None and not (isinstance(budget_gflop, (int, float)) and budget_gflop >= 0):
            raise ValueError(f"leakage_mod: budget_gflop={budget_gflop!r}; give a number of GFLOP, 0 or more, or None")
        if mode == "monitor":
            refused = [
                (block_above is not None, "takes no block_above (a monitor's reply has left before its audit: use mode='gate')"),
                (over_budget == "block", "takes no over_budget='block' (the reply has left: 'send' or 'attack')"),
                (records is None, "takes no records=None (a monitor writes its records from another process: give a path)"),
                (progress is not None, "takes no progress= (the audit runs in another process)"),
                (os.name != "posix", "runs on Linux and macOS only (its queue takes POSIX file locks)"),
            ]
            for _, why in (r for r in refused if r[0]):
                raise ValueError(f"leakage_mod: mode='monitor' {why}")
        if encoding is not None and transformer is not None:
            raise ValueError("leakage_mod: give encoding= or transformer=, not both: the transformer's encoding is the encoding")
        if callable(table) and encoding is None and (transformer is None or fitted_on is None):
            raise ValueError(
                "leakage_mod: with a table per client (a callable), give the federation's encoding, or its "
                "transformer= with the table it was fitted on (fitted_on=)"
            )
        if transformer is not None:
            # The client's own preprocessing: the network's inputs are the transformer's outputs, read
            # against the table it was fitted on (ranges, decimals and stds of its numeric columns).
            encoding = encoding_from_sklearn(transformer, label=label, table=table if fitted_on is None else fitted_on)
        if encoding is None:
            encoding = _native.encoding(table_bytes(table), options_json({"label": label}))
        self.encoding = encoding_json(encoding)
        self.label = label
        # The recipe's parts left out are the engine's defaults (None, left out of the options,
        # where an engine has no such setting).
        given = {
            "protocol": protocol,
            "local_epochs": local_epochs,
            "local_batch": local_batch,
            "client_lr": client_lr,
            "momentum": momentum,
            "dampening": dampening,
            "nesterov": nesterov,
            "weight_decay": weight_decay,
            "betas": betas,
            "adam_eps": adam_eps,
            "local_order": local_order,
        }
        stated = _stated_recipe(given, optimizer, shuffle)
        engine = defaults()
        self.recipe: Dict[str, Any] = _normal({k: stated[k] if k in stated else engine.get(k) for k in RECIPE})
        self.mode = mode
        self.block_above = block_above
        self.budget_gflop = None if budget_gflop is None else float(budget_gflop)
        self.over_budget = over_budget
        self.first_batch = bool(first_batch)
        self.path = None if records is None else Path(records).resolve()
        self.client = client
        self.progress = progress
        self.options = options
        self.records: List[Dict[str, Any]] = []
        # A monitor's jobs, by name, in the order they were queued.
        self.queued: List[str] = []
        self.rounds = 0
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
        recipe = _round_recipe(self.recipe, config)
        reply = call_next(msg, context)
        if reply.has_error():
            return reply
        start = time.perf_counter()
        reply_names, got = _arrays(reply.content)
        if reply_names != names or any(a.shape != b.shape for a, b in zip(sent, got)):
            raise ValueError("leakage_mod: the reply's arrays are not the model the server sent")
        self.rounds += 1
        job = self.job(names, sent, got, recipe, self.rows_for(context), _metric(reply.content, EPSILON_KEY))
        job["round"] = _round_of(config, msg.metadata.group_id, self.rounds)
        job["client"] = self.client if self.client is not None else _client_of(context)
        if self.mode == "monitor":
            assert self.path is not None
            job["held_seconds"] = time.perf_counter() - start  # the rest is the monitor's
            self.queued.append(_monitor.queue(self.path, job))
            return reply
        record = audit_job(job, self.progress)
        why = self.blocks(record)
        record["blocked"] = why
        record["held_seconds"] = time.perf_counter() - start
        self.write(record)
        if why is not None:
            return Message(Error(code=6, reason=f"leakscope blocked this update: {why}"), reply_to=msg)
        metrics = {
            "leakscope.attacked": 1.0 if record["attacked"] == "round" else 0.0,
            "leakscope.accuracy": record["accuracy"],
            "leakscope.gain_over_random": record["gain_over_random"],
            "leakscope.rows_proved": record["rows_proved"],
            "leakscope.work_gflop": record["work_gflop"],
            "leakscope.seconds": record["seconds"],
            "leakscope.recipe_mismatch": 0.0 if record["recipe_mismatch"] is None else 1.0,
        }
        # Into the reply's own MetricRecord: Flower's strategies take exactly one per reply (and
        # then average these figures over the clients, weighted as the rest). A round not attacked
        # sends no accuracy: the first local batch's figure is not the round's.
        present: Dict[str, Any] = {k: float(v) for k, v in metrics.items() if v is not None}
        records = reply.content.metric_records
        if records:
            next(iter(records.values())).update(present)
        else:
            reply.content["metrics"] = MetricRecord(present)
        return reply

    def job(
        self,
        names: List[str],
        sent: Sequence[np.ndarray],
        got: Sequence[np.ndarray],
        recipe: Dict[str, Any],
        rows: "_Rows",
        epsilon: Optional[float],
    ) -> Dict[str, Any]:
        """Everything a round's audit needs, as data (a monitor's process reads it from a file)."""
        return {
            "names": names,
            "sent": list(sent),
            "got": list(got),
            "recipe": recipe,
            "encoding": self.encoding,
            "options": self.options,
            "table": rows.table,
            "rows": rows.count,
            "labels": rows.labels,
            "budget_gflop": self.budget_gflop,
            "over_budget": self.over_budget,
            "first_batch": self.first_batch,
            "epsilon": epsilon,
            "mode": self.mode,
        }

    def blocks(self, record: Dict[str, Any]) -> Optional[str]:
        """Why this update does not pass the gate; None where it passes. A round whose attack
        passed the budget is held back where over_budget is "block" (it was not audited), whatever
        its first local batch scored; an update the stated recipe does not reproduce is blocked
        whatever its accuracy (the audit did not test what this client sends); and one whose
        attack passes `block_above`."""
        if record["over_budget"] == "block":
            return (
                f"this round's attack counts {record['work_gflop']:.1f} GFLOP, over budget_gflop = {self.budget_gflop}, "
                "so it was not audited, and over_budget='block' holds an unaudited update back (raise budget_gflop, or "
                "choose over_budget='send' to let it through or 'attack' to take the time)"
            )
        if self.block_above is None:
            return None
        check = record.get("recipe_check") or {}
        if check.get("matches") is False:
            return (
                f"the stated recipe does not reproduce this update (relative gap {_figure(check.get('relative_gap'))}, "
                f"tolerance {_figure(check.get('tolerance'))}), so the audit did not test what this client sends; "
                "give the Mod the client's own optimiser (optimizer=) and row order (shuffle=)"
            )
        acc = record["accuracy"]
        if acc is None or acc <= self.block_above:
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

    def wait(self) -> List[Dict[str, Any]]:
        """This Mod's records, every one written: a monitor's audits still running are waited for
        (and those no monitor process finished are run here: `drain_monitor`). A gate writes its
        records before the reply leaves, so there is nothing to wait for."""
        if self.mode == "monitor" and self.queued:
            assert self.path is not None
            _monitor.wait_started()
            drain_monitor(self.path)
            by_job = {r.get("job"): r for r in _read_lines(self.path)}
            self.records = [by_job[j] for j in self.queued if j in by_job]
        return self.records


def drain_monitor(records: Union[str, "os.PathLike[str]"]) -> int:
    """Wait for the monitor processes writing to `records`, and audit here every round they left
    queued (a simulation's actors are killed when it ends, and their monitors may go with them);
    how many were audited here."""
    return len(_monitor.drain(Path(records).resolve(), audit_job))


def leakage_mod(table: Any, label: str, **options: Any) -> LeakageMod:
    """A Mod for `ClientApp(client_fn, mods=[...])` that attacks each training reply against the
    client's rows `table` (CSV path, CSV bytes or DataFrame, or a function of the node's Context
    giving them, for one ClientApp serving many nodes), records accuracy, gain over the
    random guess, rows proved, ε, seconds and the engine's check of the stated recipe per round
    (JSON lines in `records`, and Flower metrics). The recipe: `protocol`, `local_epochs`,
    `local_batch`, `client_lr`, and `optimizer` (a torch.optim SGD, Adam or AdamW, a function of
    the parameters returning one, or its name with `momentum`, `dampening`, `nesterov`,
    `weight_decay`, `betas`, `adam_eps`), `shuffle` (the client reshuffles its rows every epoch);
    see the module's docstring. `encoding`: the federation's encoding (default: `table`'s own);
    `transformer`: instead of `encoding`, the client's fitted scikit-learn ColumnTransformer (read
    against `fitted_on`, default `table`: see the module's docstring).

    `mode`: "gate" (the default) audits before the reply leaves, and with `block_above=x` replaces
    by an error reply saying why a reply whose accuracy passes x or that the stated recipe does not
    reproduce; "monitor" lets the reply leave at once and audits it in a process of its own beside
    the training (`wait`, `drain_monitor`).

    `budget_gflop`: the most work a round's attack may count (the engine's count from the
    problem's sizes, `work_gflop` in each record: the same on a quiet and a busy machine); a round
    past it is not attacked, and `over_budget` says what its reply does: "block" (a gate with
    `block_above`'s default), "send" (the default otherwise) or "attack" (take the time). With
    `first_batch` (default True) a round not attacked has its first local batch attacked instead,
    recorded apart (`first_batch`, with what its figure bounds) and never compared with
    `block_above`. `progress`: a callback given the engine's progress (a gate's). Other options
    are `attack`'s (ensemble, iterations, …)."""
    return LeakageMod(table, label, **options)


def _read_lines(path: Union[str, "os.PathLike[str]"]) -> List[Dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_records(*paths: Union[str, "os.PathLike[str]"]) -> Any:
    """Every record in these JSON-lines files as one table: a pandas DataFrame sorted by client
    and round where pandas is installed, else a list of dicts."""
    rows: List[Dict[str, Any]] = []
    for path in paths:
        rows.extend(_read_lines(path))
    rows.sort(key=lambda r: (str(r.get("client")), r.get("round") or 0))
    try:
        import pandas as pd  # type: ignore[import-untyped, unused-ignore]
    except ImportError:
        return rows
    return pd.DataFrame(rows)


def _plot_privacy(ax: Any, private: List[Dict[str, Any]]) -> None:
    """ε by round: the accountant's bound and what the canaries measure (95 % interval; a
    triangle where the canaries separate completely and the figure is a floor)."""
    rounds = [r["round"] for r in private]
    measured = [float(r["epsilon_measured"]) for r in private]
    low = [m - float((r["epsilon_measured_interval"] or [m])[0] or 0.0) for m, r in zip(measured, private)]
    high = [float(r["epsilon_measured_interval"][1]) - m if r["epsilon_measured_interval"][1] is not None else 0.0
            for m, r in zip(measured, private)]
    ax.errorbar(rounds, measured, yerr=[low, high], fmt="o-", capsize=3, label="ε the canaries measure")
    floors = [r for r in private if r.get("epsilon_measured_beyond_range") is True]
    if floors:
        ax.plot([r["round"] for r in floors], [r["epsilon_measured"] for r in floors], "^", ms=10, label="a floor")
    accountant = [r for r in private if r.get("epsilon_accountant") is not None]
    ax.plot([r["round"] for r in accountant], [r["epsilon_accountant"] for r in accountant], "s--", label="ε accounted (RDP)")
    for r in private:
        if r.get("attack_accuracy") is not None:
            ax.annotate(f"attack {100 * r['attack_accuracy']:.0f} %", (r["round"], float(r["epsilon_measured"])),
                        textcoords="offset points", xytext=(4, 6), fontsize="x-small")
    ax.set_title(f"ε at δ = {private[0].get('delta')}, {int(private[0].get('canaries') or 0)} canaries")
    ax.set_ylabel("ε")
    ax.set_xticks(rounds)
    ax.legend(loc="upper left", fontsize="small")


def plot_records(records: Any, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> Any:
    """One panel per client: the attack's accuracy and the random guess over rounds, blocked
    rounds marked, rounds not attacked (past the budget) marked on the axis, and where their first
    local batch was attacked instead, its figure drawn apart (a view the server never has). Needs
    matplotlib; saved to `path` where given; returns the figure."""
    import matplotlib

    if path is not None:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = records.to_dict("records") if hasattr(records, "to_dict") else list(records)
    rows = [r for r in rows if isinstance(r.get("round"), (int, float)) and r["round"] == r["round"]]  # NaN: none
    # A canary strategy's records (`leakscope.flower_canaries`): a panel of their own, last.
    private = sorted((r for r in rows if r.get("kind") == "privacy"), key=lambda r: r["round"])
    rows = [r for r in rows if r.get("kind") != "privacy"]
    clients = sorted({str(r["client"]) for r in rows})
    panels = len(clients) + (1 if private else 0)
    fig, axes = plt.subplots(panels, 1, figsize=(6, 2.4 * panels), squeeze=False, sharex=True)

    def figure(value: Any) -> float:
        return float("nan") if value is None else float(value)

    for ax, client in zip(axes[:, 0], clients):
        mine = sorted((r for r in rows if str(r["client"]) == client), key=lambda r: r["round"])
        rounds = [r["round"] for r in mine]
        ax.plot(rounds, [figure(r.get("accuracy")) for r in mine], "o-", label="server's reconstruction")
        ax.plot(rounds, [figure(r.get("random_baseline")) for r in mine], "s--", label="random guess")
        blocked = [r for r in mine if isinstance(r.get("blocked"), str)]  # NaN in a DataFrame
        ax.plot([r["round"] for r in blocked], [figure(r.get("accuracy")) if r.get("accuracy") is not None else 0.0
                                                 for r in blocked], "rx", ms=10, label="blocked")
        # The stated recipe did not reproduce these updates: their accuracy is not the server's.
        off = [r for r in mine if isinstance(r.get("recipe_mismatch"), str)]
        ax.plot([r["round"] for r in off], [r["accuracy"] for r in off], "o", mfc="none", mec="k", ms=12, label="recipe mismatch")
        skipped = [r for r in mine if r.get("attacked") != "round"]
        ax.plot([r["round"] for r in skipped], [0.0] * len(skipped), "k|", ms=14, label="round not attacked")
        first = [r for r in skipped if isinstance(r.get("first_batch"), dict) and r["first_batch"].get("accuracy") is not None]
        ax.plot([r["round"] for r in first], [r["first_batch"]["accuracy"] for r in first], "^", mfc="none", mec="tab:gray",
                ms=9, label="first local batch only (not the round)")
        ax.set_ylim(0, 1.05)
        ax.set_xticks(rounds)
        ax.set_title(f"client {client}")
        ax.set_ylabel("cells right")
    if private:
        _plot_privacy(axes[-1, 0], private)
    axes[-1, 0].set_xlabel("round")
    axes[0, 0].legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    if path is not None:
        fig.savefig(path)
    return fig

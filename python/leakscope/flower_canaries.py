"""A Flower server strategy wrapper that inserts canaries into a real run's aggregation and writes,
each round, the ε they measure beside the accountant's and the attack's recovery, in one record.

    strategy = DifferentialPrivacyServerSideFixedClipping(FedAvg(...), noise_multiplier=1.0,
                                                          clipping_norm=1.0, num_sampled_clients=2)
    strategy = CanaryStrategy(strategy, canaries=1000, records="leakscope-records.jsonl")

The wrapped strategy clips and noises the aggregate (Flower's server- or client-side fixed
clipping wrappers: `noise_multiplier`, `clipping_norm` and `num_sampled_clients` are read from it,
or given here). After it aggregates, every inserted canary (a random sign direction at the
clipping norm, as a client's clipped update) is added to the round's change at C/n, as a client in
an average of n; the estimate reads each released change (`leakscope.canaries`). Flower's DP
wrappers add their noise (σC/n) to the model the inner strategy returns, so C/n is a canary's
scale against that noise whatever the inner strategy does first; a wrapper that scaled or
clipped the aggregate after its noise would need the canaries inserted before that step.

Each round's record (kind "privacy", one JSON line in `records`) holds `epsilon_measured` (every
round's aggregate seen) with its 95 % interval, `epsilon_measured_final_model`, the accountant's
ε for the same rounds (`epsilon_accountant`: leakscope's RDP accountant without sampling
amplification, as Flower's wrappers sample a fixed number of clients; `epsilon_flower` where the
wrapped strategy keeps its own accountant), and the attack's recovery that round read from the
Mod's records in `attack_records` (default `records`): the most exposed client's accuracy, its
random guess and rows proved. Note what each figure is about: the ε's bound what anyone who sees
the released models learns; the Mod's attack reads the update a client sends, which a server that
adds the noise itself sees before it does (server-side clipping), and which client-side clipping
only clips.

This module imports `flwr`; `leakscope.flower` (the client Mod) does not import it, nor this."""
from __future__ import annotations

import json
import os
import time
from logging import INFO
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from flwr.app import Array, ArrayRecord, ConfigRecord, Message, MetricRecord
from flwr.common.logger import log
from flwr.serverapp import Grid
from flwr.serverapp.strategy import Strategy

from . import privacy
from .canaries import Canaries


def _read_lines(path: Path) -> List[Dict[str, Any]]:
    if not path.exists():
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _setting(strategy: Strategy, given: Optional[float], name: str) -> float:
    if given is not None:
        return float(given)
    if hasattr(strategy, name):
        return float(getattr(strategy, name))
    raise ValueError(
        f"CanaryStrategy: the wrapped strategy has no `{name}`; wrap one of Flower's fixed-clipping DP strategies "
        f"or give {name}=..."
    )


class CanaryStrategy(Strategy):
    """Wraps `strategy` (see the module's docstring). `canaries`: inserted canaries (as many more
    held out unless `held_out`); `delta`: the δ of every ε; `seed`: the canaries' draw."""

    def __init__(
        self,
        strategy: Strategy,
        canaries: int = 1000,
        *,
        held_out: Optional[int] = None,
        noise_multiplier: Optional[float] = None,
        clipping_norm: Optional[float] = None,
        num_sampled_clients: Optional[int] = None,
        delta: float = 1e-5,
        seed: int = 0,
        records: Optional[Union[str, "os.PathLike[str]"]] = None,
        attack_records: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        super().__init__()
        self.strategy = strategy
        self.noise_multiplier = _setting(strategy, noise_multiplier, "noise_multiplier")
        self.clipping_norm = _setting(strategy, clipping_norm, "clipping_norm")
        self.num_sampled_clients = int(_setting(strategy, num_sampled_clients, "num_sampled_clients"))
        self.delta = delta
        self.canaries = Canaries(
            canaries,
            self.clipping_norm / self.num_sampled_clients,
            held_out=held_out,
            seed=seed,
            delta=delta,
        )
        self.records_path = None if records is None else Path(records).resolve()
        attack = attack_records if attack_records is not None else records
        self.attack_path = None if attack is None else Path(attack).resolve()
        self.records: List[Dict[str, Any]] = []
        self.current: Optional[ArrayRecord] = None

    def __repr__(self) -> str:
        return f"CanaryStrategy({self.strategy!r}, canaries={self.canaries.inserted})"

    def summary(self) -> None:
        log(INFO, "\t├── leakscope canaries: %d inserted, scale C/n = %s", self.canaries.inserted, self.canaries.scale)
        self.strategy.summary()

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        self.current = arrays
        return self.strategy.configure_train(server_round, arrays, config, grid)

    def aggregate_train(
        self, server_round: int, replies: Iterable[Message]
    ) -> Tuple[Optional[ArrayRecord], Optional[MetricRecord]]:
        arrays, metrics = self.strategy.aggregate_train(server_round, replies)
        if arrays is None or self.current is None:
            return arrays, metrics
        start = time.perf_counter()
        keys = list(arrays.keys())
        released = self.canaries.insert(self.current.to_numpy_ndarrays(), arrays.to_numpy_ndarrays())
        arrays = ArrayRecord({k: Array(v) for k, v in zip(keys, released)})
        estimate = self.canaries.estimate(
            f"a Flower run's released aggregates ({type(self.strategy).__name__}, σ = {self.noise_multiplier}, "
            f"C = {self.clipping_norm}, {self.num_sampled_clients} clients a round)"
        )
        self.write(self.record(server_round, estimate, time.perf_counter() - start))
        return arrays, metrics

    def record(self, server_round: int, estimate: Dict[str, Any], seconds: float) -> Dict[str, Any]:
        """The round's record: the ε's side by side, and the Mod's attack on the same round."""
        every, final = estimate["every_round"], estimate["final_model"]
        rounds = self.canaries.rounds
        accounted = privacy(self.noise_multiplier, rounds, sample_rate=1.0, delta=self.delta) if self.noise_multiplier > 0 else None
        spent = getattr(self.strategy, "privacy_spent", lambda: None)()
        attacked = [
            r
            for r in (_read_lines(self.attack_path) if self.attack_path is not None else [])
            if r.get("round") == server_round and r.get("kind") != "privacy" and r.get("accuracy") is not None
        ]
        worst = max(attacked, key=lambda r: r["accuracy"], default=None)
        return {
            "kind": "privacy",
            "round": server_round,
            "rounds": rounds,
            "canaries": estimate["canaries"],
            "held_out": estimate["held_out"],
            "dimension": estimate["dimension"],
            "noise_multiplier": self.noise_multiplier,
            "clipping_norm": self.clipping_norm,
            "epsilon_measured": every["epsilon"],
            "epsilon_measured_interval": every["interval"],
            "epsilon_measured_beyond_range": every["beyond_range"],
            "epsilon_measured_unbounded": every["unbounded"],
            "epsilon_measured_final_model": final["epsilon"],
            "epsilon_measured_final_model_interval": final["interval"],
            "null_holds": every["null_holds"] and final["null_holds"],
            "epsilon_accountant": None if accounted is None else accounted["epsilon"],
            "epsilon_flower": None if spent is None else float(spent.epsilon),
            "delta": self.delta,
            "attack_client": None if worst is None else worst.get("client"),
            "attack_accuracy": None if worst is None else worst["accuracy"],
            "attack_random_baseline": None if worst is None else worst.get("random_baseline"),
            "attack_rows_proved": None if worst is None else worst.get("rows_proved"),
            "attacked_clients": len(attacked),
            "canary_seconds": seconds,
        }

    def write(self, record: Dict[str, Any]) -> None:
        self.records.append(record)
        if self.records_path is not None:
            with open(self.records_path, "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")

    def configure_evaluate(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord, grid: Grid) -> Iterable[Message]:
        return self.strategy.configure_evaluate(server_round, arrays, config, grid)

    def aggregate_evaluate(self, server_round: int, replies: Iterable[Message]) -> Optional[MetricRecord]:
        return self.strategy.aggregate_evaluate(server_round, replies)

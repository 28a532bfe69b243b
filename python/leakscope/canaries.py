"""An ε measured in a real run (Andrew et al., "One-shot Empirical Privacy Estimation for
Federated Learning", ICLR 2024): canary clients whose updates are random directions at the
clipping norm join each round's aggregate; how far the released aggregates lean toward them,
against canaries never inserted, is the ε of the Gaussian mechanism that would separate them.
The statistics and the estimate are the engine's (`client::canary` in Rust); this module only
flattens a model's arrays into the vector the canaries live in and back.

    canaries = Canaries(inserted=1000, scale=clipping_norm / clients_per_round)
    released = canaries.insert(previous_arrays, aggregated_arrays)  # each round, after the noise
    canaries.estimate()  # both threat models: every round's aggregate seen, the final model only

`leakscope.flower_canaries.CanaryStrategy` runs this inside a Flower server's strategy.

Adding the canaries after the noise instead of before is the same mechanism: the noise is added
to a sum, and sums commute. A canary of norm C in an average over n clients moves the aggregate
by C/n, so `scale` is C/n where the strategy averages n clipped updates."""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from . import _native
from ._convert import options_json


def _floating(array: np.ndarray) -> bool:
    return bool(np.issubdtype(array.dtype, np.floating))


class Canaries:
    """`inserted` canaries (and `held_out`, default as many, never inserted) of a model's
    floating-point parameters, each inserted at `scale` (the clipping norm over the clients an
    aggregate averages) in every round it is sampled (`sample_rate`, default every round). The
    dimension is read from the first round's arrays; integer arrays (counters) are left alone."""

    def __init__(
        self,
        inserted: int,
        scale: float,
        *,
        held_out: Optional[int] = None,
        sample_rate: float = 1.0,
        seed: int = 0,
        delta: float = 1e-5,
    ) -> None:
        if not scale > 0:
            raise ValueError(f"the canaries' scale must be positive, not {scale}")
        self.inserted, self.held_out, self.scale = inserted, held_out, float(scale)
        self.sample_rate, self.seed, self.delta = sample_rate, seed, delta
        self._run: Optional[_native.CanaryRun] = None
        self.joined: List[int] = []

    def _start(self, dimension: int) -> _native.CanaryRun:
        if self._run is None:
            query = {"inserted": self.inserted, "held_out": self.held_out, "dimension": dimension, "seed": self.seed}
            try:
                self._run = _native.CanaryRun(options_json(query), self.sample_rate)
            except _native.LeakscopeError as e:
                raise ValueError(f"canaries: {e}") from None
        return self._run

    def insert(self, previous: Sequence[np.ndarray], aggregated: Sequence[np.ndarray]) -> List[np.ndarray]:
        """The arrays to release: `aggregated` (this round's model, noise in) with this round's
        canaries added to its change from `previous`, which the estimate then reads."""
        if len(previous) != len(aggregated):
            raise ValueError(f"the model had {len(previous)} arrays and the aggregate has {len(aggregated)}")
        for k, (p, a) in enumerate(zip(previous, aggregated)):
            if np.shape(p) != np.shape(a):
                raise ValueError(f"array {k} changed shape from {np.shape(p)} to {np.shape(a)}")
        floats = [k for k, a in enumerate(aggregated) if _floating(np.asarray(a))]
        base = [np.asarray(previous[k], np.float64).ravel() for k in floats]
        change = np.concatenate(
            [np.asarray(aggregated[k], np.float64).ravel() - b for k, b in zip(floats, base)] or [np.zeros(0)]
        )
        run = self._start(change.size)
        moved, joined = run.insert(change.astype("<f8").tobytes(), self.scale)
        run.observe(moved)
        self.joined.append(joined)
        seen = np.frombuffer(moved, dtype="<f8")
        out = [np.array(a, copy=True) for a in aggregated]
        at = 0
        for k, b in zip(floats, base):
            out[k] = (b + seen[at : at + b.size]).reshape(out[k].shape).astype(out[k].dtype)
            at += b.size
        return out

    @property
    def rounds(self) -> int:
        return 0 if self._run is None else self._run.rounds

    def estimate(self, mechanism: str = "a training run's aggregates") -> Dict[str, Any]:
        """Both threat models' ε over the rounds so far (the engine's CanaryAudit): `every_round`
        and `final_model`, each with `epsilon`, its 95 % `interval` (upper end None where the
        canaries separate completely: `beyond_range`, ε a floor) and the held-out check."""
        if self._run is None:
            raise ValueError("the canaries have seen no round yet")
        return json.loads(self._run.estimate(self.delta, mechanism))  # type: ignore[no-any-return]

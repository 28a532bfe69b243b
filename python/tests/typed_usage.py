"""A caller's use of the API, type-checked with mypy --strict against the package's stubs."""
from typing import Any, Dict, List

import leakscope
from leakscope.flower import LeakageMod, leakage_mod


def report(path: str) -> float:
    r: Dict[str, Any] = leakscope.attack(path, label="salary", batch_size=8, progress=False)
    total: float = r["accuracy"]["total"]
    return total


def names() -> List[str]:
    return [a["name"] for a in leakscope.attacks()]


def mod(path: str) -> LeakageMod:
    return leakage_mod(path, label="salary", block_above=0.9, budget_gflop=500.0)


def cancelled() -> type:
    return leakscope.Cancelled

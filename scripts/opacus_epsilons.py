"""Writes tests/fixtures/rdp_epsilon.json: ε of the subsampled Gaussian mechanism over rounds, as
Opacus's RDP accountant gives it, over a grid of noise multipliers z, sampling rates q, rounds T and δ.
leakscope's accountant (src/client/accountant.rs) is held to it by tests/golden.rs.

    python3 -m venv /tmp/opacus && /tmp/opacus/bin/pip install opacus
    /tmp/opacus/bin/python scripts/opacus_epsilons.py
"""
import json
import pathlib
import warnings

import opacus
from opacus.accountants import RDPAccountant

warnings.filterwarnings("ignore")  # "optimal order is the largest alpha" at tiny ε: expected

cases = []
for z in [0.5, 0.8, 1.0, 1.5, 3.0, 10.0]:
    for q in [0.001, 0.01, 0.1, 0.37, 1.0]:
        for t in [1, 10, 100, 1000, 10000]:
            for delta in [1e-5, 1e-7]:
                acc = RDPAccountant()
                acc.history = [(z, q, t)]
                eps, order = acc.get_privacy_spent(delta=delta)
                cases.append({"noise_multiplier": z, "sample_rate": q, "rounds": t, "delta": delta,
                              "epsilon": eps, "order": order})

out = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "rdp_epsilon.json"
lines = ",\n  ".join(json.dumps(c) for c in cases)
out.write_text(f'{{"opacus": "{opacus.__version__}", "cases": [\n  {lines}\n]}}\n')
print(f"{len(cases)} cases from opacus {opacus.__version__} into {out}")

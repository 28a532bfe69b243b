#!/usr/bin/env python3
"""Write the low-diversity test tables (issue 17): tables whose encoded rows are linearly dependent
even in small batches, where the first layer's ReLU proof cannot reach.

    python3 scripts/low_diversity_tables.py [ADULT_CSV] [OUT_DIR]

- adult-binary.csv: every Adult column reduced to yes/no (a categorical column: its most common
  value or not; a numeric one: above its median or not), rows with '?' left out. From
  data/adult-sample.csv by default (the full table's path gives the full-size one).
- yes-no.csv: 1,000 answers to 20 yes/no questions, correlated through a latent trait, and a label
  that follows the number of yes answers with noise (seeded, so the file is reproducible).
"""
import csv
import random
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def adult_binary(src: Path, out: Path) -> None:
    with src.open(newline="") as f:
        rows = [r for r in csv.DictReader(f) if "?" not in r.values()]
    cols = [c for c in rows[0] if c != "salary"]

    def numeric(c):
        try:
            [float(r[c]) for r in rows]
            return True
        except ValueError:
            return False

    cut = {}
    for c in cols:
        if numeric(c):
            cut[c] = ("num", statistics.median(float(r[c]) for r in rows))
        else:
            cut[c] = ("cat", Counter(r[c] for r in rows).most_common(1)[0][0])

    def yes(c, v):
        kind, at = cut[c]
        return float(v) > at if kind == "num" else v == at

    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(cols + ["salary"])
        for r in rows:
            w.writerow(["yes" if yes(c, r[c]) else "no" for c in cols] + [r["salary"]])


def yes_no(out: Path, rows: int = 1000, questions: int = 20) -> None:
    rng = random.Random(1)
    p = [rng.uniform(0.1, 0.9) for _ in range(questions)]
    with out.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow([f"q{i}" for i in range(questions)] + ["label"])
        for _ in range(rows):
            trait = rng.random()
            answers = ["yes" if rng.random() < 0.6 * p[i] + 0.4 * trait else "no" for i in range(questions)]
            score = sum(a == "yes" for a in answers) + rng.gauss(0, 2)
            w.writerow(answers + ["a" if score > questions / 2 else "b"])


if __name__ == "__main__":
    src = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "adult-sample.csv"
    out = Path(sys.argv[2]) if len(sys.argv) > 2 else ROOT / "data"
    adult_binary(src, out / "adult-binary.csv")
    yes_no(out / "yes-no.csv")

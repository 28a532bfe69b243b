#!/usr/bin/env python3
"""Accuracy of the attack on PyTorch embedding MLPs (scripts/export_embedding.py): full Adult and
German Credit, B = 8 and 32, seeds 0-4, fastai's widths and full ones; one FedSGD gradient of the
default [100, 100] ReLU network each, attacked by `leakscope attack-update --truth` as it comes.
Prints a markdown table (mean accuracy, the random baseline, rows proved, seconds; "refused" where
the update does not determine the embedded columns, with the reason's first words).

  CARGO_TARGET_DIR=~/.cache/leakscope/target python3 scripts/bench_embeddings.py [--seeds 5]
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/leakscope/target"))
CLI = os.environ.get("LEAKSCOPE_CLI", os.path.join(TARGET, "debug", "leakscope"))
SHARED = os.path.join(ROOT, "..", "shared", "datasets")
TABLES = [
    ("Adult", os.path.join(SHARED, "adult.csv"), os.path.join(ROOT, "data", "adult-sample.csv"), "salary"),
    ("German Credit", os.path.join(SHARED, "german-credit.csv"), os.path.join(ROOT, "data", "german-credit.csv"), "credit_risk"),
]


def run(args):
    return subprocess.run(args, check=True, capture_output=True, text=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--batches", default="8,32")
    ap.add_argument("--widths", default="fastai,full")
    a = ap.parse_args()
    print("| table | B | widths | accuracy (mean ± sd) | random | rows proved | refused | s per attack |")
    print("|---|---|---|---|---|---|---|---|")
    for name, full, sample, label in TABLES:
        csv = full if os.path.exists(full) else sample
        with tempfile.TemporaryDirectory() as tmp:
            enc = os.path.join(tmp, "enc.json")
            run([CLI, "encoding", "--csv", csv, "--label", label, "--out", enc])
            # Complete rows, as export_embedding.py counts them.
            n = sum(1 for line in open(csv)) - 1
            for b in [int(x) for x in a.batches.split(",")]:
                for widths in a.widths.split(","):
                    accs, bases, proved, secs, refused = [], [], [], [], []
                    for seed in range(a.seeds):
                        rows = random.Random(seed).sample(range(min(n, 2000) - 50), b)
                        out = os.path.join(tmp, f"c{b}{widths}{seed}")
                        run([sys.executable, os.path.join(ROOT, "scripts", "export_embedding.py"), "--csv", csv,
                             "--encoding", enc, "--rows", ",".join(map(str, rows)), "--width", widths,
                             "--seed", str(seed), "--out", out])
                        report = os.path.join(out, "report.json")
                        p = subprocess.run([CLI, "attack-update", "--encoding", os.path.join(out, "encoding.json"),
                                            "--weights", os.path.join(out, "weights.safetensors"),
                                            "--update", os.path.join(out, "update.safetensors"),
                                            "--truth", os.path.join(out, "rows.csv"), "--seed", str(seed),
                                            "--quiet", "--json", report], capture_output=True, text=True)
                        if p.returncode != 0:
                            refused.append(p.stderr.strip().splitlines()[-1][:90])
                            continue
                        r = json.load(open(report))
                        accs.append(100 * r["accuracy"]["total"])
                        bases.append(100 * r["random_baseline"])
                        proved.append(r["rows_proved"])
                        secs.append(r["reconstruction"]["seconds"])
                    acc = f"{statistics.mean(accs):.1f} ± {statistics.pstdev(accs):.1f}" if accs else "–"
                    base = f"{statistics.mean(bases):.1f}" if bases else "–"
                    prv = f"{statistics.mean(proved):.1f} of {b}" if proved else "–"
                    sec = f"{statistics.mean(secs):.1f}" if secs else "–"
                    why = f"{len(refused)} of {a.seeds}" + (f" ({refused[0]})" if refused else "")
                    print(f"| {name} | {b} | {widths} | {acc} | {base} | {prv} | {why} | {sec} |", flush=True)


if __name__ == "__main__":
    main()

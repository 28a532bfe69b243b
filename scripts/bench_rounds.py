#!/usr/bin/env python3
"""Every round, not only the first (issue 43): `leakscope attack` on networks trained for E epochs
before the attacked round, FedSGD and FedAvg as Flower's quickstart trains, wide and narrow.

For each table × setting × E × seed it runs

    leakscope attack --csv TABLE --label LABEL --batch-size B --seed S --train-epochs E
                     --hidden H [the setting's client flags] --json ...

one thread per attack (RAYON_NUM_THREADS=1), --jobs attacks at a time, and prints a markdown table
per table: the mean cell accuracy (accuracy.total) ± its std over the seeds, the guessing baseline
(random_baseline), the table's guess, rows of it chosen without the update (table_baseline), the lowest gain
over guessing of any seed and over the table's guess, rows proved per batch, and seconds per attack (the report's own
`seconds`, the attack without the CLI's start). Every report's summary is a JSON line in
OUT/results.jsonl, with what each update shows of its batch (`details.shown`'s rows,
`details.cells_shown`'s cells) where the attack reports it.

  python3 scripts/bench_rounds.py --leakscope ~/.cache/leakscope/target/debug/leakscope \\
      --table adult=../shared/datasets/adult.csv:salary \\
      --table german=data/german-credit.csv:credit_risk --seeds 0-9 --out /tmp/rounds
  # a subset: settings by name, epochs per setting's own list unless --epochs is given
  python3 scripts/bench_rounds.py --leakscope ... --settings sgd-100,sgd-32 --epochs 0,5 --seeds 0-2

Settings (B = 32 unless named):
  sgd-100     FedSGD on [100, 100]                                   E = 0, 1, 5, 20
  sgd-32      FedSGD on [32, 32]                                     E = 0, 1, 5, 20
  sgd-32-b16  FedSGD on [32, 32], B = 16                             E = 0, 1, 5, 20
  flower-32   FedAvg as Flower's quickstart: lr 0.05, momentum 0.9,  E = 0, 1, 3
              reshuffled, local batches of 8, one local epoch, [32, 32]
  flower-100  the same recipe on [100, 100]                          E = 0, 1, 3
  flower-32-b16  the same recipe on [32, 32], B = 16                 E = 0, 1, 3
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

FLOWER = ["--protocol", "fedavg", "--client-lr", "0.05", "--momentum", "0.9", "--local-order", "shuffled",
          "--local-batch", "8", "--local-epochs", "1"]
# name: (flags, batch size, epochs)
SETTINGS = {
    "sgd-100": (["--hidden", "100,100"], 32, [0, 1, 5, 20]),
    "sgd-32": (["--hidden", "32,32"], 32, [0, 1, 5, 20]),
    "sgd-32-b16": (["--hidden", "32,32"], 16, [0, 1, 5, 20]),
    "flower-32": (["--hidden", "32,32"] + FLOWER, 32, [0, 1, 3]),
    "flower-100": (["--hidden", "100,100"] + FLOWER, 32, [0, 1, 3]),
    "flower-32-b16": (["--hidden", "32,32"] + FLOWER, 16, [0, 1, 3]),
}


def seeds(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def run(binary, out, table, setting, epochs, seed, extra):
    name, (path, label) = table
    flags, b, _ = SETTINGS[setting]
    report = os.path.join(out, "runs", f"{name}-{setting}-e{epochs}-s{seed}.json")
    cmd = [binary, "attack", "--csv", path, "--label", label, "--batch-size", str(b), "--seed", str(seed),
           "--train-epochs", str(epochs), "--quiet", "--json", report] + flags + extra
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    start = time.time()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.time() - start
    row = {"table": name, "setting": setting, "epochs": epochs, "seed": seed, "wall": wall}
    if done.returncode != 0:
        row["error"] = (done.stderr or done.stdout).strip().splitlines()[-1:]
        return row
    with open(report) as f:
        r = json.load(f)
    prov = {p["provenance"]: p["rows"] for p in r.get("provenance") or []}
    details = r.get("details") or {}
    # What the update shows of the batch: a FedSGD client's rows, a FedAvg client's cells moved.
    shown = details.get("shown") or {}
    cells = details.get("cells_shown") or {}
    row.update(accuracy=r["accuracy"]["total"], guessing=r.get("random_baseline"), seconds=r.get("seconds"),
               proved=prov.get("proved", 0), consistent=prov.get("consistent", 0),
               prior=(details.get("fallback") or {}).get("prior_cells"), table_rows=r.get("table_baseline"),
               imputed_without_update=(details.get("fallback") or {}).get("imputed_without_update"),
               rows_shown=shown.get("shown"), cells_shown=cells.get("shown"), cells_moved=cells.get("tested"))
    return row


def table_rows_of(rows):
    """The mean accuracy of the table's guess, rows of it chosen without the update (`table_baseline`), where
    the reports give it."""
    given = [r["table_rows"] for r in rows if r.get("table_rows") is not None]
    return f"{100 * statistics.mean(given):.1f} %" if given else ""


def shown_of(rows):
    """What the updates show of their batches, summed over the attacks: rows (FedSGD) or cells
    moved (FedAvg), where the attacks report it."""
    cells = [r for r in rows if r.get("cells_moved")]
    if cells:
        return f"{sum(r['cells_shown'] for r in cells)} of {sum(r['cells_moved'] for r in cells)} cells"
    counted = [r for r in rows if r.get("rows_shown") is not None]
    return f"{sum(r['rows_shown'] for r in counted)} rows" if counted else ""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leakscope", required=True)
    ap.add_argument("--table", action="append", required=True, help="NAME=PATH:LABEL")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--epochs", help="the same E list for every setting (default: each setting's own)")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("extra", nargs="*", help="more flags for every attack (after --)")
    a = ap.parse_args()
    os.makedirs(os.path.join(a.out, "runs"), exist_ok=True)
    tables = []
    for t in a.table:
        name, rest = t.split("=", 1)
        path, label = rest.rsplit(":", 1)
        tables.append((name, (path, label)))
    jobs = []
    for table in tables:
        for s in a.settings.split(","):
            epochs = seeds(a.epochs) if a.epochs else SETTINGS[s][2]
            for e in epochs:
                for seed in seeds(a.seeds):
                    jobs.append((table, s, e, seed))
    results = []
    with open(os.path.join(a.out, "results.jsonl"), "a") as log, ThreadPoolExecutor(a.jobs) as pool:
        for row in pool.map(lambda j: run(a.leakscope, a.out, *j, a.extra), jobs):
            log.write(json.dumps(row) + "\n")
            log.flush()
            results.append(row)
            print(json.dumps(row), file=sys.stderr)
    for name, _ in tables:
        print(f"\n{name}\n")
        print("| setting | E | seeds | accuracy | guessing | the table's guess | lowest gain | over the table's guess "
              "| rows proved | shown | s / attack | errors |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for s in a.settings.split(","):
            epochs = seeds(a.epochs) if a.epochs else SETTINGS[s][2]
            for e in epochs:
                rows = [r for r in results if r["table"] == name and r["setting"] == s and r["epochs"] == e]
                ok = [r for r in rows if "error" not in r]
                if not ok:
                    print(f"| {s} | {e} | 0 | | | | | | | | | {len(rows)} |")
                    continue
                acc = [r["accuracy"] for r in ok]
                sd = statistics.pstdev(acc) if len(acc) > 1 else 0.0
                gain = min(r["accuracy"] - r["guessing"] for r in ok)
                over = [r["accuracy"] - r["table_rows"] for r in ok if r.get("table_rows") is not None]
                print(f"| {s} | {e} | {len(ok)} | {100 * statistics.mean(acc):.1f} ± {100 * sd:.1f} % "
                      f"| {100 * statistics.mean(r['guessing'] for r in ok):.1f} % | {table_rows_of(ok)} "
                      f"| {100 * gain:+.1f} | {f'{100 * min(over):+.1f}' if over else ''} "
                      f"| {statistics.mean(r['proved'] for r in ok):.1f} | {shown_of(ok)} "
                      f"| {statistics.mean(r['seconds'] for r in ok):.1f} | {len(rows) - len(ok)} |")


if __name__ == "__main__":
    main()

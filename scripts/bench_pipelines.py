#!/usr/bin/env python3
r"""How much a FedSGD update leaks when the client encodes its rows with scikit-learn, and what
attacking it with the wrong encoding costs.

For each table (Adult: ../shared/datasets/adult.csv where present, else data/adult-sample.csv;
German Credit: data/german-credit.csv), batch size B and seed, a batch of B complete rows drawn
with numpy default_rng(seed) (in table order, written as truth.csv with the table's header) and a
FedSGD update of the default [100, 100] ReLU network with a softmax head (torch.manual_seed(seed);
scripts/export_update.py, imported), made and attacked these ways:

  leakscope     the client encodes with leakscope's own encoding; attacked with it
  sklearn       the client encodes with ColumnTransformer(OneHotEncoder(handle_unknown="ignore"),
                StandardScaler()) fitted on the table (export_update.py --sklearn onehot); attacked
                with its own encoding (leakscope.encoding_from_sklearn)
  sklearn as leakscope   the same update attacked with leakscope's own encoding: the server that
                assumes the wrong encoding (same width, other order and scaling); n/a where the
                widths differ
  sklearn drop  (with --drop) OneHotEncoder(drop="first") (--sklearn onehot-drop), attacked with
                its own encoding

Each attack is `leakscope attack-update --encoding E --weights W --update U --truth truth.csv
--json report.json --quiet`; from its report: accuracy.total, random_baseline, rows_proved,
recipe_check, reconstruction.seconds and reconstruction.update_fit (1 − cos between the update the
reconstruction would send and the one received; absent from older binaries). A run that fails is
reported with its error and the benchmark goes on. Prints a markdown table (mean ± sd over the
seeds); every attack is a JSON line in DIR/results.jsonl.

  python3 scripts/bench_pipelines.py --out /tmp/pipelines              # every table, B 8 and 32, seeds 0-4
  python3 scripts/bench_pipelines.py --out /tmp/pipelines --drop --leakscope target/release/leakscope
  # plumbing only, on a debug build:
  python3 scripts/bench_pipelines.py --out /tmp/p --tables german --batches 8 --seeds 0 \
      --iterations 20 --ensemble 2

The CLI is --leakscope, else $LEAKSCOPE_CLI, else $CARGO_TARGET_DIR/debug/leakscope
($CARGO_TARGET_DIR defaults to ~/.cache/leakscope/target). Needs torch, numpy, safetensors,
pandas, scikit-learn and the leakscope Python package (pip install ./python).
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time

import numpy

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import export_update  # noqa: E402
from bench_recipes import numbers, tail  # noqa: E402

ROOT = os.path.dirname(HERE)
FULL_ADULT = os.path.join(ROOT, "..", "shared", "datasets", "adult.csv")
TABLES = {
    "adult": (FULL_ADULT if os.path.exists(FULL_ADULT) else os.path.join(ROOT, "data", "adult-sample.csv"), "salary"),
    "german": (os.path.join(ROOT, "data", "german-credit.csv"), "credit_risk"),
}
# way: (export_update.py's --sklearn, whose encoding the server attacks with)
WAYS = {
    "leakscope": (None, "own"),
    "sklearn": ("onehot", "client"),
    "sklearn as leakscope": ("onehot", "own"),
    "sklearn drop": ("onehot-drop", "client"),
}


def default_cli():
    if os.environ.get("LEAKSCOPE_CLI"):
        return os.environ["LEAKSCOPE_CLI"]
    target = os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/leakscope/target"))
    return os.path.join(target, "debug", "leakscope")


def attack(cmd, report, timeout):
    """One attack-update: the report's figures, or the error."""
    if os.path.exists(report):
        os.remove(report)
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, err = done.returncode, done.stderr or done.stdout
    except (OSError, subprocess.TimeoutExpired) as e:
        rc, err = "not run", str(e)
    wall = time.perf_counter() - start
    if rc != 0 or not os.path.exists(report):
        return {"error": tail(err) or f"exit {rc}, no report", "wall": wall}
    with open(report) as f:
        doc = json.load(f)
    rec = doc.get("reconstruction") or {}
    fit = rec.get("update_fit")
    check = doc.get("recipe_check")
    return {
        "accuracy": (doc.get("accuracy") or {}).get("total"),
        "random_baseline": doc.get("random_baseline"),
        "rows_proved": doc.get("rows_proved"),
        "recipe_check": check.get("matches") if isinstance(check, dict) else check,
        "seconds": rec.get("seconds"),
        "update_fit": fit.get("distance") if isinstance(fit, dict) else fit,
        "wall": wall,
    }


def export(table, own_path, picked, seed, sklearn, out):
    """The client's update (export_update.py) into out; None, or the client's error."""
    flags = ["--csv", table, "--encoding", own_path, "--rows", ",".join(map(str, picked)), "--hidden", "100,100",
             "--seed", str(seed), "--out", out] + (["--sklearn", sklearn] if sklearn else [])
    try:
        export_update.run(export_update.parser().parse_args(flags))
    except (SystemExit, Exception) as e:  # the client's own failure: report it, go on
        return f"export_update: {e}"
    return None


def summary(runs):
    """Mean ± sd of accuracy and the rest over the runs that answered."""
    ok = [r for r in runs if "error" not in r]
    failed = len(runs) - len(ok)
    if not ok:
        return ["—"] * 6 + [str(failed)]

    def mean(key):
        values = [r[key] for r in ok if r.get(key) is not None]
        return statistics.mean(values) if values else None

    acc = [r["accuracy"] for r in ok if r.get("accuracy") is not None]
    sd = statistics.stdev(acc) if len(acc) > 1 else 0.0
    checks = [r["recipe_check"] for r in ok if r.get("recipe_check") is not None]
    fit = mean("update_fit")
    figures = [
        f"{100 * statistics.mean(acc):.1f} ± {100 * sd:.1f} %" if acc else "—",
        f"{100 * mean('random_baseline'):.1f} %" if mean("random_baseline") is not None else "—",
        f"{mean('rows_proved'):.1f}" if mean("rows_proved") is not None else "—",
        f"{sum(1 for c in checks if c)}/{len(checks)}" if checks else "—",
        "—" if fit is None else f"{fit:.3g}",
        f"{mean('seconds'):.2f}" if mean("seconds") is not None else "—",
    ]
    return figures + [str(failed) if failed else ""]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leakscope", default=default_cli(), help="the leakscope CLI binary")
    ap.add_argument("--out", required=True, help="work files and results.jsonl")
    ap.add_argument("--tables", default="adult,german", help=f"among {', '.join(TABLES)}")
    ap.add_argument("--batches", default="8,32")
    ap.add_argument("--seeds", default="0-4", help="0,1,2 or 0-4")
    ap.add_argument("--drop", action="store_true", help="also the OneHotEncoder(drop='first') client")
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--ensemble", type=int)
    ap.add_argument("--timeout", type=float, help="seconds before an attack is given up")
    ap.add_argument("--extra", default="", help="more attack-update arguments, e.g. '--backend cuda'")
    args = ap.parse_args()

    ways = [w for w in WAYS if w != "sklearn drop" or args.drop]
    passthrough = (["--iterations", str(args.iterations)] if args.iterations else []) + (
        ["--ensemble", str(args.ensemble)] if args.ensemble else []) + args.extra.split()
    os.makedirs(args.out, exist_ok=True)
    results_path = os.path.join(args.out, "results.jsonl")
    open(results_path, "w").close()
    rows_out = []
    for name in [t.strip() for t in args.tables.split(",")]:
        table, label = TABLES[name]
        own_path = os.path.join(args.out, f"{name}-encoding.json")
        made = subprocess.run([args.leakscope, "encoding", "--csv", table, "--label", label, "--out", own_path],
                              capture_output=True, text=True)
        if made.returncode != 0:
            sys.exit(f"leakscope encoding of {table} failed:\n{tail(made.stderr or made.stdout)}")
        with open(own_path) as f:
            own = json.load(f)
        header, complete = export_update.read_rows(table, own)
        for b in numbers(args.batches):
            runs = {w: [] for w in ways}
            for seed in numbers(args.seeds):
                run_dir = os.path.join(args.out, "runs", f"{name}-b{b}-s{seed}")
                os.makedirs(run_dir, exist_ok=True)
                picked = sorted(int(i) for i in numpy.random.default_rng(seed).choice(len(complete), size=b, replace=False))
                truth = os.path.join(run_dir, "truth.csv")
                with open(truth, "w", newline="") as f:
                    csv.writer(f).writerows([header, *(complete[i] for i in picked)])
                clients = {}  # --sklearn value → (its directory, the client's error)
                for way in ways:
                    sklearn, whose = WAYS[way]
                    client_dir = os.path.join(run_dir, sklearn or "leakscope")
                    if sklearn not in clients:
                        clients[sklearn] = (client_dir, export(table, own_path, picked, seed, sklearn, client_dir))
                    client_dir, failed = clients[sklearn]
                    encoding = own_path if whose == "own" else os.path.join(client_dir, "encoding.json")
                    base = {"table": name, "batch": b, "seed": seed, "way": way, "table_rows": picked}
                    if failed:
                        result = {"error": failed}
                    elif whose == "own" and sklearn and not same_width(own_path, encoding_of(client_dir)):
                        result = {"na": "the client's inputs are not as wide as leakscope's encoding"}
                    else:
                        report = os.path.join(client_dir, f"report-{whose}.json")
                        cmd = [args.leakscope, "attack-update", "--encoding", encoding,
                               "--weights", os.path.join(client_dir, "weights.safetensors"),
                               "--update", os.path.join(client_dir, "update.safetensors"),
                               "--truth", truth, "--json", report, "--quiet"] + passthrough
                        result = attack(cmd, report, args.timeout)
                    with open(results_path, "a") as f:
                        f.write(json.dumps({**base, **result}) + "\n")
                    if "na" not in result:
                        runs[way].append(result)
                    status = result.get("error") or result.get("na") or (
                        f"{100 * (result['accuracy'] or 0):.1f} % (random {100 * (result['random_baseline'] or 0):.1f} %), "
                        f"{result['rows_proved']} proved, {result['wall']:.1f} s")
                    print(f"{name} B={b} seed={seed} {way}: {status}", flush=True)
            for way in ways:
                rows_out.append([name, str(b), way, *(summary(runs[way]) if runs[way] else ["n/a"] * 6 + [""])])

    print("\n| dataset | B | way | accuracy (mean ± sd) | random baseline | rows proved | recipe check matches | update fit (1 − cos) | seconds | failed |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows_out:
        print("| " + " | ".join(r) + " |")
    print(f"\nper run: {results_path}")


def encoding_of(client_dir):
    return os.path.join(client_dir, "encoding.json")


def same_width(a, b):
    """Whether two encodings take inputs of the same width."""
    with open(a) as f, open(b) as g:
        return len(json.load(f)["mean"]) == len(json.load(g)["mean"])


if __name__ == "__main__":
    main()

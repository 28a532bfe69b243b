#!/usr/bin/env python3
"""How well `leakscope attack-update` reconstructs a FedAvg client's rows under the client's own
training recipe (momentum, reshuffled rows, weight decay, Adam, ...), told the recipe or not.

The measurement of the issue, reproduced and extended: a FedAvg client of --rows complete rows of
the table (default 32 full-Adult rows), the default [100, 100] ReLU network with a softmax head,
local batches of --local-batch (8), trained in float64 with the real torch.optim (through
scripts/export_update.py, imported), its update θ0 − θE attacked twice:

  told      attack-update with the recipe given through its flags (--optimizer, --momentum,
            --nesterov, --weight-decay, --local-order shuffled, ...)
  not told  the old flags only: plain SGD over the rows in the given order

  recipe             client                                      client lr   told
  plain              SGD, rows in order                          0.01        (the same run)
  momentum           SGD(momentum=0.9)                           0.01        --momentum 0.9
  nesterov           SGD(momentum=0.9, nesterov=True)            0.01        --momentum 0.9 --nesterov
  shuffled           SGD, DataLoader(shuffle=True) every epoch   0.01        --local-order shuffled
  momentum-shuffled  both                                        0.01        both
  weight-decay       SGD(weight_decay=5e-4)                      0.01        --weight-decay 5e-4
  adam               Adam                                        1e-3        --optimizer adam
  adamw              AdamW(weight_decay=0.01)                    1e-3        --optimizer adamw --weight-decay 0.01

For each recipe × E × seed: --rows distinct complete rows drawn with numpy default_rng(seed) (in
table order), written as DIR/runs/RECIPE-eE-sSEED/truth.csv (the table's header and cells); the
network initialised with torch.manual_seed(seed) (and the shuffle's generator seeded so too).
Each attack's report (--json) gives the total cell accuracy (accuracy.total), the guessing
baseline (random_baseline) and, where the binary reports one, recipe_check; the wall time is the
attack process's. A run the binary refuses (e.g. an unknown flag) is reported with its error and
the benchmark goes on. Prints a markdown table; every attack is a JSON line in DIR/results.jsonl.

  python3 scripts/bench_recipes.py --leakscope target/release/leakscope --out /tmp/recipes
  python3 scripts/bench_recipes.py --leakscope target/release/leakscope --out /tmp/recipes \\
      --recipes plain,momentum --epochs 1,5 --seeds '1=0-2;5=0-1'
  # plumbing only, on a debug build:
  python3 scripts/bench_recipes.py --leakscope target/debug/leakscope --out /tmp/r --rows 8 \\
      --local-batch 4 --seeds 0 --epochs 1 --recipes plain,momentum --iterations 20 --ensemble 2

--seeds: a list (0,1,2) or range (0-2) for every E, or per E: '1=0-2;5=0-1'. --recipes: names,
or all (the eight above; the default is the issue's six). Needs torch, numpy and safetensors.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time

import numpy

sys.dont_write_bytecode = True  # no scripts/__pycache__ in the work tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_update  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))

# name: (export_update.py's recipe flags, attack-update's flags when told, client lr)
RECIPES = {
    "plain": ([], [], 0.01),
    "momentum": (["--momentum", "0.9"], ["--momentum", "0.9"], 0.01),
    "shuffled": (["--shuffle", "SEED"], ["--local-order", "shuffled"], 0.01),
    "momentum-shuffled": (["--momentum", "0.9", "--shuffle", "SEED"], ["--momentum", "0.9", "--local-order", "shuffled"], 0.01),
    "weight-decay": (["--weight-decay", "5e-4"], ["--weight-decay", "5e-4"], 0.01),
    "adam": (["--optimizer", "adam"], ["--optimizer", "adam"], 1e-3),
    "nesterov": (["--momentum", "0.9", "--nesterov"], ["--momentum", "0.9", "--nesterov"], 0.01),
    "adamw": (["--optimizer", "adamw", "--weight-decay", "0.01"], ["--optimizer", "adamw", "--weight-decay", "0.01"], 1e-3),
}
DEFAULT_RECIPES = "plain,momentum,shuffled,momentum-shuffled,weight-decay,adam"


def numbers(spec):
    """'0,1,2' or '0-2' (or a mix: '0-2,5') → [0, 1, 2]."""
    out = []
    for part in spec.split(","):
        lo, dash, hi = part.strip().partition("-")
        out += list(range(int(lo), int(hi) + 1)) if dash else [int(lo)]
    return out


def seeds_by_epoch(spec, epochs):
    """'0-2' for every E, or '1=0-2;5=0-1' per E."""
    if "=" not in spec:
        return {e: numbers(spec) for e in epochs}
    given = {int(e): numbers(s) for e, _, s in (p.partition("=") for p in spec.split(";") if p.strip())}
    missing = [e for e in epochs if e not in given]
    if missing:
        sys.exit(f"--seeds says nothing of E = {missing}")
    return {e: given[e] for e in epochs}


def find_key(doc, key):
    """The first value under key anywhere in a JSON document (None where absent)."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        doc = list(doc.values())
    if isinstance(doc, list):
        for v in doc:
            found = find_key(v, key)
            if found is not None:
                return found
    return None


def tail(text, lines=6):
    """An error's gist: from clap's 'error:' line to its usage line, else the last lines."""
    text = text.strip().splitlines()
    at = next((i for i, l in enumerate(text) if l.lower().startswith("error")), None)
    if at is None:
        return "\n".join(text[-lines:])
    gist = [l for l in text[at:] if l.strip()]
    end = next((i for i, l in enumerate(gist) if l.startswith("Usage:")), len(gist))
    return "\n".join(gist[:max(end, 1)][:lines])


def attack(cmd, report, log, timeout):
    """Run one attack-update; its accuracy, guessing baseline, recipe check and wall time, or its
    error."""
    start = time.perf_counter()
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out, err = done.returncode, done.stdout, done.stderr
    except OSError as e:
        rc, out, err = "not run", "", str(e)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        rc, err = "timeout", f"timed out after {timeout} s"
    seconds = time.perf_counter() - start
    with open(log, "w") as f:
        f.write(" ".join(cmd) + "\n\n" + out + "\n" + err)
    result = {"rc": rc, "seconds": round(seconds, 3), "command": cmd}
    if rc != 0 or not os.path.exists(report):
        result["error"] = tail(err or out) or f"exit {rc}, no report"
        return result
    with open(report) as f:
        doc = json.load(f)
    acc = doc.get("accuracy") or {}
    result.update(
        accuracy=acc.get("total"),
        categorical=acc.get("categorical"),
        continuous=acc.get("continuous"),
        guessing=doc.get("random_baseline"),
        attack_seconds=find_key(doc.get("reconstruction", {}), "seconds"),
        recipe_check=find_key(doc, "recipe_check"),
    )
    return result


def mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def pct(v):
    return "—" if v is None else f"{100 * v:.1f} %"


def cell(runs, key, fmt=pct, count_failed=True):
    """The mean over the runs that answered, and how many failed."""
    ok = [r[key] for r in runs if r.get("error") is None and r.get(key) is not None]
    failed = sum(1 for r in runs if r.get("error") is not None) if count_failed else 0
    text = fmt(mean(ok)) if ok else "—"
    return text + (f" ({failed} failed)" if failed else "")


def check_cell(runs):
    """How many told runs' recipe_check matched, of those it could check (matches not null)."""
    checks = [r.get("recipe_check") for r in runs if r.get("error") is None]
    checks = [c for c in checks if isinstance(c, dict)]
    if not checks:
        return "—"
    checked = [c for c in checks if c.get("matches") is not None]
    unchecked = len(checks) - len(checked)
    gaps = [c.get("relative_gap") for c in checked if isinstance(c.get("relative_gap"), (int, float))]
    text = f"{sum(1 for c in checked if c['matches'])}/{len(checked)} match" if checked else ""
    text += f", gap ≤ {max(gaps):.3g}" if gaps else ""
    return (text + (f"; {unchecked} not checkable" if unchecked else "")).lstrip("; ")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leakscope", required=True, help="the leakscope CLI binary")
    ap.add_argument("--csv", default=os.path.join(HERE, "..", "..", "shared", "datasets", "adult.csv"))
    ap.add_argument("--label", default="salary")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--local-batch", type=int, default=8)
    ap.add_argument("--seeds", default="0-2", help="0,1,2 or 0-2 for every E, or per E: '1=0-2;5=0-1'")
    ap.add_argument("--epochs", default="1,5")
    ap.add_argument("--recipes", default=DEFAULT_RECIPES, help=f"names among {', '.join(RECIPES)}, or all")
    ap.add_argument("--out", required=True, help="work files and results.jsonl")
    ap.add_argument("--iterations", type=int)
    ap.add_argument("--ensemble", type=int)
    ap.add_argument("--timeout", type=float, help="seconds before an attack is given up")
    ap.add_argument("--told-only", action="store_true", help="skip the 'not told' attacks")
    ap.add_argument("--extra", default="", help="more attack-update arguments, e.g. '--backend cuda'")
    args = ap.parse_args()

    recipes = list(RECIPES) if args.recipes == "all" else [r.strip() for r in args.recipes.split(",")]
    unknown = [r for r in recipes if r not in RECIPES]
    if unknown:
        sys.exit(f"unknown recipes {unknown}; known: {', '.join(RECIPES)}")
    epochs = numbers(args.epochs)
    seeds = seeds_by_epoch(args.seeds, epochs)
    os.makedirs(args.out, exist_ok=True)
    encoding_path = os.path.join(args.out, "encoding.json")
    try:
        made = subprocess.run([args.leakscope, "encoding", "--csv", args.csv, "--label", args.label,
                               "--out", encoding_path], capture_output=True, text=True)
    except OSError as err:
        sys.exit(f"cannot run {args.leakscope}: {err}")
    if made.returncode != 0:
        sys.exit(f"leakscope encoding failed:\n{tail(made.stderr or made.stdout)}")
    with open(encoding_path) as f:
        encoding = json.load(f)
    header, table = export_update.read_rows(args.csv, encoding)
    if args.rows > len(table):
        sys.exit(f"{args.csv} has {len(table)} complete rows, fewer than --rows {args.rows}")
    passthrough = (["--iterations", str(args.iterations)] if args.iterations else []) + (
        ["--ensemble", str(args.ensemble)] if args.ensemble else []) + args.extra.split()

    results_path = os.path.join(args.out, "results.jsonl")
    open(results_path, "w").close()
    summary = []
    for recipe in recipes:
        client_flags, told_flags, lr = RECIPES[recipe]
        for e in epochs:
            told_runs, blind_runs = [], []
            for seed in seeds[e]:
                run_dir = os.path.join(args.out, "runs", f"{recipe}-e{e}-s{seed}")
                os.makedirs(run_dir, exist_ok=True)
                picked = sorted(int(i) for i in numpy.random.default_rng(seed).choice(len(table), size=args.rows, replace=False))
                truth = os.path.join(run_dir, "truth.csv")
                with open(truth, "w", newline="") as f:
                    writer = csv.writer(f)
                    writer.writerow(header)
                    writer.writerows(table[i] for i in picked)
                base = {"recipe": recipe, "epochs": e, "seed": seed, "rows": args.rows, "local_batch": args.local_batch,
                        "client_lr": lr, "table_rows": picked}
                client = ["--csv", args.csv, "--encoding", encoding_path, "--rows", ",".join(map(str, picked)),
                          "--hidden", "100,100", "--seed", str(seed), "--protocol", "fedavg", "--local-epochs", str(e),
                          "--local-batch", str(args.local_batch), "--client-lr", str(lr), "--dtype", "float64",
                          "--out", run_dir] + [str(seed) if a == "SEED" else a for a in client_flags]
                try:
                    export_update.run(export_update.parser().parse_args(client))
                except (SystemExit, Exception) as err:  # the client's own failure: report, go on
                    failure = {**base, "mode": "client", "error": f"export_update: {err}"}
                    print(f"FAILED {recipe} E={e} seed={seed}: {failure['error']}")
                    with open(results_path, "a") as f:
                        f.write(json.dumps(failure) + "\n")
                    told_runs.append(failure), blind_runs.append(failure)
                    continue
                common = [args.leakscope, "attack-update", "--encoding", encoding_path,
                          "--weights", os.path.join(run_dir, "weights.safetensors"),
                          "--update", os.path.join(run_dir, "update.safetensors"),
                          "--protocol", "fedavg", "--local-epochs", str(e), "--local-batch", str(args.local_batch),
                          "--client-lr", str(lr), "--batch-size", str(args.rows), "--truth", truth, "--quiet"] + passthrough
                modes = [("not told", [])] if not told_flags else [("told", told_flags), ("not told", [])]
                if args.told_only:
                    modes = modes[:1]
                for mode, flags in modes:
                    name = mode.replace(" ", "-")
                    report = os.path.join(run_dir, f"{name}.json")
                    if os.path.exists(report):
                        os.remove(report)
                    cmd = common + flags + ["--json", report]
                    result = {**base, "mode": mode if told_flags else "told = not told", **attack(
                        cmd, report, os.path.join(run_dir, f"{name}.log"), args.timeout)}
                    with open(results_path, "a") as f:
                        f.write(json.dumps(result) + "\n")
                    if result.get("error") is not None:
                        print(f"FAILED {recipe} E={e} seed={seed} {result['mode']} (rc {result['rc']}):\n  "
                              + result["error"].replace("\n", "\n  "))
                    else:
                        print(f"{recipe} E={e} seed={seed} {result['mode']}: {pct(result['accuracy'])} "
                              f"(guessing {pct(result['guessing'])}), {result['seconds']:.1f} s"
                              + (f", recipe_check {json.dumps(result['recipe_check'])}" if result["recipe_check"] is not None else ""))
                    (told_runs if mode == "told" or not told_flags else blind_runs).append(result)
                    if not told_flags:
                        blind_runs.append(result)
            summary.append((recipe, e, seeds[e], told_runs, blind_runs))

    seconds = lambda v: f"{v:.1f}"
    print("\n| recipe | E | seeds | told: mean accuracy | not told: mean accuracy | guessing | seconds per attack (told) | recipe check (told) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for recipe, e, s, told, blind in summary:
        span = f"{s[0]}–{s[-1]}" if len(s) > 1 and s == list(range(s[0], s[-1] + 1)) else ",".join(map(str, s))
        print(f"| {recipe} | {e} | {span} | {cell(told, 'accuracy')} | {cell(blind, 'accuracy')} | "
              f"{cell(told + blind, 'guessing', count_failed=False)} | {cell(told, 'seconds', seconds)} | {check_cell(told)} |")
    print(f"\nper run: {results_path}")


if __name__ == "__main__":
    main()

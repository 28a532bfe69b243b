#!/usr/bin/env python3
"""Run the crate's test binaries (unit and integration) two at a time, longest first.

`cargo test -- --test-threads 1` runs the binaries one after another: on 2 cores that left one
core idle for 26 of the suite's minutes. Tests inside a binary still run one at a time (the GPU
tests count kernel launches process-wide); two binaries are two processes, so nothing they count
is shared. Each binary's output is printed whole when it ends, so two never interleave; every
binary runs even after one fails, and the script fails if any did. `--also NAME=COMMAND` runs a
shell command among them, started first (the Python tests: 10 minutes, mostly on one core); the
other arguments go to cargo (`--release`, `--test attack`)."""
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor, as_completed

# Started first, as the slowest on the 2-core machine (dev profile, alone, 2026-12-07: 489, 368,
# 162, 117, 91 and 67 s); binaries not named here follow in cargo's order.
SLOWEST = ["update_choice", "attack", "near_dependent", "federated", "adversarial", "ensemble_rule"]


def binaries(cargo_args):
    """(name, path) of every test binary `cargo test --no-run` builds."""
    out = subprocess.run(
        ["cargo", "test", "--no-run", "--message-format=json-render-diagnostics", *cargo_args],
        stdout=subprocess.PIPE,
        check=True,
        text=True,
    ).stdout
    found = []
    for line in out.splitlines():
        msg = json.loads(line)
        if msg.get("reason") == "compiler-artifact" and msg.get("profile", {}).get("test") and msg.get("executable"):
            target = msg["target"]
            name = target["name"] if "test" in target["kind"] else f"{target['name']} ({target['kind'][0]})"
            found.append((name, msg["executable"]))
    rank = {name: i for i, name in enumerate(SLOWEST)}
    return sorted(found, key=lambda b: rank.get(b[0], len(SLOWEST)))


def run(job):
    name, command = job
    start = time.monotonic()
    done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return name, done.returncode, done.stdout, time.monotonic() - start


def jobs_of(args):
    """The `--also` commands, then the test binaries, each as (name, argv)."""
    also, cargo_args = [], []
    while args:
        if args[0] == "--also":
            if len(args) < 2 or "=" not in args[1]:
                sys.exit("run_tests.py: --also takes NAME=COMMAND, e.g. --also 'python=pytest python/tests'")
            name, command = args[1].split("=", 1)
            also.append((name, ["bash", "-c", command]))
            args = args[2:]
        else:
            cargo_args.append(args[0])
            args = args[1:]
    return also + [(name, [path, "--test-threads", "1"]) for name, path in binaries(cargo_args)]


def main():
    failed = []
    with ThreadPoolExecutor(max_workers=int(os.environ.get("LEAKSCOPE_TEST_JOBS", "2"))) as pool:
        # The pool takes the binaries in the order given: the slowest start first.
        running = [pool.submit(run, job) for job in jobs_of(sys.argv[1:])]
        for future in as_completed(running):
            name, code, output, seconds = future.result()
            status = "ok" if code == 0 else f"FAILED ({code})"
            print(f"\n==== {name}: {status} in {seconds:.0f} s\n{output}", flush=True)
            if code != 0:
                failed.append(name)
    if failed:
        print(f"run_tests.py: {len(failed)} failed: {', '.join(failed)}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

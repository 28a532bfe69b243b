#!/usr/bin/env python3
"""The canaries' ε against the analytic one on the Gaussian mechanism (docs/results/canaries.md).

For each target ε, the noise multiplier σ whose single release has that analytic ε (bisected on
`leakscope privacy`'s per_release), then `leakscope privacy --rounds 1 --canaries K --dimension D
--canary-seed S` for each K and seed; prints a markdown table of the final model's estimates, the
largest relative error and how many 95 % intervals cover the analytic ε.

  python3 scripts/bench_canaries.py --leakscope target/debug/leakscope
  python3 scripts/bench_canaries.py --leakscope target/debug/leakscope --epsilons 4,16 --canaries 100,1000
"""
import argparse
import json
import subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leakscope", required=True, help="the leakscope CLI binary")
    ap.add_argument("--epsilons", default="1,4,16")
    ap.add_argument("--canaries", default="100,300,1000")
    ap.add_argument("--seeds", type=int, default=5, help="seeds 0 to N − 1")
    ap.add_argument("--dimension", type=int, default=400_000)
    args = ap.parse_args()

    def privacy(*flags):
        done = subprocess.run([args.leakscope, "privacy", "--json", *map(str, flags)], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"leakscope privacy {' '.join(map(str, flags))}: {done.stderr.strip()}")
        return json.loads(done.stdout)

    def sigma_for(eps):
        lo, hi = 0.01, 100.0
        for _ in range(60):
            mid = (lo * hi) ** 0.5
            if privacy("--noise-multiplier", mid, "--rounds", 1)["per_release"] > eps:
                lo = mid
            else:
                hi = mid
        return hi

    print("| analytic ε | σ | canaries | estimates | mean | largest error | 95 % intervals covering |")
    print("|---|---|---|---|---|---|---|")
    for eps in (float(e) for e in args.epsilons.split(",")):
        sigma = sigma_for(eps)
        for k in (int(c) for c in args.canaries.split(",")):
            estimates, covering = [], 0
            for seed in range(args.seeds):
                c = privacy("--noise-multiplier", sigma, "--rounds", 1, "--canaries", k, "--dimension", args.dimension,
                            "--canary-seed", seed)["canaries"]["final_model"]
                estimates.append(c["epsilon"])
                lo, hi = c["interval"]
                covering += lo <= eps and (hi is None or hi >= eps)
            error = max(abs(e - eps) / eps for e in estimates)
            print(f"| {eps:g} | {sigma:.3f} | {k} | {', '.join(f'{e:.2f}' for e in estimates)} | "
                  f"{sum(estimates) / len(estimates):.2f} | {100 * error:.0f} % | {covering}/{len(estimates)} |", flush=True)


if __name__ == "__main__":
    main()

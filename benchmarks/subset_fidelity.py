"""Subset fidelity on the built-in simulated set (100 LLMs × 34,312 items): three selection methods.

Fits 2 dimensions with ADVI on the full data (saved, reused when present; ``--scale`` below 1
simulates a reduced set with the built-in seed instead), then for 1, 5, 10,
25 and 50 % of the items re-estimates every LLM's abilities from the kept items (items held at
their posterior) and reports correlations with the full-data abilities, the full benchmark
means and the true abilities.

    python benchmarks/subset_fidelity.py --out subset_fidelity.csv --repeats 3
    python benchmarks/subset_fidelity.py --scale 0.1 --repeats 2     # minutes
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from benchmirt_bayes import (
    evaluate_subset,
    fidelity_summary,
    fit_posterior,
    load_posterior,
    save_posterior,
)
from benchmirt_bayes.simulation.datasets import builtin_set


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="share of the built-in set's items")
    parser.add_argument("--fit", default="builtin_advi_2d.nc", help="fit file (made if missing)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--draws", type=int, default=30, help="posterior draws used per subset")
    parser.add_argument("--results-dir", default="subset_results")
    parser.add_argument("--executor", default="serial", choices=["serial", "auto"])
    parser.add_argument("--out", default="subset_fidelity.csv")
    args = parser.parse_args()
    sim = builtin_set(args.scale)
    start = time.perf_counter()
    if Path(args.fit).exists():
        fit = load_posterior(args.fit, responses=sim.responses)
    else:
        fit = fit_posterior(sim.responses, 2, method="advi", seed=20260301, advi={"draws": 200})
        save_posterior(fit, args.fit)
    print(f"fit ready in {time.perf_counter() - start:.0f} s")
    start = time.perf_counter()
    table = evaluate_subset(
        fit,
        repeats=args.repeats,
        truth=sim.truth,
        n_draws=args.draws,
        executor=args.executor,
        results_dir=args.results_dir,
    )
    table.to_csv(args.out, index=False)
    summary = fidelity_summary(table)
    summary.to_csv(Path(args.out).with_name(Path(args.out).stem + "_summary.csv"))
    pd.set_option("display.width", 200)
    for target in ("full_ability", "benchmark_mean", "true_ability"):
        print(f"\n{target}: Spearman (Pearson), mean over dimensions/benchmarks; random: mean of repeats")
        part = summary.loc[target]
        text = (
            part["spearman_mean"].round(3).astype(str)
            + " ("
            + part["pearson_mean"].round(3).astype(str)
            + ")"
        )
        print(text.unstack("fraction").to_string())
    print(f"\nevaluation {time.perf_counter() - start:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()

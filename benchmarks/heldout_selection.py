"""Held-out-LLM error of small item subsets on the real Open LLM Leaderboard data (issue: item selection).

Hold out 20 % of the LLMs (fold 0 of the seeded 5-fold LLM split used by
``benchmirt cv --scheme llms --folds 5 --seed 42``), fit 2 dimensions with ADVI on the
rest, select 5 / 10 / 25 % of the items with each method on that fit, score every
held-out LLM from the kept items alone and compare its estimated benchmark scores with
its full benchmark scores (percentage points).

    python benchmarks/heldout_selection.py --results-dir cv_fits --out heldout_selection.csv

``--results-dir`` may point at the folder of an earlier ``benchmirt cv`` run with the same
settings: the fold fit is then reused instead of refitted.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from benchmirt_bayes.analyses.heldout import fold_split
from benchmirt_bayes.analyses.selection import held_out_benchmark_error
from benchmirt_bayes.batch import run_batch
from benchmirt_bayes.data.real_data import load_open_llm_leaderboard
from benchmirt_bayes.workflows.crossval import CVFitTask, fold_fit_request

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "open_llm_leaderboard_v1"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", default=str(SHARED))
    parser.add_argument("--results-dir", default="heldout_fits")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default="heldout_selection.csv")
    args = parser.parse_args()
    responses = load_open_llm_leaderboard(args.data)
    _, fit_json = fold_fit_request(responses, 2, method="advi")
    task = CVFitTask("llms", 0, 5, 42, 0.5, 2, fit_json)
    start = time.perf_counter()
    fit = run_batch([task], responses, executor="serial", results_dir=args.results_dir)[task.key]
    split = fold_split(responses, "llms", 0, 5, 42)
    held_out = responses.subset(llms=list(responses.llms[split.held_out]))
    print(
        f"fit on {split.train.n_llms} LLMs, {held_out.n_llms} held out ({time.perf_counter() - start:.0f} s)"
    )
    table = held_out_benchmark_error(fit, held_out, fractions=(0.05, 0.1, 0.25), repeats=args.repeats)
    table.to_csv(args.out, index=False)
    pd.set_option("display.width", 200)
    wide = table.pivot_table(index=["fraction", "benchmark"], columns="method", values="rmse_pp")
    print("RMSE (percentage points) per benchmark:\n", wide.round(2).to_string())
    mae = table.pivot_table(index="fraction", columns="method", values="mae_pp")
    print("MAE (percentage points), mean over benchmarks:\n", mae.round(2).to_string())
    items = table.groupby("fraction")["n_items_kept"].sum() / table["method"].nunique()
    print("items kept (all benchmarks):\n", items.to_string())
    print(f"total {time.perf_counter() - start:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()

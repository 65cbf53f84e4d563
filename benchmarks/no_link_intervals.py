"""Scores without a link at 20, 50 and 150 LLMs: is the 90 % interval honest on real data?

The Open LLM Leaderboard joint set (``../shared/data/open_llm_leaderboard_v1``: 2,461 LLMs ×
693 items, five benchmarks). For each number of training LLMs and each fold (seeded): a
2-dimension fit of that many LLMs on every item (``fit_posterior``'s default call, NUTS, or
``--method advi``), and 100 other LLMs that answered ``k`` random items per benchmark.
``estimate_scores`` without a link estimates each held-out LLM's score on all fitted items
of each benchmark; the truth is the score it got there. Three estimates, each with its 90 % interval:

* ``predictive``: the package's (a posterior predictive interval of the score);
* ``expected``: the posterior interval of the model's *expected* score (the interval the
  package gave before: of a parameter, not of the score);
* ``plain mean``: the mean on the answered items, with the normal interval of a sample
  without replacement from the benchmark's items (the simplest honest estimate).

Printed per (training LLMs, items per benchmark): coverage of the 90 % intervals, mean width
and mean absolute error in points, with date, machine and commit.

    python benchmarks/no_link_intervals.py --method advi  # about 10 minutes on 2 cores
    python benchmarks/no_link_intervals.py                # NUTS fits: longer (not yet timed)
    python benchmarks/no_link_intervals.py --folds 1      # a quick look
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import norm

from benchmirt_bayes import estimate_scores, fit_posterior, load_open_llm_leaderboard
from benchmirt_bayes.analyses.ability_posterior import ability_posterior, predicted_mean_score
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.summaries import interval_quantiles

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "open_llm_leaderboard_v1"
HELD_OUT = 100


def fold_rows(board, n_train: int, budgets: list[int], fold: int, draws: int, method: str) -> list[dict]:
    rng = np.random.default_rng([fold, n_train])
    llms = rng.permutation(board.llms)
    train, test = list(llms[:n_train]), list(llms[n_train : n_train + HELD_OUT])
    chosen = {} if method == "default" else {"method": method}
    fit = fit_posterior(board.subset(llms=train), 2, seed=fold, progressbar=False, **chosen)
    return [row for k in budgets for row in budget_rows(board, fit, test, k, rng, draws, n_train, fold)]


def budget_rows(board, fit, test, k: int, rng, draws: int, n_train: int, fold: int) -> list[dict]:
    benchmarks = board.benchmarks.astype(str)
    kept = [
        str(i)
        for b in board.benchmark_names
        for i in rng.choice(board.items[benchmarks == b], k, replace=False)
    ]
    answers = board.data.sel(llm=test, item=kept).to_pandas()
    table = estimate_scores(fit, answers, n_draws=draws)
    truth = board.subset(llms=test).benchmark_scores()
    rows = []
    item_draws = PosteriorDraws.from_posterior(fit, draws)
    outcomes = np.full((len(test), len(item_draws.items)), np.nan)
    outcomes[:, item_draws.columns(kept)] = answers.to_numpy()
    abilities = ability_posterior(item_draws, outcomes)
    z = norm.ppf(interval_quantiles(0.9)[1])
    for name in board.benchmark_names:
        part = table[table["benchmark"] == name].set_index("llm").loc[test]
        columns = np.flatnonzero(item_draws.layout.benchmarks == name)
        expected = predicted_mean_score(abilities, item_draws, columns, outcomes, 0.9, predictive=False)
        n_items = len(columns)
        plain = part["kept_mean"].to_numpy()
        half = z * np.sqrt(plain * (1 - plain) / k * (n_items - k) / (n_items - 1))
        estimates = {
            "predictive": (part["mean"].to_numpy(), part["lower"].to_numpy(), part["upper"].to_numpy()),
            "expected": (expected["mean"], expected["lower"], expected["upper"]),
            "plain mean": (plain, plain - half, plain + half),
        }
        actual = truth.loc[test, name].to_numpy()
        for label, (mean, lower, upper) in estimates.items():
            rows.append(
                {
                    "train_llms": n_train,
                    "items_per_benchmark": k,
                    "fold": fold,
                    "benchmark": name,
                    "estimate": label,
                    "covered": float(np.mean((lower <= actual) & (actual <= upper))),
                    "width_pp": float(100 * np.mean(upper - lower)),
                    "mae_pp": float(100 * np.mean(np.abs(mean - actual))),
                }
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 150])
    parser.add_argument("--items", type=int, nargs="+", default=[10, 25])
    parser.add_argument("--folds", type=int, default=2)
    parser.add_argument("--draws", type=int, default=50)
    parser.add_argument(
        "--method",
        default="default",
        choices=["default", "advi"],
        help="fit_posterior's default call, or ADVI",
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    board = load_open_llm_leaderboard(DATA)
    rows = []
    for n_train in args.sizes:
        for fold in range(args.folds):
            rows += fold_rows(board, n_train, args.items, fold, args.draws, args.method)
    table = pd.DataFrame(rows)
    summary = (
        table.groupby(["train_llms", "items_per_benchmark", "estimate"])[["covered", "width_pp", "mae_pp"]]
        .mean()
        .round(3)
        .unstack("estimate")
    )
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout
    command = "python benchmarks/no_link_intervals.py " + " ".join(
        f"--{k} {' '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in vars(args).items()
    )
    print(
        f"# Scores without a link, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} "
        f"({platform.machine()}), commit {commit.strip()}, `{command}`\n"
    )
    pd.set_option("display.width", 200)
    print(summary.to_string())


if __name__ == "__main__":
    main()

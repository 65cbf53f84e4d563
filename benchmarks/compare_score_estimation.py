"""The package's full-score RMSE of a ``score_estimation.py`` run against an earlier run's tables.

Reads this run's ``predictions.csv`` files and the ``RMSE at every budget`` and ``90 %
intervals`` tables of ``benchmarks/RESULTS.md`` at an earlier commit (``git show``), and
prints, per fit, budget, selection and benchmark, the package's RMSE now and then, the
difference, a bootstrap standard error of this run's RMSE over held-out LLMs (200 resamples,
seeded) and the coverage of the 90 % intervals now and then. The SE is that of one RMSE: the
two runs share folds and LLMs, so it overstates the noise of their difference where the items
are the same and understates it where a selection rule picked other items.

    python benchmarks/compare_score_estimation.py A/predictions.csv B/predictions.csv --against a2341e8
"""

from __future__ import annotations

import argparse
import subprocess

import numpy as np
import pandas as pd
from metabench_reference import SHARED  # a sibling script

from benchmirt_bayes.data.real_data import OPEN_LLM_BENCHMARKS

KEYS = ["fit", "budget", "selection", "estimator"]


def earlier_table(text: list[str], heading: str, name: str) -> pd.DataFrame:
    """One Markdown table of the earlier section, long by benchmark, values in column ``name``."""
    start = next(k for k, line in enumerate(text) if line.startswith(heading))
    rows = []
    for line in text[start + 1 :]:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip("|").split("|")])
        elif rows:
            break
    frame = pd.DataFrame(rows[2:], columns=rows[0])
    long = frame.melt(id_vars=KEYS, var_name="benchmark", value_name=name)
    long[name] = pd.to_numeric(long[name], errors="coerce")
    return long


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("predictions", nargs="+", help="predictions.csv of score_estimation.py runs")
    parser.add_argument(
        "--against", default="a2341e8", help="commit whose RESULTS.md holds the earlier tables"
    )
    args = parser.parse_args()
    text = subprocess.run(
        ["git", "show", f"{args.against}:benchmarks/RESULTS.md"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    earlier = earlier_table(text, "#### RMSE (points) at every budget", "rmse_then").merge(
        earlier_table(text, "#### The package's 90 % intervals", "coverage_then"), how="left"
    )
    predictions = pd.concat([pd.read_csv(path) for path in args.predictions], ignore_index=True)
    truth = {
        b: pd.read_csv(SHARED / f"scores_{b}_all_models.csv").set_index("model")["score"]
        for b in OPEN_LLM_BENCHMARKS
    }
    predictions["truth"] = [
        truth[b].get(llm, np.nan) for b, llm in zip(predictions["benchmark"], predictions["llm"], strict=True)
    ]
    predictions = predictions[predictions["estimator"] == "package"]
    error = (predictions["estimate"] - predictions["truth"]) ** 2
    inside = (predictions["lower"] <= predictions["truth"]) & (predictions["truth"] <= predictions["upper"])
    rng = np.random.default_rng(0)
    rows = []
    for key, rows_of_cell in predictions.assign(sq=error, inside=inside).groupby([*KEYS, "benchmark"]):
        squares = rows_of_cell["sq"].to_numpy()
        resampled = [np.sqrt(squares[rng.integers(0, squares.size, squares.size)].mean()) for _ in range(200)]
        rows.append((*key, np.sqrt(squares.mean()), np.std(resampled), rows_of_cell["inside"].mean()))
    now = pd.DataFrame(rows, columns=[*KEYS, "benchmark", "rmse_now", "se_now", "coverage_now"])
    both = now.merge(earlier, how="left")
    both["difference"] = both["rmse_now"] - both["rmse_then"]
    both["in_ses"] = both["difference"] / both["se_now"]
    pd.set_option("display.width", 200)
    print(both.drop(columns="estimator").round(3).to_string(index=False))
    compared = both.dropna(subset=["rmse_then"])
    print(
        f"\n{len(compared)} cells compared: difference {compared['difference'].min():+.3f} to "
        f"{compared['difference'].max():+.3f} points; more than 2 SEs above: "
        f"{int((compared['in_ses'] > 2).sum())}, below: {int((compared['in_ses'] < -2).sum())}; coverage "
        f"{compared['coverage_now'].min():.3f}–{compared['coverage_now'].max():.3f} "
        f"(then {compared['coverage_then'].min():.2f}–{compared['coverage_then'].max():.2f})"
    )


if __name__ == "__main__":
    main()

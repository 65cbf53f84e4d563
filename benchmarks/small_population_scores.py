"""The score route at 20, 50 and 140 LLMs on real data: calibrated, and never worse than the simple estimate?

A researcher with a few dozen LLMs of known full score wants the full scores of new LLMs
from a few items. For each population size ``N`` (20, 50, 140), ``N`` LLMs are sampled
(seeded; ``--samples`` independent samples per size for a single benchmark, and that number
divided by the set's benchmarks, at least one, for a set of several, since each held-out LLM
gives one pair per benchmark) and split into 5
folds; each fold is held out in turn, the others are the training LLMs: a fit of their
responses (``fit_posterior`` with its defaults for the data: 2 dimensions on the joint set,
the 1-dimension ``2pl`` spec on a single benchmark), items chosen on them, a link to the
full score (``fit_score_link``) and estimates for the held-out LLMs (``estimate_scores``).
The truth is the LLM's score on every item of the benchmark
(``scores_<bench>_all_models.csv``), not only the fitted ones.

Routes (``selection / estimator``): items from ``select_for_scores`` with each method of
``--selections`` (``random`` is what ``method="auto"`` does below 1,000 LLMs of known score),
each scored with the default link's ``package`` estimate; the simple estimate the issue
names, ``random / blend`` (tinyBenchmarks' idea: the IRT expectation blended with the
observed mean, the weight learned on the training LLMs) on the same random items (common
random numbers, so the paired difference is that of the estimators); and the raw mean of
the random items (no interval). Printed per (set, N, items per benchmark, route): coverage
of the 90 % intervals, mean width, MAE (points) and the MAE difference to ``random / blend``
with its paired SE (over held-out LLM × benchmark cells).

    python benchmarks/small_population_scores.py                       # all six sets, ~3 h on 2 cores
    python benchmarks/small_population_scores.py --sets gsm8k --sizes 50 --folds 2
    python benchmarks/small_population_scores.py --summarise A/predictions.csv B/predictions.csv
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table

from benchmirt_bayes import (
    estimate_scores,
    fit_posterior,
    fit_score_link,
    load_open_llm_leaderboard,
    load_responses,
    select_for_scores,
)
from benchmirt_bayes.data.real_data import OPEN_LLM_BENCHMARKS, load_open_llm_leaderboard_reference

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "open_llm_leaderboard_v1"
REFERENCE = "random / blend"


def load_set(name: str):
    """Responses and known full scores (percent) of the joint set or one benchmark's file."""
    if name == "joint":
        responses = load_open_llm_leaderboard(SHARED)
        benchmarks = list(OPEN_LLM_BENCHMARKS)
    else:
        responses = load_responses(
            SHARED / f"responses_{name}.csv.gz", format="wide", llm_col="model", benchmark=name
        )
        benchmarks = [name]
    scores = pd.DataFrame(
        {b: load_open_llm_leaderboard_reference(SHARED, b)["full_score"] for b in benchmarks}
    )
    llms = [str(x) for x in responses.llms if str(x) in scores.index and scores.loc[str(x)].notna().all()]
    return responses.subset(llms=llms), scores.loc[llms]


def fold_rows(
    set_name, responses, scores, size, sample_index, fold, folds, budgets, selections, seed, log
) -> list[dict]:
    rng = np.random.default_rng([seed, size, sample_index])
    sample = rng.permutation(responses.llms.astype(str))[:size]
    fold_of = np.arange(size) % folds
    train, test = list(sample[fold_of != fold]), list(sample[fold_of == fold])
    n_dims = 2 if set_name == "joint" else 1
    spec = "exploratory" if set_name == "joint" else "2pl"
    start = time.perf_counter()
    fit = fit_posterior(responses.subset(llms=train), n_dims, spec=spec, seed=seed + fold, progressbar=False)
    where = f"{set_name} N={size} sample {sample_index} fold {fold}"
    log(f"{where}: fit {time.perf_counter() - start:.0f} s")
    truth = scores.loc[test]
    rows = []
    for k in budgets:
        picks = {}
        for rule in dict.fromkeys(("random", *selections)):
            try:
                chosen = select_for_scores(
                    fit,
                    scores.loc[train],
                    per_benchmark=k,
                    method=rule,
                    seed=seed + 100 * sample_index + fold,
                )
                picks[rule] = list(chosen)
            except ValueError as error:
                log(f"  {rule} at {k}: {error}")
        for selection, items in picks.items():
            try:
                link = fit_score_link(fit, scores.loc[train], items=items, seed=seed)
            except ValueError as error:
                log(f"  link at {k} ({selection}): {error}")
                continue
            answers = responses.subset(llms=test).data.sel(item=items).to_pandas()
            estimators = ["package", "blend"] if selection == "random" else ["package"]
            table = estimate_scores(fit, answers, link=link, estimator=estimators)
            for row in table.itertuples():
                actual = float(truth.at[row.llm, row.benchmark])
                common = {"set": set_name, "N": size, "sample": sample_index, "fold": fold, "k": k}
                common |= {"llm": row.llm}
                common |= {"benchmark": row.benchmark, "truth": actual}
                rows.append(
                    common
                    | {
                        "route": f"{selection} / {row.estimator}",
                        "estimate": row.mean,
                        "lower": row.lower,
                        "upper": row.upper,
                    }
                )
                if selection == "random" and row.estimator == "blend":
                    raw = {"route": "random / raw mean", "estimate": 100 * row.kept_mean}
                    rows.append(common | raw | {"lower": np.nan, "upper": np.nan})
    log(f"{where}: done {time.perf_counter() - start:.0f} s")
    return rows


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    frame["abs_error"] = (frame["estimate"] - frame["truth"]).abs()
    frame["covered"] = ((frame["lower"] <= frame["truth"]) & (frame["truth"] <= frame["upper"])).astype(float)
    frame.loc[frame["lower"].isna(), "covered"] = np.nan
    frame["width"] = frame["upper"] - frame["lower"]
    if "sample" not in frame:
        frame["sample"] = 0
    cell = ["set", "N", "sample", "fold", "k", "llm", "benchmark"]
    reference = frame[frame["route"] == REFERENCE].set_index(cell)["abs_error"]
    rows = []
    for (set_name, size, k, route), part in frame.groupby(["set", "N", "k", "route"]):
        paired = part.set_index(cell)["abs_error"] - reference.reindex(part.set_index(cell).index)
        paired = paired.dropna()
        rows.append(
            {
                "set": set_name,
                "N": size,
                "items": k,
                "route": route,
                "cells": len(part),
                "coverage_90": part["covered"].mean(),
                "width": part["width"].mean(),
                "mae": part["abs_error"].mean(),
                "mae_minus_blend": paired.mean() if len(paired) else np.nan,
                "paired_se": paired.std(ddof=1) / np.sqrt(len(paired)) if len(paired) > 1 else np.nan,
            }
        )
    return pd.DataFrame(rows)


DEFAULT = "random / package"
"""What ``select_for_scores`` and ``fit_score_link`` do by default below 1,000 LLMs of known score."""


def headline(table: pd.DataFrame) -> pd.DataFrame:
    """Per set, N and items: the default route against the blend, and stepwise items for contrast."""
    keys = ["set", "N", "items"]
    wide = table.pivot_table(
        index=keys, columns="route", values=["coverage_90", "width", "mae", "mae_minus_blend", "paired_se"]
    )
    out = pd.DataFrame(index=wide.index)
    out["default coverage"] = wide["coverage_90", DEFAULT]
    out["default width"] = wide["width", DEFAULT]
    out["default MAE"] = wide["mae", DEFAULT]
    out["blend coverage"] = wide["coverage_90", REFERENCE]
    out["blend MAE"] = wide["mae", REFERENCE]
    out["default − blend (paired SE)"] = [
        f"{d:+.2f} ({se:.2f})"
        for d, se in zip(wide["mae_minus_blend", DEFAULT], wide["paired_se", DEFAULT], strict=True)
    ]
    if ("coverage_90", "stepwise / package") in wide.columns:
        out["stepwise coverage"] = wide["coverage_90", "stepwise / package"]
        out["stepwise MAE"] = wide["mae", "stepwise / package"]
    out["held-out cells"] = table[table["route"] == DEFAULT].set_index(keys)["cells"]
    return out.reset_index()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets", nargs="+", default=["joint", *OPEN_LLM_BENCHMARKS], choices=["joint", *OPEN_LLM_BENCHMARKS]
    )
    parser.add_argument("--sizes", nargs="+", type=int, default=[20, 50, 140])
    parser.add_argument(
        "--samples",
        nargs="+",
        type=int,
        default=[3, 1, 1],
        help="independent LLM samples per --sizes entry for one benchmark (a set of B: this // B, >= 1)",
    )
    parser.add_argument(
        "--selections",
        nargs="+",
        default=["random", "stepwise"],
        choices=["random", "stepwise", "stratified"],
    )
    parser.add_argument("--items", nargs="+", type=int, default=[10, 25, 50, 100])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--run-folds", type=int, default=None, help="run only the first few folds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmark_results/small_population_scores")
    parser.add_argument(
        "--summarise", nargs="+", default=None, metavar="CSV", help="tables from earlier runs"
    )
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    command = "python benchmarks/small_population_scores.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(args).items()
        if v is not None and k != "out"
    )
    header = (
        f"*{datetime.now(UTC):%Y-%m-%d %H:%M} UTC · {platform.node()} ({platform.machine()}) · "
        f"commit {commit} · `{command}`*"
    )
    print(header, flush=True)
    start = time.perf_counter()
    log = elapsed_logger()

    if args.summarise:
        table = summarise(pd.concat([pd.read_csv(path) for path in args.summarise], ignore_index=True))
        print(markdown_table(headline(table), 3) + "\n\n" + markdown_table(table, 3))
        return
    rows = []
    for set_name in args.sets:
        responses, scores = load_set(set_name)
        n_benchmarks = len(responses.benchmark_names)
        for size, samples in zip(args.sizes, args.samples, strict=True):
            for sample_index in range(max(1, samples // n_benchmarks)):
                for fold in range(args.run_folds or args.folds):
                    rows += fold_rows(
                        set_name,
                        responses,
                        scores,
                        size,
                        sample_index,
                        fold,
                        args.folds,
                        args.items,
                        args.selections,
                        args.seed,
                        log,
                    )
                    pd.DataFrame(rows).to_csv(out / "predictions.csv", index=False)
    table = summarise(pd.DataFrame(rows))
    tables = f"{markdown_table(headline(table), 3)}\n\n{markdown_table(table, 3)}"
    text = f"{header}\n\n{tables}\n\ntotal {time.perf_counter() - start:.0f} s\n"
    (out / "results.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()

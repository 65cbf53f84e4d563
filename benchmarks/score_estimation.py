"""Full-benchmark scores from few items on the real Open LLM Leaderboard data, head to head with metabench.

For each of the five benchmarks in ``../shared/data/open_llm_leaderboard_v1`` (metabench's
reduced item sets, 4,278–5,476 LLMs each) the LLMs are split into 5 folds (seeded, the same
split for every benchmark). For every fold the package fits the items on the other folds'
LLMs (``fit_posterior(..., n_dims, spec="2pl", method="advi")``, 1 dimension at every budget
and 2 at the headline budgets: all reduced items, 100 and 25 items), chooses a subset of items by
each selection rule, learns the link from subset to full score on the training LLMs
(``fit_score_link``) and estimates the held-out LLMs' full scores (``estimate_scores``).
The full score is the ``score`` column of ``scores_<bench>_all_models.csv``: the LLM's score
on every item of the benchmark, not only the reduced ones.

Estimators: the plain mean on the kept items (raw, and linearly calibrated to the full
score), the IRT prediction, the IRT prediction blended with the kept items' mean (the
tinyBenchmarks idea), the package's default (``package``), and metabench's own predictions,
both in-sample for metabench (its item choice and regression were trained on these LLMs):
from the same reduced items (read from metabench's published fits with ``--metabench``, see
``metabench_reference.py``) and its upper bound from the 350 items it kept before the
reduction (the ``p`` column of the shared score files). Budgets: all
reduced items (metabench's budget), 50 %, 25 %, and 10, 25, 50, 100 items. Selection:
random, information (expected Fisher information over posterior draws), stratified
(equal-count difficulty bins, one random item from each) and stepwise (forward stepwise
regression of the training LLMs' full scores on the items, ``select_for_scores``). A
joint 2-dimension fit of all five benchmarks (the 2,461 LLMs in every file; all reduced
items, 100 stepwise items per benchmark, and 25 random or stepwise) shows whether sharing
abilities and answers across benchmarks helps.

Writes ``predictions.csv`` (every estimate) and ``results.md`` to ``--out`` and prints the
tables. The parts can run as separate processes and be summarised together.

    python benchmarks/score_estimation.py --out benchmark_results/score_estimation          # hours
    python benchmarks/score_estimation.py --quick --out /tmp/score_estimation              # minutes
    python benchmarks/score_estimation.py --quick --benchmarks gsm8k truthfulqa            # some of them
    python benchmarks/score_estimation.py --parts joint --out A                             # one part
    python benchmarks/score_estimation.py --summarise A/predictions.csv B/predictions.csv --out C
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import subprocess
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table
from metabench_reference import SHARED, reduced_predictions  # a sibling script

from benchmirt_bayes import (
    estimate_scores,
    fit_posterior,
    fit_score_link,
    load_open_llm_leaderboard,
    load_responses,
    select_for_scores,
    select_items,
)
from benchmirt_bayes.data.real_data import OPEN_LLM_BENCHMARKS, load_open_llm_leaderboard_reference

FRACTIONS = (1.0, 0.5, 0.25)
COUNTS = (10, 25, 50, 100)
SELECTIONS = ("random", "information", "stratified", "stepwise")
QUICK_SELECTIONS = ("random", "information", "stepwise")
ESTIMATORS = ("naive", "irt", "blend", "package")
PARTS = ("per-benchmark", "joint")
HEADLINE_BUDGETS = ("100%", "100 items", "25 items")


def choose(fit, rule: str, size: int, seed: int, scores: dict) -> list[str]:
    """``size`` items per benchmark of the fit by ``rule`` (the fit's LLMs are the training LLMs)."""
    n_items = fit["posterior"].sizes["item"]
    if size >= n_items:
        return list(fit["posterior"]["item"].values.astype(str))
    if rule in ("stepwise", "stratified"):
        return list(select_for_scores(fit, scores, per_benchmark=size, method=rule, seed=seed))
    return list(select_items(fit, n_items=size, method=rule, seed=seed, n_draws=50))


def budgets(n_items: int) -> list[tuple[str, int]]:
    out = [(f"{int(f * 100)}%", max(1, round(f * n_items))) for f in FRACTIONS]
    out += [(f"{c} items", c) for c in COUNTS if c < n_items]
    return out


def evaluate(fit, responses, scores, train, test, items, label: dict, n_draws: int = 20) -> list[dict]:
    """Estimates of every estimator for the test LLMs from ``items``."""
    benchmark_of = fit["observed_data"]["benchmark"].to_series().astype(str)
    link = fit_score_link(
        fit, scores, items=items, responses=responses.subset(llms=list(train)), n_draws=n_draws
    )
    answers = responses.subset(llms=list(test)).data.sel(item=items).to_pandas()
    rows = []
    table = estimate_scores(fit, answers, link=link, estimator=ESTIMATORS, n_draws=n_draws)
    kept = {b: sum(benchmark_of.get(i) == b for i in items) for b in link.benchmarks}
    for row in table.itertuples():
        if row.benchmark not in link.benchmarks:
            continue
        rows.append(
            {
                **label,
                "benchmark": row.benchmark,
                "llm": row.llm,
                "items": kept[row.benchmark],
                "estimator": row.estimator,
                "estimate": row.mean,
                "lower": row.lower,
                "upper": row.upper,
                "kept_mean": row.kept_mean,
            }
        )
        if row.estimator == "package":
            raw = {"estimator": "naive_raw", "estimate": 100 * row.kept_mean}
            rows.append({**rows[-1], **raw, "lower": np.nan, "upper": np.nan})  # no interval
    return rows


def per_benchmark(
    quick: bool, folds: int, seed: int, log, benchmarks=OPEN_LLM_BENCHMARKS, dims=(1,)
) -> pd.DataFrame:
    """Per-benchmark fits of each dimension count in ``dims``; beyond 1, only the budgets of
    the headline comparisons (all reduced items, 100 and 25 items)."""
    rows = []
    for bench in benchmarks:
        responses = load_responses(
            SHARED / f"responses_{bench}.csv.gz", format="wide", llm_col="model", benchmark=bench
        )
        scores = load_open_llm_leaderboard_reference(SHARED, bench)["full_score"]
        fold_of = _folds(responses.llms, folds, seed)
        for n_dims in dims:
            fit_label = f"per benchmark, {n_dims} dim" + ("s" if n_dims > 1 else "")
            for fold in range(folds if not quick else 1):
                train, test = responses.llms[fold_of != fold], responses.llms[fold_of == fold]
                start = time.perf_counter()
                fit = fit_posterior(
                    responses.subset(llms=list(train)),
                    n_dims,
                    method="advi",
                    spec="2pl",
                    seed=seed + fold,
                    progressbar=False,
                    advi={"draws": 100},
                )
                log(f"{bench}, {n_dims} dims, fold {fold}: fit {time.perf_counter() - start:.0f} s")
                plan = budgets(responses.n_items)
                if quick:
                    plan = [b for b in plan if b[0] in ("100%", "25 items")]
                elif n_dims > 1:
                    plan = [b for b in plan if b[0] in HEADLINE_BUDGETS]
                for budget, size in plan:
                    rules = ("random",) if size >= responses.n_items else SELECTIONS
                    for rule in rules if not quick else [r for r in QUICK_SELECTIONS if r in rules]:
                        items = choose(fit, rule, size, seed + fold, {bench: scores})
                        label = {"fit": fit_label, "fold": fold, "budget": budget, "selection": rule}
                        rows += evaluate(fit, responses, {bench: scores}, train, test, items, label)
                log(f"{bench}, {n_dims} dims, fold {fold}: done {time.perf_counter() - start:.0f} s")
    return pd.DataFrame(rows)


def joint(quick: bool, folds: int, seed: int, log) -> pd.DataFrame:
    responses = load_open_llm_leaderboard(SHARED)
    scores = {b: load_open_llm_leaderboard_reference(SHARED, b)["full_score"] for b in OPEN_LLM_BENCHMARKS}
    fold_of = _folds(responses.llms, folds, seed)
    rows = []
    for fold in range(folds if not quick else 1):
        train, test = responses.llms[fold_of != fold], responses.llms[fold_of == fold]
        start = time.perf_counter()
        fit = fit_posterior(
            responses.subset(llms=list(train)),
            2,
            method="advi",
            seed=seed + fold,
            progressbar=False,
            advi={"draws": 100},
        )
        log(f"joint fold {fold}: fit {time.perf_counter() - start:.0f} s")
        for budget, per_bench, rule in (
            ("100%", None, "random"),
            ("100 items", 100, "stepwise"),
            ("25 items", 25, "random"),
            ("25 items", 25, "stepwise"),
        ):
            if per_bench is None:
                items = list(responses.items)
            elif rule == "stepwise":
                items = list(select_for_scores(fit, scores, per_benchmark=per_bench, method="stepwise"))
            else:
                rng = np.random.default_rng(seed + fold)
                items = [
                    str(i)
                    for b in OPEN_LLM_BENCHMARKS
                    for i in rng.choice(responses.items[responses.benchmarks == b], per_bench, replace=False)
                ]
            label = {
                "fit": "joint 5 benchmarks, 2 dims",
                "fold": fold,
                "budget": budget,
                "selection": rule,
            }
            rows += evaluate(fit, responses, scores, train, test, items, label, n_draws=10)
        log(f"joint fold {fold}: done {time.perf_counter() - start:.0f} s")
    return pd.DataFrame(rows)


def _folds(llms: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each LLM's fold, from a seeded hash of its name: the same fold in every benchmark."""
    return np.array(
        [int(hashlib.sha256(f"{seed}:{name}".encode()).hexdigest(), 16) % folds for name in llms.astype(str)]
    )


UPPER_BOUND = "metabench, 350 items (upper bound, in-sample)"
REDUCED = "metabench, same reduced items (in-sample)"


def metabench_predictions(
    shared: dict[str, pd.DataFrame], reduced: pd.DataFrame | None
) -> dict[str, dict[str, pd.Series]]:
    """metabench's per-LLM predictions by label and benchmark (the reduced ones when given)."""
    out = {UPPER_BOUND: {b: frame["p"] for b, frame in shared.items()}}
    if reduced is not None:
        train = reduced[reduced["set"] == "train"]
        out[REDUCED] = {b: part.set_index("llm")["p"] for b, part in train.groupby("benchmark")}
    return out


def summarise(predictions: pd.DataFrame, reduced: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    shared = {
        b: pd.read_csv(SHARED / f"scores_{b}_all_models.csv").set_index("model") for b in OPEN_LLM_BENCHMARKS
    }
    truth = {b: frame["score"] for b, frame in shared.items()}
    reference = metabench_predictions(shared, reduced)
    predictions = predictions.copy()
    predictions["truth"] = [
        truth[b].get(llm, np.nan) for b, llm in zip(predictions["benchmark"], predictions["llm"], strict=True)
    ]
    predictions["error"] = predictions["estimate"] - predictions["truth"]
    inside = (predictions["lower"] <= predictions["truth"]) & (predictions["truth"] <= predictions["upper"])
    predictions["covered"] = inside.astype(float).where(predictions["lower"].notna())  # no interval: NaN
    keys = ["fit", "budget", "selection", "estimator", "benchmark"]
    table = (
        predictions.groupby(keys)
        .agg(
            items=("items", "median"),
            rmse=("error", lambda e: float(np.sqrt(np.mean(e**2)))),
            mae=("error", lambda e: float(np.mean(np.abs(e)))),
            coverage_90=("covered", "mean"),
            llms=("llm", "nunique"),
        )
        .reset_index()
    )
    mb_rows = []
    for fit, part in predictions.groupby("fit"):
        for label, by_bench in reference.items():
            row = {"fit": fit, "estimator": label}
            for bench in OPEN_LLM_BENCHMARKS:
                tested = part.loc[part["benchmark"] == bench, "llm"].unique()
                error = (by_bench[bench].reindex(tested) - truth[bench].reindex(tested)).dropna()
                row[bench] = float(np.sqrt(np.mean(error**2))) if len(error) else np.nan
            mb_rows.append(row)
    mean_rows = []
    for (fit, budget, selection, estimator), part in predictions.groupby(
        ["fit", "budget", "selection", "estimator"]
    ):
        wide = part.pivot_table(index="llm", columns="benchmark", values=["estimate", "truth"])
        complete = wide.dropna()
        if complete.shape[1] < 2 * len(OPEN_LLM_BENCHMARKS):
            continue
        error = complete["estimate"].mean(axis=1) - complete["truth"].mean(axis=1)
        mean_rows.append(
            {
                "fit": fit,
                "budget": budget,
                "selection": selection,
                "estimator": estimator,
                "5-benchmark mean RMSE": float(np.sqrt(np.mean(error**2))),
                "llms": len(complete),
            }
        )
        if (budget, selection, estimator) == ("100%", "random", "package"):
            for label, by_bench in reference.items():
                mb = pd.DataFrame({b: by_bench[b].reindex(complete.index) for b in OPEN_LLM_BENCHMARKS})
                mb_error = (mb.mean(axis=1) - complete["truth"].mean(axis=1)).dropna()
                mean_rows.append(
                    {
                        **mean_rows[-1],
                        "estimator": label,
                        "5-benchmark mean RMSE": float(np.sqrt(np.mean(mb_error**2))),
                        "llms": len(mb_error),
                    }
                )
    return {
        "per_benchmark": table,
        "metabench": pd.DataFrame(mb_rows),
        "mean": pd.DataFrame(mean_rows),
        "few_items": few_items(table),
    }


def few_items(table: pd.DataFrame) -> pd.DataFrame:
    """Per fit and benchmark: the package's MAE at 100 items (all, where fewer) and its 25-item gain.

    The gain is the RMSE of the raw mean of 25 random items over the package's RMSE from 25
    items, for each selection rule.
    """
    rows = []
    package = table[table["estimator"] == "package"]
    for (fit, bench), part in package.groupby(["fit", "benchmark"]):
        everything = part[part["budget"] == "100%"]
        if (part["budget"] == "100 items").any():
            budget = "100 items"
        elif len(everything) and everything["items"].max() <= 100:
            budget = "100%"  # the benchmark has no more than 100 reduced items
        else:
            budget = "not run"
        at_100 = part[part["budget"] == budget]
        row = {"fit": fit, "benchmark": bench, "budget for 100 items": budget}
        for selection, mae in zip(at_100["selection"], at_100["mae"], strict=True):
            row[f"MAE at 100, {selection}"] = mae
        raw = table[
            (table["fit"] == fit)
            & (table["benchmark"] == bench)
            & (table["budget"] == "25 items")
            & (table["selection"] == "random")
            & (table["estimator"] == "naive_raw")
        ]["rmse"]
        at_25 = part[part["budget"] == "25 items"]
        for selection, rmse in zip(at_25["selection"], at_25["rmse"], strict=True):
            if len(raw):
                row[f"25-item gain, {selection}"] = float(raw.iloc[0]) / rmse
        rows.append(row)
    columns = ["fit", "benchmark", "budget for 100 items"]
    columns += [f"MAE at 100, {s}" for s in SELECTIONS] + [f"25-item gain, {s}" for s in SELECTIONS]
    frame = pd.DataFrame(rows)
    return frame.reindex(columns=[c for c in columns if c in frame.columns])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="one fold, two budgets")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="benchmark_results/score_estimation")
    parser.add_argument(
        "--benchmarks",
        nargs="+",
        default=list(OPEN_LLM_BENCHMARKS),
        choices=list(OPEN_LLM_BENCHMARKS),
        help="the per-benchmark fits to run (the joint fit takes all five when all are named)",
    )
    parser.add_argument("--parts", nargs="+", default=list(PARTS), choices=list(PARTS))
    parser.add_argument(
        "--dims",
        nargs="+",
        type=int,
        default=None,
        choices=[1, 2],
        help="per-benchmark fits (default 1 2; quick: 1)",
    )
    parser.add_argument(
        "--metabench",
        default=None,
        help="a checkout of adkipnis/metabench: adds its predictions from the same reduced items "
        "(needs the reference extra; see metabench_reference.py)",
    )
    parser.add_argument(
        "--summarise",
        nargs="+",
        default=None,
        metavar="CSV",
        help="tables from earlier runs' predictions.csv",
    )
    args = parser.parse_args()
    dims = tuple(args.dims) if args.dims else ((1,) if args.quick else (1, 2))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    command = "python benchmarks/score_estimation.py" + (" --quick" if args.quick else "")
    if args.summarise:
        command += " --summarise " + " ".join(args.summarise)
    else:
        if list(args.benchmarks) != list(OPEN_LLM_BENCHMARKS):
            command += " --benchmarks " + " ".join(args.benchmarks)
        if list(args.parts) != list(PARTS):
            command += " --parts " + " ".join(args.parts)
        if args.dims:
            command += " --dims " + " ".join(map(str, args.dims))
    if args.metabench:
        command += " --metabench METABENCH"
    header = (
        f"# Full-benchmark scores from few items, {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.node()} "
        f"({platform.machine()}), commit {commit}, `{command}`\n"
    )
    print(header, flush=True)
    start = time.perf_counter()
    log = elapsed_logger()

    # read first: a wrong checkout should fail before hours of fitting
    reduced = reduced_predictions(Path(args.metabench)) if args.metabench else None
    if args.summarise:
        predictions = pd.concat([pd.read_csv(path) for path in args.summarise], ignore_index=True)
    else:
        frames = []
        if "per-benchmark" in args.parts:
            frames.append(per_benchmark(args.quick, args.folds, args.seed, log, args.benchmarks, dims))
        if "joint" in args.parts and list(args.benchmarks) == list(OPEN_LLM_BENCHMARKS):
            frames.append(joint(args.quick, args.folds, args.seed, log))
        predictions = pd.concat(frames, ignore_index=True)
        predictions.to_csv(out / "predictions.csv", index=False)
    text = [header, *report(summarise(predictions, reduced), reduced is not None)]
    text.append(f"total {time.perf_counter() - start:.0f} s")
    (out / "results.md").write_text("\n".join(text))
    print("\n".join(text))


def report(tables: dict[str, pd.DataFrame], with_reduced: bool) -> list[str]:
    """The Markdown sections of ``results.md``."""
    per_bench = tables["per_benchmark"]
    headline = per_bench[(per_bench["budget"] == "100%") & (per_bench["selection"] == "random")]
    headline = headline.pivot_table(
        index=["fit", "estimator"], columns="benchmark", values="rmse"
    ).reset_index()
    headline = pd.concat([headline, tables["metabench"]], ignore_index=True)
    note = (
        ""
        if with_reduced
        else "metabench's predictions from the same reduced items need `--metabench`; not part of this run.\n"
    )
    means = (
        markdown_table(mean_table(tables["mean"]), 2)
        if len(tables["mean"])
        else "Not in this run: it needs all five benchmarks.\n"
    )
    return [
        "## RMSE (points) with all of metabench's reduced items, held-out LLMs\n",
        "metabench's rows are in-sample for metabench and are computed on the same LLMs as each fit's "
        "rows. Its upper bound used 350 items per benchmark, 1.4–3.5 times the reduced sets.\n" + note,
        markdown_table(headline.sort_values(["fit", "estimator"]), 2) + "\n",
        "## 5-benchmark mean score: RMSE (points) of the mean of the five estimates\n\n" + means + "\n",
        "## The package from 100 items (MAE) and from 25 (gain over the raw mean of 25 random items)\n",
        "At 100 items where a benchmark has more, else all of its reduced items; the gain is the raw "
        "mean's RMSE over the package's, per selection rule.\n",
        markdown_table(tables["few_items"], 2) + "\n",
        "## RMSE (points) at every budget, selection and estimator\n",
        markdown_table(wide(per_bench, "rmse"), 2) + "\n",
        "## The package's 90 % intervals: share of held-out LLMs covered\n",
        markdown_table(wide(per_bench[per_bench["estimator"] == "package"], "coverage_90"), 2) + "\n",
    ]


def mean_table(frame: pd.DataFrame) -> pd.DataFrame:
    """The 5-benchmark mean's RMSE: one row per fit, budget and selection, one column per estimator."""
    keys = ["fit", "budget", "selection"]
    table = frame.pivot_table(index=keys, columns="estimator", values="5-benchmark mean RMSE").reset_index()
    llms = frame.groupby(keys)["llms"].min().rename("llms").reset_index()
    order = [*keys, "package", "blend", "irt", "naive", "naive_raw", REDUCED, UPPER_BOUND, "llms"]
    table = table.merge(llms, on=keys)
    return _by_budget(table.reindex(columns=[c for c in order if c in table.columns]))


def _by_budget(frame: pd.DataFrame) -> pd.DataFrame:
    order = {
        b: i for i, b in enumerate(["100%", "50%", "25%", "100 items", "50 items", "25 items", "10 items"])
    }
    return frame.sort_values(
        ["fit", "budget", "selection"], key=lambda c: c.map(order) if c.name == "budget" else c
    ).reset_index(drop=True)


def wide(table: pd.DataFrame, value: str) -> pd.DataFrame:
    """One row per fit, budget, selection and estimator; one column per benchmark."""
    keys = ["fit", "budget", "selection", "estimator"]
    return _by_budget(table.pivot_table(index=keys, columns="benchmark", values=value).reset_index())


if __name__ == "__main__":
    main()

"""Are stepwise items' score intervals too narrow because the items were chosen on the link's own LLMs?

``select_for_scores(method="stepwise")`` chooses the items whose answers best predict the
training LLMs' full scores; ``fit_score_link`` then sets its conformal interval from the
out-of-fold errors of the *same* training LLMs, with the items held fixed. The selection is
not inside that cross-fitting, so the errors it sees may be optimistic (issue #41's
suspicion). This script tests it on one benchmark's own file of the Open LLM Leaderboard:
``--llms`` LLMs (seeded) split into 5 folds, and a disjoint pool of ``--pool`` other LLMs.
For each held-out fold and number of items, three routes, each linked on the training LLMs
(``fit_score_link``) and scored on the held-out ones (``estimate_scores``' ``package``
estimate):

- ``stepwise on the training LLMs``: what the package does with stepwise items;
- ``stepwise on other LLMs``: the same rule run on the pool, whose answers the link never
  sees (items chosen as well, but not on the link's LLMs);
- ``random``: a seeded random sample of the benchmark's items;
- ``stepwise chosen by the link``: ``fit_score_link(per_benchmark=k, method="stepwise")``,
  which chooses the same items as the first route and chooses them again inside each fold
  of its cross-fitting, so its interval counts the choice.

Printed per number of items and route: the coverage of the 90 % intervals, their mean
width, the MAE (points) and the link's ``package`` form in each fold. What to look for: if
the selection is the cause, the first route's intervals are narrower and cover less than
the second's at about the same MAE, and the fourth's (same items and estimates as the first)
are as wide as they need to be. ``--routes`` runs some of the routes. Asserts nothing.

    python benchmarks/selection_optimism.py --out OUT     # GSM8K, 1,000 + 1,000 LLMs, ~20 min
    python benchmarks/selection_optimism.py --llms 100 --pool 100 --items 10 --run-folds 1 --out OUT
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header, write_results
from small_population_scores import load_set

from benchmirt_bayes import estimate_scores, fit_posterior, fit_score_link, select_for_scores

ROUTES = ("stepwise on the training LLMs", "stepwise on other LLMs", "random", "stepwise chosen by the link")


def fold_rows(
    responses, scores, sample, pool, fold: int, folds: int, budgets, benchmark: str, routes, log
) -> list[dict]:
    """One held-out fold: a fit of the training LLMs, then every route at every budget."""
    fold_of = np.arange(len(sample)) % folds
    train, test = list(sample[fold_of != fold]), list(sample[fold_of == fold])
    start = time.perf_counter()
    fit = fit_posterior(responses.subset(llms=train), 1, spec="2pl", seed=fold, progressbar=False)
    log(f"fold {fold}: fit {time.perf_counter() - start:.0f} s")
    pool_responses = responses.subset(llms=list(pool))
    rows = []
    for k in budgets:
        for route in routes:
            if route == ROUTES[3]:
                link = fit_score_link(fit, scores.loc[train], per_benchmark=k, method="stepwise", seed=0)
                items = link.items
            else:
                items = chosen_items(fit, scores, train, pool_responses, route, k, seed=fold)
                link = fit_score_link(fit, scores.loc[train], items=items, seed=0)
            answers = responses.subset(llms=test).data.sel(item=items).to_pandas()
            table = estimate_scores(fit, answers, link=link, estimator="package")
            form = link.benchmarks[benchmark].package_form
            for row in table.itertuples():
                rows.append(
                    {
                        "fold": fold,
                        "items": k,
                        "route": route,
                        "llm": row.llm,
                        "truth": float(scores.at[row.llm, row.benchmark]),
                        "estimate": row.mean,
                        "lower": row.lower,
                        "upper": row.upper,
                        "form": form,
                    }
                )
    log(f"fold {fold}: done {time.perf_counter() - start:.0f} s")
    return rows


def chosen_items(fit, scores, train, pool_responses, route: str, k: int, seed: int) -> list[str]:
    """The items of one of the first three routes."""
    if route == ROUTES[1]:
        pool = list(pool_responses.llms.astype(str))
        return list(
            select_for_scores(
                fit, scores.loc[pool], per_benchmark=k, method="stepwise", responses=pool_responses
            )
        )
    method = "stepwise" if route == ROUTES[0] else "random"
    return list(select_for_scores(fit, scores.loc[train], per_benchmark=k, method=method, seed=seed))


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Coverage, width, MAE and the links' forms per number of items and route."""
    frame = frame.assign(
        covered=(frame["lower"] <= frame["truth"]) & (frame["truth"] <= frame["upper"]),
        width=frame["upper"] - frame["lower"],
        abs_error=(frame["estimate"] - frame["truth"]).abs(),
    )
    cell = ["fold", "items", "llm"]
    other = frame[frame["route"] == ROUTES[1]].set_index(cell)["covered"].astype(float)
    rows = []
    for k in sorted(frame["items"].unique()):
        for route in ROUTES:
            part = frame[(frame["items"] == k) & (frame["route"] == route)]
            if len(part):
                paired = part.set_index(cell)["covered"].astype(float) - other.reindex(
                    part.set_index(cell).index
                )
                rows.append(_summary_row(k, route, part, paired.dropna()))
    return pd.DataFrame(rows)


def _summary_row(k: int, route: str, part: pd.DataFrame, paired: pd.Series) -> dict:
    forms = part.groupby("fold")["form"].first().value_counts()
    se = paired.std(ddof=1) / np.sqrt(len(paired)) if len(paired) > 1 else np.nan
    return {
        "items": int(k),
        "route": route,
        "held_out": len(part),
        "coverage_90": round(float(part["covered"].mean()), 3),
        "width": round(float(part["width"].mean()), 2),
        "mae": round(float(part["abs_error"].mean()), 2),
        "coverage minus other-LLMs route (paired SE)": f"{paired.mean():+.3f} ({se:.3f})",
        "package form per fold": ", ".join(f"{name} {count}" for name, count in forms.items()),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--set", default="gsm8k", choices=["arc", "gsm8k", "mmlu", "truthfulqa", "winogrande"]
    )
    parser.add_argument("--llms", type=int, default=1000, help="LLMs in the folds")
    parser.add_argument("--pool", type=int, default=1000, help="other LLMs, where the second route chooses")
    parser.add_argument("--items", nargs="+", type=int, default=[25, 50, 100])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--run-folds", type=int, default=None, help="run only the first few folds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--routes", nargs="+", choices=ROUTES, default=list(ROUTES))
    parser.add_argument("--out", default="benchmark_results/selection_optimism")
    args = parser.parse_args()
    warnings.simplefilter("ignore", UserWarning)  # fewer items than asked is recorded in the rows
    log = elapsed_logger()
    responses, scores = load_set(args.set)
    order = np.random.default_rng(args.seed).permutation(responses.llms.astype(str))
    if args.llms + args.pool > len(order):
        raise SystemExit(
            f"{args.set} has {len(order)} LLMs with a known score; asked {args.llms} + {args.pool}"
        )
    sample, pool = order[: args.llms], order[args.llms : args.llms + args.pool]
    rows = []
    for fold in range(args.run_folds or args.folds):
        rows += fold_rows(
            responses, scores, sample, pool, fold, args.folds, args.items, args.set, args.routes, log
        )
    frame = pd.DataFrame(rows)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    frame.to_csv(out / "rows.csv", index=False)
    title = "Stepwise items chosen on the link's own LLMs, or on others"
    lines = [run_header(title), "", markdown_table(summarise(frame))]
    write_results(str(out / "results.md"), lines)


if __name__ == "__main__":
    main()

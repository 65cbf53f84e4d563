"""Adaptive vs random item order for new LLMs on the built-in set (error vs number of items).

New LLMs with random true abilities answer from the simulation's true item parameters. The
fitted dimensions are a rotation of the simulation's, so the error of an estimate after k
items is measured against the same LLM's estimate from all items (the best the fit can
do), in the fit's frame. The fit (2 dimensions, ADVI) is made and saved when missing;
``--scale`` below 1 simulates a reduced set with the built-in seed instead.

    python benchmarks/adaptive_testing.py --fit builtin_advi_2d.nc --llms 10 --budget 40
    python benchmarks/adaptive_testing.py --scale 0.1 --fit /tmp/fit.nc --llms 5   # minutes
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmirt_bayes import (
    adaptive_test,
    fit_posterior,
    load_posterior,
    save_posterior,
    score_llm,
)
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.response_types.binary import BinaryLogistic
from benchmirt_bayes.simulation.datasets import builtin_set


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--scale", type=float, default=1.0, help="share of the built-in set's items")
    parser.add_argument("--fit", default="builtin_advi_2d.nc", help="2-D fit of the set (made if missing)")
    parser.add_argument("--llms", type=int, default=10)
    parser.add_argument("--budget", type=int, default=40)
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--out", default="adaptive_testing.csv")
    args = parser.parse_args()
    sim = builtin_set(args.scale)
    if Path(args.fit).exists():
        fit = load_posterior(args.fit, responses=sim.responses)
    else:
        fit = fit_posterior(sim.responses, 2, method="advi", seed=20260301, advi={"draws": 200})
        save_posterior(fit, args.fit)
    truth = sim.truth
    rng = np.random.default_rng(args.seed)
    rows = []
    start = time.perf_counter()
    for j in range(args.llms):
        true = rng.standard_normal(2)
        eta = linear_predictor(true[None, :], truth["loading"].values, truth["intercept"].values)[0]
        answers = pd.Series(
            BinaryLogistic().draw(eta, rng).astype(float), index=truth["item"].values.astype(str)
        )
        reference = score_llm(fit, answers, n_draws=50, seed=j).ability.values.mean(axis=0)
        for order in ("information", "random"):
            trajectory = adaptive_test(
                fit, lambda item, a=answers: a[item], budget=args.budget, order=order, seed=j
            )
            estimate = trajectory.filter(like="mean_").to_numpy()
            error = np.linalg.norm(estimate - reference, axis=1)
            rows += [{"llm": j, "order": order, "step": s + 1, "error": e} for s, e in enumerate(error)]
    table = pd.DataFrame(rows)
    table.to_csv(args.out, index=False)
    summary = table.groupby(["step", "order"])["error"].mean().unstack("order")
    steps = [s for s in (1, 5, 10, 20, 30, 40, 60, 80) if s <= args.budget]
    print(summary.loc[steps].round(3).to_string())
    print(f"{args.llms} simulated LLMs, {time.perf_counter() - start:.0f} s; wrote {args.out}")


if __name__ == "__main__":
    main()

"""The fused kernel in float32 against float64: the same posterior, and how much faster?

On the speed harness's sets (S: 100 LLMs × 1,003 items; M: 100 × 5,001; ``--llms`` for
fewer LLMs on the same items), ``fit_posterior``
with ``likelihood="fused"`` (the default: every cell in float32, the rows summed in float64)
and ``likelihood="fused64"`` (the same pass in float64), each with seeds 1 and 2, at the
harness's budget (2 chains × (500 + 500) unless told otherwise). Printed, with date, machine
and commit:

* per fit: wall time, minimum bulk ESS over the identified abilities and intercepts, that per
  second, leapfrog steps per second;
* per pair of fits: the posterior means of those quantities compared in units of their
  combined Monte Carlo SE (``z``): the largest ``|z|`` and the shares beyond 2 and 3. Two
  float64 fits with different seeds give the reference: if float32 changed the posterior,
  its pairs with float64 would show more large ``|z|`` than the float64 pair does.

    python benchmarks/kernel_precision.py                 # S: about 3 minutes on 2 cores
    python benchmarks/kernel_precision.py --sizes S M     # M adds about 6 minutes
    python benchmarks/kernel_precision.py --llms 20 50    # the first 20 and 50 of S's LLMs
    python benchmarks/kernel_precision.py --floors        # the 3PL/4PL kernel: about 6 minutes

``--floors`` fits the speed harness's planted S set instead (chance floors and capped items
planted in the five multiple-choice benchmarks) with MMLU-Pro as a 3PL (what the ``"auto"``
pipeline chooses there) and GPQA as a 4PL, so that the floored items go through the 3PL/4PL
kernel in each precision; their floors join the compared quantities.
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import numpy as np
import pandas as pd
from bench_tables import elapsed_logger, markdown_table, posterior_agreement, run_header

from benchmirt_bayes import fit_posterior, simulate_benchmirt

FLOORED_SPEC = {"benchmarks": {"MMLU-Pro": "3pl", "GPQA": "4pl"}}
"""The ``[binary]`` models of ``--floors`` (with the planted set's option counts)."""

SETS = {"S": 1000, "M": 5000}
"""Items of the speed harness's sets (100 LLMs, seed 1)."""
N_LLMS = 100
QUANTITIES = ("ability", "intercept")


def fit_row(responses, likelihood: str, seed: int, nuts: dict, spec=None) -> tuple[dict, object]:
    start = time.perf_counter()
    fit = fit_posterior(
        responses, 2, spec=spec, seed=seed, nuts=nuts, likelihood=likelihood, progressbar=False
    )
    wall = time.perf_counter() - start
    post = fit["posterior"].to_dataset()
    if "floor" in post:  # the floored items' floors (the others' are 0 in every draw)
        floored = np.flatnonzero((post["floor"] > 0).all(("chain", "draw")).values)
        post["floored_floor"] = post["floor"].isel(item=floored).rename(item="floored_item")
    min_ess = min(float(az.ess(post[name]).min()) for name in QUANTITIES)
    steps = float(fit["sample_stats"]["n_steps"].sum())
    row = {
        "likelihood": likelihood,
        "seed": seed,
        "wall_s": round(wall, 1),
        "min_bulk_ess": round(min_ess, 1),
        "min_ess_per_s": round(min_ess / wall, 2),
        "steps_per_s": round(steps / wall, 1),
        "max_rhat": round(max(float(az.rhat(post[name]).max()) for name in QUANTITIES), 4),
    }
    return row, post


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", nargs="+", choices=list(SETS), default=["S"])
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--draws", type=int, default=500)
    parser.add_argument("--tune", type=int, default=500)
    parser.add_argument(
        "--llms", type=int, nargs="+", default=[N_LLMS], help="keep the first N LLMs of each set"
    )
    parser.add_argument("--floors", action="store_true", help="the planted S set with 3PL/4PL items")
    args = parser.parse_args()
    spec, quantities = None, QUANTITIES
    if args.floors:
        from harness import MULTIPLE_CHOICE, make_data

        spec = {"binary": {**FLOORED_SPEC, "n_options": MULTIPLE_CHOICE}}
        quantities = (*QUANTITIES, "floored_floor")
        args.sizes = ["S"]
    nuts = {"chains": args.chains, "draws": args.draws, "tune": args.tune}
    log = elapsed_logger()
    fits, pairs = [], []
    runs = [(size, n_llms) for size in args.sizes for n_llms in args.llms]
    for name, n_llms in runs:
        if args.floors:
            full = make_data(name, False, planted=True)
        else:
            full = simulate_benchmirt(scale=SETS[name] / 34312, n_llms=N_LLMS, seed=1).responses
        responses = full.subset(llms=list(full.llms[:n_llms]))
        size = name if n_llms == N_LLMS else f"{name}, {n_llms} LLMs"
        size += ", planted, MMLU-Pro 3PL, GPQA 4PL" if args.floors else ""
        posteriors = {}
        for likelihood in ("fused", "fused64"):
            for seed in (1, 2):
                row, posteriors[likelihood, seed] = fit_row(responses, likelihood, seed, nuts, spec)
                fits.append({"size": size, **row})
                log(f"{size} {likelihood} seed {seed}: {row}")
        for (a, b), label in {
            (("fused64", 1), ("fused64", 2)): "float64 vs float64 (seeds 1, 2): the reference",
            (("fused", 1), ("fused", 2)): "float32 vs float32 (seeds 1, 2)",
            (("fused", 1), ("fused64", 1)): "float32 vs float64 (seed 1)",
            (("fused", 2), ("fused64", 2)): "float32 vs float64 (seed 2)",
        }.items():
            pairs.append(
                {"size": size, "pair": label, **posterior_agreement(posteriors[a], posteriors[b], quantities)}
            )
    fits = pd.DataFrame(fits)
    speed = fits.groupby(["size", "likelihood"])[["min_ess_per_s", "steps_per_s"]].mean().unstack()
    print(run_header("The fused kernel in float32 against float64"))
    print(f"\n{args.chains} chains × ({args.tune} + {args.draws}) draws per fit\n")
    print(markdown_table(fits) + "\n")
    print(markdown_table(pd.DataFrame(pairs)) + "\n")
    for size in fits["size"].unique():
        ess = speed.loc[size, "min_ess_per_s"]
        steps = speed.loc[size, "steps_per_s"]
        ess_ratio, steps_ratio = ess["fused"] / ess["fused64"], steps["fused"] / steps["fused64"]
        print(
            f"{size}: float32 / float64, mean over seeds: min ESS per second {ess_ratio:.2f}×, "
            f"leapfrog steps per second {steps_ratio:.2f}×"
        )


if __name__ == "__main__":
    main()

"""Does ``fit_posterior(responses, 2)`` with nothing but a seed converge, and how long does it take?

The README's quickstart data (``simulate_benchmirt(scale=0.02, seed=1)``: 100 LLMs × ~690
items) and the speed harness's S set (100 × 1,003, seed 1), and with ``--sets M`` its M set
(100 × 5,001), each fitted with the defaults (``fit_posterior(responses, 2, seed=SEED)``: NUTS,
4 chains × (1,000 tuning + the draws, start, tree depth and thinning chosen from the data)),
``--seeds`` times. Printed per fit: wall time,
whether :func:`benchmirt_bayes.check_convergence` passes, the largest R-hat and smallest bulk
ESS over every checked quantity, divergences, and the settings chosen. Asserts nothing.

    python benchmarks/default_convergence.py                 # about 10 minutes on 2 cores
    python benchmarks/default_convergence.py --sets quickstart --seeds 1
    python benchmarks/default_convergence.py --sets M --seeds 1   # about 10 minutes per fit
    python benchmarks/default_convergence.py --sets --floors      # about 5 minutes

``--floors`` adds the speed harness's planted S set (chance floors and capped items planted in
the five multiple-choice benchmarks) fitted with the defaults twice: every benchmark a 2PL, and
MMLU-Pro a 3PL (what the ``"auto"`` pipeline of ``auto_asymptotes.py`` chooses there), with
the 3PL fit's time per effective draw over the 2PL's (wall time over the smallest bulk ESS of
the identified abilities and intercepts, as the speed harness measures it; issue #42 asks for
at most 1.5×).
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header
from harness import MULTIPLE_CHOICE, identified_metrics, make_data

from benchmirt_bayes import check_convergence, fit_posterior, simulate_benchmirt

SETS = {
    "quickstart": {"scale": 0.02, "seed": 1},
    "S": {"scale": 1000 / 34312, "n_llms": 100, "seed": 1},
    "M": {"scale": 5000 / 34312, "n_llms": 100, "seed": 1},
}
"""The data of the README's quickstart and of the speed harness's sizes S and M."""
DEFAULT_SETS = ("quickstart", "S")
FLOORED = {"binary": {"benchmarks": {"MMLU-Pro": "3pl"}, "n_options": MULTIPLE_CHOICE}}
"""The spec of ``--floors``' floored fit: MMLU-Pro 3PL, with the planted set's option counts."""


def one_fit(name: str, seed: int, spec=None) -> dict:
    if name == "S planted":
        responses = make_data("S", False, planted=True)
    else:
        responses = simulate_benchmirt(**SETS[name]).responses
    start = time.perf_counter()
    fit = fit_posterior(responses, 2, spec=spec, seed=seed, progressbar=False)
    wall = time.perf_counter() - start
    report = check_convergence(fit)
    table = report.table
    chosen = json.loads(fit.attrs["benchmirt_settings"])["automatic"]
    identified = identified_metrics(fit, wall)
    return {
        "set": name if spec is None else f"{name}, MMLU-Pro 3PL",
        "llms": responses.n_llms,
        "items": responses.n_items,
        "seed": seed,
        "minutes": round(wall / 60, 2),
        "converged": bool(report.ok),
        "max_rhat": round(float(table["max_rhat"].max()), 4),
        "min_ess_bulk": round(float(table["min_ess_bulk"].min()), 1),
        "min_ess_abilities_intercepts": round(identified["min_bulk_ess"], 1),
        "seconds_per_effective_draw": round(wall / identified["min_bulk_ess"], 4),
        "divergences": int(fit["sample_stats"]["diverging"].sum()),
        "chains_x_draws": f"{fit['posterior'].sizes['chain']} x {fit['posterior'].sizes['draw']}",
        "chosen": "; ".join(f"{key} {why}" for key, why in chosen),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="*", choices=list(SETS), default=list(DEFAULT_SETS))
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--floors", action="store_true", help="add the planted S set, 2PL and 3PL")
    args = parser.parse_args()
    log = elapsed_logger()
    runs = [(name, None) for name in args.sets]
    if args.floors:
        runs += [("S planted", None), ("S planted", FLOORED)]
    rows = []
    for name, spec in runs:
        for seed in range(1, args.seeds + 1):
            row = one_fit(name, seed, spec)
            rows.append(row)
            log(f"{row['set']} seed {seed}: {row['minutes']} min, converged {row['converged']}")
    table = pd.DataFrame(rows)
    chosen = table.pop("chosen")
    print(run_header("fit_posterior with its defaults"))
    print()
    print(markdown_table(table))
    print()
    print(f"Chosen from the data (first fit): {chosen.iloc[0]}")
    if args.floors:
        per_draw = table.groupby("set")["seconds_per_effective_draw"].mean()
        ratio = per_draw["S planted, MMLU-Pro 3PL"] / per_draw["S planted"]
        print(f"\nS planted: MMLU-Pro 3PL / 2PL, time per effective draw (mean over seeds): {ratio:.2f}×")


if __name__ == "__main__":
    main()

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
"""

from __future__ import annotations

import argparse
import json
import time

import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header

from benchmirt_bayes import check_convergence, fit_posterior, simulate_benchmirt

SETS = {
    "quickstart": {"scale": 0.02, "seed": 1},
    "S": {"scale": 1000 / 34312, "n_llms": 100, "seed": 1},
    "M": {"scale": 5000 / 34312, "n_llms": 100, "seed": 1},
}
"""The data of the README's quickstart and of the speed harness's sizes S and M."""
DEFAULT_SETS = ("quickstart", "S")


def one_fit(name: str, seed: int) -> dict:
    responses = simulate_benchmirt(**SETS[name]).responses
    start = time.perf_counter()
    fit = fit_posterior(responses, 2, seed=seed, progressbar=False)
    wall = time.perf_counter() - start
    report = check_convergence(fit)
    table = report.table
    chosen = json.loads(fit.attrs["benchmirt_settings"])["automatic"]
    return {
        "set": name,
        "llms": responses.n_llms,
        "items": responses.n_items,
        "seed": seed,
        "minutes": round(wall / 60, 2),
        "converged": bool(report.ok),
        "max_rhat": round(float(table["max_rhat"].max()), 4),
        "min_ess_bulk": round(float(table["min_ess_bulk"].min()), 1),
        "divergences": int(fit["sample_stats"]["diverging"].sum()),
        "chains_x_draws": f"{fit['posterior'].sizes['chain']} x {fit['posterior'].sizes['draw']}",
        "chosen": "; ".join(f"{key} {why}" for key, why in chosen),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", nargs="+", choices=list(SETS), default=list(DEFAULT_SETS))
    parser.add_argument("--seeds", type=int, default=1)
    args = parser.parse_args()
    log = elapsed_logger()
    rows = []
    for name in args.sets:
        for seed in range(1, args.seeds + 1):
            rows.append(one_fit(name, seed))
            log(f"{name} seed {seed}: {rows[-1]['minutes']} min, converged {rows[-1]['converged']}")
    table = pd.DataFrame(rows)
    chosen = table.pop("chosen")
    print(run_header("fit_posterior with its defaults"))
    print()
    print(markdown_table(table))
    print()
    print(f"Chosen from the data (first fit): {chosen.iloc[0]}")


if __name__ == "__main__":
    main()

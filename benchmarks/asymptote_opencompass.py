"""Floors and ceilings on the OpenCompass set (12 LLMs) against PSN-IRT's published 4PL.

PSN-IRT ("Lost in Benchmarks?", arXiv:2505.15055) fitted a 4PL (guessing, feasibility) to
12 LLMs × 41,871 OpenCompass items (``../shared/data/opencompass_12llm``). Here its
four-option multiple-choice benchmarks (ARC-C, GPQA Diamond, HellaSwag, MMLU; ``--items``
seeded items of each) are fitted unidimensionally as a 4PL by NUTS (``--chains`` × (``--tune``
+ ``--draws``), floors centred on 1/4) and our posterior floors and ceilings are compared with
PSN-IRT's guessing and feasibility, per benchmark: their means, the item-level Pearson and
Spearman correlations, the mean width of our 90 % intervals and how often they hold PSN-IRT's
value. With 12 LLMs per item the data say little about any one item's asymptotes; the widths
show how little, and the correlations of each estimate with the item's accuracy over the 12
LLMs show how much of any agreement that one number explains. Prints a Markdown table with
the date, machine and commit, and the fit's R-hat and ESS per variable; asserts nothing.

    python benchmarks/asymptote_opencompass.py                  # a few minutes on 2 cores
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from asymptote_agreement import agreement_columns
from bench_tables import markdown_table, run_header

from benchmirt_bayes import asymptote_flags, check_convergence, fit_posterior, load_opencompass
from benchmirt_bayes.model.spec import load_spec

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "opencompass_12llm"
FOUR_OPTIONS = ("ARC-C", "GPQA Diamond", "HellaSwag", "MMLU")
CI_LEVEL = 0.9
PAIRS = {"floor": "guessing", "ceiling": "feasibility"}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--items", type=int, default=300, help="items per benchmark (all if fewer)")
    parser.add_argument("--chains", type=int, default=2)
    parser.add_argument("--tune", type=int, default=1000)
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    responses = load_opencompass(SHARED)
    authors = pd.read_csv(SHARED / "authors_item_parameters.csv")
    authors.index = responses.items.astype(str)  # one row per column, in column order
    benchmarks = np.asarray(responses.benchmarks, dtype=str)
    rng = np.random.default_rng(args.seed)
    columns = np.sort(
        np.concatenate([rng.permutation(np.flatnonzero(benchmarks == b))[: args.items] for b in FOUR_OPTIONS])
    )
    chosen = responses.take_items(columns)
    section = {"asymptotes": "4pl", "n_options": dict.fromkeys(FOUR_OPTIONS, 4)}
    spec = load_spec("2pl").with_overrides({"name": "2pl-4pl", "binary": section})
    fit = fit_posterior(
        chosen,
        1,
        method="nuts",
        nuts={"chains": args.chains, "tune": args.tune, "draws": args.draws},
        spec=spec,
        seed=args.seed,
        progressbar=False,
    )
    report = check_convergence(fit)
    flags = asymptote_flags(fit, ci_prob=CI_LEVEL).set_index("item")
    theirs = authors.loc[flags.index]
    accuracy = pd.Series(np.nanmean(chosen.values, axis=0), index=chosen.items.astype(str))
    rows = []
    for bench, part in flags.groupby("benchmark"):
        row = {"benchmark": bench, "items": len(part)}
        row |= agreement_columns(part, theirs, accuracy, PAIRS, "PSN-IRT")
        rows.append(row)
    print(run_header("Floors and ceilings on OpenCompass against PSN-IRT"))
    print()
    print(
        f"{chosen.n_llms} LLMs × {chosen.n_items} items; NUTS {args.chains} × ({args.tune} + {args.draws}); "
        f"largest R-hat {report.table['max_rhat'].max():.3f}, "
        f"divergences {int(fit['sample_stats']['diverging'].sum())}"
    )
    print()
    print(markdown_table(pd.DataFrame(rows)))
    print()
    print("Convergence per variable (the fit's `check_convergence` table):")
    print()
    columns = ["elements", "max_rhat", "min_ess_bulk", "min_ess_tail"]
    print(markdown_table(report.table[columns].reset_index(), digits=3))


if __name__ == "__main__":
    main()

"""Does ``choose_n_dims`` recommend the right number of dimensions at 20, 50 and 150 LLMs?

Simulated sets whose number of dimensions is known: the built-in design (two abilities,
safety and reasoning, correlated 0.3: truth ``two``) and the same design with the two
abilities made one (correlated 0.999: truth ``one``), at ``--scale`` (default 0.003: 145 items,
every subgroup at least 4) and ``--llms`` LLMs. Each set gets ``choose_n_dims(responses,
seed=SEED, progressbar=False)`` with nothing else: 10 folds of held-out cells, 1–4 dimensions,
each fold fitted as ``cross_validate`` chooses (NUTS below 20,000 training cells, else ADVI).

Printed per set: the recommendation, the model with the best mean held-out log loss, the
paired difference of the 2-dimension model to the 1-dimension one (negative: two predict
better) with its paired SE and the folds two win, and the minutes. What to look for: with
one true dimension the recommendation should be 1 at every size (more is a false extra
dimension); with two, 2 wherever the folds can tell (1 is the one-SE rule's caution where
they cannot). Rows are appended to ``OUT/rows.jsonl`` as each set finishes, so a run can be
split over processes; ``--summarise`` prints the table of every row there. Asserts nothing.

    python benchmarks/dimension_choice.py --llms 20 --truths one --out OUT   # about 10 minutes
    python benchmarks/dimension_choice.py --out OUT          # 6 sets, longer with more LLMs
    python benchmarks/dimension_choice.py --summarise --out OUT
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pandas as pd
from bench_tables import elapsed_logger, markdown_table, run_header

from benchmirt_bayes import choose_n_dims, simulate_benchmirt
from benchmirt_bayes.inference.settings import automatic_method
from benchmirt_bayes.workflows.crossval import _fold_values as fold_values

TRUTHS = {"one": 0.999, "two": 0.3}
"""Correlation of the simulator's two abilities: one dimension in effect, or the built-in two."""


def one_choice(truth: str, n_llms: int, scale: float, seed: int) -> dict:
    """``choose_n_dims`` with its defaults on one simulated set; a row."""
    responses = simulate_benchmirt(
        scale=scale, n_llms=n_llms, seed=seed, ability_correlation=TRUTHS[truth]
    ).responses
    start = time.perf_counter()
    choice = choose_n_dims(responses, seed=seed, progressbar=False)
    minutes = (time.perf_counter() - start) / 60
    table = choice.table
    per_fold = fold_values(choice.cross_validation, "log_loss")  # (fold, n_dims), as choose_n_dims reads it
    two_minus_one = per_fold[2] - per_fold[1]
    fold_cells = int(responses.observed.sum() * 0.9)  # a fold's training cells, 10 folds of cells
    return {
        "truth": truth,
        "llms": responses.n_llms,
        "items": responses.n_items,
        "seed": seed,
        "chosen": choice.n_dims,
        "best": int(table["mean"].idxmin()),
        "two_minus_one": round(float(two_minus_one.mean()), 5),
        "paired_se": round(float(two_minus_one.std(ddof=1) / len(two_minus_one) ** 0.5), 5),
        "folds_two_wins": f"{int((two_minus_one < 0).sum())}/{len(two_minus_one)}",
        "fold_fit": automatic_method(fold_cells)[0],
        "minutes": round(minutes, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--llms", type=int, nargs="+", default=[20, 50, 150])
    parser.add_argument("--truths", nargs="+", choices=list(TRUTHS), default=list(TRUTHS))
    parser.add_argument("--scale", type=float, default=0.003)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--out", default="benchmark_results/dimension_choice")
    parser.add_argument("--summarise", action="store_true", help="only print the table of OUT/rows.jsonl")
    args = parser.parse_args()
    rows_path = Path(args.out) / "rows.jsonl"
    rows_path.parent.mkdir(parents=True, exist_ok=True)
    log = elapsed_logger()
    if not args.summarise:
        for n_llms in args.llms:
            for truth in args.truths:
                for seed in args.seeds:
                    row = one_choice(truth, n_llms, args.scale, seed)
                    with rows_path.open("a") as handle:
                        handle.write(json.dumps(row) + "\n")
                    log(f"truth {truth}, {n_llms} LLMs, seed {seed}: {row['chosen']} ({row['minutes']} min)")
    rows = [json.loads(line) for line in rows_path.read_text().splitlines()]
    table = pd.DataFrame(rows).sort_values(["truth", "llms", "seed"])
    print(run_header("choose_n_dims on simulations with one and two true dimensions"))
    print()
    print(markdown_table(table))


if __name__ == "__main__":
    main()

"""How fast result tables are read: ``load_responses`` against ``pandas.read_csv`` of the same file.

For each size (cells = LLMs × items), a seeded 0/1 table is written twice as CSV: LLMs as rows
(``format="wide"``) and items as rows with a ``benchmark`` column (``format="wide_items"``),
with 5 % of the cells empty. Each file is read ``--repeats`` times by ``load_responses`` (which
checks every row's width, keeps ids as text and parses every score cell) and by a plain
``pandas.read_csv`` in the same process; the table gives the best time of each and their
ratio. Prints a Markdown table with the date, machine and commit; asserts nothing.

    python benchmarks/read_speed.py                      # 10^5 and 10^6 cells, about a minute
    python benchmarks/read_speed.py --sizes 300 --repeats 1
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from bench_tables import markdown_table, run_header

from benchmirt_bayes import load_responses


def write_tables(folder: Path, side: int, seed: int) -> dict[str, Path]:
    """A ``side × side`` table as LLM rows and as item rows (5 % empty cells)."""
    rng = np.random.default_rng([seed, side])
    values = (rng.random((side, side)) < 0.6).astype(float)
    values[rng.random(values.shape) < 0.05] = np.nan
    llms = [f"org/model-{i}" for i in range(side)]
    items = [f"item{i}" for i in range(side)]
    wide = pd.DataFrame(values, columns=items, dtype="Int8").assign(llm=llms).set_index("llm")
    paths = {"wide": folder / f"wide_{side}.csv", "wide_items": folder / f"items_{side}.csv"}
    wide.to_csv(paths["wide"])
    by_item = wide.T.rename_axis("item")
    by_item.insert(0, "benchmark", "B")
    by_item.to_csv(paths["wide_items"])
    return paths


def best_seconds(read, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        read()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[316, 1000], help="LLMs = items = SIZE")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    header = run_header("Reading result tables")
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for side in args.sizes:
            for layout, path in write_tables(Path(folder), side, args.seed).items():
                options = {"format": layout, "llm_col": "llm"}
                if layout == "wide":
                    options["benchmark"] = "B"
                matrix = load_responses(path, **options)
                package = best_seconds(
                    lambda path=path, options=options: load_responses(path, **options), args.repeats
                )
                plain = best_seconds(lambda path=path: pd.read_csv(path), args.repeats)
                rows.append(
                    {
                        "layout": layout,
                        "cells": side * side,
                        "observed": matrix.n_observed,
                        "load_responses_s": round(package, 2),
                        "pandas_read_csv_s": round(plain, 2),
                        "ratio": round(package / plain, 1),
                    }
                )
    print(header + "\n")
    print(f"Best of {args.repeats} reads of each file.\n")
    print(markdown_table(pd.DataFrame(rows)))


if __name__ == "__main__":
    main()

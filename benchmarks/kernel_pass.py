"""One pass of the fused binary kernel (log-likelihood and its gradients), float32 against float64.

The pass that every NUTS step of a binary fit runs once (``response_types.fused_logit``:
``loglik_and_grad``, cells in float32, the default; ``loglik_and_grad64``, the same pass in
float64), timed alone on one thread at the simulated sets' true parameters: S (100 LLMs ×
1,003 items), M (100 × 5,001) and L (the built-in 100 × 34,312). Printed with date, machine
and commit: milliseconds per pass (the median of ``--repeats`` timed passes after one
untimed) and nanoseconds per observed cell.

    python benchmarks/kernel_pass.py                  # about a minute
    python benchmarks/kernel_pass.py --sizes S M      # without the full set
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd
from bench_tables import markdown_table, run_header

from benchmirt_bayes import simulate_benchmirt
from benchmirt_bayes.response_types.fused_logit import encode_responses, loglik_and_grad, loglik_and_grad64
from benchmirt_bayes.simulation.datasets import load_builtin

ITEMS = {"S": 1000, "M": 5000, "L": None}
"""Items of the speed harness's sets (100 LLMs, seed 1); L is the built-in full set."""


def pass_milliseconds(kernel, arguments: tuple, repeats: int) -> float:
    """Median wall time of one call in milliseconds, after one untimed call (compilation)."""
    kernel(*arguments)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        kernel(*arguments)
        times.append(time.perf_counter() - start)
    return 1e3 * float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", nargs="+", choices=list(ITEMS), default=list(ITEMS))
    parser.add_argument("--repeats", type=int, default=30)
    args = parser.parse_args()
    print(run_header("One pass of the fused binary kernel"))
    rows = []
    for size in args.sizes:
        n_items = ITEMS[size]
        if n_items is None:
            sim = load_builtin()
        else:
            sim = simulate_benchmirt(scale=n_items / 34312, n_llms=100, seed=1)
        responses, truth = sim.responses, sim.truth
        arguments = (
            encode_responses(responses.values, responses.observed),
            np.ascontiguousarray(truth["ability"].values, dtype=float),
            np.ascontiguousarray(truth["loading"].values, dtype=float),
            np.ascontiguousarray(truth["intercept"].values, dtype=float),
        )
        float32 = pass_milliseconds(loglik_and_grad, arguments, args.repeats)
        float64 = pass_milliseconds(loglik_and_grad64, arguments, args.repeats)
        cells = int(responses.n_observed)
        rows.append(
            {
                "size": size,
                "llms": responses.n_llms,
                "items": responses.n_items,
                "observed_cells": cells,
                "float32_ms": float32,
                "float64_ms": float64,
                "float32_ns_per_cell": 1e6 * float32 / cells,
                "float64_over_float32": float64 / float32,
            }
        )
    print(markdown_table(pd.DataFrame(rows), digits=3))


if __name__ == "__main__":
    main()

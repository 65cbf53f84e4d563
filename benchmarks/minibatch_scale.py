"""Minibatch ADVI on a simulated set larger than memory (default 10,000 LLMs × 100,000 items).

The responses are generated block by block from a counter-based hash (``StreamingSimulation``),
so the 10⁹-cell matrix never exists. Prints time per epoch, peak memory, the memory a dense
matrix would need, and recovery of the truth on a subsample after Procrustes alignment.

    python benchmarks/minibatch_scale.py --llms 10000 --items 100000 --out runs/minibatch
    python benchmarks/minibatch_scale.py --smoke          # seconds, for CI
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path

import numpy as np

from benchmirt_bayes.inference.minibatch import fit_minibatch_advi
from benchmirt_bayes.rotations import procrustes
from benchmirt_bayes.simulation.streaming import StreamingSimulation


def recovery(fit, truth, n_items: int, seed: int) -> dict[str, float]:
    """Correlations with the truth (per dimension, worst reported) on a random item subsample."""
    rng = np.random.default_rng(seed)
    items = np.sort(rng.choice(truth.sizes["item"], size=min(n_items, truth.sizes["item"]), replace=False))
    est_loading = fit["variational"]["loading_mean"].values[items]
    rotation = procrustes(est_loading, truth["loading"].values[items])
    pairs = {
        "ability": (fit["variational"]["ability_mean"].values @ rotation, truth["ability"].values),
        "loading": (est_loading @ rotation, truth["loading"].values[items]),
    }
    out = {
        name: float(min(np.corrcoef(est[:, d], true[:, d])[0, 1] for d in range(true.shape[1])))
        for name, (est, true) in pairs.items()
    }
    out["intercept"] = float(
        np.corrcoef(fit["variational"]["intercept_mean"].values[items], truth["intercept"].values[items])[
            0, 1
        ]
    )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llms", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--llm-batch", type=int, default=1000)
    parser.add_argument("--item-batch", type=int, default=2000)
    parser.add_argument("--max-epochs", type=int, default=30)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recovery-items", type=int, default=5000)
    parser.add_argument("--anneal-epochs", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="200 × 2,000, a few epochs")
    parser.add_argument("--out", default=None, help="folder for summary.json")
    args = parser.parse_args()
    if args.smoke:
        args.llms, args.items, args.llm_batch, args.item_batch, args.max_epochs = 200, 2000, 100, 500, 20
    source = StreamingSimulation(args.llms, args.items, seed=args.seed)
    start = time.perf_counter()
    fit = fit_minibatch_advi(
        source,
        2,
        llm_batch=args.llm_batch,
        item_batch=args.item_batch,
        max_epochs=args.max_epochs,
        learning_rate=args.learning_rate,
        anneal_epochs=args.anneal_epochs,
        seed=args.seed,
        progressbar=not args.smoke,
    )
    seconds = time.perf_counter() - start
    settings = json.loads(fit.attrs["benchmirt_settings"])
    epoch_seconds = fit["elbo"]["epoch_seconds"].values[0]
    cells = args.llms * args.items
    summary = {
        "llms": args.llms,
        "items": args.items,
        "cells": cells,
        "block": [settings["llm_batch"], settings["item_batch"]],
        "epochs": fit.attrs["benchmirt_epochs"],
        "annealing_from_epoch": fit["elbo"].attrs["annealing_from_epoch"],
        "converged": bool(fit.attrs["benchmirt_converged"]),
        "seconds_total": round(seconds, 1),
        "seconds_first_epoch_incl_compile": round(float(epoch_seconds[0]), 2),
        "seconds_per_epoch_after_first": round(float(np.median(epoch_seconds[1:])), 2)
        if fit.attrs["benchmirt_epochs"] > 1
        else None,
        "peak_memory_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "dense_float32_matrix_gib": round(cells * 4 / 2**30, 2),
        "recovery_r": {
            k: round(v, 4) for k, v in recovery(fit, source.truth, args.recovery_items, args.seed).items()
        },
        "elbo_last_epochs": [round(float(v), 1) for v in fit["elbo"]["elbo"].values[0, -3:]],
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()

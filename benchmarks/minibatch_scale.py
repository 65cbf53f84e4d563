"""Minibatch ADVI on a simulated set larger than memory (default 10,000 LLMs × 100,000 items).

The responses are generated block by block from a counter-based hash (``StreamingSimulation``),
so the 10⁹-cell matrix never exists. Prints time per step, peak memory, the memory a dense
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
    post = fit["posterior"]
    est_loading = post["loading"].mean(("chain", "draw")).values[items]
    rotation = procrustes(est_loading, truth["loading"].values[items])
    ability = post["ability"].mean(("chain", "draw")).values
    pairs = {
        "ability": (ability @ rotation, truth["ability"].values),
        "loading": (est_loading @ rotation, truth["loading"].values[items]),
    }
    out = {
        name: float(min(np.corrcoef(est[:, d], true[:, d])[0, 1] for d in range(true.shape[1])))
        for name, (est, true) in pairs.items()
    }
    intercept = post["intercept"].mean(("chain", "draw")).values[items]
    out["intercept"] = float(np.corrcoef(intercept, truth["intercept"].values[items])[0, 1])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--llms", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--item-batch", type=int, default=2000)
    parser.add_argument("--max-steps", type=int, default=20000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--recovery-items", type=int, default=5000)
    parser.add_argument("--smoke", action="store_true", help="200 × 2,000, blocks of 500 items")
    parser.add_argument("--out", default=None, help="folder for summary.json")
    args = parser.parse_args()
    if args.smoke:
        args.llms, args.items, args.item_batch = 200, 2000, 500
    source = StreamingSimulation(args.llms, args.items, seed=args.seed)
    start = time.perf_counter()
    fit = fit_minibatch_advi(
        source,
        2,
        item_batch=args.item_batch,
        advi={"max_steps": args.max_steps, "draws": 200},
        seed=args.seed,
        progressbar=not args.smoke,
    )
    seconds = time.perf_counter() - start
    block = json.loads(fit.attrs["benchmirt_minibatch"])
    record = fit["elbo"]
    steps = int(record["elbo"].notnull().sum())
    cells = args.llms * args.items
    summary = {
        "llms": args.llms,
        "items": args.items,
        "cells": cells,
        "block": [args.llms, block["item_batch"]],
        "steps": steps,
        "epochs": round(steps / fit.attrs["benchmirt_blocks_per_epoch"], 1),
        "stopping_rule_fired": bool(record["stopping_rule_fired"].values.ravel()[0]),
        "seconds_total": round(seconds, 1),
        "seconds_optimising": json.loads(fit.attrs["benchmirt_fit_seconds"])[0],
        "peak_memory_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
        "dense_float32_matrix_gib": round(cells * 4 / 2**30, 2),
        "recovery_r": {
            k: round(v, 4) for k, v in recovery(fit, source.truth, args.recovery_items, args.seed).items()
        },
        "elbo_last_window_mean": round(float(record["elbo"].values[0, steps - 200 : steps].mean()), 1),
    }
    print(json.dumps(summary, indent=1))
    if args.out:
        Path(args.out).mkdir(parents=True, exist_ok=True)
        (Path(args.out) / "summary.json").write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()

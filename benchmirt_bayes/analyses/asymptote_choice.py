"""Which binary model (2PL, 3PL, 4PL) each benchmark's data support: PSIS-LOO per benchmark."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.heldout import pointwise_loo
from benchmirt_bayes.posterior import responses_from_tree


def compare_asymptote_models(fits: Mapping[str, xr.DataTree], *, tolerance_se: float = 2.0) -> pd.DataFrame:
    """PSIS-LOO of each benchmark's cells under each fit, and the model each benchmark should use.

    Fit the same data with specs that differ in their ``[binary]`` asymptotes (for example
    every benchmark ``"2pl"``, ``"3pl"`` and ``"4pl"``), then compare them here benchmark by
    benchmark: the expected log predictive density of a benchmark's cells (``elpd``,
    ArviZ's PSIS-LOO over the cells) under each fit, its difference from the best fit with
    the standard error of the paired cell-wise differences, and a recommendation: the
    simplest model (first in ``fits``' order) whose ``elpd`` is within ``tolerance_se``
    standard errors of the best.

    Parameters
    ----------
    fits
        Label → NUTS fit of the same responses, simplest model first.
    tolerance_se
        How many standard errors of the difference a simpler model may fall behind the
        best one and still be chosen.

    Returns
    -------
    DataFrame
        One row per benchmark and model: ``benchmark``, ``model``, ``elpd``, ``elpd_diff``
        (the best model's ``elpd`` minus this one's, ≥ 0), ``se_diff``, ``n_cells``,
        ``share_k_above_0.7`` (cells where PSIS is unreliable), ``recommended`` (the
        benchmark's choice, on every row of it) and ``gain_over_first`` (the recommended
        model's ``elpd`` minus the first model's, with ``se_gain``).

    Raises
    ------
    ValueError
        Fewer than two fits, fits that are not NUTS fits, or fits of different data.

    """
    if len(fits) < 2:
        raise ValueError(f"compare at least two fits, got {len(fits)}")
    if tolerance_se < 0:
        raise ValueError(f"tolerance_se must be non-negative, got {tolerance_se!r}")
    labels = list(fits)
    pointwise, cells = {}, None
    for label, fit in fits.items():
        method = fit.attrs.get("benchmirt_method", "nuts")
        if method != "nuts":
            raise ValueError(f"fit {label!r} is a {method!r} fit: PSIS-LOO needs NUTS draws")
        log_lik, result = pointwise_loo(fit)
        key = (log_lik["llm"].values, log_lik["item"].values)
        if cells is not None and not (np.array_equal(cells[0], key[0]) and np.array_equal(cells[1], key[1])):
            raise ValueError(f"fit {label!r} was made on other responses than fit {labels[0]!r}")
        cells = key
        pointwise[label] = (np.asarray(result.elpd_i).ravel(), np.asarray(result.pareto_k).ravel())
    responses = responses_from_tree(fits[labels[0]])
    bench_of_item = dict(zip(responses.items.astype(str), responses.benchmarks.astype(str), strict=True))
    benchmark = np.array([bench_of_item[str(i)] for i in cells[1]])
    rows = []
    for bench in pd.unique(benchmark):
        mask = benchmark == bench
        elpd = {label: pointwise[label][0][mask] for label in labels}
        totals = {label: float(values.sum()) for label, values in elpd.items()}
        best = max(totals, key=totals.get)
        diff_se = {label: _paired_se(elpd[best], elpd[label]) for label in labels}
        recommended = next(
            label for label in labels if totals[best] - totals[label] <= tolerance_se * diff_se[label]
        )
        gain = totals[recommended] - totals[labels[0]]
        gain_se = _paired_se(elpd[recommended], elpd[labels[0]])
        for label in labels:
            rows.append(
                {
                    "benchmark": bench,
                    "model": label,
                    "elpd": totals[label],
                    "elpd_diff": totals[best] - totals[label],
                    "se_diff": diff_se[label],
                    "n_cells": int(mask.sum()),
                    "share_k_above_0.7": float(np.mean(pointwise[label][1][mask] > 0.7)),
                    "recommended": recommended,
                    "gain_over_first": gain,
                    "se_gain": gain_se,
                }
            )
    out = pd.DataFrame(rows)
    out.attrs = {"tolerance_se": tolerance_se, "models": labels}
    return out


def _paired_se(first: np.ndarray, second: np.ndarray) -> float:
    """Standard error of ``Σ (first − second)`` over cells (0 for identical arrays)."""
    diff = first - second
    return float(np.sqrt(diff.size * np.var(diff))) if diff.size > 1 else 0.0

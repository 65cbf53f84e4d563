"""Which binary model (2PL, 3PL, 4PL) each benchmark's data support: PSIS-LOO per benchmark."""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.heldout import pointwise_loo
from benchmirt_bayes.dims import ITEM_DIM
from benchmirt_bayes.posterior import LOG_LIKELIHOOD_VARIABLE, responses_from_tree


def compare_asymptote_models(
    fits: Mapping[str, xr.DataTree], *, tolerance_se: float = 2.0, rhat_max: float = 1.05
) -> pd.DataFrame:
    """PSIS-LOO of each benchmark's cells under each fit, and the model each benchmark should use.

    Fit the same data with specs that differ in their ``[binary]`` asymptotes (for example
    every benchmark ``"2pl"``, ``"3pl"`` and ``"4pl"``), then compare them here benchmark by
    benchmark: the expected log predictive density of a benchmark's cells (``elpd``,
    ArviZ's PSIS-LOO over the cells) under each fit, its difference from the best fit with
    the standard error of the paired cell-wise differences, and a recommendation: the
    simplest model (first in ``fits``' order) whose ``elpd`` is within ``tolerance_se``
    standard errors of the best.

    Only fits whose chains agree on the benchmark take part: a fit's ``rhat`` for a
    benchmark is the largest rank-normalised split R-hat over the benchmark's summed
    log-likelihood per draw, its items' intercepts and (3PL/4PL) floors. A model above
    ``rhat_max`` there is neither recommended nor the best the others are measured
    against (PSIS-LOO of chains that disagree says nothing about the model), and a
    warning names it; the first model is recommended when no model is converged.

    Parameters
    ----------
    fits
        Label → NUTS fit of the same responses, simplest model first.
    tolerance_se
        How many standard errors of the difference a simpler model may fall behind the
        best one and still be chosen.
    rhat_max
        Largest ``rhat`` of a model that may be recommended or be the best.

    Returns
    -------
    DataFrame
        One row per benchmark and model: ``benchmark``, ``model``, ``elpd``, ``elpd_diff``
        (the best converged model's ``elpd`` minus this one's: ≥ 0 except for an
        unconverged model that scores higher), ``se_diff``, ``n_cells``,
        ``share_k_above_0.7`` (cells where PSIS is unreliable), ``rhat``, ``converged``
        (``rhat ≤ rhat_max``), ``recommended`` (the benchmark's choice, on every row of it)
        and ``gain_over_first`` (the recommended model's ``elpd`` minus the first model's,
        with ``se_gain``).

    Raises
    ------
    ValueError
        Fewer than two fits, fits that are not NUTS fits, or fits of different data.

    """
    if len(fits) < 2:
        raise ValueError(f"compare at least two fits, got {len(fits)}")
    if tolerance_se < 0:
        raise ValueError(f"tolerance_se must be non-negative, got {tolerance_se!r}")
    if not rhat_max >= 1:
        raise ValueError(f"rhat_max must be at least 1, got {rhat_max!r}")
    labels = list(fits)
    pointwise, log_lik_draws, cells = {}, {}, None
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
        log_lik_draws[label] = log_lik[LOG_LIKELIHOOD_VARIABLE].transpose("chain", "draw", "cell").values
    responses = responses_from_tree(fits[labels[0]])
    items = responses.items.astype(str)
    bench_of_item = dict(zip(items, responses.benchmarks.astype(str), strict=True))
    benchmark = np.array([bench_of_item[str(i)] for i in cells[1]])
    rows, unconverged = [], []
    for bench in pd.unique(benchmark):
        mask = benchmark == bench
        elpd = {label: pointwise[label][0][mask] for label in labels}
        totals = {label: float(values.sum()) for label, values in elpd.items()}
        in_bench = responses.benchmarks.astype(str) == bench
        rhat = {
            label: _benchmark_rhat(fits[label]["posterior"], log_lik_draws[label][..., mask], items[in_bench])
            for label in labels
        }
        converged = {label: bool(rhat[label] <= rhat_max) for label in labels}
        eligible = [label for label in labels if converged[label]] or labels[:1]
        unconverged += [f"{bench} {lab} (R-hat {rhat[lab]:.2f})" for lab in labels if not converged[lab]]
        best = max(eligible, key=totals.get)
        diff_se = {label: _paired_se(elpd[best], elpd[label]) for label in labels}
        recommended = next(
            label for label in eligible if totals[best] - totals[label] <= tolerance_se * diff_se[label]
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
                    "rhat": rhat[label],
                    "converged": converged[label],
                    "recommended": recommended,
                    "gain_over_first": gain,
                    "se_gain": gain_se,
                }
            )
    if unconverged:
        warnings.warn(
            f"left out of the choice, their chains disagree (R-hat above {rhat_max}): "
            + "; ".join(unconverged)
            + ". Fit with more chains or draws to let the data decide there.",
            UserWarning,
            stacklevel=2,
        )
    out = pd.DataFrame(rows)
    out.attrs = {"tolerance_se": tolerance_se, "rhat_max": rhat_max, "models": labels}
    return out


def _benchmark_rhat(posterior: xr.DataTree, log_lik: np.ndarray, items: np.ndarray) -> float:
    """Largest split R-hat over a benchmark's summed log-likelihood, intercepts and floors.

    ``log_lik`` is the benchmark's cells (chain, draw, cell); a floor that is zero in every
    draw (an item without one) has no R-hat and is passed over.
    """
    from arviz_stats.base import array_stats

    post = posterior.to_dataset()
    columns = [log_lik.sum(axis=2)[:, :, None]]
    for name in ("intercept", "floor"):
        if name in post:
            columns.append(post[name].sel({ITEM_DIM: items}).transpose("chain", "draw", ITEM_DIM).values)
    values = np.concatenate(columns, axis=2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.nanmax(array_stats.rhat(values, chain_axis=0, draw_axis=1)))


def _paired_se(first: np.ndarray, second: np.ndarray) -> float:
    """Standard error of ``Σ (first − second)`` over cells (0 for identical arrays)."""
    diff = first - second
    return float(np.sqrt(diff.size * np.var(diff))) if diff.size > 1 else 0.0

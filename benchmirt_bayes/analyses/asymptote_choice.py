"""Which binary model (2PL, 3PL, 4PL) each benchmark's data support: PSIS-LOO per benchmark."""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.heldout import pointwise_loo
from benchmirt_bayes.dims import ITEM_DIM
from benchmirt_bayes.posterior import LOG_LIKELIHOOD_VARIABLE, responses_from_tree


def compare_asymptote_models(
    fits: Mapping[str, xr.DataTree],
    *,
    tolerance_se: float = 2.0,
    monte_carlo_error: bool = True,
    benchmarks: Sequence[str] | None = None,
) -> pd.DataFrame:
    """PSIS-LOO of each benchmark's cells under each fit, and the model each benchmark should use.

    Fit the same data with specs that differ in their ``[binary]`` asymptotes (for example
    every benchmark ``"2pl"``, ``"3pl"`` and ``"4pl"``), then compare them here benchmark by
    benchmark: the expected log predictive density of a benchmark's cells (``elpd``,
    ArviZ's PSIS-LOO over the cells) under each fit, its difference from the best fit with
    the standard error of the paired cell-wise differences, and a recommendation: the
    simplest model (first in ``fits``' order) whose ``elpd`` is within ``tolerance_se``
    standard errors of the best.

    A fit whose chains have not mixed estimates ``elpd`` with a Monte Carlo error that the
    cells' standard error does not hold: ``mcse`` is the standard error of a fit's ``elpd``
    over the benchmark estimated from its chains' halves (the spread of the ``elpd`` that
    each half-chain's draws give, over the root of their number), and with
    ``monte_carlo_error`` the recommendation asks a simpler model to fall behind the best by
    more than ``tolerance_se`` times ``√(se_diff² + mcse² + mcse_best²)`` before it is passed
    over. ``rhat`` (the largest split R-hat over the benchmark's summed log-likelihood per
    draw, its items' intercepts and floors) says how well each fit mixed there.

    Parameters
    ----------
    fits
        Label → NUTS fit of the same responses, simplest model first.
    tolerance_se
        How many standard errors of the difference a simpler model may fall behind the
        best one and still be chosen.
    monte_carlo_error
        Count the fits' Monte Carlo error in the recommendation (``False``: the cells'
        standard error alone, as with fits of many more draws).
    benchmarks
        Compare these benchmarks only (default: every benchmark of the data); only their
        cells are scored, and each benchmark's rows are the same whatever else is compared.

    Returns
    -------
    DataFrame
        One row per benchmark and model: ``benchmark``, ``model``, ``elpd``, ``elpd_diff``
        (the best model's ``elpd`` minus this one's, ≥ 0), ``se_diff`` (paired over the
        cells), ``mcse``, ``n_cells``, ``share_k_above_0.7`` (cells where PSIS is
        unreliable), ``rhat``, ``recommended`` (the benchmark's choice, on every row of it)
        and ``gain_over_first`` (the recommended model's ``elpd`` minus the first model's,
        with ``se_gain``, paired over the cells).

    Raises
    ------
    ValueError
        Fewer than two fits, fits that are not NUTS fits, fits of different data, or
        ``benchmarks`` that the data do not have.

    """
    if len(fits) < 2:
        raise ValueError(f"compare at least two fits, got {len(fits)}")
    if tolerance_se < 0:
        raise ValueError(f"tolerance_se must be non-negative, got {tolerance_se!r}")
    labels = list(fits)
    responses = responses_from_tree(fits[labels[0]])
    items, item_benchmarks = responses.items.astype(str), responses.benchmarks.astype(str)
    compared = pd.unique(item_benchmarks) if benchmarks is None else list(benchmarks)
    unknown = sorted(set(compared) - set(item_benchmarks))
    if unknown:
        raise ValueError(f"benchmarks {unknown} are not among the fits' benchmarks")
    compared_items = items[np.isin(item_benchmarks, compared)]
    pointwise, log_lik_draws, halves, cells = {}, {}, {}, None
    for label, fit in fits.items():
        method = fit.attrs.get("benchmirt_method", "nuts")
        if method != "nuts":
            raise ValueError(f"fit {label!r} is a {method!r} fit: PSIS-LOO needs NUTS draws")
        log_lik, result = pointwise_loo(fit, items=compared_items)
        key = (log_lik["llm"].values, log_lik["item"].values)
        if cells is not None and not (np.array_equal(cells[0], key[0]) and np.array_equal(cells[1], key[1])):
            raise ValueError(f"fit {label!r} was made on other responses than fit {labels[0]!r}")
        cells = key
        pointwise[label] = (np.asarray(result.elpd_i).ravel(), np.asarray(result.pareto_k).ravel())
        log_lik_draws[label] = log_lik[LOG_LIKELIHOOD_VARIABLE].transpose("chain", "draw", "cell").values
        halves[label] = _half_chain_elpd(log_lik_draws[label])
    bench_of_item = dict(zip(items, item_benchmarks, strict=True))
    posteriors = {label: fit["posterior"].to_dataset() for label, fit in fits.items()}
    benchmark = np.array([bench_of_item[str(i)] for i in cells[1]])
    rows = []
    for bench in compared:
        mask = benchmark == bench
        elpd = {label: pointwise[label][0][mask] for label in labels}
        totals = {label: float(values.sum()) for label, values in elpd.items()}
        in_bench = item_benchmarks == bench
        rhat = {
            label: _benchmark_rhat(posteriors[label], log_lik_draws[label][..., mask], items[in_bench])
            for label in labels
        }
        mcse = {label: _mcse(halves[label][:, mask].sum(axis=1)) for label in labels}
        best = max(labels, key=totals.get)
        diff_se = {label: _paired_se(elpd[best], elpd[label]) for label in labels}
        recommended = recommend_model(
            totals, diff_se, mcse if monte_carlo_error else dict.fromkeys(labels, 0.0), tolerance_se
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
                    "mcse": mcse[label],
                    "n_cells": int(mask.sum()),
                    "share_k_above_0.7": float(np.mean(pointwise[label][1][mask] > 0.7)),
                    "rhat": rhat[label],
                    "recommended": recommended,
                    "gain_over_first": gain,
                    "se_gain": gain_se,
                }
            )
    out = pd.DataFrame(rows)
    out.attrs = {"tolerance_se": tolerance_se, "monte_carlo_error": monte_carlo_error, "models": labels}
    return out


def recommend_model(
    elpd: Mapping[str, float], se_diff: Mapping[str, float], mcse: Mapping[str, float], tolerance_se: float
) -> str:
    """The simplest model (first in ``elpd``'s order) within ``tolerance_se`` SEs of the best.

    A model's SE against the best is ``√(se_diff² + mcse² + mcse_best²)``: the cells' paired
    SE and both fits' Monte Carlo errors.
    """
    best = max(elpd, key=elpd.get)
    return next(
        label
        for label in elpd
        if elpd[best] - elpd[label]
        <= tolerance_se * np.sqrt(se_diff[label] ** 2 + mcse[label] ** 2 + mcse[best] ** 2)
    )


def _half_chain_elpd(log_lik: np.ndarray) -> np.ndarray:
    """Each cell's importance-sampling ``elpd`` from the draws of each half of each chain.

    ``log_lik`` is (chain, draw, cell); returns (2 × chains, cell).
    """
    from scipy.special import logsumexp

    half = log_lik.shape[1] // 2
    parts = [chain[start : start + half] for chain in log_lik for start in (0, half)]
    return np.stack([np.log(half) - logsumexp(-part, axis=0) for part in parts])


def _mcse(segment_elpd: np.ndarray) -> float:
    """Monte Carlo SE of an ``elpd`` from its estimates on equal, disjoint parts of the draws."""
    return float(np.std(segment_elpd, ddof=1) / np.sqrt(segment_elpd.size)) if segment_elpd.size > 1 else 0.0


def _benchmark_rhat(post: xr.Dataset, log_lik: np.ndarray, items: np.ndarray) -> float:
    """Largest split R-hat over a benchmark's summed log-likelihood, intercepts and floors.

    ``log_lik`` is the benchmark's cells (chain, draw, cell); a floor that is zero in every
    draw (an item without one) has no R-hat and is passed over.
    """
    from arviz_stats.base import array_stats

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

"""One summary of posterior draws: mean, SD and a central interval, at one package-wide width.

Every analysis computes its quantity per draw (a sample axis) and hands the draws here, so a
table's ``mean``, ``sd``, ``lower`` and ``upper`` mean the same thing everywhere, and the
interval width has one keyword (``ci_prob``, as in ArviZ) and one default (:data:`CI_PROB`).
"""

from __future__ import annotations

import numpy as np

CI_PROB = 0.9
"""The package-wide default probability mass of central intervals."""


def check_ci_prob(ci_prob: float) -> float:
    """``ci_prob`` as a float, or ValueError unless it is in (0, 1)."""
    if not 0 < ci_prob < 1:
        raise ValueError(f"ci_prob (the probability mass of an interval) must be in (0, 1), got {ci_prob!r}")
    return float(ci_prob)


def interval_quantiles(ci_prob: float = CI_PROB) -> tuple[float, float]:
    """The lower and upper quantile levels of a central interval of mass ``ci_prob``."""
    tail = (1 - check_ci_prob(ci_prob)) / 2
    return tail, 1 - tail


def summarise_draws(
    values: np.ndarray,
    axis: int = 0,
    ci_prob: float = CI_PROB,
    *,
    prefix: str = "",
    skipna: bool = False,
) -> dict[str, np.ndarray]:
    """Mean, SD and central interval of ``values`` over its sample ``axis``.

    Parameters
    ----------
    values
        Draws of one or many quantities; ``axis`` indexes the draws.
    axis
        The sample axis.
    ci_prob
        Probability mass of the interval.
    prefix
        Names the keys ``{prefix}_mean`` … for tables that summarise several quantities.
    skipna
        Ignore NaN draws (for example correlations of a constant score).

    Returns
    -------
    dict
        ``mean``, ``sd``, ``lower``, ``upper`` (prefixed when ``prefix`` is given), each with
        ``axis`` removed.

    """
    values = np.asarray(values, dtype=float)
    low, high = interval_quantiles(ci_prob)
    if skipna:
        mean, std, quantile = np.nanmean, np.nanstd, np.nanquantile
    else:
        mean, std, quantile = np.mean, np.std, np.quantile
    summary = {
        "mean": mean(values, axis=axis),
        "sd": std(values, axis=axis),
        "lower": quantile(values, low, axis=axis),
        "upper": quantile(values, high, axis=axis),
    }
    if prefix:
        return {f"{prefix}_{key}": value for key, value in summary.items()}
    return summary


def summarise_weighted(
    values: np.ndarray, weights: np.ndarray, ci_prob: float = CI_PROB
) -> dict[str, np.ndarray]:
    """Mean, SD and central interval of weighted points, one distribution per row.

    Parameters
    ----------
    values
        ``(unit, point)`` values of the points.
    weights
        ``(unit, point)`` probabilities of the points (rows sum to one).
    ci_prob
        Probability mass of the interval; its ends are the smallest values whose cumulative
        weight reaches each tail level.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``lower``, ``upper``, one value per unit.

    """
    low, high = interval_quantiles(ci_prob)
    values, weights = np.asarray(values, dtype=float), np.asarray(weights, dtype=float)
    mean = np.sum(weights * values, axis=1)
    variance = np.sum(weights * (values - mean[:, None]) ** 2, axis=1)
    order = np.argsort(values, axis=1)
    ordered = np.take_along_axis(values, order, axis=1)
    cumulative = np.cumsum(np.take_along_axis(weights, order, axis=1), axis=1)

    def at(level: float) -> np.ndarray:
        return np.take_along_axis(ordered, np.argmax(cumulative >= level, axis=1)[:, None], axis=1)[:, 0]

    return {"mean": mean, "sd": np.sqrt(variance), "lower": at(low), "upper": at(high)}

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


def summarise_normal_mixture(
    means: np.ndarray, variances: np.ndarray, weights: np.ndarray, ci_prob: float = CI_PROB
) -> dict[str, np.ndarray]:
    """Mean, SD and central interval of a mixture of normals, one mixture per row.

    Parameters
    ----------
    means, variances, weights
        ``(unit, component)``: each component's mean and variance (zero: a point mass) and
        its probability (rows sum to one).
    ci_prob
        Probability mass of the interval; its ends are the mixture's quantiles (bisection on
        its distribution function).

    Returns
    -------
    dict
        ``mean``, ``sd``, ``lower``, ``upper``, one value per unit.

    """
    from scipy.special import ndtr

    low, high = interval_quantiles(ci_prob)
    means, weights = np.asarray(means, dtype=float), np.asarray(weights, dtype=float)
    sd = np.sqrt(np.maximum(np.asarray(variances, dtype=float), 1e-18))
    mean = np.sum(weights * means, axis=1)
    second = np.sum(weights * (sd**2 + means**2), axis=1)

    def quantile(level: float) -> np.ndarray:
        lo = np.min(means - 9 * sd, axis=1)
        hi = np.max(means + 9 * sd, axis=1)
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            below = np.sum(weights * ndtr((mid[:, None] - means) / sd), axis=1) < level
            lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        return 0.5 * (lo + hi)

    return {
        "mean": mean,
        "sd": np.sqrt(np.maximum(second - mean**2, 0.0)),
        "lower": quantile(low),
        "upper": quantile(high),
    }

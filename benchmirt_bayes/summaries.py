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


def summarise_draws(values: np.ndarray, axis: int = 0, ci_prob: float = CI_PROB) -> dict[str, np.ndarray]:
    """Mean, SD and central interval of ``values`` over its sample ``axis``.

    Parameters
    ----------
    values
        Draws of one or many quantities; ``axis`` indexes the draws.
    axis
        The sample axis.
    ci_prob
        Probability mass of the interval.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``lower``, ``upper``, each with ``axis`` removed.

    """
    values = np.asarray(values, dtype=float)
    low, high = interval_quantiles(ci_prob)
    return {
        "mean": values.mean(axis=axis),
        "sd": values.std(axis=axis),
        "lower": np.quantile(values, low, axis=axis),
        "upper": np.quantile(values, high, axis=axis),
    }

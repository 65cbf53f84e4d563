"""Are a calibration run's ranks uniform? Simultaneous ECDF bands for simulation-based calibration.

A calibrated inference puts the true value of every quantity at a uniformly distributed
normalised rank among its posterior draws (Talts et al. 2018). The empirical CDF of those
ranks over replications is compared with a band that holds the ECDF of uniform draws over
the whole curve with a given probability (ArviZ's ``ecdf_pit``: the simulation envelope of
Säilynoja, Bürkner & Vehtari 2022), so one curve outside it is evidence at that level.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

SBC_GROUP = "prior_sbc"
"""Group of the normalised ranks (ArviZ's name for SBC results, as ``simuk`` writes them)."""

SBC_BAND_PROB = 0.99
"""Probability of the simultaneous band the checks and plots use by default."""


def normalised_ranks(posterior: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``(rank + u) / (L + 1)`` per column: ``rank`` = posterior draws below the truth, ``u ~ U(0, 1)``.

    ``posterior`` is ``(L, k)``, ``truth`` ``(k,)``; uniform on ``(0, 1)`` when calibrated.
    Draws equal to the truth (a quantity with a point mass, such as a ceiling of exactly one)
    are ties: a uniformly chosen number of them counts as below, so that the ranks stay uniform.
    """
    below = (posterior < truth).sum(axis=0)
    ties = (posterior == truth).sum(axis=0)
    if ties.any():  # continuous quantities have none, and draw nothing more from rng
        below = below + rng.integers(0, ties + 1)
    return (below + rng.random(below.shape)) / (posterior.shape[0] + 1)


def rank_ecdf(
    u: np.ndarray, *, prob: float = SBC_BAND_PROB, n_simulations: int = 1000, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(points, ecdf, lower, upper)``: the ECDF of normalised ranks ``u`` and its simultaneous band."""
    from arviz_stats.ecdf_utils import ecdf_pit

    return ecdf_pit(np.asarray(u, dtype=float), prob, n_simulations, rng=np.random.default_rng(seed))


def sbc_uniformity(
    tree: xr.DataTree, *, prob: float = SBC_BAND_PROB, n_simulations: int = 1000, seed: int = 0
) -> pd.DataFrame:
    """Whether each monitored quantity's normalised ranks look uniform.

    Parameters
    ----------
    tree
        The result of :func:`~benchmirt_bayes.workflows.sbc.simulation_based_calibration`.
    prob
        Probability of the simultaneous band (ArviZ's ``ecdf_pit``): a calibrated fit's
        rank ECDF stays inside it with probability ``prob``, over the whole curve.
    n_simulations, seed
        Simulations that set the band, and their seed.

    Returns
    -------
    pandas.DataFrame
        One row per quantity and index: ``inside`` (the ECDF within the band everywhere),
        ``max_deviation`` (largest ``|ECDF(u) − u|``), ``coverage_90`` (share of truths in the
        central 90 % interval of the posterior draws).

    """
    rows = []
    sbc = tree[SBC_GROUP].to_dataset()
    for name, values in sbc.data_vars.items():
        pits = values.values.reshape(-1, values.shape[-1])
        for k in range(pits.shape[1]):
            u = pits[:, k]
            points, ecdf, lower, upper = rank_ecdf(u, prob=prob, n_simulations=n_simulations, seed=seed)
            rows.append(
                {
                    "quantity": name,
                    "index": k,
                    "replications": u.size,
                    "inside": bool(np.all((ecdf >= lower - 1e-12) & (ecdf <= upper + 1e-12))),
                    "max_deviation": float(np.max(np.abs(ecdf - points))),
                    "coverage_90": float(np.mean(np.abs(u - 0.5) < 0.45)),
                }
            )
    return pd.DataFrame(rows)

"""Item fit from posterior predictive checks (as R mirt's ``itemfit``): ``item_fit``.

For every posterior draw the observed responses to an item are compared with the model's
expectation under that draw's abilities and item parameters, and with responses replicated
from the model under the same draw. Two classic mean squares summarise the residuals,

* outfit ``= mean_j z_ij²`` (``z = (y − E[y]) / SD[y]``; sensitive to surprises far from
  the item's difficulty), and
* infit ``= Σ_j (y_ij − E[y_ij])² / Σ_j Var[y_ij]`` (information-weighted),

both 1 when the item behaves as modelled, larger when its responses are noisier than
modelled, smaller when they are more deterministic. The posterior predictive p-value
``P(outfit_rep ≥ outfit_obs)`` calibrates the outfit against what the model itself
produces, so no asymptotic distribution is assumed.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.draws import PosteriorDraws


def item_fit(
    posterior: xr.DataTree, *, n_draws: int = 100, alpha: float = 0.05, seed: int = 0
) -> pd.DataFrame:
    """Posterior predictive fit statistics of every item.

    Parameters
    ----------
    posterior
        A fit.
    n_draws
        Posterior draws used (each with one replicated data set).
    alpha
        Items with ``p_value < alpha`` are flagged ``misfit``.
    seed
        Seed of the draw subsample and the replicated responses.

    Returns
    -------
    DataFrame
        Index ``item``; ``benchmark``, ``subgroup``, ``response_type``, ``n_observed``,
        ``outfit`` and ``infit`` (posterior means of the observed mean squares),
        ``outfit_rep`` (their mean under replication), ``p_value`` and ``misfit``. Sorted
        by ``p_value``, worst fit first.

    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    responses, layout = draws.responses, draws.layout
    observed = responses.observed
    y = np.where(observed, responses.scaled_values, 0.0)
    count = observed.sum(axis=0)
    rng = np.random.default_rng([seed, 17])
    outfit, infit, outfit_rep, exceed = (np.zeros(responses.n_items) for _ in range(4))
    for eta, params in draws:
        expected = layout.expected_score(eta, params, expand=0)
        variance = np.maximum(layout.variance(eta, params, expand=0), 1e-12)
        replicated = layout.draw(eta, params, rng, expand=0) / layout.score_scale
        obs_out, obs_in = _mean_squares(y, expected, variance, observed, count)
        rep_out, _ = _mean_squares(replicated, expected, variance, observed, count)
        outfit += obs_out
        infit += obs_in
        outfit_rep += rep_out
        exceed += rep_out >= obs_out
    n = len(draws)
    table = pd.DataFrame(
        {
            "benchmark": responses.benchmarks,
            "subgroup": responses.subgroups,
            "response_type": responses.response_types,
            "n_observed": count,
            "outfit": outfit / n,
            "infit": infit / n,
            "outfit_rep": outfit_rep / n,
            "p_value": exceed / n,
        },
        index=pd.Index(responses.items.astype(str), name="item"),
    )
    table["misfit"] = table["p_value"] < alpha
    return table.sort_values(["p_value", "outfit"], ascending=[True, False])


def _mean_squares(
    y: np.ndarray, expected: np.ndarray, variance: np.ndarray, observed: np.ndarray, count: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: outfit (mean squared standardised residual) and infit, over observed cells."""
    squared = np.where(observed, (y - expected) ** 2, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        outfit = (squared / variance).sum(axis=0) / count
        infit = squared.sum(axis=0) / np.where(observed, variance, 0.0).sum(axis=0)
    return outfit, infit

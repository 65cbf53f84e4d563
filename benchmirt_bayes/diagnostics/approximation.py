"""How good a mean-field ADVI approximation is: the Pareto k̂ of its importance ratios.

Draws ``z ~ q`` give importance ratios ``r = p(z, y) / q(z)`` (both on the unconstrained
scale, the model's log density with its Jacobians). When ``q`` is close to the posterior
the ratios are nearly constant; when ``q`` is too narrow or misplaced, a few draws carry
most of the weight and the ratios' upper tail is heavy. The shape ``k̂`` of a generalised
Pareto distribution fitted to that tail (PSIS; Yao, Vehtari, Simpson & Gelman 2018;
Vehtari et al. 2024) says how heavy: below the sample-size threshold
``min(1 − 1/log₁₀ S, 0.7)`` the approximation is usable (and PSIS-reweighted draws are
reliable); above it, its means and, more so, its intervals are not to be trusted.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pymc as pm
import xarray as xr
from scipy.stats import norm

from benchmirt_bayes.model.pymc_model import LIKELIHOOD_FORMS, build_model
from benchmirt_bayes.posterior import (
    fit_settings_dict,
    fit_spec,
    responses_from_tree,
    variational_parameters,
)

PARETO_K_SAMPLES = 1000
"""Draws from ``q`` per k̂ (the PSIS recommendation for a reliable tail fit)."""


def pareto_k_threshold(n_samples: int) -> float:
    """``min(1 − 1 / log₁₀ S, 0.7)``: the largest k̂ at which ``S`` importance draws are reliable."""
    return float(min(1.0 - 1.0 / np.log10(n_samples), 0.7))


def advi_pareto_k(fit: xr.DataTree, *, n_samples: int = PARETO_K_SAMPLES, seed: int = 0) -> np.ndarray:
    """Pareto k̂ of a mean-field ADVI fit's importance ratios, one per restart.

    Parameters
    ----------
    fit
        An ADVI fit of :func:`~benchmirt_bayes.fit_posterior` or
        :func:`~benchmirt_bayes.fit_minibatch_advi` that holds its ``observed_data``.
    n_samples
        Draws from the approximation.
    seed
        Seed of the draws.

    Returns
    -------
    numpy.ndarray
        ``k̂`` per restart; compare with :func:`pareto_k_threshold`.

    Raises
    ------
    ValueError
        When the fit holds no mean-field approximation or no data.

    """
    if "observed_data" not in fit.children:
        raise ValueError("k̂ needs the data the fit was made on (observed_data)")
    settings = fit_settings_dict(fit)
    likelihood = settings.get("likelihood", "auto")
    model = build_model(
        responses_from_tree(fit),
        int(settings["n_dims"]),
        spec=fit_spec(fit),
        likelihood=likelihood if likelihood in LIKELIHOOD_FORMS else "auto",
    )
    log_density = model.compile_logp()
    restarts = fit["elbo"]["restart"].values
    return np.array(
        [
            mean_field_pareto_k(
                model,
                variational_parameters(fit, int(r)),
                n_samples=n_samples,
                seed=[seed, int(r)],
                log_density=log_density,
            )
            for r in restarts
        ]
    )


def mean_field_pareto_k(
    model: pm.Model,
    q: Mapping[str, tuple[np.ndarray, np.ndarray]],
    *,
    n_samples: int = PARETO_K_SAMPLES,
    seed: int | Sequence[int] = 0,
    log_density: Callable[[dict[str, np.ndarray]], float] | None = None,
) -> float:
    """Pareto k̂ of the importance ratios ``p(z, y) / q(z)`` of a mean-field ``q`` of ``model``.

    ``q`` maps every free (value) variable of ``model`` to its ``(mean, sd)`` on the
    unconstrained scale (:func:`~benchmirt_bayes.posterior.variational_parameters`);
    ``log_density`` is ``model.compile_logp()`` when the caller already compiled it.
    """
    from arviz_stats.base import array_stats

    names = [v.name for v in model.value_vars]
    if set(q) != set(names):
        raise ValueError(f"the fit's approximation covers {sorted(q)}, its model {sorted(names)}")
    log_density = model.compile_logp() if log_density is None else log_density
    rng = np.random.default_rng(seed)
    log_ratio = np.empty(n_samples)
    for s in range(n_samples):
        point, log_q = {}, 0.0
        for name, (mean, sd) in q.items():
            value = mean + sd * rng.standard_normal(mean.shape)
            point[name] = value
            log_q += float(norm.logpdf(value, mean, sd).sum())
        log_ratio[s] = float(log_density(point)) - log_q
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    _, khat = array_stats.psislw(log_ratio - np.max(log_ratio))
    return float(khat)

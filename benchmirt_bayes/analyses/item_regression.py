"""One item at a time, abilities held at a posterior draw: a common shift and one more coefficient.

The audits ask of each item a question its fitted parameters answer badly: does it treat one
group of LLMs differently (differential item functioning), does it discriminate against its
benchmark's direction (a flipped key)? The fitted item parameters are shrunk towards their
benchmark by the hierarchical prior, which is right for prediction and wrong for finding the
few items that break the pattern. Here every item instead gets, per posterior draw, its own
two coefficients on top of that draw's linear predictor,

    η'ᵢⱼ = baseᵢⱼ + cᵢ + βᵢ xᵢⱼ,

estimated at the mode of the item's log-likelihood under wide ``N(0, PRIOR_SD²)`` priors
(a few Newton steps with the response-model layer's score and information); ``c`` is a
shift shared by every LLM, ``x`` the covariate of the question. The variance of ``β`` is
read from the inverse of the 2 × 2 information.
"""

from __future__ import annotations

import numpy as np

from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout

PRIOR_SD = 3.0
NEWTON_STEPS = 8
MAX_STEP = 2.0


def item_coefficient(
    layout: ResponseLayout,
    y: np.ndarray,
    base: np.ndarray,
    params: ItemParameters,
    observed: np.ndarray,
    covariate: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: mode and variance of ``β`` in ``η' = base + c + β x`` (one draw).

    Parameters
    ----------
    layout, params
        The fit's response layout and the draw's item parameters.
    y
        Responses ``(llm, item)`` with unobserved cells filled (any value).
    base
        The draw's linear predictor ``(llm, item)`` that the item's coefficients add to.
    observed
        Mask of observed cells.
    covariate
        ``x (llm, item)``: 0/1 for a group contrast, a projected ability for a slope.

    Returns
    -------
    tuple of ndarray
        ``β`` at the mode and its variance, one value per item.

    """
    weight_mask = observed.astype(float)
    x = np.where(observed, covariate, 0.0)
    common = np.zeros(base.shape[1])
    beta = np.zeros(base.shape[1])
    prior = 1.0 / PRIOR_SD**2

    def information(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        weight = weight_mask * layout.information_weight(eta, params, expand=0)
        return weight.sum(axis=0) + prior, (x * x * weight).sum(axis=0) + prior, (x * weight).sum(axis=0)

    for _ in range(NEWTON_STEPS):
        eta = base + common[None, :] + x * beta[None, :]
        residual = weight_mask * layout.score_residual(y, eta, params, expand=0)
        g_c = residual.sum(axis=0) - prior * common
        g_b = (x * residual).sum(axis=0) - prior * beta
        h_cc, h_bb, h_cb = information(eta)
        det = h_cc * h_bb - h_cb**2
        common = common + np.clip((h_bb * g_c - h_cb * g_b) / det, -MAX_STEP, MAX_STEP)
        beta = beta + np.clip((h_cc * g_b - h_cb * g_c) / det, -MAX_STEP, MAX_STEP)
    h_cc, h_bb, h_cb = information(base + common[None, :] + x * beta[None, :])
    return beta, h_cc / (h_cc * h_bb - h_cb**2)


def pooled(modes: list[np.ndarray], variances: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Mean over draws and total standard deviation (within-draw variance plus between draws)."""
    means, var = np.stack(modes), np.stack(variances)
    return means.mean(axis=0), np.sqrt(var.mean(axis=0) + means.var(axis=0))


def probability_below(
    estimate: np.ndarray, sd: np.ndarray, threshold: float, *, grid_size: int = 200, iterations: int = 500
) -> tuple[np.ndarray, np.ndarray]:
    """``P(βᵢ < threshold)`` under a prior over items estimated from all of them.

    The wide per-item prior of :func:`item_coefficient` is right for one item and wrong for
    thousands: a few of them land far out by chance. Here the estimates are treated as
    ``β̂ᵢ ~ N(βᵢ, sdᵢ²)`` with ``βᵢ`` drawn from a distribution ``G`` on a grid, ``G``
    estimated by maximum likelihood (EM; the nonparametric empirical-Bayes deconvolution of
    Koenker and Mizera 2014), and each item's posterior probability is taken under ``G``.
    Items then borrow from the whole benchmark what a plausible coefficient looks like,
    without assuming ``G`` is normal, so a small cluster of real outliers keeps its mass.

    Returns
    -------
    tuple of ndarray
        The probabilities, and the grid's weights ``G`` (for inspection).

    """
    estimate, sd = np.asarray(estimate, float), np.asarray(sd, float)
    grid = np.linspace(estimate.min() - 3 * sd.max(), estimate.max() + 3 * sd.max(), grid_size)
    log_density = -0.5 * ((estimate[:, None] - grid[None, :]) / sd[:, None]) ** 2 - np.log(sd)[:, None]
    density = np.exp(log_density - log_density.max(axis=1, keepdims=True))
    weights = np.full(grid_size, 1.0 / grid_size)
    for _ in range(iterations):
        posterior = density * weights
        posterior /= posterior.sum(axis=1, keepdims=True)
        weights = posterior.mean(axis=0)
    posterior = density * weights
    posterior /= posterior.sum(axis=1, keepdims=True)
    return posterior[:, grid < threshold].sum(axis=1), weights


def bayesian_fdr_selection(lfdr: np.ndarray, level: float) -> np.ndarray:
    """The largest set of smallest-lfdr items whose mean lfdr is at most ``level``."""
    order = np.argsort(lfdr, kind="stable")
    running = np.cumsum(lfdr[order]) / np.arange(1, lfdr.size + 1)
    keep = int(np.sum(running <= level))
    flagged = np.zeros(lfdr.size, dtype=bool)
    flagged[order[:keep]] = True
    return flagged

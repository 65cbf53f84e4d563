"""Laplace-SIR: posterior samples of many small regressions with a response-model likelihood.

``y_un ~ ResponseModel_n(design_sn · w_us + offset_sn)``, ``w_us ~ N(prior_mean, diag(prior_var))``,
one regression per unit ``u`` and posterior draw ``s`` of the fixed parts. For each, a
Laplace approximation (Newton's method on a strictly concave log density) serves as the
proposal of sampling-importance-resampling, so each draw contributes exact (weighted)
samples, not a plug-in. New LLMs' abilities (items known) and new items' parameters
(abilities known) are both such regressions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout


@dataclass(frozen=True)
class _Cells:
    """The response models of a regression's columns with their per-draw parameters."""

    layout: ResponseLayout
    params: ItemParameters

    def log_likelihood(self, y: np.ndarray, eta: np.ndarray, expand: int = 0) -> np.ndarray:
        return self.layout.log_likelihood(y, eta, self.params, expand=expand)

    def score_residual(self, y: np.ndarray, eta: np.ndarray) -> np.ndarray:
        return self.layout.score_residual(y, eta, self.params, expand=0)

    def information_weight(self, eta: np.ndarray) -> np.ndarray:
        return self.layout.information_weight(eta, self.params, expand=0)


def laplace_sir(
    design: np.ndarray,
    offset: np.ndarray,
    outcomes: np.ndarray,
    prior_mean: np.ndarray,
    prior_var: np.ndarray,
    *,
    samples_per_draw: int = 4,
    seed: int = 0,
    newton_steps: int = 50,
    layout: ResponseLayout | None = None,
    params: ItemParameters | None = None,
) -> np.ndarray:
    """Samples of regression weights, one regression per (unit, draw).

    Model: ``y_un ~ ResponseModel_n(design_sn · w_us + offset_sn)`` (Bernoulli-logit
    unless ``layout`` says otherwise) with prior ``w_us ~ N(prior_mean, diag(prior_var))``.

    Parameters
    ----------
    design
        ``(draw, n, p)`` covariates per posterior draw.
    offset
        ``(draw, n)`` fixed part of the logit.
    outcomes
        ``(unit, n)`` responses, NaN where not observed.
    prior_mean, prior_var
        Broadcastable to ``(unit, draw, p)``.
    samples_per_draw
        Importance samples drawn per (unit, draw); the pooled, resampled set has
        ``draw × samples_per_draw`` samples per unit.
    seed
        Seed of the proposals and the resampling.
    newton_steps
        Maximum Newton iterations for the mode (Fisher scoring with step halving).
    layout, params
        The response models of the ``n`` columns and their item parameters, ``(draw, n, …)``
        (default: all binary).

    Returns
    -------
    ndarray
        ``(unit, draw × samples_per_draw, p)``; sample ``k`` belongs to draw
        ``k // samples_per_draw``, so it can be paired with that draw's design.

    """
    n_draw, n_cols, p = design.shape
    n_unit = outcomes.shape[0]
    cells = _Cells(ResponseLayout.binary(n_cols), {}) if layout is None else _Cells(layout, params or {})
    mask = ~np.isnan(outcomes)
    y = np.where(mask, outcomes, 0.0)
    shape = (n_unit, n_draw, p)
    mean = np.broadcast_to(prior_mean, shape).astype(float)
    var = np.broadcast_to(prior_var, shape).astype(float)
    w = mean.copy()
    value = _objective(design, offset, y, mask, w, mean, var, cells)
    for _ in range(newton_steps):
        grad, hess = _gradient_hessian(design, offset, y, mask, w, mean, var, cells)
        step = np.linalg.solve(-hess, grad[..., None])[..., 0]
        # damped Newton: halve the step wherever it would lower the log density (saturated
        # logits make the plain Newton step overshoot for LLMs that get nearly everything right)
        size = np.ones(value.shape)
        for _halving in range(30):
            candidate = w + size[..., None] * step
            new_value = _objective(design, offset, y, mask, candidate, mean, var, cells)
            worse = new_value < value - 1e-10
            if not worse.any():
                break
            size = np.where(worse, size / 2, size)
        w, value = candidate, new_value
        if np.max(np.abs(size[..., None] * step)) < 1e-8:
            break
    _, hess = _gradient_hessian(design, offset, y, mask, w, mean, var, cells)
    cov = np.linalg.inv(-hess)
    cov = 0.5 * (cov + np.swapaxes(cov, -1, -2))
    chol = np.linalg.cholesky(cov)
    rng = np.random.default_rng(seed)
    m = samples_per_draw * 4  # proposals per (unit, draw), resampled down to samples_per_draw
    noise = rng.standard_normal((n_unit, n_draw, m, p))
    proposals = w[:, :, None, :] + np.einsum("udpq,udmq->udmp", chol, noise)
    log_q = -0.5 * np.sum(noise**2, axis=-1)
    log_target = _log_density(design, offset, y, mask, proposals, mean, var, cells)
    log_weight = log_target - log_q
    log_weight -= log_weight.max(axis=-1, keepdims=True)
    weight = np.exp(log_weight)
    weight /= weight.sum(axis=-1, keepdims=True)
    cumulative = np.cumsum(weight, axis=-1)
    cumulative[..., -1] = 1.0
    u = rng.random((n_unit, n_draw, samples_per_draw))
    chosen = np.minimum((cumulative[:, :, None, :] < u[..., None]).sum(axis=-1), m - 1)
    picked = np.take_along_axis(proposals, chosen[..., None], axis=2)
    return picked.reshape(n_unit, n_draw * samples_per_draw, p)


def _objective(design, offset, y, mask, w, mean, var, cells):
    """Unnormalised log posterior at ``w (unit, draw, p)``."""
    eta = np.einsum("snp,usp->usn", design, w) + offset[None]
    loglik = np.sum(cells.log_likelihood(y[:, None, :], eta) * mask[:, None, :], axis=-1)
    return loglik - 0.5 * np.sum((w - mean) ** 2 / var, axis=-1)


def _gradient_hessian(design, offset, y, mask, w, mean, var, cells):
    eta = np.einsum("snp,usp->usn", design, w) + offset[None]
    resid = cells.score_residual(y[:, None, :], eta) * mask[:, None, :]
    grad = np.einsum("snp,usn->usp", design, resid) - (w - mean) / var
    # Fisher scoring: the expected information (the exact Hessian for the logistic types)
    weight = cells.information_weight(eta) * mask[:, None, :]
    hess = -np.einsum("snp,usn,snq->uspq", design, weight, design)
    idx = np.arange(w.shape[-1])
    hess[..., idx, idx] -= 1.0 / var
    return grad, hess


def _log_density(design, offset, y, mask, w, mean, var, cells):
    """Unnormalised log posterior at ``w (unit, draw, m, p)``."""
    eta = np.einsum("snp,usmp->usmn", design, w) + offset[None, :, None, :]
    loglik = cells.log_likelihood(y[:, None, None, :], eta, expand=1)
    loglik = np.sum(loglik * mask[:, None, None, :], axis=-1)
    prior = -0.5 * np.sum((w - mean[:, :, None, :]) ** 2 / var[:, :, None, :], axis=-1)
    return loglik + prior

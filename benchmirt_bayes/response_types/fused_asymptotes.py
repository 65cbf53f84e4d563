"""The 2PL/3PL/4PL log-likelihood of a binary matrix and its gradient in one pass.

Each item is a 2PL (``kind`` 0), a 3PL (1: a floor ``g``) or a 4PL (2: a floor and, with
probability ``share``, a ceiling ``u`` below one; else the ceiling is one). With
``p = g + (u − g) σ(η)`` and ``q = 1 − p = (1 − u) + (u − g) σ(−η)``, a cell adds
``log p`` or ``log q``; a 4PL item adds the log of its two likelihoods mixed,
``log(share · L_capped + (1 − share) · L_one)``, the capped-or-not indicator summed out
(:func:`~benchmirt_bayes.response_types.asymptotes.capped_or_not`). This is the same
function the cell form writes as a graph (``BinaryLogistic.log_likelihood``), with the
gradients with respect to abilities, loadings, intercepts, floors, ceilings and shares
coming out of the same pass.

As in :mod:`~benchmirt_bayes.response_types.fused_logit`, each LLM's row of logits stays
in cache and the exponential is the vectorisable polynomial with ``|η|`` capped at 40:
``p`` and ``q`` are sums of non-negative terms, so the only effect of the cap is a
probability of at least ``e^{−40}`` where the true one is smaller *and* the floor (for
``p``) or ``1 − u`` (for ``q``) is below about ``10^{−15}``. Where the ceiling is exactly
one, ``log q = log(1 − g) − softplus(η)`` is exact at every ``η``. A 4PL item's cell
derivatives under both ceilings are kept until the whole matrix has been read, since their
mixing weight (the posterior probability that the item is capped) depends on every cell of
the item.
"""

from __future__ import annotations

import math

import numba
import numpy as np
import pytensor.tensor as pt

from benchmirt_bayes.response_types import fused_logit
from benchmirt_bayes.response_types.fused_logit import (
    _JIT,
    FusedKernelOp,
    accumulate_row,
    kernel_version,
    logistic_parts,
    row_logits,
)

TWO_PL, THREE_PL, FOUR_PL = 0, 1, 2
"""Codes of an item's kind in the ``kind`` vector."""


@numba.njit(inline="always", **_JIT)
def _cell(y: int, s: float, s_bar: float, g: float, u: float) -> tuple[float, float, float, float]:
    """``log P(y)`` and its derivatives in ``η``, ``g`` and ``u`` for a ceiling ``u < 1``.

    ``s = σ(η)``, ``s_bar = σ(−η)``; ``∂p/∂η = (u − g) s s̄``, ``∂p/∂g = s̄``, ``∂p/∂u = s``.
    """
    if y == 1:
        p = g + (u - g) * s
        return math.log(p), (u - g) * s * s_bar / p, s_bar / p, s / p
    q = (1.0 - u) + (u - g) * s_bar
    return math.log(q), -(u - g) * s * s_bar / q, -s_bar / q, -s / q


@numba.njit(inline="always", **_JIT)
def _cell_at_one(
    y: int, s: float, s_bar: float, g: float, log_one_minus_g: float, softplus: float
) -> tuple[float, float, float]:
    """:func:`_cell` at ``u = 1`` (no derivative in ``u``), with ``log q`` exact at every ``η``."""
    if y == 1:
        p = g + (1.0 - g) * s
        return math.log(p), (1.0 - g) * s * s_bar / p, s_bar / p
    return log_one_minus_g - softplus, -s, -1.0 / (1.0 - g)


@numba.njit(**_JIT)
def asymptotic_loglik_and_grad(
    responses: np.ndarray,
    kind: np.ndarray,
    ability: np.ndarray,
    loading: np.ndarray,
    intercept: np.ndarray,
    floor: np.ndarray,
    ceiling: np.ndarray,
    share: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Log-likelihood of ``responses`` and its gradients with respect to the six parameters.

    Parameters
    ----------
    responses
        ``(n_llm, n_item)`` int8: 1 correct, 0 wrong, -1 unobserved.
    kind
        ``(n_item,)`` int8: :data:`TWO_PL`, :data:`THREE_PL` or :data:`FOUR_PL`.
    ability, loading, intercept
        ``(n_llm, n_dim)``, ``(n_item, n_dim)``, ``(n_item,)``.
    floor, ceiling, share
        ``(n_item,)``: the floor (read for 3PL and 4PL items), the ceiling of a capped 4PL
        item and its benchmark's share of capped items (read for 4PL items only).

    Returns
    -------
    tuple
        The log-likelihood and its gradients, shaped like the six parameters (zero where
        an item's kind does not read the parameter).

    """
    n_llm, n_item = responses.shape
    n_dim = ability.shape[1]
    loading_rows = np.ascontiguousarray(loading.T)
    grad_ability = np.zeros((n_llm, n_dim))
    grad_loading_rows = np.zeros((n_dim, n_item))
    grad_intercept = np.zeros(n_item)
    grad_floor = np.zeros(n_item)
    grad_ceiling = np.zeros(n_item)
    grad_share = np.zeros(n_item)
    log_one_minus_floor = np.log1p(-floor)
    four = np.flatnonzero(kind == FOUR_PL)
    slot = np.full(n_item, -1)
    for j in range(four.size):
        slot[four[j]] = j
    # per 4PL item: sums of cell log-likelihoods and of floor/ceiling derivatives with the
    # ceiling at u ("capped") and at one ("open"), and every cell's η-derivative under both
    sum_capped, sum_open = np.zeros(four.size), np.zeros(four.size)
    floor_capped, floor_open = np.zeros(four.size), np.zeros(four.size)
    ceiling_capped = np.zeros(four.size)
    residual_capped = np.zeros((n_llm, four.size))
    residual_open = np.zeros((n_llm, four.size))
    eta = np.empty(n_item)
    residual = np.empty(n_item)
    total = 0.0
    for i in range(n_llm):
        row_logits(eta, intercept, loading_rows, ability[i])
        answers = responses[i]
        for k in range(n_item):
            y = answers[k]
            residual[k] = 0.0
            if y < 0:
                continue
            x = eta[k]
            softplus, s, s_bar = logistic_parts(x)
            if kind[k] == TWO_PL:
                total += y * x - softplus
                residual[k] = y - s
                continue
            g = floor[k]
            ll, d_eta, d_floor = _cell_at_one(y, s, s_bar, g, log_one_minus_floor[k], softplus)
            if kind[k] == THREE_PL:
                total += ll
                residual[k] = d_eta
                grad_floor[k] += d_floor
                continue
            j = slot[k]
            sum_open[j] += ll
            floor_open[j] += d_floor
            residual_open[i, j] = d_eta
            ll, d_eta, d_floor, d_ceiling = _cell(y, s, s_bar, g, ceiling[k])
            sum_capped[j] += ll
            floor_capped[j] += d_floor
            ceiling_capped[j] += d_ceiling
            residual_capped[i, j] = d_eta
        for k in range(n_item):
            grad_intercept[k] += residual[k]
        accumulate_row(residual, ability[i], loading_rows, grad_loading_rows, grad_ability[i])
    for j in range(four.size):
        k = four[j]
        with_cap = math.log(share[k]) + sum_capped[j]
        without = math.log1p(-share[k]) + sum_open[j]
        high, low = max(with_cap, without), min(with_cap, without)
        ratio = math.exp(low - high)
        total += high + math.log1p(ratio)
        weight = 1.0 / (1.0 + ratio) if with_cap >= without else ratio / (1.0 + ratio)
        grad_floor[k] = weight * floor_capped[j] + (1.0 - weight) * floor_open[j]
        grad_ceiling[k] = weight * ceiling_capped[j]
        grad_share[k] = weight / share[k] - (1.0 - weight) / (1.0 - share[k])
        for i in range(n_llm):
            r = weight * residual_capped[i, j] + (1.0 - weight) * residual_open[i, j]
            grad_intercept[k] += r
            for d in range(n_dim):
                grad_loading_rows[d, k] += r * ability[i, d]
                grad_ability[i, d] += r * loading_rows[d, k]
    return (
        total,
        grad_ability,
        np.ascontiguousarray(grad_loading_rows.T),
        grad_intercept,
        grad_floor,
        grad_ceiling,
        grad_share,
    )


class FusedAsymptoticLogit(FusedKernelOp):
    """``(responses, kind, ability, loading, intercept, floor, ceiling, share) ↦ (loglik, six gradients)``."""

    kernel = asymptotic_loglik_and_grad
    data_ranks = (2, 1)
    parameter_ranks = (2, 2, 1, 1, 1, 1)

    @staticmethod
    def kernel_version() -> int:
        """Changes with this file and the shared helpers of ``fused_logit.py``."""
        return KERNEL_VERSION


fused_asymptotic_logit = FusedAsymptoticLogit()

KERNEL_VERSION = kernel_version(__file__, fused_logit.__file__)
"""Changes with this file or ``fused_logit.py``: PyTensor's numba cache never serves an older kernel."""


def fused_asymptotic_loglik(
    responses: pt.TensorLike,
    kind: pt.TensorLike,
    ability: pt.TensorLike,
    loading: pt.TensorLike,
    intercept: pt.TensorLike,
    floor: pt.TensorLike,
    ceiling: pt.TensorLike,
    share: pt.TensorLike,
) -> pt.TensorVariable:
    """The 2PL/3PL/4PL log-likelihood as a scalar PyTensor expression with a one-pass gradient."""
    return fused_asymptotic_logit(responses, kind, ability, loading, intercept, floor, ceiling, share)[0]

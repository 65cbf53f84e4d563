"""The 2PL/3PL/4PL log-likelihood of a binary matrix and its gradient in one pass.

Each item is a 2PL (``kind`` 0), a 3PL (1: a floor ``g``) or a 4PL (2: a floor and, with
probability ``share``, a ceiling ``u`` below one; else the ceiling is one). A cell adds
``log p`` or ``log q``, ``p = g + (u − g) σ(η)``, ``q = 1 − p``; a 4PL item adds the log of
its two likelihoods mixed, ``log(share · L_capped + (1 − share) · L_one)``, the capped-or-not
indicator summed out (:func:`~benchmirt_bayes.response_types.asymptotes.capped_or_not`).
This is the same function the cell form writes as a graph (``BinaryLogistic.log_likelihood``),
with the gradients with respect to abilities, loadings, intercepts, floors, ceilings and
shares coming out of the same pass.

The 2PL items go through :mod:`~benchmirt_bayes.response_types.fused_logit`'s kernel. A
floored cell needs a logarithm, which numba calls as a scalar library function, so that a
loop holding one is not vectorised; it is written instead with softplus alone, which the
vectorisable polynomials of ``fused_logit`` give:

``log p = log g + softplus(η + log u − log g) − softplus(η)``,
``log q = log(1 − g) + softplus(η + log(1 − u) − log(1 − g)) − softplus(η)``

(from ``p = (g + u e^η) / (1 + e^η)`` and ``q = ((1 − g) + (1 − u) e^η) / (1 + e^η)``), whose
derivatives in ``η`` are ``σ(t) − σ(η)`` with ``t`` the shifted argument. At ``u = 1`` the
shift of ``log q`` is ``−∞``: it is taken as :data:`NO_CAP`, beyond the polynomials' cap of
``|η|`` at 40, which changes ``log q`` by less than 5e-18. Each LLM's row of logits stays in
cache; a 4PL item's cell derivatives under both ceilings are kept until the whole matrix has
been read, since their mixing weight (the posterior probability that the item is capped)
depends on every cell of the item.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import pytensor.tensor as pt
from numba.core.errors import NumbaIRAssumptionWarning
from pytensor.link.numba.dispatch.basic import register_funcify_and_cache_key

from benchmirt_bayes.response_types import fused_logit
from benchmirt_bayes.response_types.fused_logit import (
    _JIT,
    FusedKernelOp,
    accumulate_row,
    fused_loglik,
    kernel_version,
    logistic_parts,
    numba_kernel_call,
    row_logits,
)

TWO_PL, THREE_PL, FOUR_PL = 0, 1, 2
"""Codes of an item's kind in the ``kind`` vector."""

# numba's SSA pass notes ("... is not in scope") when one function inlines the polynomials
# more than once; the compiled kernel is tested against the cell form's graph
warnings.filterwarnings("ignore", r".*_logistic_parts_typed.* is not in scope", NumbaIRAssumptionWarning)

NO_CAP = -1e6
"""The shift of ``log q`` at a ceiling of one (``log 0``): ``η + NO_CAP`` is below −40, the
polynomials' cap, for any ``η`` below 999,960."""


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
    """Log-likelihood of floored items' ``responses`` and its gradients in the six parameters.

    Parameters
    ----------
    responses
        ``(n_llm, n_item)`` int8: 1 correct, 0 wrong, -1 unobserved.
    kind
        ``(n_item,)`` int8: :data:`THREE_PL` or :data:`FOUR_PL`, the 4PL items last.
    ability, loading, intercept
        ``(n_llm, n_dim)``, ``(n_item, n_dim)``, ``(n_item,)``.
    floor, ceiling, share
        ``(n_item,)``: the floor, the ceiling of a capped 4PL item and its benchmark's share
        of capped items (the last two read for 4PL items only).

    Returns
    -------
    tuple
        The log-likelihood and its gradients, shaped like the six parameters (zero where
        an item's kind does not read the parameter).

    """
    # rows are read as vectors: a column selection of a C matrix (numpy's
    # ``y[:, items]``) is Fortran-ordered, and the loops over its strided rows do not vectorise
    responses = np.ascontiguousarray(responses)
    n_llm, n_item = responses.shape
    n_dim = ability.shape[1]
    loading_rows = np.ascontiguousarray(loading.T)
    grad_ability = np.zeros((n_llm, n_dim))
    grad_loading_rows = np.zeros((n_dim, n_item))
    grad_intercept = np.zeros(n_item)
    grad_floor = np.zeros(n_item)
    grad_ceiling = np.zeros(n_item)
    grad_share = np.zeros(n_item)
    log_floor, log_one_minus_floor = np.log(floor), np.log1p(-floor)
    inverse_floor, inverse_one_minus_floor = 1.0 / floor, 1.0 / (1.0 - floor)
    three = (kind == THREE_PL).astype(np.float64)  # 4PL items' terms wait for their weights
    n_four = int(np.sum(kind == FOUR_PL))
    first_four = n_item - n_four
    if np.any(kind[first_four:] != FOUR_PL):
        raise ValueError("the 4PL items must come after the 3PL items")
    capped = ceiling[first_four:]
    capped_shift_correct = np.log(capped) - log_floor[first_four:]
    capped_shift_wrong = np.log1p(-capped) - log_one_minus_floor[first_four:]
    inverse_ceiling, inverse_one_minus_ceiling = 1.0 / capped, 1.0 / (1.0 - capped)
    log_floor_four, log_one_minus_floor_four = log_floor[first_four:], log_one_minus_floor[first_four:]
    inverse_floor_four = inverse_floor[first_four:]
    inverse_one_minus_floor_four = inverse_one_minus_floor[first_four:]
    cell_log_lik, cell_floor, cell_ceiling = np.empty(n_four), np.empty(n_four), np.empty(n_four)
    # per 4PL item: sums of cell log-likelihoods and of floor/ceiling derivatives with the
    # ceiling at u ("capped") and at one ("open"), and every cell's η-derivative under both
    sum_capped, sum_open = np.zeros(n_four), np.zeros(n_four)
    floor_capped, floor_open = np.zeros(n_four), np.zeros(n_four)
    ceiling_capped = np.zeros(n_four)
    residual_capped = np.zeros((n_llm, n_four))
    residual_open = np.zeros((n_llm, n_four))
    eta = np.empty(n_item)
    softplus_row, sigmoid_row = np.empty(n_item), np.empty(n_item)
    log_lik_open, floor_derivative_open = np.empty(n_item), np.empty(n_item)
    residual = np.empty(n_item)
    total = 0.0
    for i in range(n_llm):
        row_logits(eta, intercept, loading_rows, ability[i])
        answers = responses[i]
        row_total = 0.0
        for k in range(n_item):  # every cell with the ceiling at one: vectorised
            y = answers[k]
            correct = y == 1
            x = eta[k]
            softplus, sigmoid, _ = logistic_parts(x)
            base = log_floor[k] if correct else log_one_minus_floor[k]
            shift = -log_floor[k] if correct else NO_CAP
            softplus_t, sigmoid_t, sigmoid_minus_t = logistic_parts(x + shift)
            ll, d_eta = base + softplus_t - softplus, sigmoid_t - sigmoid
            d_floor = sigmoid_minus_t * (inverse_floor[k] if correct else -inverse_one_minus_floor[k])
            observed = y >= 0
            ll = ll if observed else 0.0
            d_eta = d_eta if observed else 0.0
            d_floor = d_floor if observed else 0.0
            softplus_row[k], sigmoid_row[k] = softplus, sigmoid
            log_lik_open[k], floor_derivative_open[k] = ll, d_floor
            row_total += three[k] * ll
            residual[k] = d_eta
            grad_floor[k] += three[k] * d_floor
        total += row_total
        for j in range(n_four):  # 4PL cells' terms at one wait for their weights
            k = first_four + j
            sum_open[j] += log_lik_open[k]
            floor_open[j] += floor_derivative_open[k]
            residual_open[i, j] = residual[k]
            residual[k] = 0.0
        capped_row = residual_capped[i]
        answers_four, eta_four = answers[first_four:], eta[first_four:]
        softplus_four, sigmoid_four = softplus_row[first_four:], sigmoid_row[first_four:]
        # 4PL cells with the ceiling at u: per-cell terms first, summed in a loop of their own
        # (accumulating in the same loop kept LLVM from vectorising it)
        for j in range(n_four):
            y = answers_four[j]
            correct = y == 1
            observed = y >= 0
            base = log_floor_four[j] if correct else log_one_minus_floor_four[j]
            shift = capped_shift_correct[j] if correct else capped_shift_wrong[j]
            softplus_t, sigmoid_t, sigmoid_minus_t = logistic_parts(eta_four[j] + shift)
            ll, d_eta = base + softplus_t - softplus_four[j], sigmoid_t - sigmoid_four[j]
            floor_factor = inverse_floor_four[j] if correct else -inverse_one_minus_floor_four[j]
            d_floor = sigmoid_minus_t * floor_factor
            d_ceiling = sigmoid_t * (inverse_ceiling[j] if correct else -inverse_one_minus_ceiling[j])
            capped_row[j] = d_eta if observed else 0.0
            cell_log_lik[j] = ll if observed else 0.0
            cell_floor[j] = d_floor if observed else 0.0
            cell_ceiling[j] = d_ceiling if observed else 0.0
        for j in range(n_four):
            sum_capped[j] += cell_log_lik[j]
            floor_capped[j] += cell_floor[j]
            ceiling_capped[j] += cell_ceiling[j]
        for k in range(n_item):
            grad_intercept[k] += residual[k]
        accumulate_row(residual, ability[i], loading_rows, grad_loading_rows, grad_ability[i])
    for j in range(n_four):
        k = first_four + j
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


@register_funcify_and_cache_key(FusedAsymptoticLogit)
def _numba_funcify_uncached(op, node=None, **kwargs):
    # No cache key, so PyTensor never caches a graph that holds this kernel. Compiled fresh
    # and loaded from PyTensor's cache, the same graph rounded this kernel's sums differently
    # in the last bit (its loops are vectorised under fastmath's reassociation; the 2PL
    # kernel's results came out the same both ways), and the chains of a fit with floors then
    # parted between its first run on a machine and every later one. Fresh every time, the
    # same seed gives the same draws; the price is the graph's compilation (about 10 s at S).
    return numba_kernel_call(op), None


fused_asymptotic_logit = FusedAsymptoticLogit()

KERNEL_VERSION = kernel_version(__file__, fused_logit.__file__)
"""Changes with this file or ``fused_logit.py``: PyTensor's numba cache never serves an older kernel."""


def fused_asymptotic_loglik(
    responses: np.ndarray,
    kind: np.ndarray,
    ability: pt.TensorLike,
    loading: pt.TensorLike,
    intercept: pt.TensorLike,
    floor: pt.TensorLike,
    ceiling: pt.TensorLike,
    share: pt.TensorLike,
    *,
    float64: bool = False,
) -> pt.TensorVariable:
    """The 2PL/3PL/4PL log-likelihood as a scalar PyTensor expression with one-pass gradients.

    ``responses`` (int8, :func:`~benchmirt_bayes.response_types.fused_logit.encode_responses`)
    and ``kind`` are data; the 2PL items' cells are computed by
    :func:`~benchmirt_bayes.response_types.fused_logit.fused_loglik` (in float32 unless
    ``float64``), the floored items' in float64 by :func:`asymptotic_loglik_and_grad`.
    """
    kind = np.asarray(kind)
    plain = np.flatnonzero(kind == TWO_PL)
    floored = np.concatenate([np.flatnonzero(kind == THREE_PL), np.flatnonzero(kind == FOUR_PL)])
    total = pt.constant(0.0)
    if plain.size:
        total = fused_loglik(responses[:, plain], ability, loading[plain], intercept[plain], float64=float64)
    if floored.size:
        total = (
            total
            + fused_asymptotic_logit(
                responses[:, floored],
                kind[floored],
                ability,
                loading[floored],
                intercept[floored],
                floor[floored],
                ceiling[floored],
                share[floored],
            )[0]
        )
    return total

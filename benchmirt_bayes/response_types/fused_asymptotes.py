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

As in ``fused_logit``, the default kernel (:func:`asymptotic_loglik_and_grad`, the ``"fused"``
likelihood) computes each cell in float32 and :func:`asymptotic_loglik_and_grad64` (``"fused64"``)
in float64. What float32 would round badly stays in float64: the items' logarithms and
inverses of floors and ceilings (a ceiling within 6e-8 of one is one in float32, and
``log(1 − u)`` then ``−∞``) are taken in float64 and rounded once, and a 4PL item's two
summed log-likelihoods, whose difference sets its mixing weight, are summed in float64.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import pytensor.tensor as pt
from numba.core.errors import NumbaIRAssumptionWarning

from benchmirt_bayes.response_types import fused_logit
from benchmirt_bayes.response_types.fused_logit import (
    _JIT,
    FusedKernelOp,
    accumulate_row,
    fused_loglik,
    kernel_version,
    logistic_parts,
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
def _item_constants(floor: np.ndarray, capped: np.ndarray, like: np.ndarray) -> np.ndarray:
    """Per floored item, its floor's logarithms and inverses and its capped ceiling's shifts.

    Rows: ``log g``, ``log(1 − g)``, ``1 / g``, ``1 / (1 − g)`` of every item, then for the
    last ``capped.size`` items (the 4PL ones, ceiling ``u``) ``log u − log g``,
    ``log(1 − u) − log(1 − g)``, ``1 / u`` and ``1 / (1 − u)`` (zero for the others); taken
    in float64 and rounded to ``like``'s precision once.
    """
    # explicit loops: ``np.log1p(-g).astype(np.float32)`` compiled to a path about 30 times
    # slower per item, which cost more than all the float32 cells of a 350-item benchmark
    n_item, first_four = floor.size, floor.size - capped.size
    out = np.zeros((8, n_item))
    for k in range(n_item):
        g = floor[k]
        out[0, k], out[1, k] = math.log(g), math.log1p(-g)
        out[2, k], out[3, k] = 1.0 / g, 1.0 / (1.0 - g)
    for j in range(capped.size):
        k, u = first_four + j, capped[j]
        out[4, k], out[5, k] = math.log(u) - out[0, k], math.log1p(-u) - out[1, k]
        out[6, k], out[7, k] = 1.0 / u, 1.0 / (1.0 - u)
    return out.astype(like.dtype)


@numba.njit(inline="always", **_JIT)
def _open_cell(y, x, log_floor, log_one_minus_floor, inverse_floor, inverse_one_minus_floor, no_cap, zero):
    """A floored cell with its ceiling at one (3PL, or a 4PL item taken as not capped).

    ``y`` the answer (-1 unobserved), ``x`` = η, then the item's floor constants. Returns
    ``(log-likelihood, its η- and floor-derivatives, softplus(η), σ(η))``, the first three
    zero where unobserved.
    """
    correct = y == 1
    softplus, sigmoid, _ = logistic_parts(x)
    base = log_floor if correct else log_one_minus_floor
    softplus_t, sigmoid_t, sigmoid_minus_t = logistic_parts(x + (-log_floor if correct else no_cap))
    d_floor = sigmoid_minus_t * (inverse_floor if correct else -inverse_one_minus_floor)
    observed = y >= 0
    ll = (base + softplus_t - softplus) if observed else zero
    d_eta = (sigmoid_t - sigmoid) if observed else zero
    return ll, d_eta, d_floor if observed else zero, softplus, sigmoid


@numba.njit(**_JIT)
def _asymptotic_pass(
    responses: np.ndarray,
    kind: np.ndarray,
    ability: np.ndarray,
    loading: np.ndarray,
    intercept: np.ndarray,
    floor: np.ndarray,
    ceiling: np.ndarray,
    share: np.ndarray,
    like: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The pass of :func:`asymptotic_loglik_and_grad` with cells in ``like``'s precision.

    What stays in float64 whatever ``like`` is: see the module docstring.
    """
    # rows are read as vectors: a column selection of a C matrix (numpy's
    # ``y[:, items]``) is Fortran-ordered, and the loops over its strided rows do not vectorise
    responses = np.ascontiguousarray(responses)
    n_llm, n_item = responses.shape
    n_dim = ability.shape[1]
    dtype = like.dtype
    unit = np.arange(2).astype(dtype)
    zero = unit[0]  # typed constants: a float literal would promote float32 cells
    no_cap = np.full(1, NO_CAP).astype(dtype)[0]
    ability, intercept = ability.astype(dtype), intercept.astype(dtype)
    loading_rows = np.ascontiguousarray(loading.T).astype(dtype)
    grad_ability = np.zeros((n_llm, n_dim), dtype=dtype)
    grad_loading_rows = np.zeros((n_dim, n_item), dtype=dtype)
    grad_intercept = np.zeros(n_item, dtype=dtype)
    grad_floor = np.zeros(n_item, dtype=dtype)
    grad_ceiling = np.zeros(n_item)
    grad_share = np.zeros(n_item)
    n_four = int(np.sum(kind == FOUR_PL))
    first_four = n_item - n_four
    if np.any(kind[first_four:] != FOUR_PL):
        raise ValueError("the 4PL items must come after the 3PL items")
    constants = _item_constants(floor, ceiling[first_four:], like)
    log_floor, log_one_minus_floor = constants[0], constants[1]
    inverse_floor, inverse_one_minus_floor = constants[2], constants[3]
    capped_shift_correct, capped_shift_wrong = constants[4, first_four:], constants[5, first_four:]
    inverse_ceiling, inverse_one_minus_ceiling = constants[6, first_four:], constants[7, first_four:]
    log_floor_four, log_one_minus_floor_four = log_floor[first_four:], log_one_minus_floor[first_four:]
    inverse_floor_four = inverse_floor[first_four:]
    inverse_one_minus_floor_four = inverse_one_minus_floor[first_four:]
    cell_log_lik = np.empty(n_four, dtype=dtype)
    cell_floor, cell_ceiling = np.empty(n_four, dtype=dtype), np.empty(n_four, dtype=dtype)
    # per 4PL item: sums of cell log-likelihoods and of floor/ceiling derivatives with the
    # ceiling at u ("capped") and at one ("open"), and every cell's η-derivative under both
    sum_capped, sum_open = np.zeros(n_four), np.zeros(n_four)
    floor_capped, floor_open = np.zeros(n_four), np.zeros(n_four)
    ceiling_capped = np.zeros(n_four)
    residual_capped = np.zeros((n_llm, n_four), dtype=dtype)
    residual_open = np.zeros((n_llm, n_four), dtype=dtype)
    eta = np.empty(n_item, dtype=dtype)
    softplus_four, sigmoid_four = np.empty(n_four, dtype=dtype), np.empty(n_four, dtype=dtype)
    log_lik_open, floor_derivative_open = np.empty(n_four, dtype=dtype), np.empty(n_four, dtype=dtype)
    residual = np.empty(n_item, dtype=dtype)
    log_lik_three = np.empty(first_four, dtype=dtype)
    total = 0.0
    for i in range(n_llm):
        row_logits(eta, intercept, loading_rows, ability[i])
        answers = responses[i]
        row_total = zero
        for k in range(first_four):  # 3PL cells: vectorised
            ll, r, d_floor, _, _ = _open_cell(
                answers[k], eta[k], log_floor[k], log_one_minus_floor[k], inverse_floor[k],
                inverse_one_minus_floor[k], no_cap, zero,
            )  # fmt: skip
            log_lik_three[k] = ll
            residual[k] = r
            grad_intercept[k] += r
            grad_floor[k] += d_floor
        for k in range(first_four):  # summed apart from the stores: see ``accumulate_row``
            row_total += log_lik_three[k]
        total += row_total
        open_row = residual_open[i]
        answers_four, eta_four = answers[first_four:], eta[first_four:]
        # 4PL cells with the ceiling at one: their terms wait for the item's weight
        for j in range(n_four):
            k = first_four + j
            ll, r, d_floor, softplus, sigmoid = _open_cell(
                answers_four[j], eta_four[j], log_floor[k], log_one_minus_floor[k], inverse_floor[k],
                inverse_one_minus_floor[k], no_cap, zero,
            )  # fmt: skip
            softplus_four[j], sigmoid_four[j] = softplus, sigmoid
            log_lik_open[j], floor_derivative_open[j], open_row[j] = ll, d_floor, r
            residual[k] = zero
        for j in range(n_four):
            sum_open[j] += log_lik_open[j]
            floor_open[j] += floor_derivative_open[j]
        capped_row = residual_capped[i]
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
            capped_row[j] = d_eta if observed else zero
            cell_log_lik[j] = ll if observed else zero
            cell_floor[j] = d_floor if observed else zero
            cell_ceiling[j] = d_ceiling if observed else zero
        for j in range(n_four):
            sum_capped[j] += cell_log_lik[j]
            floor_capped[j] += cell_floor[j]
            ceiling_capped[j] += cell_ceiling[j]
        accumulate_row(residual, ability[i], loading_rows, grad_loading_rows, grad_ability[i])
    grad_floor64 = grad_floor.astype(np.float64)
    weight = np.empty(n_four, dtype=dtype)
    for j in range(n_four):
        k = first_four + j
        with_cap = math.log(share[k]) + sum_capped[j]
        without = math.log1p(-share[k]) + sum_open[j]
        high, low = max(with_cap, without), min(with_cap, without)
        ratio = math.exp(low - high)
        total += high + math.log1p(ratio)
        w = 1.0 / (1.0 + ratio) if with_cap >= without else ratio / (1.0 + ratio)
        weight[j] = w
        grad_floor64[k] = w * floor_capped[j] + (1.0 - w) * floor_open[j]
        grad_ceiling[k] = w * ceiling_capped[j]
        grad_share[k] = w / share[k] - (1.0 - w) / (1.0 - share[k])
    mixed = np.empty(n_four, dtype=dtype)
    grad_intercept_four = grad_intercept[first_four:]
    for i in range(n_llm):  # each LLM's 4PL cell derivatives, mixed by their items' weights
        capped_row, open_row = residual_capped[i], residual_open[i]
        for j in range(n_four):
            r = weight[j] * capped_row[j] + (1 - weight[j]) * open_row[j]
            mixed[j] = r
            grad_intercept_four[j] += r
        accumulate_row(mixed, ability[i], loading_rows, grad_loading_rows, grad_ability[i], first_four)
    return (
        total,
        grad_ability.astype(np.float64),
        np.ascontiguousarray(grad_loading_rows.T).astype(np.float64),
        grad_intercept.astype(np.float64),
        grad_floor64,
        grad_ceiling,
        grad_share,
    )


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
    """Log-likelihood of floored items' ``responses`` and its gradients, each cell in float32.

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
        The log-likelihood and its gradients (float64), shaped like the six parameters (zero
        where an item's kind does not read the parameter). Each cell is computed in float32
        and each LLM's row summed in float32, the rows and the 4PL items' mixtures in
        float64, as :func:`~benchmirt_bayes.response_types.fused_logit.loglik_and_grad` does
        for the 2PL.

    """
    return _asymptotic_pass(
        responses, kind, ability, loading, intercept, floor, ceiling, share, np.empty(0, np.float32)
    )


@numba.njit(**_JIT)
def asymptotic_loglik_and_grad64(
    responses: np.ndarray,
    kind: np.ndarray,
    ability: np.ndarray,
    loading: np.ndarray,
    intercept: np.ndarray,
    floor: np.ndarray,
    ceiling: np.ndarray,
    share: np.ndarray,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`asymptotic_loglik_and_grad` in float64 throughout."""
    return _asymptotic_pass(
        responses, kind, ability, loading, intercept, floor, ceiling, share, np.empty(0, np.float64)
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


class FusedAsymptoticLogit64(FusedAsymptoticLogit):
    """:class:`FusedAsymptoticLogit` in float64 throughout (:func:`asymptotic_loglik_and_grad64`)."""

    kernel = asymptotic_loglik_and_grad64


fused_asymptotic_logit = FusedAsymptoticLogit()
fused_asymptotic_logit64 = FusedAsymptoticLogit64()

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
    :func:`~benchmirt_bayes.response_types.fused_logit.fused_loglik`, the floored items' by
    :func:`asymptotic_loglik_and_grad`, each cell in float32 unless ``float64``.
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
            + (fused_asymptotic_logit64 if float64 else fused_asymptotic_logit)(
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

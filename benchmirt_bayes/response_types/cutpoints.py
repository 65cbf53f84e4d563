"""Probabilities between ordered logistic cutpoints: what the graded and ordered-beta types share.

A logistic latent response ``η + ε`` falls between two cutpoints with probability
``σ(η − lower) − σ(η − upper)``; the graded type's categories and the ordered-beta type's
three parts (exact 0, interior, exact 1) are such intervals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytensor.tensor as pt

from benchmirt_bayes.response_types.base import PYTENSOR, sigmoid, softplus


def interval_log_probability(lower: Any, upper: Any, eta: Any, xp: Any = np) -> Any:
    """``log(σ(η − lower) − σ(η − upper))``: a logistic latent ``η + ε`` between two cutpoints.

    ``lower = −∞`` or ``upper = +∞`` are allowed (not both). With ``h = η − lower >
    l = η − upper``, ``σ(h) − σ(l) = eʰ(1 − eˡ⁻ʰ) / ((1 + eʰ)(1 + eˡ))``, so the log is
    ``h − softplus(h) − softplus(l) + log(−expm1(l − h))``: no difference of two
    probabilities is taken, and it stays finite and accurate however far ``η`` lies from the
    cutpoints (a difference of sigmoids is 0 − 0 once both underflow, which an optimiser's
    random draws of wide cutpoints reach). Where ``h + l > 0`` the interval is mirrored
    (``σ(h) − σ(l) = σ(−l) − σ(−h)``) so that ``h`` is never ``+∞`` at an open lower end.
    This is the graded and ordered-beta likelihood's inner loop.
    """
    high, low = eta - lower, eta - upper
    flip = (high + low) > 0
    high, low = xp.where(flip, -low, high), xp.where(flip, -high, low)
    return high - softplus(high, xp) - softplus(low, xp) + xp.log(-xp.expm1(low - high))


def interval_score(lower: Any, upper: Any, eta: np.ndarray) -> np.ndarray:
    """``∂/∂η log(σ(a) − σ(b)) = 1 − σ(a) − σ(b)`` with ``a = η − lower``, ``b = η − upper``."""
    return 1.0 - sigmoid(eta - lower) - sigmoid(eta - upper)


def bounded_cutpoints(cutpoints: Any, xp: Any = np) -> Any:
    """``[−∞, c_1, …, c_C, +∞]`` along the last axis (padding entries of ``cutpoints`` are +∞)."""
    if xp is PYTENSOR:
        edge = pt.ones((cutpoints.shape[0], 1))
    else:
        edge = xp.ones((*cutpoints.shape[:-1], 1))
    return xp.concatenate([-np.inf * edge, cutpoints, np.inf * edge], axis=-1)


def category_bounds(y: Any, cutpoints: Any, xp: Any = np) -> tuple[Any, Any]:
    """The cutpoints below and above category ``y`` (``y`` broadcast against ``cutpoints[..., 0]``)."""
    bounded = bounded_cutpoints(cutpoints, xp)
    shape = np.broadcast_shapes(np.shape(y), bounded.shape[:-1])
    bounded = xp.broadcast_to(bounded, (*shape, bounded.shape[-1]))
    category = xp.broadcast_to(xp.asarray(y), shape).astype("int32")[..., None]
    lower = xp.take_along_axis(bounded, category, axis=-1)[..., 0]
    upper = xp.take_along_axis(bounded, category + 1, axis=-1)[..., 0]
    return lower, upper


def core_cutpoints(cutpoints: Any, xp: Any = np) -> Any:
    """Drop the length-1 batch axes a ``pm.CustomDist`` puts before a ``(rows, width)`` cutpoint matrix."""
    if xp is PYTENSOR:
        return cutpoints.reshape(cutpoints.shape[-2:], ndim=2)
    return np.reshape(cutpoints, np.shape(cutpoints)[-2:])


def cell_bounds(
    cutpoints: pt.TensorVariable, row_of_cell: np.ndarray, category_of_cell: pt.TensorVariable
) -> tuple[pt.TensorVariable, pt.TensorVariable]:
    """The cutpoints below and above each observed cell's category, for PyTensor terms.

    ``cutpoints`` has one row per item (or benchmark); ``category_of_cell`` may be the
    observed variable itself, so a model reads its responses only through their value. One
    flat gather per bound keeps the gradient a cheap scatter-add over the cells.
    """
    bounded = bounded_cutpoints(core_cutpoints(cutpoints, PYTENSOR), PYTENSOR)
    width = bounded.shape[-1]
    index = pt.as_tensor(np.asarray(row_of_cell, dtype=np.int64)) * width + pt.cast(category_of_cell, "int64")
    flat = bounded.ravel()
    return flat[index], flat[index + 1]


def category_probabilities(eta: np.ndarray, cutpoints: np.ndarray) -> np.ndarray:
    """``P(y = k)`` for every category ``k`` (last axis; padded categories get 0)."""
    at_least = sigmoid(eta[..., None] - cutpoints)  # P(y ≥ k), k = 1 … C
    ones = np.ones_like(at_least[..., :1])
    zeros = np.zeros_like(ones)
    upper = np.concatenate([ones, at_least], axis=-1)
    return upper - np.concatenate([at_least, zeros], axis=-1)


def discrete_information(eta: np.ndarray, cutpoints: np.ndarray) -> np.ndarray:
    """``Σ_k (∂P_k/∂η)² / P_k`` over the categories a set of ordered cutpoints defines."""
    at_least = sigmoid(eta[..., None] - cutpoints)
    slope = at_least * (1.0 - at_least)
    zeros = np.zeros_like(slope[..., :1])
    upper_slope = np.concatenate([zeros, slope], axis=-1)
    lower_slope = np.concatenate([slope, zeros], axis=-1)
    prob = category_probabilities(eta, cutpoints)
    numerator = (upper_slope - lower_slope) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(prob > 0, numerator / np.where(prob > 0, prob, 1.0), 0.0)
    return terms.sum(axis=-1)

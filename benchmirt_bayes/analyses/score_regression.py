"""The regression primitives of the score link: splines, ridge, a single-index curve, outliers.

Plain NumPy on a design matrix and its per-column ridge penalty (a ``(x, penalty)`` pair);
:mod:`~benchmirt_bayes.analyses.score_link` builds the designs from a subset's features.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Design = tuple[np.ndarray, np.ndarray]
"""A regression design ``x (row, column)`` and its per-column ridge penalty (per row)."""

INDEX_KNOTS = 7
INDEX_ITERATIONS = 10
OUTLIER_CUT = 8.0
"""Training LLMs whose full score is more than this many robust SDs from a robust fit of the
smooth terms are left out of the ``package`` regression (their errors still go to the
kriging): see :func:`gross_outliers`."""
HUBER_TUNING = 1.345
"""Huber's constant in robust SDs (95 % efficiency when the residuals are normal)."""


def natural_spline_basis(x: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Natural cubic spline basis at ``x`` (ESL eq. 5.4–5.5): linear beyond the boundary knots.

    Repeated knots (quantiles of a variable with few distinct values) count once; with fewer
    than three distinct knots the basis is ``x`` alone (a straight line).
    """
    x = np.asarray(x, dtype=float)
    knots = np.unique(np.asarray(knots, dtype=float))
    if knots.size < 3:
        return x[:, None]

    def d(k: int) -> np.ndarray:
        return (np.maximum(x - knots[k], 0) ** 3 - np.maximum(x - knots[-1], 0) ** 3) / (knots[-1] - knots[k])

    last = d(len(knots) - 2)
    columns = [x] + [d(k) - last for k in range(len(knots) - 2)]
    return np.column_stack(columns)


def ridge(design: Design, target: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Ridge coefficients of ``target`` on ``design`` (penalty per column and row), optionally weighted."""
    x, penalty = design
    weighted = x if weights is None else x * weights[:, None]
    gram = weighted.T @ x + len(target) * np.diag(penalty)
    return np.linalg.solve(gram, weighted.T @ target)


def robust_scale(residual: np.ndarray) -> float:
    """The residuals' SD estimated from their median absolute deviation."""
    return 1.4826 * float(np.median(np.abs(residual - np.median(residual)))) + 1e-9


def gross_outliers(
    design: Design, target: np.ndarray, cut: float = OUTLIER_CUT, iterations: int = 10
) -> np.ndarray:
    """Rows whose target is more than ``cut`` robust SDs from a Huber ridge fit of ``design``.

    A few LLMs can be far off every smooth link, such as LLMs trained on the test set: they
    score at the ceiling and answer every kept item right, including items that no other
    LLM gets. Least squares would give such an item the weight of that whole cluster's
    excess, and an ordinary LLM that happens to get it right would inherit it. A Huber fit
    (iteratively reweighted ridge) does not bend towards such rows, so its residuals find
    them.

    Parameters
    ----------
    design
        The regression design and its per-column ridge penalty.
    target
        The training LLMs' full scores.
    cut
        The threshold, in SDs estimated from the residuals' median absolute deviation.
    iterations
        Reweighting steps of the Huber fit.

    Returns
    -------
    numpy.ndarray
        One boolean per row, true for a gross outlier.

    """
    weights = np.ones(len(target))
    for _ in range(iterations):
        residual = target - design[0] @ ridge(design, target, weights)
        spread = HUBER_TUNING * robust_scale(residual)
        weights = np.minimum(1.0, spread / (np.abs(residual) + 1e-12))
    residual = target - design[0] @ ridge(design, target, weights)
    return np.abs(residual) > cut * robust_scale(residual)


def _curve_basis(z: np.ndarray, knots: np.ndarray) -> np.ndarray:
    """Design of the single-index curve: an intercept and a natural spline of ``z``."""
    return np.column_stack([np.ones(len(z)), natural_spline_basis(z, knots)])


@dataclass(frozen=True)
class IndexCurve:
    """A single-index regression ``target ≈ g(x · weights)``, ``g`` a natural spline.

    Attributes
    ----------
    weights
        The index's weight per design column.
    knots
        The spline's knots on the index.
    coefficients
        The spline's intercept and coefficients.

    """

    weights: list[float]
    knots: list[float]
    coefficients: list[float]

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The curve at the rows of ``x``."""
        z = x @ np.asarray(self.weights)
        return _curve_basis(z, np.asarray(self.knots)) @ np.asarray(self.coefficients)

    @classmethod
    def fit(cls, design: Design, target: np.ndarray) -> IndexCurve:
        """Fit ``g`` and ridge-penalised ``weights`` by damped Gauss–Newton.

        Starts from the linear ridge fit (``g`` the identity) and takes damped Gauss–Newton
        steps in ``w`` with ``g`` refitted (knots at quantiles of the index) before each
        step. The curve can absorb any rescaling of the index, so ``w`` is rescaled after
        each step to keep the index's spread that of the start; the penalty then weighs the
        items' relative weights, not a scale the curve would undo.
        """
        x, penalty = design
        n = len(target)
        penalty = np.maximum(penalty, 1e-8)
        weights = ridge((x, penalty), target)
        spread = float(np.std(x @ weights)) + 1e-12

        def rescaled(w: np.ndarray) -> np.ndarray:
            return w * (spread / (float(np.std(x @ w)) + 1e-12))

        def curve(w: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
            z = x @ w
            knots = np.quantile(z, np.linspace(0.02, 0.98, INDEX_KNOTS))
            basis = _curve_basis(z, knots)
            coefficients = np.linalg.lstsq(basis, target, rcond=None)[0]
            loss = float(np.sum((target - basis @ coefficients) ** 2) + n * np.sum(penalty * w**2))
            return knots, coefficients, loss

        knots, coefficients, loss = curve(weights)
        for _ in range(INDEX_ITERATIONS):
            z = x @ weights
            fitted = _curve_basis(z, knots) @ coefficients
            step = 1e-3 * (float(np.std(z)) + 1e-12)
            slope = (_curve_basis(z + step, knots) @ coefficients - fitted) / step
            jacobian = x * slope[:, None]
            gram = jacobian.T @ jacobian + n * np.diag(penalty)
            # least squares, not solve: with fewer LLMs than columns and a steep curve the
            # penalty vanishes beside JᵀJ in floating point and the Gram matrix is singular
            direction = np.linalg.lstsq(
                gram, jacobian.T @ (target - fitted) - n * penalty * weights, rcond=None
            )[0]
            for damping in (1.0, 0.5, 0.25, 0.125):
                trial = rescaled(weights + damping * direction)
                trial_knots, trial_coefficients, trial_loss = curve(trial)
                if trial_loss < loss:
                    weights, knots, coefficients, loss = trial, trial_knots, trial_coefficients, trial_loss
                    break
            else:
                break
        return cls(_floats(weights), _floats(knots), _floats(coefficients))


def _floats(values: Sequence[float]) -> list[float]:
    return [float(v) for v in values]

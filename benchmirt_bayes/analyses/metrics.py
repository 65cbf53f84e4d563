"""Scoring rules for predicted probabilities of correct answers and for the other response types' scores."""

from __future__ import annotations

import numpy as np
import pandas as pd

from benchmirt_bayes.response_types import DEFAULT_TYPE, RESPONSE_MODELS

EPSILON = 1e-6
METRICS = ("accuracy", "log_loss", "brier", "auc", "mae")
LOWER_IS_BETTER = {
    "log_loss": True,
    "brier": True,
    "mae": True,
    "accuracy": False,
    "auc": False,
    "log_score": False,
}
_RULE_LOWER_IS_BETTER = {"log_score": False, "mse": True, "rps": True, "crps": True}
LOWER_IS_BETTER.update(
    {
        f"{name}_{rule}": _RULE_LOWER_IS_BETTER[rule]
        for name, model in RESPONSE_MODELS.items()
        if name != DEFAULT_TYPE
        for rule in ("log_score", "mse", *model.scoring_rules)
        if rule in _RULE_LOWER_IS_BETTER
    }
)


def prediction_metrics(outcome: np.ndarray, probability: np.ndarray) -> dict[str, float]:
    """Accuracy of the rounded probability, log loss, Brier score, AUC and mean absolute error.

    Parameters
    ----------
    outcome
        0/1 outcomes.
    probability
        Predicted probabilities of 1 (clipped to ``[1e-6, 1 - 1e-6]`` for the log loss).

    """
    y = np.asarray(outcome, dtype=float)
    p = np.asarray(probability, dtype=float)
    if y.shape != p.shape or y.size == 0:
        raise ValueError("outcome and probability must be non-empty and of the same shape")
    clipped = np.clip(p, EPSILON, 1 - EPSILON)
    return {
        "accuracy": float(np.mean((p >= 0.5) == (y == 1))),
        "log_loss": float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))),
        "brier": float(np.mean((p - y) ** 2)),
        "auc": auc(y, p),
        "mae": float(np.mean(np.abs(p - y))),
    }


def auc(outcome: np.ndarray, score: np.ndarray) -> float:
    """Area under the ROC curve (Mann–Whitney form, ties counted half); NaN with one class."""
    y = np.asarray(outcome) == 1
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = pd.Series(np.asarray(score, dtype=float)).rank(method="average").to_numpy()
    return float((ranks[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def calibration_table(outcome: np.ndarray, probability: np.ndarray, n_bins: int = 10) -> pd.DataFrame:
    """Reliability-curve data: per equal-width probability bin, mean prediction and observed rate."""
    p = np.asarray(probability, dtype=float)
    y = np.asarray(outcome, dtype=float)
    bins = np.minimum((p * n_bins).astype(int), n_bins - 1)
    frame = pd.DataFrame({"bin": bins, "predicted": p, "observed": y})
    grouped = frame.groupby("bin")
    out = pd.DataFrame(
        {
            "predicted_mean": grouped["predicted"].mean(),
            "observed_rate": grouped["observed"].mean(),
            "count": grouped.size(),
        }
    )
    out["bin_left"] = out.index / n_bins
    out["bin_right"] = (out.index + 1) / n_bins
    return out.reset_index()


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks); NaN when either side is constant."""
    ra = pd.Series(a).rank().to_numpy()
    rb = pd.Series(b).rank().to_numpy()
    if len(ra) < 3 or np.std(ra) == 0 or np.std(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])


def ranked_probability_score(probabilities: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Ranked probability score per cell, on ``[0, 1]`` (lower is better).

    ``probabilities (cell, K)`` over ordered categories ``0 … K−1`` (padding categories
    with probability 0 beyond an item's own); ``outcome (cell,)`` the observed category.
    ``Σ_k (F(k) − 1{y ≤ k})² / (K_cell − 1)`` over ``k = 0 … K−2`` with ``K_cell`` the
    number of categories with positive probability or below the outcome.
    """
    probabilities = np.asarray(probabilities, dtype=float)
    y = np.asarray(outcome, dtype=float)
    cdf = np.cumsum(probabilities, axis=-1)[..., :-1]
    k = np.arange(cdf.shape[-1])
    step = (y[:, None] <= k[None, :]).astype(float)
    supported = np.maximum((probabilities > 0).sum(axis=-1), y.astype(int) + 1)
    within = k[None, :] < (supported - 1)[:, None]
    return np.sum(((cdf - step) ** 2) * within, axis=-1) / np.maximum(supported - 1, 1)


def crps_from_samples(samples: np.ndarray, outcome: np.ndarray) -> np.ndarray:
    """Continuous ranked probability score per cell from predictive samples ``(sample, cell)``.

    ``E|X − y| − ½ E|X − X'|``, the second term from the sorted samples (lower is better).
    """
    x = np.sort(np.asarray(samples, dtype=float), axis=0)
    n = x.shape[0]
    first = np.mean(np.abs(x - np.asarray(outcome, dtype=float)[None, :]), axis=0)
    weights = (2 * np.arange(1, n + 1) - n - 1)[:, None]
    spread = np.sum(weights * x, axis=0) / (n * n)
    return first - spread

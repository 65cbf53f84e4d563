"""Scoring rules for predicted probabilities of correct answers."""

from __future__ import annotations

import numpy as np
import pandas as pd

EPSILON = 1e-6
METRICS = ("accuracy", "log_loss", "brier", "auc", "mae")
LOWER_IS_BETTER = {"log_loss": True, "brier": True, "mae": True, "accuracy": False, "auc": False}


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
            "mean_predicted": grouped["predicted"].mean(),
            "observed_rate": grouped["observed"].mean(),
            "count": grouped.size(),
        }
    )
    out["bin_lower"] = out.index / n_bins
    out["bin_upper"] = (out.index + 1) / n_bins
    return out.reset_index()


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation (average ranks); NaN when either side is constant."""
    ra = pd.Series(a).rank().to_numpy()
    rb = pd.Series(b).rank().to_numpy()
    if len(ra) < 3 or np.std(ra) == 0 or np.std(rb) == 0:
        return float("nan")
    return float(np.corrcoef(ra, rb)[0, 1])

"""Neighbour corrections for full-score links: LLMs that answer alike miss the link alike.

A public leaderboard is full of near relatives: fine-tunes, merges and quantisations of a
few base models. Relatives answer the kept items alike, and what the link cannot see
(how they do on the items never kept) is alike too, so the link's errors cluster by
family. The correction predicts a new LLM's link error from the out-of-fold errors of the
:data:`NEIGHBOURS` training LLMs whose answers on the kept items are closest to its own,
by kriging: a Gaussian process on the errors with covariance ``exp(−distance / length)``
and white noise ``noise`` (relative to the process variance), solved on those neighbours
alone. The neighbours' weights thus account for how alike they are to the new LLM *and*
to each other (ten copies of one model count little more than one). ``length`` and
``noise`` are chosen by leave-one-out error on the training LLMs, and no correction at
all when none beats it.

Distance between two LLMs is their expected disagreement per item both answered,
``mean(a (1 − b) + (1 − a) b)`` on answers scaled to ``[0, 1]``: the share of differing
answers for binary items, and the chance that two independent draws differ otherwise.
"""

from __future__ import annotations

import base64
import zlib
from typing import NamedTuple

import numpy as np

NEIGHBOURS = 50
"""Training LLMs each correction is kriged from."""
LENGTHS = (0.02, 0.04, 0.08, 0.16, 0.32)
"""Candidate kernel lengths, in disagreement per item."""
NOISES = (0.03, 0.1, 0.3, 1.0)
"""Candidate noise variances relative to the process variance."""
MISSING_CODE = 255
LEVELS = 254
"""Answers are stored as bytes ``round(answer * 254)``; ``255`` marks an unanswered item."""


class Neighbours(NamedTuple):
    """Each row's nearest reference rows: ``index (unit, k)`` (``-1``: none) and ``distance``."""

    index: np.ndarray
    distance: np.ndarray


class Kernel(NamedTuple):
    """The kriging covariance ``exp(−distance / length) + noise · [same LLM]``."""

    length: float
    noise: float


def encode_answers(answers: np.ndarray) -> dict:
    """``(llm, item)`` answers on ``[0, 1]`` (NaN = unanswered) as compact JSON-able data."""
    answers = np.asarray(answers, dtype=float)
    codes = np.where(np.isnan(answers), MISSING_CODE, np.round(np.clip(answers, 0, 1) * LEVELS))
    packed = zlib.compress(codes.astype(np.uint8).tobytes(), level=9)
    return {"shape": list(answers.shape), "bytes": base64.b64encode(packed).decode("ascii")}


def decode_answers(stored: dict) -> np.ndarray:
    """Inverse of :func:`encode_answers` (to the stored resolution, 1/254)."""
    codes = np.frombuffer(zlib.decompress(base64.b64decode(stored["bytes"])), dtype=np.uint8)
    codes = codes.reshape(stored["shape"]).astype(float)
    return np.where(codes == MISSING_CODE, np.nan, codes / LEVELS)


def disagreement(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Expected disagreement per shared answered item of ``a (..., n, item)`` and ``b (..., m, item)``.

    Returns ``(..., n, m)``; ``inf`` where two rows share no answered item.
    """
    a_seen, b_seen = ~np.isnan(a), ~np.isnan(b)
    a0, b0 = np.where(a_seen, a, 0.0), np.where(b_seen, b, 0.0)
    b_right, b_wrong = np.swapaxes(b0 * b_seen, -1, -2), np.swapaxes((1.0 - b0) * b_seen, -1, -2)
    differ = (a0 * a_seen) @ b_wrong + ((1.0 - a0) * a_seen) @ b_right
    shared = a_seen.astype(float) @ np.swapaxes(b_seen, -1, -2).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(shared > 0, differ / np.maximum(shared, 1.0), np.inf)


def nearest(
    answers: np.ndarray, reference: np.ndarray, k: int, *, exclude_self: bool = False, chunk: int = 512
) -> Neighbours:
    """Each row's ``k`` nearest rows of ``reference``, nearest first.

    ``exclude_self`` (when ``answers`` *is* ``reference``) leaves each row out of its own
    neighbours. Ties are broken by reference order. A reference row that shares no answered
    item with the row is no neighbour: its place holds index ``-1`` and distance ``inf``.
    """
    k = max(min(k, reference.shape[0] - int(exclude_self)), 0)
    index = np.empty((answers.shape[0], k), dtype=int)
    distance = np.empty((answers.shape[0], k))
    if k == 0:
        return Neighbours(index, distance)
    for start in range(0, answers.shape[0], chunk):
        block = disagreement(answers[start : start + chunk], reference)
        if exclude_self:
            rows = np.arange(block.shape[0])
            block[rows, start + rows] = np.inf
        part = np.argpartition(block, k - 1, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(block, part, axis=1), axis=1, kind="stable")
        found = np.take_along_axis(part, order, axis=1)
        near = np.take_along_axis(block, found, axis=1)
        index[start : start + chunk] = np.where(np.isfinite(near), found, -1)
        distance[start : start + chunk] = near
    return Neighbours(index, distance)


def between_neighbours(found: Neighbours, reference: np.ndarray, chunk: int = 128) -> np.ndarray:
    """``(unit, k, k)`` distances between each row's neighbours (``inf`` beside a missing one)."""
    n, k = found.index.shape
    out = np.empty((n, k, k))
    for start in range(0, n, chunk):
        index = found.index[start : start + chunk]
        stacked = reference[np.maximum(index, 0)]
        missing = index < 0
        between = disagreement(stacked, stacked)
        between[:, np.arange(k), np.arange(k)] = 0.0  # an LLM is its own twin, even with continuous answers
        out[start : start + chunk] = np.where(missing[:, :, None] | missing[:, None, :], np.inf, between)
    return out


def correction(
    residuals: np.ndarray, found: Neighbours, among: np.ndarray, kernel: Kernel | None
) -> np.ndarray:
    """Each row's residual kriged from its neighbours' ``residuals`` (zero without a kernel).

    ``among`` holds the distances between each row's neighbours (:func:`between_neighbours`).
    """
    n, k = found.index.shape
    if kernel is None or k == 0:
        return np.zeros(n)
    gram = np.exp(-among / kernel.length) + kernel.noise * np.eye(k)
    cross = np.exp(-found.distance / kernel.length)
    weights = np.linalg.solve(gram, cross[..., None])[..., 0]
    return (weights * residuals[np.maximum(found.index, 0)]).sum(axis=1)


def choose_kernel(residuals: np.ndarray, found: Neighbours, among: np.ndarray) -> Kernel | None:
    """The kernel of :data:`LENGTHS` × :data:`NOISES` with the smallest leave-one-out error.

    ``found`` must leave each row out of its own (``nearest(..., exclude_self=True)``), which
    makes every row's correction a leave-one-out prediction. ``None`` (no correction) when
    no kernel predicts the residuals better than zero.
    """
    best, best_error = None, float(np.mean(residuals**2))
    for length in LENGTHS:
        for noise in NOISES:
            kernel = Kernel(length, noise)
            error = float(np.mean((residuals - correction(residuals, found, among, kernel)) ** 2))
            if error < best_error:
                best, best_error = kernel, error
    return best

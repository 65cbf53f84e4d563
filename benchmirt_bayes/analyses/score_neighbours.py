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
The neighbours are found by that distance alone; the kernel may add to it a multiple of
the difference between the link's estimates of the two LLMs (relatives answer alike *and*
score alike, and two LLMs that answer the kept items alike but are estimated far apart are
less likely to be relatives). That weight is chosen with ``length`` and ``noise``.
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
SCORE_WEIGHTS = (0.0, 0.25, 0.5, 1.0)
"""Candidate weights of the estimate difference in the distance, per standard deviation of
the training LLMs' estimates."""
CHOICE_ROWS = 1000
"""Training rows (a seeded sample) whose leave-one-out error chooses the kernel."""
MISSING_CODE = 255
LEVELS = 254
"""Answers are stored as bytes ``round(answer * 254)``; ``255`` marks an unanswered item."""


class Neighbours(NamedTuple):
    """Each row's nearest reference rows: ``index (unit, k)`` (``-1``: none) and ``distance``."""

    index: np.ndarray
    distance: np.ndarray


class Kernel(NamedTuple):
    """The kriging covariance ``exp(−distance / length) + noise · [same LLM]``.

    ``distance`` is the disagreement plus ``score_weight`` times the absolute difference of
    the two LLMs' estimates (in the scores' units).
    """

    length: float
    noise: float
    score_weight: float = 0.0


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


def with_estimates(
    found: Neighbours, among: np.ndarray, estimates: np.ndarray, own: np.ndarray, weight: float
) -> tuple[Neighbours, np.ndarray]:
    """The distances of ``found`` and ``among`` plus ``weight`` × the difference of estimates.

    ``estimates`` are the reference rows' and ``own`` each row's own.
    """
    theirs = estimates[np.maximum(found.index, 0)]
    distance = found.distance + weight * np.abs(theirs - own[:, None])
    return Neighbours(found.index, distance), among + weight * np.abs(theirs[:, :, None] - theirs[:, None, :])


def correction(
    residuals: np.ndarray,
    found: Neighbours,
    among: np.ndarray,
    kernel: Kernel | None,
    estimates: np.ndarray | None = None,
    own: np.ndarray | None = None,
) -> np.ndarray:
    """Each row's residual kriged from its neighbours' ``residuals`` (zero without a kernel).

    ``among`` holds the distances between each row's neighbours (:func:`between_neighbours`).
    A kernel with a ``score_weight`` needs the reference rows' ``estimates`` and each row's
    ``own`` (:func:`with_estimates`).
    """
    n, k = found.index.shape
    if kernel is None or k == 0:
        return np.zeros(n)
    if kernel.score_weight:
        if estimates is None or own is None:
            raise ValueError("a kernel with a score weight needs the estimates of both sides")
        found, among = with_estimates(found, among, estimates, own, kernel.score_weight)
    gram = np.exp(-among / kernel.length) + kernel.noise * np.eye(k)
    cross = np.exp(-found.distance / kernel.length)
    weights = np.linalg.solve(gram, cross[..., None])[..., 0]
    return (weights * residuals[np.maximum(found.index, 0)]).sum(axis=1)


def choose_kernel(
    residuals: np.ndarray,
    found: Neighbours,
    among: np.ndarray,
    estimates: np.ndarray | None = None,
    *,
    seed: int = 0,
) -> Kernel | None:
    """The kernel with the smallest leave-one-out error.

    Candidates are :data:`LENGTHS` × :data:`NOISES`, and with the rows' ``estimates`` also
    × :data:`SCORE_WEIGHTS`. ``found`` must leave each row out of its own
    (``nearest(..., exclude_self=True)``), which makes every row's correction a
    leave-one-out prediction; the error is taken on :data:`CHOICE_ROWS` rows sampled with
    ``seed`` (all of them when there are fewer). ``None`` (no correction) when no kernel
    predicts the residuals better than zero.
    """
    rows = np.arange(len(residuals))
    if len(rows) > CHOICE_ROWS:
        rows = np.sort(np.random.default_rng(seed).choice(rows, CHOICE_ROWS, replace=False))
    found, among = Neighbours(found.index[rows], found.distance[rows]), among[rows]
    spread = float(np.std(estimates)) if estimates is not None else 0.0
    weights = [w / spread for w in SCORE_WEIGHTS] if spread > 0 else [0.0]
    best, best_error = None, float(np.mean(residuals[rows] ** 2))
    for weight in weights:
        apart = with_estimates(found, among, estimates, estimates[rows], weight) if weight else (found, among)
        for length in LENGTHS:
            for noise in NOISES:
                kriged = correction(residuals, *apart, Kernel(length, noise))
                error = float(np.mean((residuals[rows] - kriged) ** 2))
                if error < best_error:
                    best, best_error = Kernel(length, noise, weight), error
    return best

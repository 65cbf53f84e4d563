"""Neighbour corrections for full-score links: LLMs that answer alike miss the link alike.

A public leaderboard is full of near relatives: fine-tunes, merges and quantisations of a
few base models. Relatives answer the kept items alike, and what the link cannot see
(how they do on the items never kept) is alike too, so the link's errors cluster by
family. The correction adds to a new LLM's link estimate the mean out-of-fold residual of
the ``k`` training LLMs whose answers on the kept items are closest to its own; ``k``
(zero included: no correction) is chosen by leave-one-out error on the training LLMs.

Distance between two LLMs is their expected disagreement per item both answered,
``mean(a (1 − b) + (1 − a) b)`` on answers scaled to ``[0, 1]``: the share of differing
answers for binary items, and the chance that two independent draws differ otherwise.
"""

from __future__ import annotations

import base64
import zlib

import numpy as np

NEIGHBOUR_COUNTS = (0, 3, 5, 10, 20)
"""Candidate neighbour counts (``0``: no correction)."""
MISSING_CODE = 255
LEVELS = 254
"""Answers are stored as bytes ``round(answer * 254)``; ``255`` marks an unanswered item."""


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


def nearest(
    answers: np.ndarray, reference: np.ndarray, k: int, *, exclude_self: bool = False, chunk: int = 512
) -> np.ndarray:
    """``(unit, k)`` indices of each row's ``k`` nearest rows of ``reference``, nearest first.

    ``exclude_self`` (when ``answers`` *is* ``reference``) leaves each row out of its own
    neighbours. Ties are broken by reference order. A reference row that shares no answered
    item with the row is no neighbour: its place holds ``-1``.
    """
    k = min(k, reference.shape[0] - int(exclude_self))
    if k <= 0:
        return np.zeros((answers.shape[0], 0), dtype=int)
    ref_seen = ~np.isnan(reference)
    ref = np.where(ref_seen, reference, 0.0)
    ref_right, ref_wrong = ref * ref_seen, (1.0 - ref) * ref_seen
    out = np.empty((answers.shape[0], k), dtype=int)
    for start in range(0, answers.shape[0], chunk):
        block = answers[start : start + chunk]
        seen = ~np.isnan(block)
        a = np.where(seen, block, 0.0)
        disagreement = (a * seen) @ ref_wrong.T + ((1.0 - a) * seen) @ ref_right.T
        shared = seen.astype(float) @ ref_seen.T.astype(float)
        distance = np.where(shared > 0, disagreement / np.maximum(shared, 1.0), np.inf)
        if exclude_self:
            rows = np.arange(block.shape[0])
            distance[rows, start + rows] = np.inf
        part = np.argpartition(distance, k - 1, axis=1)[:, :k]
        order = np.argsort(np.take_along_axis(distance, part, axis=1), axis=1, kind="stable")
        found = np.take_along_axis(part, order, axis=1)
        out[start : start + chunk] = np.where(
            np.isfinite(np.take_along_axis(distance, found, axis=1)), found, -1
        )
    return out


def correction(residuals: np.ndarray, neighbours: np.ndarray, k: int) -> np.ndarray:
    """Mean residual of each row's first ``k`` neighbours (zero for ``k = 0`` or none found)."""
    if k == 0:
        return np.zeros(neighbours.shape[0])
    found = neighbours[:, :k] >= 0
    total = np.where(found, residuals[np.maximum(neighbours[:, :k], 0)], 0.0).sum(axis=1)
    return total / np.maximum(found.sum(axis=1), 1)


def choose_count(residuals: np.ndarray, neighbours: np.ndarray) -> int:
    """The neighbour count of :data:`NEIGHBOUR_COUNTS` with the smallest leave-one-out error.

    ``neighbours`` must leave each row out of its own (``nearest(..., exclude_self=True)``).
    """
    counts = [k for k in NEIGHBOUR_COUNTS if k <= neighbours.shape[1]]
    errors = [float(np.mean((residuals - correction(residuals, neighbours, k)) ** 2)) for k in counts]
    return counts[int(np.argmin(errors))]

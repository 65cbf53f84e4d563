"""Anchors: units whose loading vectors fix the rotation before sampling (``[identification] anchors``).

Not the default (``anchors = "none"``: sample rotation-invariantly and identify every draw
afterwards, see :mod:`benchmirt_bayes.inference.identification`); kept as an option.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.model.spec import ModelSpec
from benchmirt_bayes.rotations import varimax


@dataclass(frozen=True)
class Anchors:
    """Units whose loading vectors form a lower-triangular matrix with positive diagonal.

    ``kind`` is ``"benchmark"`` (anchor the benchmark mean loading vectors) or
    ``"item"`` (anchor single items, used when there are fewer benchmarks than
    dimensions); ``codes`` are benchmark or item positions, one per dimension.
    """

    kind: str
    codes: list[int]
    names: list[str]


def resolve_anchors(
    responses: ResponseMatrix,
    benchmarks: list[str],
    benchmark_of_item: np.ndarray,
    n_dims: int,
    spec: ModelSpec,
) -> Anchors | None:
    """The anchors a spec asks for (``None`` for confirmatory specs or ``anchors = "none"``)."""
    if spec.is_confirmatory:
        return None
    wanted = spec.anchors
    if wanted == "none":
        return None
    if isinstance(wanted, list):
        unknown = [b for b in wanted if b not in benchmarks]
        if unknown or len(wanted) != n_dims:
            raise ValueError(
                f"identification.anchors must name {n_dims} known benchmarks, got {wanted}"
                + (f" (unknown: {unknown})" if unknown else "")
            )
        codes = [benchmarks.index(b) for b in wanted]
        return Anchors("benchmark", codes, list(wanted))
    if len(benchmarks) >= n_dims:
        codes = choose_anchor_benchmarks(responses.values, benchmark_of_item, len(benchmarks), n_dims)
        return Anchors("benchmark", codes, [benchmarks[c] for c in codes])
    codes = choose_anchor_benchmarks(
        responses.values, np.arange(responses.n_items), responses.n_items, n_dims
    )
    return Anchors("item", codes, [str(responses.items[c]) for c in codes])


def anchored_rows(
    free: pt.TensorVariable, anchors: Anchors, name: str, sigma: float, n_dims: int
) -> pt.TensorVariable:
    """Replace the anchor rows of ``free`` by a lower-triangular block with positive diagonal."""
    diagonal = pm.HalfNormal(f"{name}_anchor_diagonal", sigma, dims="dimension")
    rows = np.asarray(anchors.codes)
    lower = np.tril(np.ones((n_dims, n_dims)), k=-1)
    block = free[rows] * pt.as_tensor(lower) + pt.diag(diagonal)
    return pt.set_subtensor(free[rows], block)


def choose_anchor_benchmarks(
    values: np.ndarray, benchmark_of_item: np.ndarray, n_benchmarks: int, n_dims: int
) -> list[int]:
    """Pick one anchor benchmark per dimension from the data alone.

    A rank-``n_dims`` SVD of the centred response matrix (missing cells filled
    with item means) gives provisional item loadings; after varimax, each
    dimension's anchor is the not-yet-chosen benchmark whose mean loading is
    large on that dimension, pure (small on the others) and coherent (its
    items load alike, so mixed benchmarks are avoided). No benchmark
    label is needed from the user: the choice is made from the responses.

    Returns
    -------
    list of int
        Benchmark codes, one per dimension, in dimension order.

    """
    filled = np.where(np.isnan(values), np.nanmean(values, axis=0, keepdims=True), values)
    centred = filled - filled.mean(axis=0, keepdims=True)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    provisional = (vt[:n_dims].T * singular[:n_dims]) / np.sqrt(max(values.shape[0] - 1, 1))
    provisional = provisional @ varimax(provisional)
    means = np.zeros((n_benchmarks, n_dims))
    squares = np.zeros(n_benchmarks)
    counts = np.bincount(benchmark_of_item, minlength=n_benchmarks)
    np.add.at(means, benchmark_of_item, provisional)
    np.add.at(squares, benchmark_of_item, (provisional**2).sum(axis=1))
    means /= np.maximum(counts, 1)[:, None]
    norms = (means**2).sum(axis=1) + 1e-12
    # coherence: 1 when a benchmark's items share one loading vector, small for mixed
    # benchmarks (harmful and benign prompts pulling different ways) that make bad anchors
    coherence = norms / (squares / np.maximum(counts, 1) + 1e-12)
    chosen: list[int] = []
    for dim in range(n_dims):
        purity = means[:, dim] ** 2 / norms
        score = np.abs(means[:, dim]) * purity * coherence * np.log1p(counts)
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
    return chosen

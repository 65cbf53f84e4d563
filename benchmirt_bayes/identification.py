"""Identification of exploratory MIRT posteriors: rotation, sign and order.

The likelihood ``ability @ loading.T`` is unchanged when both are multiplied by
the same orthogonal matrix ``R`` (``ability R (loading R)ᵀ = ability loadingᵀ``)
and the default priors are rotation invariant, so the sampler explores every
rotation, reflection and permutation. We sample unconstrained and post-process
every draw (MatchAlign-style, Poworoznek et al. 2021):

1. orthogonal Procrustes of each draw's loadings onto a pivot, re-estimating
   the pivot as the mean of the aligned draws (a few rounds);
2. one varimax rotation of the final pivot, applied to every draw;
3. a sign and order convention: dimensions ordered by the sum of squared
   loadings (largest first), and each dimension's sign chosen so that the
   items loading mainly on it have positive mean loading, i.e. *positive
   ability = better on the items that define the dimension*.

Every step multiplies abilities and loadings (and the benchmark mean loading
vectors) by the *same* orthogonal matrix per draw, so every predicted
probability is unchanged. Confirmatory models are identified by their zero
pattern up to sign; only step 3's sign flip is applied to them.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def varimax(
    loadings: np.ndarray, *, gamma: float = 1.0, max_iter: int = 500, tol: float = 1e-8
) -> np.ndarray:
    """Orthogonal rotation matrix ``R`` such that ``loadings @ R`` is varimax-simple.

    Parameters
    ----------
    loadings
        ``(items, K)`` matrix.
    gamma
        1 for varimax, 0 for quartimax.
    max_iter, tol
        Iteration limit and relative-improvement tolerance of the SVD algorithm.

    """
    n, k = loadings.shape
    rotation = np.eye(k)
    if k == 1:
        return rotation
    criterion = 0.0
    for _ in range(max_iter):
        rotated = loadings @ rotation
        target = rotated**3 - (gamma / n) * rotated @ np.diag((rotated**2).sum(axis=0))
        u, s, vt = np.linalg.svd(loadings.T @ target)
        rotation = u @ vt
        new = s.sum()
        if criterion and new < criterion * (1 + tol):
            break
        criterion = new
    return rotation


def procrustes(source: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Orthogonal ``R`` minimising ``‖source @ R − target‖_F`` (rotations and reflections)."""
    u, _, vt = np.linalg.svd(source.T @ target)
    return u @ vt


def whitened_frame(ability: np.ndarray, loading: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Express a solution in the whitened-ability convention without changing any prediction.

    Returns ``(ability S^{-1/2}, loading S^{1/2})`` with ``S`` the sample covariance of
    the (centred) abilities, so that ``ability @ loading.T`` is unchanged up to the
    centring, which the intercepts absorb. Use it to compare a fit of a
    ``correlation = "whitened"`` spec with a solution expressed in another frame (a
    simulation's truth with correlated abilities, another program's estimates): the two
    then differ only by an orthogonal rotation, which :func:`procrustes` finds.

    Parameters
    ----------
    ability
        ``(llm, dimension)`` abilities.
    loading
        ``(item, dimension)`` loadings in the same frame.

    """
    centred = ability - ability.mean(axis=0)
    sqrt, inv_sqrt = symmetric_sqrt_pair(np.atleast_2d(np.cov(centred, rowvar=False)))
    return centred @ inv_sqrt, loading @ sqrt


def symmetric_sqrt_pair(matrix: Any, xp: Any = np) -> tuple[Any, Any]:
    """``(M^{1/2}, M^{-1/2})``, the symmetric square roots of a positive-definite matrix.

    ``xp`` is the array namespace (``numpy`` or ``jax.numpy``), so the NumPy
    post-processing and the JAX minibatch ADVI share one definition.
    """
    values, vectors = xp.linalg.eigh(matrix)
    root = xp.sqrt(values)
    return (vectors * root) @ vectors.T, (vectors / root) @ vectors.T


def batched_procrustes(sources: np.ndarray, target: np.ndarray) -> np.ndarray:
    """:func:`procrustes` for a stack ``(S, items, K)`` of sources: returns ``(S, K, K)``."""
    cross = np.einsum("sik,il->skl", sources, target)
    u, _, vt = np.linalg.svd(cross)
    return u @ vt


def sign_and_order(loadings: np.ndarray, *, reorder: bool = True) -> np.ndarray:
    """Signed permutation ``P`` applying the sign and order convention to ``loadings @ P``."""
    k = loadings.shape[1]
    order = np.argsort(-(loadings**2).sum(axis=0), kind="stable") if reorder else np.arange(k)
    perm = np.eye(k)[:, order]
    ordered = loadings @ perm
    main = np.argmax(np.abs(ordered), axis=1)
    signs = np.ones(k)
    for dim in range(k):
        defining = ordered[main == dim, dim]
        reference = defining if defining.size else ordered[:, dim]
        signs[dim] = -1.0 if reference.mean() < 0 else 1.0
    return perm * signs[None, :]


def alignment_rotations(
    loadings: np.ndarray,
    *,
    rotate: bool = True,
    reference: np.ndarray | None = None,
    rounds: int = 4,
) -> np.ndarray:
    """Per-draw orthogonal matrices that identify a stack of loading draws.

    Parameters
    ----------
    loadings
        ``(S, items, K)`` loadings of S draws (chains and draws flattened).
    rotate
        Exploratory (full orthogonal alignment) or confirmatory (signs only).
    reference
        Optional ``(items, K)`` target: align to it instead of to a varimax
        pivot (used to align restarts or a fit to a known truth). The final
        convention step is skipped: the reference fixes orientation.
    rounds
        Pivot re-estimation rounds.

    Returns
    -------
    ndarray
        ``(S, K, K)``; the identified loadings are ``loadings[s] @ R[s]`` and
        the abilities must be multiplied by the same ``R[s]``.

    """
    n_draws, _, k = loadings.shape
    if rotate:
        pivot = reference if reference is not None else _initial_pivot(loadings)
        for _ in range(rounds):
            rotations = batched_procrustes(loadings, pivot)
            if reference is not None:
                break
            pivot = np.einsum("sik,skl->il", loadings, rotations) / n_draws
        if reference is None:
            final = varimax(pivot)
            final = final @ sign_and_order(pivot @ final)
            rotations = rotations @ final
        return rotations
    # confirmatory: flip signs per draw to agree with the pivot, then the convention
    pivot = reference if reference is not None else loadings[0]
    for _ in range(rounds):
        signs = np.sign(np.einsum("sik,ik->sk", loadings, pivot))
        signs[signs == 0] = 1.0
        aligned_mean = (loadings * signs[:, None, :]).mean(axis=0)
        if reference is not None:
            break
        pivot = aligned_mean
    rotations = np.einsum("sk,kl->skl", signs, np.eye(k))
    if reference is None:
        rotations = rotations @ sign_and_order(pivot, reorder=False)
    return rotations


def _initial_pivot(loadings: np.ndarray) -> np.ndarray:
    """Varimax of the draw whose loadings are closest to the median draw's norm profile."""
    # written to need one (S, items) array and no more: at the full built-in scale a
    # (S, items, K) temporary is 2.2 GB
    norms = np.sqrt(np.einsum("sik,sik->si", loadings, loadings))  # rotation invariant
    block = 4096
    median = np.concatenate(
        [np.median(norms[:, i : i + block], axis=0) for i in range(0, norms.shape[1], block)]
    )
    distance = np.einsum("si,si->s", norms, norms) - 2 * norms @ median + median @ median
    best = int(np.argmin(distance))
    draw = loadings[best]
    return draw @ varimax(draw)


def tucker_congruence(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-column Tucker congruence coefficient of two ``(items, K)`` loading matrices."""
    numerator = (a * b).sum(axis=0)
    denominator = np.sqrt((a**2).sum(axis=0) * (b**2).sum(axis=0))
    return numerator / np.where(denominator == 0, 1.0, denominator)


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

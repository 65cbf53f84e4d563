"""Orthogonal rotations of factor solutions: varimax, Procrustes, congruence, whitening.

Pure NumPy linear algebra (``symmetric_sqrt_pair`` also takes ``jax.numpy``), shared
by the per-draw identification of fits, the minibatch path, stability checks and the
comparison of solutions with a known truth. No module here knows about posteriors.
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


def tucker_congruence(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per-column Tucker congruence coefficient of two ``(items, K)`` loading matrices."""
    numerator = (a * b).sum(axis=0)
    denominator = np.sqrt((a**2).sum(axis=0) * (b**2).sum(axis=0))
    return numerator / np.where(denominator == 0, 1.0, denominator)

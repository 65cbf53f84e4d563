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

import numpy as np
import xarray as xr

from benchmirt_bayes.data.responses import ITEM_DIM
from benchmirt_bayes.posterior import ROTATED_VARIABLES
from benchmirt_bayes.response_types.base import mdisc, multidimensional_difficulty
from benchmirt_bayes.rotations import batched_procrustes, sign_and_order, varimax


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


def identify_posterior(
    posterior: xr.Dataset, *, rotate: bool, reference: np.ndarray | None = None
) -> xr.Dataset:
    """Apply per-draw orthogonal alignment (see :mod:`benchmirt_bayes.identification`).

    Abilities, loadings and benchmark mean loadings are multiplied by the same
    matrix per draw; the LKJ correlation transforms as ``Rᵀ C R``. Adds
    ``difficulty`` and ``mdisc``. ``posterior`` itself is not changed.
    """
    return _identify_in_place(posterior.copy(deep=True), rotate=rotate, reference=reference)


def _identify_in_place(
    posterior: xr.Dataset, *, rotate: bool, reference: np.ndarray | None = None
) -> xr.Dataset:
    """:func:`identify_posterior` that overwrites ``posterior``'s arrays.

    At the full built-in scale a rotated copy of the loadings is 2.2 GB, so the
    assembly of a fit, which owns its draws, rotates them where they are.
    """
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]
    loading = posterior["loading"].transpose("chain", "draw", ITEM_DIM, "dimension").values
    k = loading.shape[-1]
    flat = loading.reshape(n_chain * n_draw, -1, k)
    rotations = alignment_rotations(flat, rotate=rotate, reference=reference)
    rotations = rotations.reshape(n_chain, n_draw, k, k)
    for name in ROTATED_VARIABLES:
        if name in posterior:
            var = posterior[name]
            other = [d for d in var.dims if d not in ("chain", "draw", "dimension")]
            values = var.transpose("chain", "draw", *other, "dimension").values
            values = np.require(values, requirements="W")  # pm.sample's traces can be read-only
            _rotate_draws(values, rotations)
            posterior[name] = (("chain", "draw", *other, "dimension"), values)
    if "ability_correlation" in posterior:
        corr = posterior["ability_correlation"].transpose("chain", "draw", "dimension", "dimension_b")
        rotated = np.einsum("cdka,cdkl,cdlb->cdab", rotations, corr.values, rotations)
        posterior["ability_correlation"] = (("chain", "draw", "dimension", "dimension_b"), rotated)
    loading = posterior["loading"]
    item_dims = [d for d in loading.dims if d != "dimension"]
    discrimination = mdisc(loading.values)
    posterior["mdisc"] = (item_dims, discrimination)
    intercept = posterior["intercept"].transpose(*item_dims).values
    posterior["difficulty"] = (item_dims, multidimensional_difficulty(intercept, discrimination))
    return posterior


def _rotate_draws(values: np.ndarray, rotations: np.ndarray, block: int = 64) -> None:
    """``values[c, d] ← values[c, d] @ rotations[c, d]`` in place, a block of draws at a time."""
    for chain in range(values.shape[0]):
        for start in range(0, values.shape[1], block):
            part = values[chain, start : start + block]
            part[...] = np.einsum("d...k,dkl->d...l", part, rotations[chain, start : start + block])

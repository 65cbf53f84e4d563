"""Where optimisation starts: a seeded draw from the prior, or a spectral solution of the data.

From a draw of the prior, ADVI on a few LLMs and many items can settle at the optimum of a
model with fewer dimensions: the extra dimension's loadings start near zero in a flat
direction and never grow (2-dimension fits ending at the 1-dimension ELBO on real data).
:func:`spectral_start` starts instead from the rank-``K`` singular value decomposition of
the centred response matrix (a linear factor analysis): abilities from the left singular
vectors (whitened, as the model's abilities are), loadings from the right ones scaled to
the logit scale, intercepts from the items' mean scores, benchmark means and spreads from
those loadings and intercepts. Every dimension then starts where the data put variance on
it.

The solution is used as the SVD gives it, unrotated. The model's likelihood and priors do
not change under a rotation of abilities and loadings, but the mean-field approximation
does: each rotation is its own ADVI optimum, and fits that started from seeded random
rotations of the solution ended at ELBOs up to 1.5 noise SDs apart on the real sets
(``benchmarks/advi_optima.py``). From one start, the seed changes only the optimiser's
Monte Carlo noise. Restarts after the first start from prior draws, so
``check_stability`` still compares independent searches.
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.response_types.base import logit

LOGIT_SLOPE = 4.0
"""d logit(p) / dp at p = ½: turns a linear factor loading into a logistic one."""


def jittered_start(model: pm.Model, seed: int) -> dict[str, np.ndarray]:
    """A seeded random starting point: one draw of every free variable from its prior.

    Restarts must differ in their initialisation, not only in their random stream: from one
    shared start, ADVI restarts land on the same optimum and say nothing about stability.
    """
    free = model.free_RVs
    draws = pm.draw(free, random_seed=np.random.default_rng([seed, 7]))
    return {rv.name: np.asarray(value) for rv, value in zip(free, draws, strict=True)}


def spectral_solution(responses: ResponseMatrix, n_dims: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ability (llm, K), loading (item, K), intercept (item,))`` from the rank-``K`` SVD.

    Scores are taken on ``[0, 1]``; a missing cell is filled with its item's mean before the
    columns are centred. Abilities have zero mean and unit sample covariance.
    """
    values = responses.scaled_values
    observed = responses.observed
    count = np.maximum(observed.sum(axis=0), 1)
    item_mean = np.where(observed, values, 0.0).sum(axis=0) / count
    filled = np.where(observed, values, item_mean[None, :])
    centred = filled - filled.mean(axis=0, keepdims=True)
    u, s, vt = np.linalg.svd(centred, full_matrices=False)
    k = min(n_dims, s.size)
    n_llms = values.shape[0]
    ability = np.zeros((n_llms, n_dims))
    loading = np.zeros((values.shape[1], n_dims))
    ability[:, :k] = u[:, :k] * np.sqrt(n_llms)
    loading[:, :k] = LOGIT_SLOPE * vt[:k].T * s[:k] / np.sqrt(n_llms)
    ability -= ability.mean(axis=0, keepdims=True)
    intercept = logit(np.clip(item_mean, 0.02, 0.98))
    return ability, loading, intercept


def spectral_start(
    model: pm.Model, responses: ResponseMatrix, n_dims: int, seed: int, *, zero_offsets: bool = True
) -> dict[str, np.ndarray]:
    """A starting point at the spectral solution.

    The variables that the solution determines (``ability_raw``, the loading mean, spread and
    z-scores, the intercepts with their benchmark means and spreads) are set from it;
    every other free variable (type parameters, subgroup offsets, correlations) keeps a
    seeded prior draw (:func:`jittered_start`). Subgroup offsets start at zero unless
    ``zero_offsets`` is false (then they keep the prior draw).
    """
    start = jittered_start(model, seed)
    ability, loading, intercept = spectral_solution(responses, n_dims)
    names = set(start)
    benchmarks = list(model.coords["benchmark"])
    codes = np.array([benchmarks.index(b) for b in responses.benchmarks])
    if "ability_raw" in names:
        start["ability_raw"] = ability.T.copy()
    bench_mean = np.stack([loading[codes == b].mean(axis=0) for b in range(len(benchmarks))])
    deviation = loading - bench_mean[codes]
    spread = np.array(
        [max(np.sqrt(np.mean(deviation[codes == b] ** 2)), 0.05) for b in range(len(benchmarks))]
    )
    if {"benchmark_loading_mean_free", "benchmark_loading_spread", "loading_z"} <= names:
        start["benchmark_loading_mean_free"] = bench_mean
        start["benchmark_loading_spread"] = spread
        start["loading_z"] = deviation / spread[codes][:, None]
    elif "loading_free" in names:
        start["loading_free"] = loading
    int_mean = np.array([intercept[codes == b].mean() for b in range(len(benchmarks))])
    int_spread = np.array([max(intercept[codes == b].std(), 0.05) for b in range(len(benchmarks))])
    if "benchmark_intercept_mean" in names:
        start["benchmark_intercept_mean"] = int_mean
    if "benchmark_intercept_spread" in names:
        start["benchmark_intercept_spread"] = int_spread
    if zero_offsets and "subgroup_intercept_offset_raw" in names:
        start["subgroup_intercept_offset_raw"] = np.zeros_like(start["subgroup_intercept_offset_raw"])
    noncentred = getattr(model, "benchmirt_noncentred_items", np.zeros(len(codes), dtype=bool))
    if "intercept" in names:
        start["intercept"] = intercept
    if "intercept_centred" in names:
        start["intercept_centred"] = intercept[~noncentred]
    if "intercept_z" in names:
        start["intercept_z"] = ((intercept - int_mean[codes]) / int_spread[codes])[noncentred]
    return start


def sampler_start(
    model: pm.Model, responses: ResponseMatrix, n_dims: int, seed: int, restart: int = 0
) -> dict[str, np.ndarray]:
    """Where NUTS starts with ``init="spectral"``: the spectral solution, rotated after restart 0.

    The likelihood and priors are unchanged by a rotation of abilities and loadings, so every
    rotation of the solution is an equally good start; restarts after the first take a seeded
    random one, so that :func:`~benchmirt_bayes.check_stability` compares chains that began
    apart. Subgroup offsets keep their prior draw: at exact zeros the offset of a benchmark's
    only subgroup has an exactly zero gradient, and nutpie, whose mass matrix starts from the
    gradient, refuses such a start.
    """
    start = spectral_start(model, responses, n_dims, seed, zero_offsets=False)
    if restart > 0:
        rotation = random_rotation(n_dims, np.random.default_rng([seed, restart, 13]))
        for name in ("ability_raw", "benchmark_loading_mean_free", "loading_z", "loading_free"):
            if name in start:
                start[name] = _rotate(start[name], rotation, transposed=name == "ability_raw")
    return start


def random_rotation(n_dims: int, rng: np.random.Generator) -> np.ndarray:
    """A uniformly random ``n_dims × n_dims`` rotation (Haar measure, determinant one)."""
    q, r = np.linalg.qr(rng.standard_normal((n_dims, n_dims)))
    q = q * np.sign(np.diag(r))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return q


def _rotate(values: np.ndarray, rotation: np.ndarray, *, transposed: bool) -> np.ndarray:
    """``values @ rotation`` over the dimension axis (the first axis when ``transposed``)."""
    return (values.T @ rotation).T if transposed else values @ rotation

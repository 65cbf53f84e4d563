"""`build_model`: the hierarchical compensatory MIRT model in PyMC.

``η_ij = loading_i · ability_j + intercept_i``; each item's responses given ``η`` through
its response type's model (:mod:`benchmirt_bayes.response_types`).

Variable names (also the posterior's):

==============================  ==========================  ===========================
name                            dims                        meaning
==============================  ==========================  ===========================
``ability``                     (llm, dimension)            LLM abilities (whitened: see below)
``loading``                     (item, dimension)           item slopes (discriminations)
``intercept``                   (item,)                     item intercepts
``benchmark_loading_mean``      (benchmark, dimension)      pooled mean loading vector (with
                                                            ``zero_sum``: its items' average)
``benchmark_loading_spread``    (benchmark,)                item spread around it
``benchmark_intercept_mean``    (benchmark,)                pooled mean intercept
``benchmark_intercept_spread``  (benchmark,)                item spread around it
``subgroup_intercept_offset``   (subgroup_key,)             subgroup shift, zero-sum per benchmark
``ability_correlation``         (dimension, dimension_b)    LKJ correlation (if used)
==============================  ==========================  ===========================

Each response type present adds its own parameters (its ``variables``, e.g. the graded
items' ``cutpoint``) and one observed variable (its ``observed_name``); each type's module
under :mod:`benchmirt_bayes.response_types` documents them.

With ``[ability] correlation = "whitened"`` (the default specs) every draw's abilities are
whitened within the sample (:func:`whiten`): unit sample variances, zero sample correlations.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.model.anchors import anchored_rows, resolve_anchors
from benchmirt_bayes.model.spec import ModelSpec, check_pattern_benchmarks, load_spec, noncentred_benchmarks
from benchmirt_bayes.response_types import DEFAULT_TYPE, response_model, type_columns
from benchmirt_bayes.response_types.asymptotes import AsymptoteItems
from benchmirt_bayes.response_types.base import FUSED_FORMS

ITEM_VARIABLES = ("loading", "intercept")
DENSE_LIKELIHOOD_MIN_SHARE = 0.5
"""Observed share above which ``likelihood="auto"`` uses a whole-matrix form."""
LIKELIHOOD_FORMS = ("auto", "fused", "fused64", "dense", "cells")
ABILITY_VARIABLES = ("ability",)


@dataclass(frozen=True)
class ModelIndex:
    """Integer codes linking items to benchmarks and subgroups, and observed cells."""

    benchmarks: list[str]
    benchmark_of_item: np.ndarray
    subgroup_keys: list[str]
    subgroup_of_item: np.ndarray
    benchmark_of_subgroup: np.ndarray

    @classmethod
    def from_responses(cls, responses: ResponseMatrix) -> ModelIndex:
        """Build the codes from a response matrix."""
        bench_codes, benchmarks = pd.factorize(responses.benchmarks)
        keys = np.char.add(
            np.char.add(responses.benchmarks.astype(str), "/"), responses.subgroups.astype(str)
        )
        sub_codes, subgroup_keys = pd.factorize(keys)
        benchmark_of_subgroup = np.zeros(len(subgroup_keys), dtype=np.int64)
        benchmark_of_subgroup[sub_codes] = bench_codes
        return cls(
            list(map(str, benchmarks)),
            bench_codes,
            list(map(str, subgroup_keys)),
            sub_codes,
            benchmark_of_subgroup,
        )

    @property
    def has_subgroups(self) -> bool:
        """Whether some benchmark has more than one subgroup."""
        return len(self.subgroup_keys) > len(self.benchmarks)


def dimension_names(n_dims: int, spec: ModelSpec) -> list[str]:
    """Dimension labels: the confirmatory names, else ``dim_1 ... dim_K``."""
    if spec.is_confirmatory:
        return spec.dimensions
    return [f"dim_{k + 1}" for k in range(n_dims)]


def loading_pattern(benchmarks: list[str], dims: list[str], spec: ModelSpec) -> np.ndarray:
    """``(benchmark, dimension)`` 0/1 mask of allowed loadings (all ones when exploratory)."""
    mask = np.ones((len(benchmarks), len(dims)))
    if spec.is_confirmatory:
        pattern = spec.pattern
        for b, bench in enumerate(benchmarks):
            if bench in pattern:
                mask[b] = [1.0 if d in pattern[bench] else 0.0 for d in dims]
    return mask


def build_model(
    responses: ResponseMatrix,
    n_dims: int = 2,
    *,
    spec: str | Path | ModelSpec | Mapping[str, Any] | None = None,
    likelihood: Literal["auto", "fused", "fused64", "dense", "cells"] = "auto",
    observed: bool = True,
) -> pm.Model:
    """Build the hierarchical MIRT model for the observed cells of ``responses``.

    Parameters
    ----------
    responses
        The data; only observed cells enter the likelihood.
    n_dims
        Number of latent dimensions (``1`` gives the ordinary 2PL).
    spec
        Priors and structure: a name from ``models/``, a path, a
        :class:`ModelSpec`, or a dict of overrides of the default spec.
    likelihood
        How the Bernoulli log-likelihood is written; every form gives the same
        log density (``"fused"`` to float32 precision). ``"cells"``: the logits of the
        observed cells, gathered from the matrix ``ability @ loading.T + intercept`` (observed variable
        ``correct`` over ``cell``). ``"dense"``: the whole matrix with unobserved
        cells masked out (``correct`` over ``(llm, item)``), written as array
        operations, so it runs on every back end, JAX included. ``"fused"``: the
        whole matrix through :mod:`benchmirt_bayes.response_types.fused_logit`, one pass
        that returns the log density and its gradient together, each cell in float32
        (numba, C and Python back ends; not JAX); ``"fused64"``: the same pass in float64,
        about half as fast (figures: ``benchmarks/RESULTS.md``, "One log density +
        gradient"). ``"auto"`` (default): fused when at least half the cells are observed,
        else cells (:func:`resolve_likelihood`). Data with graded, continuous or count
        items use the cell form.
    observed
        ``False`` leaves the likelihood out: the priors and the map from free variables to
        abilities, loadings and intercepts only, for a caller that adds the likelihood itself
        (minibatch ADVI). Only ``responses``' LLMs, items and item coordinates are read
        then (a response type's own parameters, which its likelihood term adds, are absent).

    Returns
    -------
    pymc.Model
        With coords ``llm``, ``item``, ``dimension``, ``benchmark`` and
        ``subgroup_key`` (and ``cell`` for the cell form) and the variables
        listed in the module docstring; the observed variable is ``correct``.

    Notes
    -----
    No per-cell quantity is stored in the trace by either form.

    """
    if not isinstance(responses, ResponseMatrix):
        raise TypeError(f"responses must be a ResponseMatrix, got {type(responses).__name__}")
    check_integer("n_dims", n_dims)
    spec = load_spec(spec)
    dims = dimension_names(n_dims, spec)
    if len(dims) != n_dims:
        raise ValueError(f"spec {spec.name!r} defines {len(dims)} dimensions {dims}, but n_dims={n_dims}")
    index = ModelIndex.from_responses(responses)
    check_pattern_benchmarks(spec, index.benchmarks)
    if responses.n_llms < n_dims + 2:
        raise ValueError(
            f"{responses.n_llms} LLM(s) cannot identify {n_dims} dimension(s): the abilities are "
            f"centred and whitened within the sample, which needs at least n_dims + 2 = {n_dims + 2} LLMs"
        )
    likelihood = resolve_likelihood(responses, likelihood, spec=spec) if observed else "none"
    pattern = loading_pattern(index.benchmarks, dims, spec)
    anchors = resolve_anchors(responses, index.benchmarks, index.benchmark_of_item, n_dims, spec)
    coords = {
        LLM_DIM: responses.llms,
        ITEM_DIM: responses.items,
        "dimension": dims,
        "dimension_b": dims,
        "benchmark": index.benchmarks,
        "subgroup_key": index.subgroup_keys,
    }
    ab, ld, ic = spec.ability, spec.loading, spec.intercept
    bench = index.benchmark_of_item
    with pm.Model(coords=coords) as model:
        # ---------------------------------------------------------- abilities
        raw = pm.ZeroSumNormal("ability_raw", sigma=ab.sigma, dims=("dimension", LLM_DIM))
        if ab.correlation == "lkj" and n_dims > 1:
            # PyMC 6's LKJCorr is the Cholesky factor of an LKJ correlation matrix
            chol = pm.LKJCorr("ability_correlation_cholesky", n=n_dims, eta=ab.lkj_eta)
            pm.Deterministic("ability_correlation", chol @ chol.T, dims=("dimension", "dimension_b"))
            ability = pm.Deterministic("ability", (chol @ raw).T, dims=(LLM_DIM, "dimension"))
        elif ab.correlation == "whitened":
            ability = pm.Deterministic("ability", whiten(raw.T, n_dims), dims=(LLM_DIM, "dimension"))
        else:
            ability = pm.Deterministic("ability", raw.T, dims=(LLM_DIM, "dimension"))

        # ----------------------------------------------------------- loadings
        pattern_t = pt.as_tensor(pattern)
        load_mean = pm.Normal(
            "benchmark_loading_mean_free", 0.0, ld.mean_sigma, dims=("benchmark", "dimension")
        )
        if anchors is not None and anchors.kind == "benchmark":
            load_mean = anchored_rows(load_mean, anchors, "benchmark_loading", ld.mean_sigma, n_dims)
        load_mean = pm.Deterministic("benchmark_loading_mean", load_mean, dims=("benchmark", "dimension"))
        load_spread = pm.HalfNormal("benchmark_loading_spread", ld.spread_sigma, dims="benchmark")
        centre = (load_mean * pattern_t)[bench]
        scale = load_spread[bench][:, None] * pattern_t[bench]
        if ld.noncentered:
            z = pm.Normal("loading_z", 0.0, 1.0, dims=(ITEM_DIM, "dimension"))
            if ld.zero_sum:
                # deviations sum to zero within each benchmark: the benchmark mean is then
                # its items' average loading, with no ridge against all of their z-scores
                z = z - _group_means(z, bench, len(index.benchmarks))[bench]
            loading = centre + scale * z
        else:
            free = pm.Normal("loading_free", centre, pt.maximum(scale, 1e-6), dims=(ITEM_DIM, "dimension"))
            loading = free * pattern_t[bench]
        if anchors is not None and anchors.kind == "item":
            loading = anchored_rows(loading, anchors, "item_loading", ld.mean_sigma * 2, n_dims)
        loading = pm.Deterministic("loading", loading, dims=(ITEM_DIM, "dimension"))

        # --------------------------------------------------------- intercepts
        int_mean = pm.Normal("benchmark_intercept_mean", ic.mean_mu, ic.mean_sigma, dims="benchmark")
        int_spread = pm.HalfNormal("benchmark_intercept_spread", ic.spread_sigma, dims="benchmark")
        int_centre = int_mean[bench]
        if index.has_subgroups:
            # offsets sum to zero within each benchmark: otherwise the benchmark mean and
            # its subgroups' offsets trade off freely and never mix
            raw_offset = pm.Normal(
                "subgroup_intercept_offset_raw", 0.0, ic.subgroup_sigma, dims="subgroup_key"
            )
            bench_of_key = np.asarray(index.benchmark_of_subgroup)
            group_mean = _group_means(raw_offset, bench_of_key, len(index.benchmarks))
            offset = pm.Deterministic(
                "subgroup_intercept_offset", raw_offset - group_mean[bench_of_key], dims="subgroup_key"
            )
            int_centre = int_centre + offset[index.subgroup_of_item]
        per_benchmark = np.bincount(np.asarray(bench), minlength=len(index.benchmarks))
        answered = responses.observed.sum(axis=0)
        bench_array = np.asarray(bench)
        median_answered = [float(np.median(answered[bench_array == b])) for b in range(len(per_benchmark))]
        noncentred = noncentred_benchmarks(ic.noncentered, per_benchmark, median_answered)[bench_array]
        if noncentred.all():
            zi = pm.Normal("intercept_z", 0.0, 1.0, dims=ITEM_DIM)
            intercept = pm.Deterministic("intercept", int_centre + int_spread[bench] * zi, dims=ITEM_DIM)
        elif not noncentred.any():
            intercept = pm.Normal("intercept", int_centre, int_spread[bench], dims=ITEM_DIM)
        else:  # centred in large benchmarks, non-centred in small ones (see noncentred_benchmarks)
            centred, other = np.flatnonzero(~noncentred), np.flatnonzero(noncentred)
            spread = int_spread[bench]
            free = pm.Normal("intercept_centred", int_centre[centred], spread[centred], shape=len(centred))
            zi = pm.Normal("intercept_z", 0.0, 1.0, shape=len(other))
            values = pt.zeros(len(noncentred))
            values = pt.set_subtensor(values[centred], free)
            values = pt.set_subtensor(values[other], int_centre[other] + spread[other] * zi)
            intercept = pm.Deterministic("intercept", values, dims=ITEM_DIM)

        # --------------------------------------------------------- likelihood
        if not observed:
            pass
        elif responses.is_binary:
            default = response_model(DEFAULT_TYPE)
            default.pymc_term(
                default.observed_name,
                ability,
                loading,
                intercept,
                responses,
                likelihood,
                spec.type_prior(DEFAULT_TYPE),
            )
        else:
            for type_name, columns in type_columns(responses.response_types).items():
                model_of_type = response_model(type_name)
                model_of_type.pymc_term(
                    model_of_type.observed_name,
                    ability,
                    loading[columns],
                    intercept[columns],
                    responses.take_items(columns),
                    likelihood,
                    spec.type_prior(type_name),
                )
    model.benchmirt_likelihood = likelihood
    model.benchmirt_noncentred_items = noncentred  # which items' intercepts are non-centred
    model.benchmirt_anchors = anchors  # which units fix the rotation (None: post-hoc alignment only)
    return model


def resolve_likelihood(
    responses: ResponseMatrix, likelihood: str, *, jax: bool = False, spec: ModelSpec | None = None
) -> str:
    """The likelihood form ``likelihood`` stands for (see :func:`build_model`).

    ``"auto"`` becomes ``"fused"`` (``"dense"`` when ``jax``, which has no fused
    kernel) if at least half the cells are observed, else ``"cells"``. Data with
    non-binary items always use ``"cells"``; binary items to which ``spec`` gives floors or
    ceilings use ``"fused"``/``"fused64"`` (the 2PL/3PL/4PL kernels, cells in float32 and in
    float64) or ``"cells"`` (``"cells"`` with JAX).
    """
    if likelihood not in LIKELIHOOD_FORMS:
        raise ValueError(f"likelihood must be one of {LIKELIHOOD_FORMS}, got {likelihood!r}")
    if jax and likelihood in FUSED_FORMS:
        raise ValueError("the fused likelihood has no JAX implementation; use 'dense' or 'auto' with JAX")
    if not responses.is_binary:
        if likelihood in (*FUSED_FORMS, "dense"):
            raise ValueError(
                f"likelihood={likelihood!r} is written for all-binary data; data with graded, "
                "continuous or count items use likelihood='cells' (or 'auto')"
            )
        return "cells"
    asymptotes = spec is not None and has_binary_asymptotes(responses, spec)
    if asymptotes and likelihood == "dense":
        raise ValueError(
            "likelihood='dense' is written for binary data without floors or ceilings; "
            "3PL/4PL benchmarks use likelihood='fused' or 'cells' (or 'auto')"
        )
    if likelihood != "auto":
        return likelihood
    if responses.n_observed / responses.values.size < DENSE_LIKELIHOOD_MIN_SHARE or (jax and asymptotes):
        return "cells"
    return "dense" if jax else "fused"


def has_binary_asymptotes(responses: ResponseMatrix, spec: ModelSpec) -> bool:
    """Whether ``spec`` gives any binary item of ``responses`` a floor or a ceiling."""
    binary = np.asarray(responses.response_types) == DEFAULT_TYPE
    if not binary.any():
        return False
    model = response_model(DEFAULT_TYPE)
    section = model.spec_section(spec.type_prior(DEFAULT_TYPE))
    return AsymptoteItems.for_items(responses, section, np.flatnonzero(binary)).any


WHITENING_ITERATIONS = 24


def _group_means(values: pt.TensorVariable, group: np.ndarray, n_groups: int) -> pt.TensorVariable:
    """Mean of ``values`` (rows, ...) over the rows of each group; ``group[row]`` is its group."""
    group = np.asarray(group)
    counts = np.bincount(group, minlength=n_groups).astype(float)
    counts = counts.reshape((n_groups,) + (1,) * (values.ndim - 1))
    sums = pt.zeros((n_groups, *[values.shape[i] for i in range(1, values.ndim)]))
    return pt.inc_subtensor(sums[group], values) / np.maximum(counts, 1.0)


def whiten(x: pt.TensorVariable, n_cols: int | None = None) -> pt.TensorVariable:
    """Whiten the columns of a column-centred matrix: ``x S^{-1/2}``, ``S`` its sample covariance.

    The result has unit sample variances and zero sample correlations. The symmetric
    inverse square root makes the map rotation-equivariant (``x R ↦ whiten(x) R`` for
    orthogonal ``R``): the exact rotation symmetry, which post-hoc alignment removes, is
    kept, while the scale and shear of the abilities no longer trade off against the
    loadings inside the sampler. ``S^{-1/2}`` is written in closed form for one and two
    columns, and from coupled Newton–Schulz iterations otherwise (matrix products only:
    differentiable on every back end and, unlike an eigendecomposition, with a gradient
    that stays finite when eigenvalues coincide; after normalising by the trace, 24
    iterations reach machine precision for condition numbers of ``S`` up to about 10^4).
    ``n_cols`` gives the number of columns when ``x``'s static shape does not.
    """
    n_rows = x.shape[0]
    n_cols = x.type.shape[1] if n_cols is None else n_cols
    cov = x.T @ x / (n_rows - 1)
    if n_cols == 1:
        return x / pt.sqrt(cov[0, 0])
    if n_cols == 2:
        # S^{-1/2} = adj(S + sI) / (s t), s = sqrt(det S), t = sqrt(tr S + 2s)
        a, b, c = cov[0, 0], cov[0, 1], cov[1, 1]
        s = pt.sqrt(a * c - b * b)
        t = pt.sqrt(a + c + 2.0 * s)
        inv_sqrt = pt.stack([pt.stack([c + s, -b]), pt.stack([-b, a + s])]) / (s * t)
        return x @ inv_sqrt
    scale = pt.trace(cov)
    identity = pt.eye(cov.shape[0])
    y, z = cov / scale, identity
    for _ in range(WHITENING_ITERATIONS):
        t = 0.5 * (3.0 * identity - z @ y)
        y, z = y @ t, t @ z
    return x @ z / pt.sqrt(scale)

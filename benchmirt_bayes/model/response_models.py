"""Response models: the one place where a response probability is written.

Every response type is one object with the same methods, in the manner of R ``mirt``'s
item classes: estimation, scoring, selection, simulation and reporting ask it for
expected scores, log-likelihoods, Fisher information and random draws, and never write
those formulas themselves. All types share the compensatory linear predictor

``η_ij = loading_i · ability_j + intercept_i``

(:func:`linear_predictor`, :func:`cell_linear_predictor`), and the item summaries
:func:`mdisc` (``‖loading_i‖``) and :func:`multidimensional_difficulty`
(``−intercept_i / ‖loading_i‖``) are defined here once.

Array methods take ``xp``, the array namespace (``numpy`` by default, ``jax.numpy`` for
the minibatch path and the streamed simulation); the PyMC term is built by
:meth:`ResponseModel.pymc_term`. A new response type is one subclass registered in
:data:`RESPONSE_MODELS`, a spec section and its model term.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit

from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.model.fused_likelihood import encode_responses, fused_loglik
from benchmirt_bayes.model.spec import ModelSpec, load_spec

LikelihoodForm = Literal["fused", "dense", "cells"]

CUTPOINT_DIM = "item_cutpoint"
"""Dim of the graded items' cutpoints (labels ``"item|k"``), flattened over items."""


# ------------------------------------------------------------ shared structure
def linear_predictor(ability: Any, loading: Any, intercept: Any) -> Any:
    """``η = ability @ loadingᵀ + intercept`` over the whole matrix.

    Shapes ``(…, llm, K)``, ``(…, item, K)`` and ``(…, item)`` give ``(…, llm, item)``;
    leading (draw) dimensions broadcast. Works on NumPy, JAX and PyTensor arrays.
    """
    return ability @ loading.swapaxes(-1, -2) + intercept[..., None, :]


def cell_linear_predictor(ability: Any, loading: Any, intercept: Any) -> Any:
    """``η`` of single cells: rows of ``ability (…, cell, K)`` paired with ``loading (…, cell, K)``."""
    return (ability * loading).sum(axis=-1) + intercept


def information_matrix(weight: np.ndarray, loading: np.ndarray) -> np.ndarray:
    """Ability information ``w a aᵀ`` of cells with information weights ``w`` (``(…, K, K)``)."""
    return weight[..., None, None] * loading[..., :, None] * loading[..., None, :]


def mdisc(loading: np.ndarray) -> np.ndarray:
    """Multidimensional discrimination ``‖loading_i‖`` over the last axis (no squared copy)."""
    values = np.asarray(np.einsum("...k,...k->...", loading, loading))
    return np.sqrt(values, out=values)


def multidimensional_difficulty(intercept: np.ndarray, discrimination: np.ndarray) -> np.ndarray:
    """``−intercept / mdisc``: where along the item's direction success reaches one half."""
    difficulty = np.divide(intercept, discrimination)
    return np.negative(difficulty, out=difficulty)


# ------------------------------------------------------------------ the types
class ResponseModel(ABC):
    """What every response type provides, as functions of the linear predictor ``η``.

    Types with item parameters beyond the loading and intercept (cutpoints, a precision,
    a number of trials) take them as keyword arrays whose last axes are the item's
    (``cutpoints (…, item, C)``, ``precision (…, item)``, ``n_trials (item,)``), with the
    same leading (draw) axes as ``η``'s items; :attr:`item_parameters` names them.
    """

    name: ClassVar[str]
    item_parameters: ClassVar[tuple[str, ...]] = ()
    variables: ClassVar[tuple[str, ...]] = ()
    """Posterior variables the type's PyMC term adds (kept in every fit)."""

    @abstractmethod
    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """Expected response given ``η`` (in the response's own units)."""

    @abstractmethod
    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """Variance of the response given ``η`` (in the response's own units)."""

    @abstractmethod
    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """Log-likelihood of responses ``y`` per cell."""

    @abstractmethod
    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``∂ log p(y | η) / ∂η`` per cell (the gradient with respect to ``η``)."""

    @abstractmethod
    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """Fisher information of ``η`` per cell; the ability information is ``w(η) a aᵀ``."""

    @abstractmethod
    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """Random responses given ``η`` (``size`` broadcasts ``η``)."""

    @abstractmethod
    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: ResponseMatrix,
        form: LikelihoodForm,
        spec: ModelSpec | None = None,
        benchmark_of_item: np.ndarray | None = None,
    ) -> pt.TensorVariable:
        """Add the observed variable ``name`` for ``responses`` to the current PyMC model.

        ``loading`` and ``intercept`` are the rows of ``responses``' items; ``spec`` gives
        the priors of the type's own parameters and ``benchmark_of_item`` (integer codes of
        ``responses``' benchmarks) their pooling.
        """

    def scale(self, **params: Any) -> Any:
        """Highest possible response per item: divides scores onto ``[0, 1]``."""
        return 1.0

    @abstractmethod
    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``log p(y | η)`` when ``y`` is drawn from the model itself.

        The standardised log-likelihood person-fit statistic ``l_z`` needs them.
        """

    def information(self, eta: np.ndarray, loading: np.ndarray, **params: Any) -> np.ndarray:
        """Fisher information matrices ``w(η) a aᵀ``, shape ``(…, K, K)`` (``eta`` and ``loading`` paired)."""
        return information_matrix(self.information_weight(eta, **params), loading)


class BinaryLogistic(ResponseModel):
    """Correct / incorrect: ``P(y = 1) = σ(η)`` (the compensatory multidimensional 2PL)."""

    name = "binary"

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``σ(η)``."""
        if xp is np:
            return expit(eta)
        return 1.0 / (1.0 + xp.exp(-eta))

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``."""
        return self.information_weight(eta)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """``E = p log p + (1 − p) log(1 − p)``, ``Var = p (1 − p) η²`` (``log p − log(1 − p) = η``)."""
        eta = np.asarray(eta, dtype=float)
        prob = expit(eta)
        mean = prob * self.log_likelihood(1.0, eta) + (1.0 - prob) * self.log_likelihood(0.0, eta)
        return mean, prob * (1.0 - prob) * eta**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``y η − log(1 + e^η)``."""
        return y * eta - xp.logaddexp(0.0, eta)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``y − σ(η)``."""
        return y - expit(eta)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``."""
        prob = expit(eta)
        return prob * (1.0 - prob)

    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """``u < σ(η)`` for uniforms ``u``, as int8."""
        shape = np.shape(eta) if size is None else size
        return (rng.random(shape) < expit(eta)).astype(np.int8)

    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: ResponseMatrix,
        form: LikelihoodForm,
        spec: ModelSpec | None = None,
        benchmark_of_item: np.ndarray | None = None,
    ) -> pt.TensorVariable:
        """Bernoulli-logit over the observed cells, in one of three equivalent forms.

        ``"cells"``: the observed cells' ``η`` gathered from the matrix (``name`` over dim
        ``cell``). ``"dense"``: the whole matrix with unobserved cells adding zero, as array
        operations (every back end, JAX included). ``"fused"``: the whole matrix through the
        one-pass kernel of :mod:`benchmirt_bayes.model.fused_likelihood` (not JAX).
        """
        observed = responses.observed
        if form == "fused":
            return pm.CustomDist(
                name,
                ability,
                loading,
                intercept,
                logp=lambda value, th, a, d: fused_loglik(value, th, a, d),
                random=lambda th, a, d, rng, size: self.draw(
                    linear_predictor(th, a, d), rng, (*(size or ()), th.shape[-2], a.shape[-2])
                ),
                signature="(llm,dim),(item,dim),(item)->(llm,item)",
                observed=encode_responses(responses.values, observed),
                dims=(LLM_DIM, ITEM_DIM),
                dtype="int8",
            )
        eta = linear_predictor(ability, loading, intercept)
        if form == "cells":
            flat = np.flatnonzero(observed.ravel())
            values = responses.values.ravel()[flat].astype(np.int8)
            return pm.Bernoulli(name, logit_p=eta.ravel()[flat], observed=values, dims="cell")
        mask = pt.as_tensor(np.asarray(observed, dtype=bool))

        def logp(value: pt.TensorVariable, eta: pt.TensorVariable) -> pt.TensorVariable:
            return pt.switch(mask, self.log_likelihood(value, eta, xp=_PYTENSOR), 0.0)

        return pm.CustomDist(
            name,
            eta,
            logp=logp,
            random=lambda eta, rng, size: self.draw(eta, rng, size),
            observed=np.where(observed, responses.values, 0).astype(np.int8),
            dims=(LLM_DIM, ITEM_DIM),
            dtype="int8",
        )


def _observed_cells(responses: ResponseMatrix) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row, column and value of every observed cell of ``responses``."""
    rows, cols = np.nonzero(responses.observed)
    return rows, cols, responses.values[rows, cols]


def _cell_eta(
    ability: pt.TensorVariable,
    loading: pt.TensorVariable,
    intercept: pt.TensorVariable,
    rows: np.ndarray,
    cols: np.ndarray,
) -> pt.TensorVariable:
    """``η`` of the observed cells only (no whole-matrix product)."""
    return cell_linear_predictor(ability[rows], loading[cols], intercept[cols])


def interval_log_probability(lower: Any, upper: Any, eta: Any, xp: Any = np) -> Any:
    """``log(σ(η − lower) − σ(η − upper))``: a logistic latent ``η + ε`` between two cutpoints.

    ``lower = −∞`` or ``upper = +∞`` are allowed. With ``a = η − lower > b = η − upper``,
    ``σ(a) − σ(b) = σ(−b) − σ(−a)``; the form whose two terms are further from 1 is used
    (``a + b > 0`` flips), so the difference never cancels two numbers close to 1 and stays
    accurate to relative rounding error unless both ``|a|`` and ``|b|`` exceed about 700
    (where ``σ`` underflows). Two sigmoids and one log per cell: this is the graded and
    ordered-beta likelihood's inner loop.
    """
    high, low = eta - lower, eta - upper
    flip = (high + low) > 0
    high, low = xp.where(flip, -low, high), xp.where(flip, -high, low)
    return xp.log(_sigmoid(high, xp) - _sigmoid(low, xp))


def _sigmoid(x: Any, xp: Any) -> Any:
    if xp is np:
        return expit(x)
    if xp is _PYTENSOR:
        return pt.sigmoid(x)
    return 1.0 / (1.0 + xp.exp(-x))


def _interval_score(lower: Any, upper: Any, eta: np.ndarray) -> np.ndarray:
    """``∂/∂η log(σ(a) − σ(b)) = 1 − σ(a) − σ(b)`` with ``a = η − lower``, ``b = η − upper``."""
    return 1.0 - expit(eta - lower) - expit(eta - upper)


def _gammaln(xp: Any) -> Any:
    if xp is np:
        from scipy.special import gammaln

        return gammaln
    if xp is _PYTENSOR:
        return pt.gammaln
    from jax.scipy.special import gammaln

    return gammaln


def _beta_log_density(y: Any, mean: Any, precision: Any, xp: Any = np) -> Any:
    """``log Beta(y | mean · precision, (1 − mean) · precision)``, ``0 < y < 1``."""
    gammaln = _gammaln(xp)
    alpha, beta = mean * precision, (1.0 - mean) * precision
    return (
        (alpha - 1.0) * xp.log(y)
        + (beta - 1.0) * xp.log1p(-y)
        + gammaln(precision)
        - gammaln(alpha)
        - gammaln(beta)
    )


def _bounded_cutpoints(cutpoints: Any, xp: Any = np) -> Any:
    """``[−∞, c_1, …, c_C, +∞]`` along the last axis (padding entries of ``cutpoints`` are +∞)."""
    if xp is _PYTENSOR:
        edge = pt.ones((cutpoints.shape[0], 1))
    else:
        edge = xp.ones((*cutpoints.shape[:-1], 1))
    return xp.concatenate([-np.inf * edge, cutpoints, np.inf * edge], axis=-1)


def _category_bounds(y: Any, cutpoints: Any, xp: Any = np) -> tuple[Any, Any]:
    """The cutpoints below and above category ``y`` (``y`` broadcast against ``cutpoints[..., 0]``)."""
    bounded = _bounded_cutpoints(cutpoints, xp)
    shape = np.broadcast_shapes(np.shape(y), bounded.shape[:-1])
    bounded = xp.broadcast_to(bounded, (*shape, bounded.shape[-1]))
    category = xp.broadcast_to(xp.asarray(y), shape).astype("int32")[..., None]
    lower = xp.take_along_axis(bounded, category, axis=-1)[..., 0]
    upper = xp.take_along_axis(bounded, category + 1, axis=-1)[..., 0]
    return lower, upper


def _cell_bounds(
    cutpoints: pt.TensorVariable, row_of_cell: np.ndarray, category_of_cell: np.ndarray
) -> tuple[pt.TensorVariable, pt.TensorVariable]:
    """The cutpoints below and above each observed cell's category, for PyTensor terms.

    ``cutpoints`` has one row per item (or benchmark) and ``width`` columns known here; one
    flat gather per bound keeps the gradient a cheap scatter-add over the cells.
    """
    width = cutpoints.type.shape[-1]
    bounded = _bounded_cutpoints(cutpoints, _PYTENSOR).ravel()
    index = np.asarray(row_of_cell, dtype=np.int64) * (width + 2) + np.asarray(
        category_of_cell, dtype=np.int64
    )
    return bounded[index], bounded[index + 1]


def _continuous_part(y: Any) -> Any:
    """0 for exact zeros, 1 inside ``(0, 1)``, 2 for exact ones."""
    return (y > 0).astype("int32") + (y >= 1).astype("int32")


def _category_probabilities(eta: np.ndarray, cutpoints: np.ndarray) -> np.ndarray:
    """``P(y = k)`` for every category ``k`` (last axis; padded categories get 0)."""
    at_least = expit(eta[..., None] - cutpoints)  # P(y ≥ k), k = 1 … C
    ones = np.ones_like(at_least[..., :1])
    zeros = np.zeros_like(ones)
    upper = np.concatenate([ones, at_least], axis=-1)
    return upper - np.concatenate([at_least, zeros], axis=-1)


def _discrete_moments(prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``log P(y)`` over categories with probabilities ``prob`` (last axis)."""
    with np.errstate(divide="ignore"):
        logp = np.where(prob > 0, np.log(np.where(prob > 0, prob, 1.0)), 0.0)
    mean = (prob * logp).sum(axis=-1)
    return mean, np.maximum((prob * logp**2).sum(axis=-1) - mean**2, 0.0)


def _discrete_information(eta: np.ndarray, cutpoints: np.ndarray) -> np.ndarray:
    """``Σ_k (∂P_k/∂η)² / P_k`` over the categories a set of ordered cutpoints defines."""
    at_least = expit(eta[..., None] - cutpoints)
    slope = at_least * (1.0 - at_least)
    zeros = np.zeros_like(slope[..., :1])
    upper_slope = np.concatenate([zeros, slope], axis=-1)
    lower_slope = np.concatenate([slope, zeros], axis=-1)
    prob = _category_probabilities(eta, cutpoints)
    numerator = (upper_slope - lower_slope) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(prob > 0, numerator / np.where(prob > 0, prob, 1.0), 0.0)
    return terms.sum(axis=-1)


class GradedLogistic(ResponseModel):
    """Ordered categories ``0 … K−1`` (Samejima's graded response model, logistic).

    ``P(y ≥ k) = σ(η − c_k)`` for ``k = 1 … K−1`` with increasing cutpoints ``c_k``; an
    item's cutpoints are centred (their mean is zero), so its intercept is its location
    and ``intercept − c_k`` are R ``mirt``'s ``d_k``. ``K = 2`` is the binary model.
    Items with fewer categories than the widest pad ``cutpoints`` with ``+∞``.
    """

    name = "graded"
    item_parameters = ("cutpoints",)
    variables = ("cutpoint", "graded_log_gap_mean", "graded_log_gap_spread")

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``Σ_k P(y ≥ k)`` (in categories)."""
        cutpoints = params["cutpoints"]
        if xp is np:
            return expit(eta[..., None] - cutpoints).sum(axis=-1)
        return (1.0 / (1.0 + xp.exp(cutpoints - eta[..., None]))).sum(axis=-1)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Exact sums over the categories."""
        prob = _category_probabilities(np.asarray(eta, dtype=float), params["cutpoints"])
        return _discrete_moments(prob)

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``Σ_k k² P(y = k) − (Σ_k k P(y = k))²``."""
        prob = _category_probabilities(np.asarray(eta, dtype=float), params["cutpoints"])
        k = np.arange(prob.shape[-1])
        mean = (prob * k).sum(axis=-1)
        return (prob * k**2).sum(axis=-1) - mean**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``log(σ(η − c_y) − σ(η − c_{y+1}))`` with ``c_0 = −∞``, ``c_K = +∞``."""
        lower, upper = _category_bounds(y, params["cutpoints"], xp)
        return interval_log_probability(lower, upper, eta, xp)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``1 − σ(η − c_y) − σ(η − c_{y+1})``."""
        lower, upper = _category_bounds(y, params["cutpoints"])
        return _interval_score(lower, upper, eta)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``Σ_k (∂P_k/∂η)² / P_k``."""
        return _discrete_information(np.asarray(eta), params["cutpoints"])

    def scale(self, **params: Any) -> Any:
        """``K − 1`` per item."""
        return np.isfinite(params["cutpoints"]).sum(axis=-1)

    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """The number of cutpoints a logistic latent response passes."""
        at_least = expit(eta[..., None] - params["cutpoints"])
        shape = at_least.shape[:-1] if size is None else tuple(size)
        return (rng.random((*shape, 1)) < at_least).sum(axis=-1).astype(np.int16)

    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: ResponseMatrix,
        form: LikelihoodForm,
        spec: ModelSpec | None = None,
        benchmark_of_item: np.ndarray | None = None,
    ) -> pt.TensorVariable:
        """Cutpoints from per-benchmark pooled log gaps, and the observed cells' categories."""
        prior = load_spec(spec).graded
        model = pm.modelcontext(None)
        categories = responses.n_categories
        codes, names = _local_codes(responses.benchmarks)
        width = int(categories.max()) - 1
        n_items = categories.size
        gap_item = np.repeat(np.arange(n_items), categories - 2)
        gap_position = np.concatenate([np.arange(k - 2) for k in categories]).astype(np.int64)
        model.add_coord("graded_benchmark", names)
        model.add_coord(CUTPOINT_DIM, cutpoint_labels(responses.items, categories))
        raw = pt.zeros((n_items, width))
        if gap_item.size:
            model.add_coord("graded_gap", np.arange(gap_item.size))
            gap_mean = pm.Normal(
                "graded_log_gap_mean",
                prior.log_gap_mean_mu,
                prior.log_gap_mean_sigma,
                dims="graded_benchmark",
            )
            gap_spread = pm.HalfNormal(
                "graded_log_gap_spread", prior.log_gap_spread_sigma, dims="graded_benchmark"
            )
            z = pm.Normal("graded_log_gap_z", 0.0, 1.0, dims="graded_gap")
            gaps = pt.exp(gap_mean[codes[gap_item]] + gap_spread[codes[gap_item]] * z)
            raw = pt.set_subtensor(raw[gap_item, gap_position + 1], gaps)
            raw = pt.cumsum(raw, axis=1)
        valid = np.arange(width)[None, :] < (categories - 1)[:, None]
        centred = raw - (raw * valid).sum(axis=1, keepdims=True) / (categories - 1)[:, None]
        pm.Deterministic("cutpoint", centred[valid], dims=CUTPOINT_DIM)
        cutpoints = pt.switch(valid, centred, np.inf)
        cutpoints = pt.specify_shape(cutpoints, (n_items, width))
        rows, cols, values = _observed_cells(responses)
        model.add_coord(f"{name}_cell", np.arange(rows.size))
        eta = _cell_eta(ability, loading, intercept, rows, cols)
        lower, upper = _cell_bounds(cutpoints, cols, values)

        def logp(
            value: pt.TensorVariable, eta: pt.TensorVariable, *bounds: pt.TensorVariable
        ) -> pt.TensorVariable:
            return interval_log_probability(bounds[0], bounds[1], eta, _PYTENSOR)

        return pm.CustomDist(
            name,
            eta,
            lower,
            upper,
            cutpoints[cols],  # for draws only; the log density uses the two bounds
            logp=logp,
            random=lambda eta, lo, up, cuts, rng, size: self.draw(eta, rng, size, cutpoints=cuts),
            signature="(),(),(),(c)->()",
            observed=values.astype(np.int16),
            dims=f"{name}_cell",
            dtype="int16",
        )


class OrderedBeta(ResponseModel):
    """Scores in ``[0, 1]`` with exact 0s and 1s: the ordered beta model (Kubinec 2023).

    ``P(y = 0) = 1 − σ(η − κ₀)``, ``P(y = 1) = σ(η − κ₁)``, and in between
    ``P(0 < y < 1) = σ(η − κ₀) − σ(η − κ₁)`` with density ``Beta(μφ, (1 − μ)φ)``,
    ``μ = σ(η)``. One latent ``η`` moves all three parts the same way (unlike a
    zero-one-inflated beta, whose 0/1 parts have their own predictors); ``κ₀ < κ₁`` and
    the precision ``φ`` are shared within a benchmark.
    """

    name = "continuous"
    item_parameters = ("cutpoints", "precision")
    variables = ("continuous_cutpoints", "continuous_precision")

    def _parts(self, eta: Any, cutpoints: Any, xp: Any = np) -> tuple[Any, Any]:
        p_above_zero = 1.0 / (1.0 + xp.exp(cutpoints[..., 0] - eta))
        p_one = 1.0 / (1.0 + xp.exp(cutpoints[..., 1] - eta))
        return p_above_zero, p_one

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``P(y = 1) + P(0 < y < 1) σ(η)``."""
        p_above_zero, p_one = self._parts(eta, params["cutpoints"], xp)
        mean = 1.0 / (1.0 + xp.exp(-eta))
        return p_one + (p_above_zero - p_one) * mean

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``E[y²] − E[y]²`` with ``E[y²] = P(1) + P(0 < y < 1) (μ(1 − μ)/(φ + 1) + μ²)``."""
        eta = np.asarray(eta, dtype=float)
        p_above_zero, p_one = self._parts(eta, params["cutpoints"])
        mean, precision = expit(eta), params["precision"]
        inside = p_above_zero - p_one
        first = p_one + inside * mean
        second = p_one + inside * (mean * (1.0 - mean) / (precision + 1.0) + mean**2)
        return second - first**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """Log probability of the 0 / interior / 1 part, plus the beta log density inside."""
        lower, upper = _category_bounds(_continuous_part(y), params["cutpoints"], xp)
        return self._log_likelihood_within(y, eta, lower, upper, params["precision"], xp)

    @staticmethod
    def _log_likelihood_within(y: Any, eta: Any, lower: Any, upper: Any, precision: Any, xp: Any) -> Any:
        """:meth:`log_likelihood` given the cutpoints around each score's part."""
        inside = xp.equal(_continuous_part(y), 1)
        safe = xp.where(inside, y, 0.5)
        mean = 1.0 / (1.0 + xp.exp(-eta))
        density = _beta_log_density(safe, mean, precision, xp)
        return interval_log_probability(lower, upper, eta, xp) + xp.where(inside, density, 0.0)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Exact: the three parts' log probabilities plus, inside, the beta log density's moments.

        For ``D = log Beta(y | α, β)``: ``E[D] = −H(Beta(α, β))`` and ``Var[D] = (α−1)² Var[log y]
        + (β−1)² Var[log(1−y)] + 2(α−1)(β−1) Cov`` with ``Var[log y] = ψ₁(α) − ψ₁(α+β)``,
        ``Var[log(1−y)] = ψ₁(β) − ψ₁(α+β)``, ``Cov = −ψ₁(α+β)``.
        """
        from scipy.special import betaln, digamma, polygamma

        eta = np.asarray(eta, dtype=float)
        p_above_zero, p_one = self._parts(eta, params["cutpoints"])
        parts = np.stack([1.0 - p_above_zero, p_above_zero - p_one, p_one], axis=-1)
        with np.errstate(divide="ignore"):
            logp = np.where(parts > 0, np.log(np.where(parts > 0, parts, 1.0)), 0.0)
        mean_mu, precision = expit(eta), params["precision"]
        alpha, beta = mean_mu * precision, (1.0 - mean_mu) * precision
        total = alpha + beta
        d_mean = (
            -betaln(alpha, beta)
            + (alpha - 1) * (digamma(alpha) - digamma(total))
            + (beta - 1) * (digamma(beta) - digamma(total))
        )
        tri = polygamma(1, total)
        d_var = (
            (alpha - 1) ** 2 * (polygamma(1, alpha) - tri)
            + (beta - 1) ** 2 * (polygamma(1, beta) - tri)
            - 2 * (alpha - 1) * (beta - 1) * tri
        )
        inside = parts[..., 1]
        mean = (parts * logp).sum(axis=-1) + inside * d_mean
        second = (parts * logp**2).sum(axis=-1) + inside * (2 * logp[..., 1] * d_mean + d_var + d_mean**2)
        return mean, np.maximum(second - mean**2, 0.0)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """Interval part ``1 − σ(a) − σ(b)`` plus, inside, ``φ μ(1 − μ)(logit y − ψ(μφ) + ψ((1 − μ)φ))``."""
        from scipy.special import digamma, logit

        cutpoints, precision = params["cutpoints"], params["precision"]
        y = np.asarray(y, dtype=float)
        part = _continuous_part(y)
        lower, upper = _category_bounds(part, cutpoints)
        mean = expit(eta)
        inside = part == 1
        logit_y = logit(np.where(inside, y, 0.5))
        beta_score = (
            precision
            * mean
            * (1 - mean)
            * (logit_y - digamma(mean * precision) + digamma((1 - mean) * precision))
        )
        return _interval_score(lower, upper, eta) + np.where(inside, beta_score, 0.0)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """Three-part discrete information plus ``P(0 < y < 1) φ² (ψ'(μφ) + ψ'((1 − μ)φ)) (μ(1 − μ))²``."""
        from scipy.special import polygamma

        cutpoints, precision = params["cutpoints"], params["precision"]
        eta = np.asarray(eta, dtype=float)
        discrete = _discrete_information(eta, cutpoints)
        p_above_zero, p_one = self._parts(eta, cutpoints)
        mean = expit(eta)
        trigamma = polygamma(1, mean * precision) + polygamma(1, (1 - mean) * precision)
        beta_info = precision**2 * trigamma * (mean * (1 - mean)) ** 2
        return discrete + (p_above_zero - p_one) * beta_info

    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """Pick the part by a logistic latent response, then draw the interior from the beta."""
        cutpoints, precision = params["cutpoints"], params["precision"]
        eta = np.asarray(eta, dtype=float)
        shape = np.broadcast_shapes(eta.shape, np.shape(precision)) if size is None else tuple(size)
        eta = np.broadcast_to(eta, shape)
        p_above_zero, p_one = self._parts(eta, cutpoints)
        u = rng.random(shape)
        mean = expit(eta)
        phi = np.broadcast_to(precision, shape)
        interior = rng.beta(mean * phi, (1 - mean) * phi)
        interior = np.clip(interior, 1e-9, 1 - 1e-9)
        return np.where(u < p_one, 1.0, np.where(u < p_above_zero, interior, 0.0))

    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: ResponseMatrix,
        form: LikelihoodForm,
        spec: ModelSpec | None = None,
        benchmark_of_item: np.ndarray | None = None,
    ) -> pt.TensorVariable:
        """Per-benchmark cutpoints and precision, and the observed cells' scores."""
        prior = load_spec(spec).continuous
        model = pm.modelcontext(None)
        codes, names = _local_codes(responses.benchmarks)
        model.add_coord("continuous_benchmark", names)
        model.add_coord("continuous_bound", ["zero", "one"])
        zero = pm.Normal(
            "continuous_zero_cutpoint",
            prior.zero_cutpoint_mu,
            prior.zero_cutpoint_sigma,
            dims="continuous_benchmark",
        )
        log_gap = pm.Normal(
            "continuous_log_gap", prior.log_gap_mu, prior.log_gap_sigma, dims="continuous_benchmark"
        )
        cutpoints = pm.Deterministic(
            "continuous_cutpoints",
            pt.stack([zero, zero + pt.exp(log_gap)], axis=1),
            dims=("continuous_benchmark", "continuous_bound"),
        )
        log_precision = pm.Normal(
            "continuous_log_precision",
            prior.log_precision_mu,
            prior.log_precision_sigma,
            dims="continuous_benchmark",
        )
        precision = pm.Deterministic(
            "continuous_precision", pt.exp(log_precision), dims="continuous_benchmark"
        )
        rows, cols, values = _observed_cells(responses)
        model.add_coord(f"{name}_cell", np.arange(rows.size))
        eta = _cell_eta(ability, loading, intercept, rows, cols)
        cell_bench = codes[cols]
        lower, upper = _cell_bounds(
            pt.specify_shape(cutpoints, (len(names), 2)), cell_bench, _continuous_part(values)
        )

        def logp(
            value: pt.TensorVariable,
            eta: pt.TensorVariable,
            lo: pt.TensorVariable,
            up: pt.TensorVariable,
            phi: pt.TensorVariable,
            cuts: pt.TensorVariable,
        ) -> pt.TensorVariable:
            return self._log_likelihood_within(value, eta, lo, up, phi, _PYTENSOR)

        return pm.CustomDist(
            name,
            eta,
            lower,
            upper,
            precision[cell_bench],
            cutpoints[cell_bench],  # for draws only; the log density uses the two bounds
            logp=logp,
            random=lambda eta, lo, up, phi, cuts, rng, size: self.draw(
                eta, rng, size, cutpoints=cuts, precision=phi
            ),
            signature="(),(),(),(),(b)->()",
            observed=values.astype(float),
            dims=f"{name}_cell",
        )


class BinomialLogistic(ResponseModel):
    """``k`` correct of ``n`` tries (repeated sampling): ``k ~ Binomial(n, σ(η))``."""

    name = "count"
    item_parameters = ("n_trials",)

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``n σ(η)``."""
        return params["n_trials"] * BINARY.expected_score(eta, xp)

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``n σ(η)(1 − σ(η))``."""
        return self.information_weight(eta, **params)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Exact sums over ``k = 0 … n``."""
        eta = np.asarray(eta, dtype=float)
        n = np.asarray(params["n_trials"], dtype=float)
        k = np.arange(int(np.max(n)) + 1, dtype=float)
        shape = np.broadcast_shapes(eta.shape, n.shape)
        logp = self.log_likelihood(
            k, np.broadcast_to(eta, shape)[..., None], n_trials=np.broadcast_to(n, shape)[..., None]
        )
        prob = np.where(k <= np.broadcast_to(n, shape)[..., None], np.exp(logp), 0.0)
        return _discrete_moments(prob)

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``y η − n log(1 + e^η) + log C(n, y)``."""
        n = params["n_trials"]
        gammaln = _gammaln(xp)
        choose = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
        return y * eta - n * xp.logaddexp(0.0, eta) + choose

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``y − n σ(η)``."""
        return y - params["n_trials"] * expit(eta)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``n σ(η)(1 − σ(η))``."""
        return params["n_trials"] * BINARY.information_weight(eta)

    def scale(self, **params: Any) -> Any:
        """``n`` per item."""
        return params["n_trials"]

    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """Binomial draws."""
        shape = np.broadcast_shapes(np.shape(eta), np.shape(params["n_trials"])) if size is None else size
        trials = np.broadcast_to(np.asarray(params["n_trials"]).astype(np.int64), shape)
        return rng.binomial(trials, expit(np.broadcast_to(eta, shape)))

    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: ResponseMatrix,
        form: LikelihoodForm,
        spec: ModelSpec | None = None,
        benchmark_of_item: np.ndarray | None = None,
    ) -> pt.TensorVariable:
        """Binomial-logit over the observed cells."""
        rows, cols, values = _observed_cells(responses)
        pm.modelcontext(None).add_coord(f"{name}_cell", np.arange(rows.size))
        eta = _cell_eta(ability, loading, intercept, rows, cols)
        trials = responses.n_trials[cols].astype(np.int64)
        return pm.Binomial(name, n=trials, logit_p=eta, observed=values.astype(np.int64), dims=f"{name}_cell")


def _local_codes(benchmarks: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``benchmarks`` and the distinct names, in order of first appearance."""
    codes, names = pd.factorize(np.asarray(benchmarks))
    return codes, [str(n) for n in names]


def cutpoint_labels(items: np.ndarray, categories: np.ndarray) -> list[str]:
    """``"item|k"`` for every cutpoint ``k = 1 … K−1`` of every graded item, in order."""
    return [f"{item}|{k}" for item, n in zip(items, categories, strict=True) for k in range(1, int(n))]


class _PyTensorNamespace:
    """The array functions the log-likelihoods need, for PyTensor graphs."""

    exp = staticmethod(pt.exp)
    log = staticmethod(pt.log)
    log1p = staticmethod(pt.log1p)
    where = staticmethod(pt.switch)
    equal = staticmethod(pt.eq)
    concatenate = staticmethod(pt.concatenate)

    @staticmethod
    def logaddexp(a: Any, b: Any) -> Any:
        # softplus is PyTensor's stable, fusable log(1 + e^b) (a is always 0 here)
        return pt.softplus(b) if np.isscalar(a) and a == 0 else pt.logaddexp(a, b)


_PYTENSOR = _PyTensorNamespace()

BINARY = BinaryLogistic()
GRADED = GradedLogistic()
CONTINUOUS = OrderedBeta()
COUNT = BinomialLogistic()
RESPONSE_MODELS: dict[str, ResponseModel] = {m.name: m for m in (BINARY, GRADED, CONTINUOUS, COUNT)}
"""Every response type by name (the ``response_type`` values a data set may declare)."""


def response_model(name: str = "binary") -> ResponseModel:
    """The response model registered under ``name``."""
    try:
        return RESPONSE_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown response type {name!r}; available: {sorted(RESPONSE_MODELS)}") from None

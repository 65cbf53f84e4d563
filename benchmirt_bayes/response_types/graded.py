"""Ordered categories ``0 … K−1``: Samejima's graded response model (logistic)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.response_types.base import (
    PYTENSOR,
    LikelihoodForm,
    ResponseModel,
    cell_eta,
    discrete_moments,
    local_codes,
    observed_cells,
    required_variable,
    sigmoid,
)
from benchmirt_bayes.response_types.cutpoints import (
    category_bounds,
    category_probabilities,
    cell_bounds,
    core_cutpoints,
    discrete_information,
    interval_log_probability,
    interval_score,
)

CUTPOINT_DIM = "item_cutpoint"
"""Dim of the graded items' cutpoints (labels ``"item|k"``), flattened over items."""
SIMULATED_CATEGORIES = 4
"""Categories of a simulated graded item."""


@dataclass(frozen=True)
class GradedPrior:
    """The ``[graded]`` spec section: log gaps between an item's ordered cutpoints, pooled per benchmark.

    ``log_gap ~ N(benchmark mean, benchmark spread)``, benchmark mean
    ``N(log_gap_mean_mu, log_gap_mean_sigma)``, spread ``HalfNormal(log_gap_spread_sigma)``.
    """

    log_gap_mean_mu: float
    log_gap_mean_sigma: float
    log_gap_spread_sigma: float


def cutpoint_labels(items: np.ndarray, categories: np.ndarray) -> list[str]:
    """``"item|k"`` for every cutpoint ``k = 1 … K−1`` of every graded item, in order."""
    return [f"{item}|{k}" for item, n in zip(items, categories, strict=True) for k in range(1, int(n))]


class GradedLogistic(ResponseModel):
    """Ordered categories ``0 … K−1`` (Samejima's graded response model, logistic).

    ``P(y ≥ k) = σ(η − c_k)`` for ``k = 1 … K−1`` with increasing cutpoints ``c_k``; an
    item's cutpoints are centred (their mean is zero), so its intercept is its location
    and ``intercept − c_k`` are R ``mirt``'s ``d_k``. ``K = 2`` is the binary model.
    Items with fewer categories than the widest pad ``cutpoints`` with ``+∞``.
    """

    name = "graded"
    observed_name = "graded"
    item_parameters: ClassVar[dict[str, tuple[str, int]]] = {"cutpoints": ("graded_cutpoints", 1)}
    variables = ("cutpoint", "graded_log_gap_mean", "graded_log_gap_spread")
    draw_variables = ("cutpoint",)
    prior_defaults: ClassVar[dict[str, float]] = {
        "log_gap_mean_mu": 0.5,
        "log_gap_mean_sigma": 1.0,
        "log_gap_spread_sigma": 0.5,
    }
    scoring_rules = ("rps",)
    simulated_benchmark = "IFEval"

    def item_metadata(
        self, largest: np.ndarray, categories: np.ndarray, trials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """Declared categories, else one more than the largest value seen, rounded up (at least 2).

        A value that is not a whole number leaves the default whole, so that the value itself
        is reported as outside the item's categories rather than its metadata.
        """
        categories = np.where(np.isfinite(categories), categories, np.maximum(np.ceil(largest) + 1, 2))
        bad = (categories < 2) | (categories != np.round(categories))
        message = f"{self.name} item(s) need n_categories, a whole number ≥ 2 (item metadata column)"
        return categories, np.ones(categories.shape), bad, message

    def score_scale(self, categories: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """``K − 1``."""
        return np.asarray(categories, dtype=float) - 1.0

    def describe_item(self, categories: int, trials: int) -> str:
        """The number of categories."""
        return f", {categories} categories"

    def layout_parameters(
        self, layout: Any, columns: np.ndarray, source: Mapping[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """Each item's cutpoints in a row padded with ``+∞`` (``+∞`` outside the type's items)."""
        flat = required_variable(source, "cutpoint")
        categories = layout.n_categories[columns]
        width = int(categories.max()) - 1
        padded = np.full((*flat.shape[:-1], layout.types.size, width), np.inf)
        rows = np.repeat(columns, categories - 1)
        position = np.concatenate([np.arange(k - 1) for k in categories]).astype(np.int64)
        padded[..., rows, position] = flat
        return {"graded_cutpoints": padded}

    def item_summaries(self, intercept: np.ndarray, **params: Any) -> dict[str, np.ndarray]:
        """``cutpoint_span``: logits between the lowest and the highest cutpoint (0 for 2 categories).

        A wide span spreads the categories over a wide range of ability; a narrow one makes
        the item nearly binary.
        """
        cutpoints = np.asarray(params["cutpoints"], dtype=float)
        finite = np.isfinite(cutpoints)
        highest = np.where(finite, cutpoints, -np.inf).max(axis=-1)
        lowest = np.where(finite, cutpoints, np.inf).min(axis=-1)
        return {"cutpoint_span": np.broadcast_to(highest - lowest, np.shape(intercept)).copy()}

    def simulation_metadata(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """:data:`SIMULATED_CATEGORIES` categories."""
        return np.full(n_items, SIMULATED_CATEGORIES, dtype=np.int64), np.ones(n_items, dtype=np.int64)

    def simulate_parameters(
        self, layout: Any, columns: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """Centred cutpoints with log gaps ``N(0.5, 0.3)``."""
        cuts = []
        for k in layout.n_categories[columns]:
            raw = np.concatenate([[0.0], np.cumsum(np.exp(rng.normal(0.5, 0.3, size=k - 2)))])
            cuts.append(raw - raw.mean())
        return {"cutpoint": np.concatenate(cuts)}

    def truth_variables(
        self, layout: Any, items: np.ndarray, columns: np.ndarray, truth: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, tuple], dict[str, Any]]:
        """``cutpoint`` over :data:`CUTPOINT_DIM`."""
        coords = {CUTPOINT_DIM: cutpoint_labels(items[columns], layout.n_categories[columns])}
        return {"cutpoint": ((CUTPOINT_DIM,), truth["cutpoint"])}, coords

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``Σ_k P(y ≥ k)`` (in categories)."""
        cutpoints = params["cutpoints"]
        return sigmoid(eta[..., None] - cutpoints, xp).sum(axis=-1)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Exact sums over the categories."""
        prob = category_probabilities(np.asarray(eta, dtype=float), params["cutpoints"])
        return discrete_moments(prob)

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``Σ_k k² P(y = k) − (Σ_k k P(y = k))²``."""
        prob = category_probabilities(np.asarray(eta, dtype=float), params["cutpoints"])
        k = np.arange(prob.shape[-1])
        mean = (prob * k).sum(axis=-1)
        return (prob * k**2).sum(axis=-1) - mean**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``log(σ(η − c_y) − σ(η − c_{y+1}))`` with ``c_0 = −∞``, ``c_K = +∞``."""
        lower, upper = category_bounds(y, params["cutpoints"], xp)
        return interval_log_probability(lower, upper, eta, xp)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``1 − σ(η − c_y) − σ(η − c_{y+1})``."""
        lower, upper = category_bounds(y, params["cutpoints"])
        return interval_score(lower, upper, eta)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``Σ_k (∂P_k/∂η)² / P_k``."""
        return discrete_information(np.asarray(eta), params["cutpoints"])

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
        at_least = sigmoid(eta[..., None] - params["cutpoints"])
        shape = at_least.shape[:-1] if size is None else tuple(size)
        return (rng.random((*shape, 1)) < at_least).sum(axis=-1).astype(np.int16)

    def pymc_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: Any,
        form: LikelihoodForm,
        prior: Mapping[str, float] | None = None,
    ) -> pt.TensorVariable:
        """Cutpoints from per-benchmark pooled log gaps, and the observed cells' categories."""
        prior = GradedPrior(**{**self.prior_defaults, **(prior or {})})
        model = pm.modelcontext(None)
        categories = responses.n_categories
        codes, names = local_codes(responses.benchmarks)
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
        rows, cols, values = observed_cells(responses)
        model.add_coord(f"{name}_cell", np.arange(rows.size))
        eta = cell_eta(ability, loading, intercept, rows, cols)

        def logp(
            value: pt.TensorVariable, eta: pt.TensorVariable, cuts: pt.TensorVariable
        ) -> pt.TensorVariable:
            lower, upper = cell_bounds(cuts, cols, value)
            return interval_log_probability(lower, upper, eta, PYTENSOR)

        return pm.CustomDist(
            name,
            eta,
            cutpoints,
            logp=logp,
            random=lambda eta, cuts, rng, size: self.draw(
                eta, rng, size, cutpoints=core_cutpoints(cuts)[cols]
            ),
            signature="(),(i,c)->()",
            observed=values.astype(np.int16),
            dims=f"{name}_cell",
            dtype="int16",
        )


GRADED = GradedLogistic()

"""Scores in ``[0, 1]`` with exact 0s and 1s: the ordered beta model (Kubinec 2023)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.response_types.base import (
    PYTENSOR,
    LikelihoodForm,
    ResponseModel,
    cell_eta,
    gammaln_of,
    local_codes,
    logit,
    observed_cells,
    required_variable,
    sigmoid,
)
from benchmirt_bayes.response_types.cutpoints import (
    category_bounds,
    cell_bounds,
    core_cutpoints,
    discrete_information,
    interval_log_probability,
    interval_score,
)

SIMULATED_TRUTH = {"cutpoints": (-1.5, 1.5), "precision": 8.0}
"""Cutpoints and precision of every simulated benchmark of this type."""


@dataclass(frozen=True)
class ContinuousPrior:
    """The ``[continuous]`` spec section: ordered-beta cutpoints and precision per benchmark.

    Zero cutpoint ``N(zero_cutpoint_mu, zero_cutpoint_sigma)``; the one cutpoint lies a gap
    ``exp(N(log_gap_mu, log_gap_sigma))`` above it; precision ``exp(N(log_precision_mu,
    log_precision_sigma))``.
    """

    zero_cutpoint_mu: float
    zero_cutpoint_sigma: float
    log_gap_mu: float
    log_gap_sigma: float
    log_precision_mu: float
    log_precision_sigma: float


def beta_log_density(y: Any, mean: Any, precision: Any, xp: Any = np) -> Any:
    """``log Beta(y | mean · precision, (1 − mean) · precision)``, ``0 < y < 1``."""
    gammaln = gammaln_of(xp)
    alpha, beta = mean * precision, (1.0 - mean) * precision
    return (
        (alpha - 1.0) * xp.log(y)
        + (beta - 1.0) * xp.log1p(-y)
        + gammaln(precision)
        - gammaln(alpha)
        - gammaln(beta)
    )


def score_part(y: Any) -> Any:
    """0 for exact zeros, 1 inside ``(0, 1)``, 2 for exact ones."""
    return (y > 0).astype("int32") + (y >= 1).astype("int32")


class OrderedBeta(ResponseModel):
    """Scores in ``[0, 1]`` with exact 0s and 1s: the ordered beta model (Kubinec 2023).

    ``P(y = 0) = 1 − σ(η − κ₀)``, ``P(y = 1) = σ(η − κ₁)``, and in between
    ``P(0 < y < 1) = σ(η − κ₀) − σ(η − κ₁)`` with density ``Beta(μφ, (1 − μ)φ)``,
    ``μ = σ(η)``. One latent ``η`` moves all three parts the same way (unlike a
    zero-one-inflated beta, whose 0/1 parts have their own predictors); ``κ₀ < κ₁`` and
    the precision ``φ`` are shared within a benchmark.
    """

    name = "continuous"
    observed_name = "continuous"
    item_parameters: ClassVar[dict[str, tuple[str, int]]] = {
        "cutpoints": ("continuous_cutpoints", 1),
        "precision": ("continuous_precision", 0),
    }
    variables = ("continuous_cutpoints", "continuous_precision")
    draw_variables = ("continuous_cutpoints", "continuous_precision")
    prior_defaults: ClassVar[dict[str, float]] = {
        "zero_cutpoint_mu": -2.0,
        "zero_cutpoint_sigma": 1.5,
        "log_gap_mu": 1.3,
        "log_gap_sigma": 1.0,
        "log_precision_mu": 2.0,
        "log_precision_sigma": 1.0,
    }
    whole_numbers = False
    scoring_rules = ("crps", "coverage_90")
    simulated_benchmark = "StrongREJECT"

    def layout_parameters(
        self, layout: Any, columns: np.ndarray, source: Mapping[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """Each item's benchmark's cutpoints and precision (0 and 1 outside the type's items)."""
        codes, _ = pd.factorize(layout.benchmarks[columns])
        cutpoints = required_variable(source, "continuous_cutpoints")
        precision = required_variable(source, "continuous_precision")
        full_cuts = np.zeros((*cutpoints.shape[:-2], layout.types.size, 2))
        full_precision = np.ones((*precision.shape[:-1], layout.types.size))
        full_cuts[..., columns, :] = cutpoints[..., codes, :]
        full_precision[..., columns] = precision[..., codes]
        return {"continuous_cutpoints": full_cuts, "continuous_precision": full_precision}

    def item_summaries(self, intercept: np.ndarray, **params: Any) -> dict[str, np.ndarray]:
        """``p_exact_zero`` and ``p_exact_one``: chances of a score of exactly 0 or 1 at average ability.

        Average ability is ``η = intercept`` (abilities are centred); a large ``p_exact_zero``
        marks an item most LLMs fail outright (a refusal, a judge's zero).
        """
        p_above_zero, p_one = self._parts(np.asarray(intercept, dtype=float), params["cutpoints"])
        return {"p_exact_zero": 1.0 - p_above_zero, "p_exact_one": p_one}

    def simulate_parameters(
        self, layout: Any, columns: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """:data:`SIMULATED_TRUTH` for every benchmark of the type."""
        n_bench = len(np.unique(layout.benchmarks[columns]))
        return {
            "continuous_cutpoints": np.tile(SIMULATED_TRUTH["cutpoints"], (n_bench, 1)),
            "continuous_precision": np.full(n_bench, SIMULATED_TRUTH["precision"]),
        }

    def truth_variables(
        self, layout: Any, items: np.ndarray, columns: np.ndarray, truth: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, tuple], dict[str, Any]]:
        """Cutpoints and precision over ``continuous_benchmark``."""
        coords = {
            "continuous_benchmark": list(dict.fromkeys(layout.benchmarks[columns])),
            "continuous_bound": ["zero", "one"],
        }
        data = {
            "continuous_cutpoints": (
                ("continuous_benchmark", "continuous_bound"),
                truth["continuous_cutpoints"],
            ),
            "continuous_precision": (("continuous_benchmark",), truth["continuous_precision"]),
        }
        return data, coords

    def _parts(self, eta: Any, cutpoints: Any, xp: Any = np) -> tuple[Any, Any]:
        p_above_zero = sigmoid(eta - cutpoints[..., 0], xp)
        p_one = sigmoid(eta - cutpoints[..., 1], xp)
        return p_above_zero, p_one

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``P(y = 1) + P(0 < y < 1) σ(η)``."""
        p_above_zero, p_one = self._parts(eta, params["cutpoints"], xp)
        mean = sigmoid(eta, xp)
        return p_one + (p_above_zero - p_one) * mean

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``E[y²] − E[y]²`` with ``E[y²] = P(1) + P(0 < y < 1) (μ(1 − μ)/(φ + 1) + μ²)``."""
        eta = np.asarray(eta, dtype=float)
        p_above_zero, p_one = self._parts(eta, params["cutpoints"])
        mean, precision = sigmoid(eta), params["precision"]
        inside = p_above_zero - p_one
        first = p_one + inside * mean
        second = p_one + inside * (mean * (1.0 - mean) / (precision + 1.0) + mean**2)
        return second - first**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """Log probability of the 0 / interior / 1 part, plus the beta log density inside."""
        lower, upper = category_bounds(score_part(y), params["cutpoints"], xp)
        return self._log_likelihood_within(y, eta, lower, upper, params["precision"], xp)

    @staticmethod
    def _log_likelihood_within(y: Any, eta: Any, lower: Any, upper: Any, precision: Any, xp: Any) -> Any:
        """:meth:`log_likelihood` given the cutpoints around each score's part."""
        inside = xp.equal(score_part(y), 1)
        safe = xp.where(inside, y, 0.5)
        mean = sigmoid(eta, xp)
        density = beta_log_density(safe, mean, precision, xp)
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
        mean_mu, precision = sigmoid(eta), params["precision"]
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
        from scipy.special import digamma

        cutpoints, precision = params["cutpoints"], params["precision"]
        y = np.asarray(y, dtype=float)
        part = score_part(y)
        lower, upper = category_bounds(part, cutpoints)
        mean = sigmoid(eta)
        inside = part == 1
        logit_y = logit(np.where(inside, y, 0.5))
        beta_score = (
            precision
            * mean
            * (1 - mean)
            * (logit_y - digamma(mean * precision) + digamma((1 - mean) * precision))
        )
        return interval_score(lower, upper, eta) + np.where(inside, beta_score, 0.0)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """Three-part discrete information plus ``P(0 < y < 1) φ² (ψ'(μφ) + ψ'((1 − μ)φ)) (μ(1 − μ))²``."""
        from scipy.special import polygamma

        cutpoints, precision = params["cutpoints"], params["precision"]
        eta = np.asarray(eta, dtype=float)
        discrete = discrete_information(eta, cutpoints)
        p_above_zero, p_one = self._parts(eta, cutpoints)
        mean = sigmoid(eta)
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
        mean = sigmoid(eta)
        phi = np.broadcast_to(precision, shape)
        interior = rng.beta(mean * phi, (1 - mean) * phi)
        # a beta draw can round to 0 or 1, which the model reads as the other parts; keep it
        # inside at the nearest floats (a wider margin moves data the model then fits)
        interior = np.clip(interior, np.finfo(float).tiny, np.nextafter(1.0, 0.0))
        return np.where(u < p_one, 1.0, np.where(u < p_above_zero, interior, 0.0))

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
        """Per-benchmark cutpoints and precision, and the observed cells' scores."""
        prior = ContinuousPrior(**{**self.prior_defaults, **(prior or {})})
        model = pm.modelcontext(None)
        codes, names = local_codes(responses.benchmarks)
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
        rows, cols, values = observed_cells(responses)
        model.add_coord(f"{name}_cell", np.arange(rows.size))
        eta = cell_eta(ability, loading, intercept, rows, cols)
        cell_bench = codes[cols]

        def logp(
            value: pt.TensorVariable, eta: pt.TensorVariable, phi: pt.TensorVariable, cuts: pt.TensorVariable
        ) -> pt.TensorVariable:
            lower, upper = cell_bounds(cuts, cell_bench, score_part(value))
            return self._log_likelihood_within(value, eta, lower, upper, phi, PYTENSOR)

        return pm.CustomDist(
            name,
            eta,
            precision[cell_bench],
            cutpoints,
            logp=logp,
            random=lambda eta, phi, cuts, rng, size: self.draw(
                eta, rng, size, cutpoints=core_cutpoints(cuts)[cell_bench], precision=phi
            ),
            signature="(),(),(b,t)->()",
            observed=values.astype(float),
            dims=f"{name}_cell",
        )


CONTINUOUS = OrderedBeta()

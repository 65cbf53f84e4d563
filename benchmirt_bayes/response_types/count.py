"""``k`` correct of ``n`` tries (repeated sampling of one item): binomial logistic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.response_types.base import (
    LikelihoodForm,
    ResponseModel,
    cell_eta,
    discrete_moments,
    gammaln_of,
    observed_cells,
    sigmoid,
    softplus,
)
from benchmirt_bayes.response_types.binary import BINARY

SIMULATED_TRIALS = 5
"""Tries of a simulated count item."""


class BinomialLogistic(ResponseModel):
    """``k`` correct of ``n`` tries (repeated sampling): ``k ~ Binomial(n, σ(η))``."""

    name = "count"
    observed_name = "count"
    item_parameters: ClassVar[dict[str, tuple[str, int]]] = {"n_trials": ("n_trials", 0)}
    fixed_parameters = ("n_trials",)
    scoring_rules = ("rps",)
    simulated_benchmark = "MATH"

    def item_metadata(
        self, largest: np.ndarray, categories: np.ndarray, trials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """The declared number of tries (a positive integer; no default)."""
        bad = ~(np.isfinite(trials) & (trials >= 1) & (trials == np.round(trials)))
        message = f"{self.name} item(s) need n_trials (a positive integer, item metadata column 'n_trials')"
        return np.zeros(trials.shape), np.where(bad, 1, trials), bad, message

    def score_scale(self, categories: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """``n``."""
        return np.asarray(trials, dtype=float)

    def describe_item(self, categories: int, trials: int) -> str:
        """The number of tries."""
        return f", n_trials={trials}"

    def layout_parameters(
        self, layout: Any, columns: np.ndarray, source: Mapping[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """Every item's number of tries (data, no sample axes)."""
        return {"n_trials": layout.n_trials.astype(float)}

    def simulation_metadata(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """:data:`SIMULATED_TRIALS` tries."""
        return np.zeros(n_items, dtype=np.int64), np.full(n_items, SIMULATED_TRIALS, dtype=np.int64)

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
        return discrete_moments(prob)

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``y η − n log(1 + e^η) + log C(n, y)``."""
        n = params["n_trials"]
        gammaln = gammaln_of(xp)
        choose = gammaln(n + 1.0) - gammaln(y + 1.0) - gammaln(n - y + 1.0)
        return y * eta - n * softplus(eta, xp) + choose

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``y − n σ(η)``."""
        return y - params["n_trials"] * sigmoid(eta)

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
        return rng.binomial(trials, sigmoid(np.broadcast_to(eta, shape)))

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
        """Binomial-logit over the observed cells."""
        rows, cols, values = observed_cells(responses)
        pm.modelcontext(None).add_coord(f"{name}_cell", np.arange(rows.size))
        eta = cell_eta(ability, loading, intercept, rows, cols)
        trials = responses.n_trials[cols].astype(np.int64)
        return pm.Binomial(name, n=trials, logit_p=eta, observed=values.astype(np.int64), dims=f"{name}_cell")


COUNT = BinomialLogistic()

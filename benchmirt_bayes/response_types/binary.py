"""Correct / incorrect answers: the compensatory multidimensional two-parameter logistic."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.dims import ITEM_DIM, LLM_DIM
from benchmirt_bayes.response_types.base import (
    PYTENSOR,
    LikelihoodForm,
    ResponseModel,
    linear_predictor,
    sigmoid,
    softplus,
)
from benchmirt_bayes.response_types.fused_logit import encode_responses, fused_loglik


class BinaryLogistic(ResponseModel):
    """Correct / incorrect: ``P(y = 1) = σ(η)`` (the compensatory multidimensional 2PL)."""

    name = "binary"
    observed_name = "correct"

    def item_metadata(
        self, largest: np.ndarray, categories: np.ndarray, trials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """Two categories, one trial."""
        n = np.shape(largest)[0]
        return np.full(n, 2.0), np.ones(n), np.zeros(n, dtype=bool), ""

    def simulation_metadata(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """Two categories, one trial."""
        return np.full(n_items, 2, dtype=np.int64), np.ones(n_items, dtype=np.int64)

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``σ(η)``."""
        return sigmoid(eta, xp)

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``."""
        return self.information_weight(eta)

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """``E = p log p + (1 − p) log(1 − p)``, ``Var = p (1 − p) η²`` (``log p − log(1 − p) = η``)."""
        eta = np.asarray(eta, dtype=float)
        prob = sigmoid(eta)
        mean = prob * self.log_likelihood(1.0, eta) + (1.0 - prob) * self.log_likelihood(0.0, eta)
        return mean, prob * (1.0 - prob) * eta**2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``y η − log(1 + e^η)``."""
        return y * eta - softplus(eta, xp)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``y − σ(η)``."""
        return y - sigmoid(eta)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``."""
        prob = sigmoid(eta)
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
        return (rng.random(shape) < sigmoid(eta)).astype(np.int8)

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
        """Bernoulli-logit over the observed cells, in one of three equivalent forms.

        ``"cells"``: the observed cells' ``η`` gathered from the matrix (``name`` over dim
        ``cell``). ``"dense"``: the whole matrix with unobserved cells adding zero, as array
        operations (every back end, JAX included). ``"fused"``: the whole matrix through the
        one-pass kernel of :mod:`benchmirt_bayes.response_types.fused_logit` (not JAX).
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
            return pt.switch(mask, self.log_likelihood(value, eta, xp=PYTENSOR), 0.0)

        return pm.CustomDist(
            name,
            eta,
            logp=logp,
            random=lambda eta, rng, size: self.draw(eta, rng, size),
            observed=np.where(observed, responses.values, 0).astype(np.int8),
            dims=(LLM_DIM, ITEM_DIM),
            dtype="int8",
        )


BINARY = BinaryLogistic()

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
import pymc as pm
import pytensor.tensor as pt
from scipy.special import expit

from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.model.fused_likelihood import encode_responses, fused_loglik

LikelihoodForm = Literal["fused", "dense", "cells"]


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


def mdisc(loading: np.ndarray) -> np.ndarray:
    """Multidimensional discrimination ``‖loading_i‖`` over the last axis (no squared copy)."""
    values = np.einsum("...k,...k->...", loading, loading)
    return np.sqrt(values, out=values)


def multidimensional_difficulty(intercept: np.ndarray, discrimination: np.ndarray) -> np.ndarray:
    """``−intercept / mdisc``: where along the item's direction success reaches one half."""
    difficulty = np.divide(intercept, discrimination)
    return np.negative(difficulty, out=difficulty)


# ------------------------------------------------------------------ the types
class ResponseModel(ABC):
    """What every response type provides, as functions of the linear predictor ``η``."""

    name: ClassVar[str]

    @abstractmethod
    def expected_score(self, eta: Any, xp: Any = np) -> Any:
        """Expected response given ``η``."""

    @abstractmethod
    def log_likelihood(self, y: Any, eta: Any, xp: Any = np) -> Any:
        """Log-likelihood of responses ``y`` per cell."""

    @abstractmethod
    def score_residual(self, y: Any, eta: Any) -> np.ndarray:
        """``∂ log p(y | η) / ∂η`` per cell (the gradient with respect to ``η``)."""

    @abstractmethod
    def information_weight(self, eta: Any) -> np.ndarray:
        """Fisher information of ``η`` per cell; the ability information is ``w(η) a aᵀ``."""

    @abstractmethod
    def draw(
        self, eta: np.ndarray, rng: np.random.Generator, size: tuple[int, ...] | None = None
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
    ) -> pt.TensorVariable:
        """Add the observed variable ``name`` for ``responses`` to the current PyMC model."""

    def information(self, eta: np.ndarray, loading: np.ndarray) -> np.ndarray:
        """Fisher information matrices ``w(η) a aᵀ``, shape ``(…, K, K)`` (``eta`` and ``loading`` paired)."""
        weight = self.information_weight(eta)
        return weight[..., None, None] * loading[..., :, None] * loading[..., None, :]


class BinaryLogistic(ResponseModel):
    """Correct / incorrect: ``P(y = 1) = σ(η)`` (the compensatory multidimensional 2PL)."""

    name = "binary"

    def expected_score(self, eta: Any, xp: Any = np) -> Any:
        """``σ(η)``."""
        if xp is np:
            return expit(eta)
        return 1.0 / (1.0 + xp.exp(-eta))

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np) -> Any:
        """``y η − log(1 + e^η)``."""
        return y * eta - xp.logaddexp(0.0, eta)

    def score_residual(self, y: Any, eta: Any) -> np.ndarray:
        """``y − σ(η)``."""
        return y - expit(eta)

    def information_weight(self, eta: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``."""
        prob = expit(eta)
        return prob * (1.0 - prob)

    def draw(
        self, eta: np.ndarray, rng: np.random.Generator, size: tuple[int, ...] | None = None
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


class _PyTensorNamespace:
    """The two array functions the log-likelihoods need, for PyTensor graphs."""

    exp = staticmethod(pt.exp)

    @staticmethod
    def logaddexp(a: Any, b: Any) -> Any:
        # softplus is PyTensor's stable, fusable log(1 + e^b) (a is always 0 here)
        return pt.softplus(b) if np.isscalar(a) and a == 0 else pt.logaddexp(a, b)


_PYTENSOR = _PyTensorNamespace()

BINARY = BinaryLogistic()
RESPONSE_MODELS: dict[str, ResponseModel] = {BINARY.name: BINARY}
"""Every response type by name (the ``response_type`` values a data set may declare)."""


def response_model(name: str = "binary") -> ResponseModel:
    """The response model registered under ``name``."""
    try:
        return RESPONSE_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown response type {name!r}; available: {sorted(RESPONSE_MODELS)}") from None

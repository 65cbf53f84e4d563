"""Correct / incorrect answers: the compensatory multidimensional logistic, 2PL to 4PL.

Without asymptotes ``P(y = 1) = σ(η)`` (the 2PL). Items of multiple-choice benchmarks may
carry a floor ``g`` (the chance of a correct answer at the lowest ability, such as a guess
among the options: the 3PL) and a ceiling ``u`` (the chance at the highest ability, below
one when a key is wrong or an item ambiguous: the 4PL), as item parameters ``floor`` and
``ceiling``: ``P(y = 1) = g + (u − g) σ(η)``. Every method takes them by keyword; a fit
without them is the 2PL (``g = 0``, ``u = 1``) on its exact, cheaper formulas.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd
import pymc as pm
import pytensor.tensor as pt

from benchmirt_bayes.dims import ITEM_DIM, LLM_DIM
from benchmirt_bayes.response_types.asymptotes import (
    AsymptoteItems,
    AsymptotePrior,
    asymptote_variables,
    capped_or_not,
    draw_ceiling,
    section_problems,
)
from benchmirt_bayes.response_types.base import (
    FUSED_FORMS,
    PYTENSOR,
    LikelihoodForm,
    ResponseModel,
    cell_eta,
    linear_predictor,
    observed_cells,
    sigmoid,
    softplus,
)
from benchmirt_bayes.response_types.fused_asymptotes import (
    FOUR_PL,
    THREE_PL,
    TWO_PL,
    fused_asymptotic_loglik,
)
from benchmirt_bayes.response_types.fused_logit import encode_responses, fused_loglik


def has_asymptotes(params: Mapping[str, Any]) -> bool:
    """Whether item parameters carry a floor or a ceiling (else the 2PL's exact formulas apply)."""
    return "floor" in params or "ceiling" in params


def asymptotes(params: Mapping[str, Any]) -> tuple[Any, Any]:
    """``(g, u)``: the floor and ceiling of ``params`` (0 and 1 where one is absent)."""
    return params.get("floor", 0.0), params.get("ceiling", 1.0)


class BinaryLogistic(ResponseModel):
    """Correct / incorrect: ``P(y = 1) = g + (u − g) σ(η)`` (2PL: ``g = 0``, ``u = 1``).

    ``floor`` and ``ceiling`` (keyword item parameters, shaped as ``η``'s item axis with
    its leading sample axes) are optional; see the module docstring.
    """

    name = "binary"
    observed_name = "correct"
    item_parameters: ClassVar[dict[str, tuple[str, int]]] = {"floor": ("floor", 0), "ceiling": ("ceiling", 0)}
    optional_parameters: ClassVar[tuple[str, ...]] = ("floor", "ceiling")
    variables = (
        "floor",
        "ceiling",
        "capped_ceiling",
        "capped_probability",
        "floor_offset",
        "floor_spread",
        "ceiling_mean",
        "ceiling_spread",
        "capped_share",
    )
    draw_variables = ("floor", "ceiling")
    prior_defaults: ClassVar[dict[str, float]] = {
        "floor_offset_sigma": 1.0,
        "floor_spread_sigma": 1.0,
        "unknown_options_floor": 0.1,
        "ceiling_mean_mu": 1.0,
        "ceiling_mean_sigma": 1.0,
        "ceiling_spread_sigma": 1.0,
        "ceiling_share_alpha": 1.0,
        "ceiling_share_beta": 4.0,
    }
    spec_options: ClassVar[dict[str, Any]] = {"asymptotes": "2pl", "benchmarks": {}, "n_options": {}}

    def item_metadata(
        self, largest: np.ndarray, categories: np.ndarray, trials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """Two categories, one trial."""
        n = np.shape(largest)[0]
        return np.full(n, 2.0), np.ones(n), np.zeros(n, dtype=bool), ""

    def layout_parameters(
        self, layout: Any, columns: np.ndarray, source: Mapping[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """``floor`` and ``ceiling`` over the whole item axis where the fit has them (0 and 1 elsewhere)."""
        out = {}
        for key, neutral in (("floor", 0.0), ("ceiling", 1.0)):
            if source is not None and key in source:
                values = np.asarray(source[key], dtype=float)
                full = np.full((*values.shape[:-1], layout.types.size), neutral)
                full[..., columns] = values[..., columns]
                out[key] = full
        return out

    def simulation_metadata(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """Two categories, one trial."""
        return np.full(n_items, 2, dtype=np.int64), np.ones(n_items, dtype=np.int64)

    def probability(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``P(y = 1) = g + (u − g) σ(η)``."""
        if not has_asymptotes(params):
            return sigmoid(eta, xp)
        floor, ceiling = asymptotes(params)
        return floor + (ceiling - floor) * sigmoid(eta, xp)

    def expected_score(self, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``P(y = 1)``."""
        return self.probability(eta, xp, **params)

    def variance(self, eta: Any, **params: Any) -> np.ndarray:
        """``p (1 − p)``."""
        prob, miss = self._both_probabilities(eta, **params)
        return prob * miss

    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """``E = p log p + (1 − p) log(1 − p)``, ``Var = p (1 − p) (log p − log(1 − p))²``."""
        eta = np.asarray(eta, dtype=float)
        prob, miss = self._both_probabilities(eta, **params)
        log_p, log_q = self.log_likelihood(1.0, eta, **params), self.log_likelihood(0.0, eta, **params)
        return prob * log_p + miss * log_q, prob * miss * (log_p - log_q) ** 2

    def log_likelihood(self, y: Any, eta: Any, xp: Any = np, **params: Any) -> Any:
        """``y η − log(1 + e^η)``; with asymptotes ``y log p + (1 − y) log(1 − p)``, stably.

        ``p = (u + g e^{−η}) / (1 + e^{−η})`` and ``1 − p = ((1 − u) + (1 − g) e^{−η}) / (1 + e^{−η})``,
        so both logs are a ``logaddexp`` minus ``softplus(−η)``: no cancellation at any ``η``.
        """
        if not has_asymptotes(params):
            return y * eta - softplus(eta, xp)
        floor, ceiling = asymptotes(params)
        with np.errstate(divide="ignore"):  # log 0 = −inf where g = 0 or u = 1: logaddexp drops it
            log_p = xp.logaddexp(xp.log(ceiling), xp.log(floor) - eta)
            log_q = xp.logaddexp(xp.log1p(-ceiling), xp.log1p(-floor) - eta)
        return xp.where(xp.equal(y, 1), log_p, log_q) - softplus(-eta, xp)

    def score_residual(self, y: Any, eta: Any, **params: Any) -> np.ndarray:
        """``y − σ(η)``; with asymptotes ``(y − p) p′ / (p (1 − p))``, ``p′ = (u − g) σ(η)(1 − σ(η))``."""
        if not has_asymptotes(params):
            return y - sigmoid(eta)
        prob, miss = self._both_probabilities(eta, **params)
        return (y * miss - (1.0 - y) * prob) * self._slope(eta, **params) / (prob * miss)

    def information_weight(self, eta: Any, **params: Any) -> np.ndarray:
        """``σ(η) (1 − σ(η))``; with asymptotes ``p′² / (p (1 − p))``.

        A floor takes information from the bottom of the ability range, a ceiling from the top.
        """
        eta = np.asarray(eta, dtype=float)
        if not has_asymptotes(params):
            prob = sigmoid(eta)
            return prob * (1.0 - prob)
        prob, miss = self._both_probabilities(eta, **params)
        return self._slope(eta, **params) ** 2 / (prob * miss)

    def _both_probabilities(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """``p`` and ``1 − p``, the latter as ``(1 − u) + (u − g) σ(−η)``.

        Computing ``1 − p`` as a difference gives 0 where ``u = 1`` and ``σ(η)`` rounds to
        one (``η ≳ 37``), and then ``0 / 0`` in the ratios above; ``η`` is held to ±700,
        where ``σ`` is 0 or 1 to double precision anyway, so neither term underflows.
        """
        eta = np.clip(np.asarray(eta, dtype=float), -700.0, 700.0)
        floor, ceiling = asymptotes(params)
        prob = floor + (ceiling - floor) * sigmoid(eta)
        return prob, (1.0 - ceiling) + (ceiling - floor) * sigmoid(-eta)

    def _slope(self, eta: np.ndarray, **params: Any) -> np.ndarray:
        """``∂p/∂η = (u − g) σ(η) σ(−η)``."""
        floor, ceiling = asymptotes(params)
        eta = np.clip(np.asarray(eta, dtype=float), -700.0, 700.0)
        return (ceiling - floor) * sigmoid(eta) * sigmoid(-eta)

    def item_summaries(self, intercept: np.ndarray, **params: Any) -> dict[str, np.ndarray]:
        """``floor`` and ``ceiling`` of the items that have them (NaN for the others; none for the 2PL).

        A fit's 2PL items have a floor of exactly 0 and a ceiling of exactly 1 in every draw (a
        4PL item's ceiling is exactly 1 only in the draws that drew it uncapped).
        """
        out = {}
        for key, neutral in (("floor", 0.0), ("ceiling", 1.0)):
            if key in params:
                values = np.broadcast_to(np.asarray(params[key], dtype=float), np.shape(intercept))
                without = (values == neutral).all(axis=0)
                out[key] = np.where(without, np.nan, values)
        return out

    def draw(
        self,
        eta: np.ndarray,
        rng: np.random.Generator,
        size: tuple[int, ...] | None = None,
        **params: Any,
    ) -> np.ndarray:
        """``v < P(y = 1)`` for uniforms ``v``, as int8."""
        shape = np.shape(eta) if size is None else size
        return (rng.random(shape) < self.probability(eta, **params)).astype(np.int8)

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
        one-pass kernel of :mod:`benchmirt_bayes.response_types.fused_logit` (not JAX), each
        cell in float32; ``"fused64"``: the same pass in float64.

        Where the spec section ``prior`` gives benchmarks floors or ceilings
        (:mod:`benchmirt_bayes.response_types.asymptotes`), ``"fused"`` and ``"fused64"`` run the 2PL/3PL/4PL
        kernel of :mod:`benchmirt_bayes.response_types.fused_asymptotes` and ``"cells"``
        makes their items' cells a second observed variable ``<name>_asymptotic`` with
        ``P(y = 1) = g + (u − g) σ(η)``; ``"dense"`` is refused.
        """
        section = self.spec_section(prior)
        plan = AsymptoteItems.for_items(responses, section)
        if plan.any:
            if form == "dense":
                raise ValueError("binary items with floors or ceilings need likelihood 'fused' or 'cells'")
            if form in FUSED_FORMS:
                return self._fused_asymptotic_term(
                    name, ability, loading, intercept, responses, plan, section, float64=form == "fused64"
                )
            return self._asymptotic_term(name, ability, loading, intercept, responses, plan, section)
        observed = responses.observed
        if form in FUSED_FORMS:
            float64 = form == "fused64"
            return pm.CustomDist(
                name,
                ability,
                loading,
                intercept,
                logp=lambda value, th, a, d: fused_loglik(value, th, a, d, float64=float64),
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
            pm.modelcontext(None).add_coord("cell", np.arange(flat.size))
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

    def _asymptote_variables(
        self, responses: Any, plan: AsymptoteItems, section: Mapping[str, Any]
    ) -> tuple[pt.TensorVariable, pt.TensorVariable, pt.TensorVariable]:
        """The block's floors, ceilings and capped shares, added to the current model."""
        positions = pd.Index(np.asarray(pm.modelcontext(None).coords[ITEM_DIM])).get_indexer(responses.items)
        prior = AsymptotePrior(**{key: section[key] for key in self.prior_defaults})
        return asymptote_variables(plan, responses.benchmarks, prior, positions)

    def _fused_asymptotic_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: Any,
        plan: AsymptoteItems,
        section: Mapping[str, Any],
        *,
        float64: bool = False,
    ) -> pt.TensorVariable:
        """Every cell through the one-pass kernels of :mod:`~benchmirt_bayes.response_types.fused_asymptotes`.

        The observed ``name`` is over ``(llm, item)``; its prior-predictive draws draw each 4PL
        item's capped-or-not indicator first. ``float64``: every cell in float64 (else in
        float32, as the 2PL kernel's).
        """
        floor, ceiling, share = self._asymptote_variables(responses, plan, section)
        kind = np.select([plan.capped, plan.floored], [FOUR_PL, THREE_PL], TWO_PL).astype(np.int8)

        def random(th, a, d, g, u, s, rng, size):
            eta = linear_predictor(th, a, d)
            shape = (*(size or ()), th.shape[-2], a.shape[-2])
            return self.draw(eta, rng, shape, floor=g, ceiling=draw_ceiling(u, s, rng))  # s = 0: no cap

        return pm.CustomDist(
            name,
            ability,
            loading,
            intercept,
            floor,
            ceiling,
            share,
            logp=lambda value, th, a, d, g, u, s: fused_asymptotic_loglik(
                value, kind, th, a, d, g, u, s, float64=float64
            ),
            random=random,
            signature="(llm,dim),(item,dim),(item),(item),(item),(item)->(llm,item)",
            observed=encode_responses(responses.values, responses.observed),
            dims=(LLM_DIM, ITEM_DIM),
            dtype="int8",
        )

    def _asymptotic_term(
        self,
        name: str,
        ability: pt.TensorVariable,
        loading: pt.TensorVariable,
        intercept: pt.TensorVariable,
        responses: Any,
        plan: AsymptoteItems,
        section: Mapping[str, Any],
    ) -> pt.TensorVariable:
        """The 2PL items' cells as ``name`` and the floored items' cells as ``<name>_asymptotic``.

        The observed ``<name>_asymptotic`` is the 3PL (floor, ceiling one) on every floored
        cell; the potential ``<name>_capped_or_not`` adds, per 4PL item, the difference between
        its likelihood with the capped-or-not indicator summed out and its 3PL likelihood.
        """
        model = pm.modelcontext(None)
        floor, capped_ceiling, share = self._asymptote_variables(responses, plan, section)
        rows, cols, values = observed_cells(responses)
        eta = cell_eta(ability, loading, intercept, rows, cols)
        plain = ~plan.floored[cols]
        model.add_coord("cell", np.arange(int(plain.sum())))
        model.add_coord(f"{name}_asymptotic_cell", np.arange(int((~plain).sum())))
        pm.Bernoulli(
            name, logit_p=eta[np.flatnonzero(plain)], observed=values[plain].astype(np.int8), dims="cell"
        )
        floored = np.flatnonzero(~plain)
        if plan.capped.any():
            capped = np.flatnonzero(plan.capped[cols])
            items, codes = np.unique(cols[capped], return_inverse=True)
            y, e, g = values[capped], eta[capped], floor[cols[capped]]
            cell_terms = (
                self.log_likelihood(y, e, PYTENSOR, floor=g, ceiling=capped_ceiling[cols[capped]]),
                self.log_likelihood(y, e, PYTENSOR, floor=g),
            )
            with_cap, without = (pt.inc_subtensor(pt.zeros(items.size)[codes], t) for t in cell_terms)
            marginal, _ = capped_or_not(with_cap, without, share[items], PYTENSOR)
            pm.Potential(f"{name}_capped_or_not", pt.sum(marginal - without))
        return pm.CustomDist(
            f"{name}_asymptotic",
            eta[floored],
            floor[cols[floored]],
            logp=lambda value, e, g: self.log_likelihood(value, e, PYTENSOR, floor=g),
            random=lambda e, g, rng, size: self.draw(e, rng, size, floor=g),
            observed=values[~plain].astype(np.int8),
            dims=f"{name}_asymptotic_cell",
            dtype="int8",
        )

    def spec_problems(self, section: Mapping[str, Any]) -> list[str]:
        """What is wrong with the asymptote fields (see :mod:`~benchmirt_bayes.response_types.asymptotes`)."""
        return section_problems(section)


BINARY = BinaryLogistic()

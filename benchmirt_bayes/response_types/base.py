"""What every response type provides, and the formulas all of them share.

Every response type is one object with the same methods, in the manner of R ``mirt``'s
item classes: estimation, scoring, selection, simulation and reporting ask it for
expected scores, log-likelihoods, Fisher information and random draws, and never write
those formulas themselves. All types share the compensatory linear predictor

``η_ij = loading_i · ability_j + intercept_i``

(:func:`linear_predictor`, :func:`cell_linear_predictor`), and the item summaries
:func:`mdisc` (``‖loading_i‖``) and :func:`multidimensional_difficulty`
(``−intercept_i / ‖loading_i‖``) are defined here once.

Array methods take ``xp``, the array namespace (``numpy`` by default, ``jax.numpy`` for
the minibatch path and the streamed simulation, :data:`PYTENSOR` inside PyMC terms).
This module sits below the data layer (it imports nothing of the package but the axis
names), so the data layer's validation reads the types' declarations too.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import pytensor.tensor as pt
from scipy.special import expit

LikelihoodForm = Literal["fused", "fused64", "dense", "cells"]
FUSED_FORMS = ("fused", "fused64")
"""The likelihood forms that run a one-pass numba kernel (float32 or float64 cells)."""


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


class ResponseModel(ABC):
    """What every response type provides, as functions of the linear predictor ``η``.

    Types with item parameters beyond the loading and intercept (cutpoints, a precision,
    a number of trials) take them as keyword arrays whose last axes are the item's
    (``cutpoints (…, item, C)``, ``precision (…, item)``, ``n_trials (item,)``), with the
    same leading (draw) axes as ``η``'s items; :attr:`item_parameters` names them.
    """

    name: ClassVar[str]
    """The ``response_type`` value a data set declares for the type's items."""
    observed_name: ClassVar[str]
    """The observed variable of the type's cells in the PyMC model."""
    item_parameters: ClassVar[dict[str, tuple[str, int]]] = {}
    """Keyword of each item parameter the methods take → (name of the whole-item-axis array
    :meth:`layout_parameters` fills, number of axes after the item axis)."""
    optional_parameters: ClassVar[tuple[str, ...]] = ()
    """Keywords of :attr:`item_parameters` a fit may lack: the methods then use the type's
    defaults (the binary type's floor and ceiling)."""
    fixed_parameters: ClassVar[tuple[str, ...]] = ()
    """Item parameters that are data, not estimates (no sample axes)."""
    variables: ClassVar[tuple[str, ...]] = ()
    """Posterior variables the type's PyMC term adds (kept in every fit)."""
    draw_variables: ClassVar[tuple[str, ...]] = ()
    """The subset of :attr:`variables` :meth:`layout_parameters` reads (rotation-invariant)."""
    prior_defaults: ClassVar[dict[str, float]] = {}
    """The numeric fields of the type's spec section (named after the type) with their defaults."""
    spec_options: ClassVar[dict[str, Any]] = {}
    """The other fields of the type's spec section (text, tables) with their defaults."""
    whole_numbers: ClassVar[bool] = True
    """Whether responses are whole numbers ``0 … scale`` (else any value in ``[0, scale]``)."""
    scoring_rules: ClassVar[tuple[str, ...]] = ()
    """Held-out scoring rules reported per type besides the log score (``rps``, ``crps``,
    ``coverage_90``); the binary type is scored by the probability metrics instead."""
    simulated_benchmark: ClassVar[str | None] = None
    """The built-in benchmark that carries this type in the simulator's ``"mixed"`` set."""

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
        responses: Any,
        form: LikelihoodForm,
        prior: Mapping[str, float] | None = None,
    ) -> pt.TensorVariable:
        """Add the observed variable ``name`` for ``responses`` to the current PyMC model.

        ``responses`` is a :class:`~benchmirt_bayes.data.responses.ResponseMatrix` of the
        type's items only; ``loading`` and ``intercept`` are their rows. ``prior`` is the
        type's spec section (:attr:`prior_defaults` fill what it leaves out). The term reads
        the response values only through the observed variable's value (constants may come
        from the cells' positions and the item metadata, never from the values), so a model
        can take new responses of the same observed cells without being built again
        (:mod:`benchmirt_bayes.model.shared_data`).
        """

    def spec_section(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The type's spec section: ``given`` over :attr:`prior_defaults` and :attr:`spec_options`."""
        return {**self.prior_defaults, **self.spec_options, **(given or {})}

    def spec_problems(self, section: Mapping[str, Any]) -> list[str]:
        """What is wrong with the type's spec section beyond field names and types (empty: nothing)."""
        return []

    def scale(self, **params: Any) -> Any:
        """Highest possible response per item: divides scores onto ``[0, 1]``."""
        return 1.0

    # ------------------------------------------------------------------ data
    def item_metadata(
        self, largest: np.ndarray, categories: np.ndarray, trials: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str]:
        """``n_categories`` and ``n_trials`` of the type's items, and those that are wrong.

        ``largest`` is each item's largest observed value; ``categories`` and ``trials`` are
        the declared metadata (NaN where not given). Returns the completed categories and
        trials, a mask of the items whose metadata are invalid, and the message that
        introduces them. The default: 0 categories, 1 trial, nothing to check.
        """
        n = np.shape(largest)[0]
        return np.zeros(n), np.ones(n), np.zeros(n, dtype=bool), ""

    def score_scale(self, categories: np.ndarray, trials: np.ndarray) -> np.ndarray:
        """Highest possible response of each item from its metadata (1 unless overridden)."""
        return np.ones(np.shape(categories), dtype=float)

    def describe_item(self, categories: int, trials: int) -> str:
        """What an error message adds after the type's name for one item (``""``: nothing)."""
        return ""

    def item_summaries(self, intercept: np.ndarray, **params: Any) -> dict[str, np.ndarray]:
        """Summaries of the type's own item parameters, named, shaped as ``intercept``.

        ``intercept`` is ``(…, item)`` for the type's items (leading draw axes) and
        ``params`` its item parameters by keyword, as the other methods take them; the
        analyses summarise each over draws (``rank_items``). Empty for a type whose items
        are described by their loading and intercept alone.
        """
        return {}

    # ---------------------------------------------------------------- layout
    def layout_parameters(
        self, layout: Any, columns: np.ndarray, source: Mapping[str, Any] | None
    ) -> dict[str, np.ndarray]:
        """The type's item parameters over the whole item axis of ``layout``.

        ``columns`` are the type's item columns; ``source`` maps the names in
        :attr:`draw_variables` to posterior-shaped arrays (leading sample axes). Entries
        outside ``columns`` are neutral fill. Empty for a type without item parameters.
        """
        return {}

    # ------------------------------------------------------------ simulation
    def simulation_metadata(self, n_items: int) -> tuple[np.ndarray, np.ndarray]:
        """``n_categories`` and ``n_trials`` of ``n_items`` simulated items of this type."""
        return np.zeros(n_items, dtype=np.int64), np.ones(n_items, dtype=np.int64)

    def simulate_parameters(
        self, layout: Any, columns: np.ndarray, rng: np.random.Generator
    ) -> dict[str, np.ndarray]:
        """True values of :attr:`draw_variables` for simulated items (empty: none)."""
        return {}

    def truth_variables(
        self, layout: Any, items: np.ndarray, columns: np.ndarray, truth: Mapping[str, np.ndarray]
    ) -> tuple[dict[str, tuple], dict[str, Any]]:
        """The simulated truth of the type's parameters as Dataset variables and coords."""
        return {}, {}

    @abstractmethod
    def log_likelihood_moments(self, eta: Any, **params: Any) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of ``log p(y | η)`` when ``y`` is drawn from the model itself.

        The standardised log-likelihood person-fit statistic ``l_z`` needs them.
        """

    def information(self, eta: np.ndarray, loading: np.ndarray, **params: Any) -> np.ndarray:
        """Fisher information matrices ``w(η) a aᵀ``, shape ``(…, K, K)`` (``eta`` and ``loading`` paired)."""
        return information_matrix(self.information_weight(eta, **params), loading)


# ------------------------------------------------------------ shared helpers
def observed_cells(responses: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Row, column and value of every observed cell of ``responses``."""
    rows, cols = np.nonzero(responses.observed)
    return rows, cols, responses.values[rows, cols]


def cell_eta(
    ability: pt.TensorVariable,
    loading: pt.TensorVariable,
    intercept: pt.TensorVariable,
    rows: np.ndarray,
    cols: np.ndarray,
) -> pt.TensorVariable:
    """``η`` of the observed cells only (no whole-matrix product)."""
    return cell_linear_predictor(ability[rows], loading[cols], intercept[cols])


def sigmoid(x: Any, xp: Any = np) -> Any:
    """The logistic function ``σ(x) = 1 / (1 + e^{−x})`` in the namespace ``xp``.

    The one place it is written (the fused kernel has its own, inside its numba loop):
    SciPy's ``expit`` for NumPy, PyTensor's ``sigmoid`` inside model graphs, and the plain
    formula for JAX.
    """
    if xp is np:
        return expit(x)
    if xp is PYTENSOR:
        return pt.sigmoid(x)
    return 1.0 / (1.0 + xp.exp(-x))


def logit(p: Any) -> Any:
    """``log(p / (1 − p))``: the inverse of :func:`sigmoid` (NumPy)."""
    return np.log(p) - np.log1p(-p)


def softplus(x: Any, xp: Any = np) -> Any:
    """``log(1 + e^x)``, stably, in the namespace ``xp`` (PyTensor's fusable ``softplus`` in graphs)."""
    return xp.logaddexp(0.0, x)


def gammaln_of(xp: Any) -> Any:
    """``log Γ`` of the namespace ``xp``."""
    if xp is np:
        from scipy.special import gammaln

        return gammaln
    if xp is PYTENSOR:
        return pt.gammaln
    from jax.scipy.special import gammaln

    return gammaln


def discrete_moments(prob: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance of ``log P(y)`` over categories with probabilities ``prob`` (last axis)."""
    with np.errstate(divide="ignore"):
        logp = np.where(prob > 0, np.log(np.where(prob > 0, prob, 1.0)), 0.0)
    mean = (prob * logp).sum(axis=-1)
    return mean, np.maximum((prob * logp**2).sum(axis=-1) - mean**2, 0.0)


def local_codes(benchmarks: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Integer codes of ``benchmarks`` and the distinct names, in order of first appearance."""
    codes, names = pd.factorize(np.asarray(benchmarks))
    return codes, [str(n) for n in names]


class PyTensorNamespace:
    """The array functions the log-likelihoods need, for PyTensor graphs."""

    exp = staticmethod(pt.exp)
    log = staticmethod(pt.log)
    log1p = staticmethod(pt.log1p)
    expm1 = staticmethod(pt.expm1)
    where = staticmethod(pt.switch)
    equal = staticmethod(pt.eq)
    concatenate = staticmethod(pt.concatenate)

    @staticmethod
    def logaddexp(a: Any, b: Any) -> Any:
        """``log(e^a + e^b)``."""
        # softplus is PyTensor's stable, fusable log(1 + e^b) (a is always 0 here)
        return pt.softplus(b) if np.isscalar(a) and a == 0 else pt.logaddexp(a, b)


PYTENSOR = PyTensorNamespace()


def required_variable(source: Mapping[str, Any] | None, name: str) -> np.ndarray:
    """``source[name]`` as a float array, or a clear error when the fit does not hold it."""
    if source is None or name not in source:
        raise KeyError(f"the item parameters need posterior variable {name!r}, which the fit does not hold")
    return np.asarray(source[name], dtype=float)

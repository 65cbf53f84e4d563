"""`ResponseLayout`: which response model answers for which item columns.

A data set may mix items of every registered response type. Everything downstream of a
fit (prediction, scoring, information, simulation) works on whole ``(llm, item)`` arrays of
the linear predictor ``η``; the layout splits the item axis by response type, hands each
part to its :class:`~benchmirt_bayes.response_types.base.ResponseModel` with that type's
item parameters, and puts the results back in item order. For data of the default (0/1)
type only, without floors or ceilings, it calls that model on the whole array.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmirt_bayes.data.responses import ResponseMatrix, score_scale
from benchmirt_bayes.response_types import (
    DEFAULT_TYPE,
    RESPONSE_MODELS,
    response_model,
    type_columns,
    whole_numbers,
)

DEFAULT_MODEL = response_model(DEFAULT_TYPE)
ItemParameters = dict[str, np.ndarray]
"""Item parameters of the types present over the *whole* item axis, by the names their
types declare (:attr:`~benchmirt_bayes.response_types.base.ResponseModel.item_parameters`),
e.g. cutpoints ``(…, item, C)``; ``…`` are sample axes (none for a point estimate)."""
TRAILING_AXES = {key: axes for m in RESPONSE_MODELS.values() for key, axes in m.item_parameters.values()}
"""Axes after the item axis of every item-parameter array."""
FIXED_PARAMETERS = tuple(key for m in RESPONSE_MODELS.values() for key in m.fixed_parameters)
"""Item parameters that are data (no sample axes)."""


@dataclass(frozen=True)
class ResponseLayout:
    """Response type and fixed item data of every item column.

    Attributes
    ----------
    types
        Response type per item.
    n_categories, n_trials
        Item metadata the types read (categories, tries) per item.
    benchmarks
        Benchmark per item (some types share parameters within a benchmark).

    """

    types: np.ndarray
    n_categories: np.ndarray
    n_trials: np.ndarray
    benchmarks: np.ndarray

    @classmethod
    def from_responses(cls, responses: ResponseMatrix) -> ResponseLayout:
        """The layout of a response matrix."""
        return cls(
            np.asarray(responses.response_types, dtype=object),
            responses.n_categories,
            responses.n_trials,
            np.asarray(responses.benchmarks),
        )

    @classmethod
    def binary(cls, n_items: int) -> ResponseLayout:
        """The layout of ``n_items`` items of the default (0/1) type."""
        return cls(
            np.full(n_items, DEFAULT_TYPE, dtype=object),
            np.full(n_items, 2),
            np.ones(n_items, dtype=np.int64),
            np.full(n_items, "", dtype=object),
        )

    @property
    def is_binary(self) -> bool:
        """Whether every item is of the default (0/1) type."""
        return bool(np.all(self.types == DEFAULT_TYPE))

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """Item columns of each response type present."""
        return type_columns(self.types)

    @property
    def score_scale(self) -> np.ndarray:
        """Highest possible response per item (each type's own scale)."""
        return score_scale(self.types, self.n_categories, self.n_trials)

    @property
    def whole_numbers(self) -> np.ndarray:
        """Whether each item's responses are whole numbers (its type's declaration)."""
        return whole_numbers(self.types)

    def take(self, columns: np.ndarray) -> ResponseLayout:
        """The layout of a subset of item columns."""
        return ResponseLayout(
            self.types[columns], self.n_categories[columns], self.n_trials[columns], self.benchmarks[columns]
        )

    # ------------------------------------------------------------ parameters
    def parameters(self, source: Mapping[str, Any] | None = None) -> ItemParameters:
        """Item parameters over the whole item axis from posterior-shaped arrays.

        ``source`` maps variable names to arrays (or DataArrays) whose last axes are the
        variable's own and whose leading axes are sample axes (none for a point estimate);
        each type present reads its own (its ``draw_variables``). Empty when no type
        present has item parameters beyond the loading and intercept.
        """
        params: ItemParameters = {}
        for name, columns in self.columns.items():
            params.update(response_model(name).layout_parameters(self, columns, source))
        return params

    @staticmethod
    def at_sample(params: ItemParameters, index: int | np.ndarray) -> ItemParameters:
        """The parameters of one sample (or samples): index the first axis of the sampled arrays."""
        return {key: (value if key in FIXED_PARAMETERS else value[index]) for key, value in params.items()}

    @staticmethod
    def take_parameters(params: ItemParameters, columns: np.ndarray) -> ItemParameters:
        """The parameters of a subset of item columns."""
        out = {}
        for key, value in params.items():
            trailing = TRAILING_AXES[key]
            out[key] = value[..., columns, :] if trailing else value[..., columns]
        return out

    # --------------------------------------------------------------- methods
    def expected_score(
        self, eta: np.ndarray, params: ItemParameters, *, scaled: bool = True, expand: int = 1
    ) -> np.ndarray:
        """Expected response per cell; on ``[0, 1]`` (divided by the item's scale) when ``scaled``.

        ``eta`` is ``(…, item)``; ``expand`` is the number of axes of ``eta`` between the
        parameters' sample axes and the item axis (1: ``(sample, llm, item)``).
        """
        if self.is_binary and not params:
            return DEFAULT_MODEL.expected_score(eta)
        out = self._apply(lambda model, e, p, _: model.expected_score(e, **p), eta, params, None, expand)
        return out / self.score_scale if scaled else out

    def variance(
        self, eta: np.ndarray, params: ItemParameters, *, scaled: bool = True, expand: int = 1
    ) -> np.ndarray:
        """Variance of the response per cell; of the score on ``[0, 1]`` when ``scaled``."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.variance(eta)
        out = self._apply(lambda model, e, p, _: model.variance(e, **p), eta, params, None, expand)
        return out / self.score_scale**2 if scaled else out

    def log_likelihood(
        self, y: np.ndarray, eta: np.ndarray, params: ItemParameters, *, expand: int = 1
    ) -> np.ndarray:
        """Log-likelihood per cell (``y`` broadcast against ``η``; unobserved cells give NaN)."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.log_likelihood(y, eta)
        y = np.asarray(y, dtype=float)
        observed = ~np.isnan(y)
        filled = np.where(observed, y, 0.0)
        out = self._apply(
            lambda model, e, p, yy: model.log_likelihood(yy, e, **p), eta, params, filled, expand
        )
        return np.where(observed, out, np.nan)

    def log_likelihood_moments(
        self, eta: np.ndarray, params: ItemParameters, *, expand: int = 1
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance of the log-likelihood per cell under the model (person fit)."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.log_likelihood_moments(eta)
        return self._apply(
            lambda model, e, p, _: model.log_likelihood_moments(e, **p), eta, params, None, expand, outputs=2
        )

    def score_residual(
        self, y: np.ndarray, eta: np.ndarray, params: ItemParameters, *, expand: int = 1
    ) -> np.ndarray:
        """``∂ log p / ∂η`` per cell."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.score_residual(y, eta)
        filled = np.nan_to_num(np.asarray(y, dtype=float))
        return self._apply(
            lambda model, e, p, yy: model.score_residual(yy, e, **p), eta, params, filled, expand
        )

    def information_weight(self, eta: np.ndarray, params: ItemParameters, *, expand: int = 1) -> np.ndarray:
        """Fisher information of ``η`` per cell."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.information_weight(eta)
        return self._apply(lambda model, e, p, _: model.information_weight(e, **p), eta, params, None, expand)

    def draw(
        self, eta: np.ndarray, params: ItemParameters, rng: np.random.Generator, *, expand: int = 1
    ) -> np.ndarray:
        """Random responses (float array) given ``η``."""
        if self.is_binary and not params:
            return DEFAULT_MODEL.draw(eta, rng).astype(float)
        return self._apply(lambda model, e, p, _: model.draw(e, rng, **p), eta, params, None, expand)

    def item_summaries(self, intercept: np.ndarray, params: ItemParameters) -> dict[str, np.ndarray]:
        """Each type's own item summaries over the whole item axis (NaN for other types' items).

        ``intercept`` is ``(…, item)`` with the parameters' sample axes in front (none for a
        point estimate); see :meth:`~benchmirt_bayes.response_types.base.ResponseModel.item_summaries`.
        """
        out: dict[str, np.ndarray] = {}
        intercept = np.asarray(intercept, dtype=float)
        for name, cols in self.columns.items():
            model = response_model(name)
            arguments = {
                keyword: params[key][..., cols, :] if trailing else params[key][..., cols]
                for keyword, (key, trailing) in model.item_parameters.items()
                if key in params or keyword not in model.optional_parameters
            }
            for key, values in model.item_summaries(intercept[..., cols], **arguments).items():
                out.setdefault(key, np.full(intercept.shape, np.nan))[..., cols] = values
        return out

    def _apply(
        self,
        method: Callable[[Any, np.ndarray, dict[str, np.ndarray], Any], np.ndarray],
        eta: np.ndarray,
        params: ItemParameters,
        y: np.ndarray | None,
        expand: int,
        outputs: int = 1,
    ) -> Any:
        """Call ``method`` on each type's columns; ``outputs > 1`` for methods returning a tuple."""
        eta = np.asarray(eta, dtype=float)
        shape = np.broadcast_shapes(eta.shape, () if y is None else np.shape(y))
        results = [np.empty(shape) for _ in range(outputs)]
        for name, cols in self.columns.items():
            part_y = None if y is None else np.broadcast_to(y, shape)[..., cols]
            part_eta = np.broadcast_to(eta, shape)[..., cols]
            arguments = {}
            model = response_model(name)
            for keyword, (key, trailing) in model.item_parameters.items():
                if key not in params and keyword in model.optional_parameters:
                    continue
                value = params[key]
                value = value[..., cols, :] if trailing else value[..., cols]
                if key not in FIXED_PARAMETERS:
                    at = value.ndim - 1 - trailing
                    value = np.expand_dims(value, tuple(range(at, at + expand)))
                arguments[keyword] = value
            values = method(model, part_eta, arguments, part_y)
            for result, value in zip(results, values if outputs > 1 else (values,), strict=True):
                result[..., cols] = value
        return tuple(results) if outputs > 1 else results[0]

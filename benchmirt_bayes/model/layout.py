"""`ResponseLayout`: which response model answers for which item columns.

A data set may mix binary, graded, continuous and count items. Everything downstream of a
fit (prediction, scoring, information, simulation) works on whole ``(llm, item)`` arrays of
the linear predictor ``η``; the layout splits the item axis by response type, hands each
part to its :class:`~benchmirt_bayes.model.response_models.ResponseModel` with that type's
item parameters, and puts the results back in item order. For all-binary data it calls
the binary model on the whole array, so the binary path is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.model.response_models import BINARY, response_model

TYPE_ORDER = ("binary", "graded", "continuous", "count")
ItemParameters = dict[str, np.ndarray]
"""Item parameters of the non-binary types over the *whole* item axis, by name:
``graded_cutpoints (…, item, C)`` (``+∞`` outside graded items' own cutpoints),
``continuous_cutpoints (…, item, 2)``, ``continuous_precision (…, item)`` and
``n_trials (item,)``; ``…`` are sample axes (none for a point estimate)."""
TYPE_ARGUMENTS: dict[str, dict[str, tuple[str, int]]] = {
    "binary": {},
    "graded": {"cutpoints": ("graded_cutpoints", 1)},
    "continuous": {"cutpoints": ("continuous_cutpoints", 1), "precision": ("continuous_precision", 0)},
    "count": {"n_trials": ("n_trials", 0)},
}
"""Per type, its model's keyword → (item-parameter name, axes after the item axis)."""
FIXED_PARAMETERS = ("n_trials",)
"""Item parameters that are data (no sample axes)."""


@dataclass(frozen=True)
class ResponseLayout:
    """Response type and fixed item data of every item column.

    Attributes
    ----------
    types
        Response type per item.
    n_categories, n_trials
        Categories of graded items and tries of count items (per item).
    benchmarks
        Benchmark per item (continuous items share parameters within a benchmark).

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
        """The layout of ``n_items`` binary items."""
        return cls(
            np.full(n_items, "binary", dtype=object),
            np.full(n_items, 2),
            np.ones(n_items, dtype=np.int64),
            np.full(n_items, "", dtype=object),
        )

    @property
    def is_binary(self) -> bool:
        """Whether every item is binary."""
        return bool(np.all(self.types == "binary"))

    @property
    def columns(self) -> dict[str, np.ndarray]:
        """Item columns of each response type present."""
        return {name: np.flatnonzero(self.types == name) for name in TYPE_ORDER if (self.types == name).any()}

    @property
    def score_scale(self) -> np.ndarray:
        """Highest possible response per item (1, ``K − 1`` or ``n``)."""
        return np.select(
            [self.types == "graded", self.types == "count"], [self.n_categories - 1, self.n_trials], 1
        ).astype(float)

    def take(self, columns: np.ndarray) -> ResponseLayout:
        """The layout of a subset of item columns."""
        return ResponseLayout(
            self.types[columns], self.n_categories[columns], self.n_trials[columns], self.benchmarks[columns]
        )

    # ------------------------------------------------------------ parameters
    def parameters(self, source: Mapping[str, Any] | None = None) -> ItemParameters:
        """Item parameters over the whole item axis from posterior-shaped arrays.

        ``source`` maps variable names to arrays (or DataArrays) whose last axes are the
        variable's own (``item_cutpoint``; ``continuous_benchmark`` and
        ``continuous_bound``) and whose leading axes are sample axes (none for a point
        estimate). Empty for all-binary data.
        """
        params: ItemParameters = {}
        columns = self.columns
        if "graded" in columns:
            cols = columns["graded"]
            flat = _required(source, "cutpoint")
            categories = self.n_categories[cols]
            width = int(categories.max()) - 1
            padded = np.full((*flat.shape[:-1], self.types.size, width), np.inf)
            rows = np.repeat(cols, categories - 1)
            position = np.concatenate([np.arange(k - 1) for k in categories]).astype(np.int64)
            padded[..., rows, position] = flat
            params["graded_cutpoints"] = padded
        if "continuous" in columns:
            cols = columns["continuous"]
            codes, _ = pd.factorize(self.benchmarks[cols])
            cutpoints = _required(source, "continuous_cutpoints")
            precision = _required(source, "continuous_precision")
            full_cuts = np.zeros((*cutpoints.shape[:-2], self.types.size, 2))
            full_precision = np.ones((*precision.shape[:-1], self.types.size))
            full_cuts[..., cols, :] = cutpoints[..., codes, :]
            full_precision[..., cols] = precision[..., codes]
            params["continuous_cutpoints"] = full_cuts
            params["continuous_precision"] = full_precision
        if "count" in columns:
            params["n_trials"] = self.n_trials.astype(float)
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
            trailing = 1 if key in ("graded_cutpoints", "continuous_cutpoints") else 0
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
        if self.is_binary:
            return BINARY.expected_score(eta)
        out = self._apply(lambda model, e, p, _: model.expected_score(e, **p), eta, params, None, expand)
        return out / self.score_scale if scaled else out

    def variance(
        self, eta: np.ndarray, params: ItemParameters, *, scaled: bool = True, expand: int = 1
    ) -> np.ndarray:
        """Variance of the response per cell; of the score on ``[0, 1]`` when ``scaled``."""
        if self.is_binary:
            return BINARY.variance(eta)
        out = self._apply(lambda model, e, p, _: model.variance(e, **p), eta, params, None, expand)
        return out / self.score_scale**2 if scaled else out

    def log_likelihood(
        self, y: np.ndarray, eta: np.ndarray, params: ItemParameters, *, expand: int = 1
    ) -> np.ndarray:
        """Log-likelihood per cell (``y`` broadcast against ``η``; unobserved cells give NaN)."""
        if self.is_binary:
            return BINARY.log_likelihood(y, eta)
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
        if self.is_binary:
            return BINARY.log_likelihood_moments(eta)
        return self._apply(
            lambda model, e, p, _: model.log_likelihood_moments(e, **p), eta, params, None, expand, outputs=2
        )

    def score_residual(
        self, y: np.ndarray, eta: np.ndarray, params: ItemParameters, *, expand: int = 1
    ) -> np.ndarray:
        """``∂ log p / ∂η`` per cell."""
        if self.is_binary:
            return BINARY.score_residual(y, eta)
        filled = np.nan_to_num(np.asarray(y, dtype=float))
        return self._apply(
            lambda model, e, p, yy: model.score_residual(yy, e, **p), eta, params, filled, expand
        )

    def information_weight(self, eta: np.ndarray, params: ItemParameters, *, expand: int = 1) -> np.ndarray:
        """Fisher information of ``η`` per cell."""
        if self.is_binary:
            return BINARY.information_weight(eta)
        return self._apply(lambda model, e, p, _: model.information_weight(e, **p), eta, params, None, expand)

    def draw(
        self, eta: np.ndarray, params: ItemParameters, rng: np.random.Generator, *, expand: int = 1
    ) -> np.ndarray:
        """Random responses (float array) given ``η``."""
        if self.is_binary:
            return BINARY.draw(eta, rng).astype(float)
        return self._apply(lambda model, e, p, _: model.draw(e, rng, **p), eta, params, None, expand)

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
            for keyword, (key, trailing) in TYPE_ARGUMENTS[name].items():
                value = params[key]
                value = value[..., cols, :] if trailing else value[..., cols]
                if key not in FIXED_PARAMETERS:
                    at = value.ndim - 1 - trailing
                    value = np.expand_dims(value, tuple(range(at, at + expand)))
                arguments[keyword] = value
            values = method(response_model(name), part_eta, arguments, part_y)
            for result, value in zip(results, values if outputs > 1 else (values,), strict=True):
                result[..., cols] = value
        return tuple(results) if outputs > 1 else results[0]


def _required(source: Mapping[str, Any] | None, name: str) -> np.ndarray:
    if source is None or name not in source:
        raise KeyError(f"the item parameters need posterior variable {name!r}, which the fit does not hold")
    return np.asarray(source[name], dtype=float)

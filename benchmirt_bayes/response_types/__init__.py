"""The response types: one module per type, and the registry everything else loops over.

A type declares, in its own module, its parameters, the values it accepts, its score
scale, its scoring rules, its simulation draw, its information, its log-likelihood
(NumPy, JAX, PyMC term, fused kernel where one exists) and its spec section
(:class:`~benchmirt_bayes.response_types.base.ResponseModel`). Validation, layout, spec
defaults, the variables a fit keeps, held-out scoring and the simulator read the
registry below; adding a type is its module, one line here, its spec section and its
tests (ARCHITECTURE.md, "Adding a response type").
"""

from __future__ import annotations

import numpy as np

from benchmirt_bayes.response_types.base import ResponseModel
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.response_types.continuous import CONTINUOUS
from benchmirt_bayes.response_types.count import COUNT
from benchmirt_bayes.response_types.graded import GRADED

RESPONSE_MODELS: dict[str, ResponseModel] = {
    model.name: model for model in (BINARY, GRADED, CONTINUOUS, COUNT)
}
"""Every response type by name, in a fixed order (the ``response_type`` values a data set may declare)."""
DEFAULT_TYPE = BINARY.name
"""The type of every item of a plain 0/1 matrix."""
RESPONSE_TYPES = tuple(RESPONSE_MODELS)
"""The names of the registered types, in registry order."""


def response_model(name: str = DEFAULT_TYPE) -> ResponseModel:
    """The response model registered under ``name``."""
    try:
        return RESPONSE_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown response type {name!r}; available: {sorted(RESPONSE_MODELS)}") from None


def type_columns(types: np.ndarray) -> dict[str, np.ndarray]:
    """Item columns of each registered type present in ``types``, in registry order."""
    types = np.asarray(types)
    return {name: np.flatnonzero(types == name) for name in RESPONSE_MODELS if (types == name).any()}


def whole_numbers(types: np.ndarray) -> np.ndarray:
    """Whether each item's responses are whole numbers, from its type's declaration."""
    return np.array([RESPONSE_MODELS[name].whole_numbers for name in np.asarray(types)], dtype=bool)


def type_variables() -> tuple[str, ...]:
    """Posterior variables the registered types' PyMC terms add, in registry order."""
    return tuple(v for model in RESPONSE_MODELS.values() for v in model.variables)


def draw_variables() -> tuple[str, ...]:
    """Item-parameter variables the per-draw core reads for the registered types."""
    return tuple(v for model in RESPONSE_MODELS.values() for v in model.draw_variables)


__all__ = [
    "DEFAULT_TYPE",
    "RESPONSE_MODELS",
    "RESPONSE_TYPES",
    "ResponseModel",
    "draw_variables",
    "response_model",
    "type_columns",
    "type_variables",
    "whole_numbers",
]

"""A built model whose observed data can be swapped without compiling it again.

:func:`~benchmirt_bayes.model.pymc_model.build_model` writes the responses into the graph as
constants, so every new data set is a new graph and compiles afresh (numba's disk cache
keys on the constants too). Repeated fits of data of one shape, such as the replications of
simulation-based calibration, build the model once, turn its observations into shared
variables here, compile once, and set each data set's observations into the same graph.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pymc as pm
import pytensor
from pytensor.compile.sharedvalue import SharedVariable
from pytensor.graph.traversal import graph_inputs

SHARED_SUFFIX = "_data"
"""Name of an observed variable's shared data: ``<observed name>_data``."""


def observed_values(model: pm.Model) -> dict[str, np.ndarray]:
    """Each observed variable's data as the model holds it (its encoding, e.g. int8 with -1)."""
    out = {}
    for rv in model.observed_RVs:
        holder = _shared_holder(model, rv)
        out[rv.name] = np.asarray(holder.get_value() if holder is not None else model.rvs_to_values[rv].data)
    return out


def _shared_holder(model: pm.Model, rv: Any) -> SharedVariable | None:
    """The shared variable holding an observed variable's data (PyMC may wrap it), if any."""
    found = [v for v in graph_inputs([model.rvs_to_values[rv]]) if isinstance(v, SharedVariable)]
    return found[0] if len(found) == 1 else None


def with_shared_observations(model: pm.Model) -> pm.Model:
    """The same model with each observed variable's data held in a shared variable.

    ``model`` is :func:`~benchmirt_bayes.model.pymc_model.build_model` of ``responses``. The
    shared variables are named ``<observed name>_data`` (nutpie's ``with_data`` keys). Set
    new responses with :func:`set_observations`: the same items, LLMs and observed cells
    (the terms gather cells by fixed positions), the values of another data set.
    """
    shared = {
        name: pytensor.shared(values, name=name + SHARED_SUFFIX)
        for name, values in observed_values(model).items()
    }
    return pm.observe(model, shared)


def shared_observations(model: pm.Model) -> dict[str, np.ndarray]:
    """Current values of the model's shared observations, by shared-variable name (nutpie's keys)."""
    holders = (_shared_holder(model, rv) for rv in model.observed_RVs)
    return {holder.name: holder.get_value() for holder in holders if holder is not None}


def set_observations(model: pm.Model, values: Mapping[str, np.ndarray]) -> None:
    """Set new data into a model from :func:`with_shared_observations` (same shapes and dtypes).

    Raises
    ------
    ValueError
        When a name is not an observed variable with shared data, or a shape or dtype differs.

    """
    holders = {rv.name: _shared_holder(model, rv) for rv in model.observed_RVs}
    holders = {name: holder for name, holder in holders.items() if holder is not None}
    for name, value in values.items():
        if name not in holders:
            raise ValueError(f"{name!r} is not an observed variable with shared data; have {sorted(holders)}")
        current = holders[name].get_value()
        value = np.asarray(value)
        if value.shape != current.shape or value.dtype != current.dtype:
            raise ValueError(
                f"{name}: new data {value.shape} {value.dtype} differ from the model's "
                f"{current.shape} {current.dtype}"
            )
        holders[name].set_value(value)

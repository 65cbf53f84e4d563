"""Ceilings after sampling: each 4PL item's capped-or-not indicator drawn back, draw by draw.

The model sums the indicator out (:mod:`benchmirt_bayes.response_types.asymptotes`); every
analysis reads a posterior ``ceiling``. Per draw, an item is capped with its conditional
probability given the draw's parameters and the item's responses,
``σ(logit capped_share_b + ℓ_i(u_i) − ℓ_i(1))``; its ``ceiling`` is then ``capped_ceiling``
or one. The probability itself is kept as ``capped_probability`` (its posterior mean is the
Rao-Blackwellised probability that the item is capped). A point estimate (one draw: MAP)
gets the ceiling the indicator averages to, ``p u + (1 − p)``, which gives the same
response probabilities as the indicator summed out.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.dims import ITEM_DIM, LLM_DIM
from benchmirt_bayes.response_types.asymptotes import CEILING_ITEM_DIM, capped_or_not
from benchmirt_bayes.response_types.base import sigmoid
from benchmirt_bayes.response_types.binary import BINARY

INDICATOR_STREAM = 4242
"""Second entry of the indicator draws' seed sequence ``[seed, INDICATOR_STREAM]``."""

CELLS_PER_CHUNK = 4_000_000
"""Draws × LLMs × 4PL items evaluated at once (bounds the memory of the indicator draws)."""


def draw_ceilings(posterior: xr.Dataset, responses: Any, seed: int) -> xr.Dataset:
    """``posterior`` with ``ceiling`` (every item) and ``capped_probability`` (4PL items).

    A posterior without floors is returned as it is; one with floors but no 4PL item gets a
    ceiling of one everywhere. ``responses`` are the fitted data, ``seed`` the fit's seed (the
    indicators are drawn from ``[seed, INDICATOR_STREAM]``).
    """
    if "floor" not in posterior or "ceiling" in posterior:
        return posterior
    ceiling = xr.ones_like(posterior["floor"])
    if "capped_ceiling" not in posterior:
        return posterior.assign(ceiling=ceiling)
    items = posterior[CEILING_ITEM_DIM].values.astype(str)
    columns = pd.Index(responses.items.astype(str)).get_indexer(items)
    benchmarks = np.asarray(responses.benchmarks, dtype=str)[columns]
    stacked = ("chain", "draw")
    n_chain, n_draw = posterior.sizes["chain"], posterior.sizes["draw"]

    def flat(name: str, order: tuple[str, ...], **sel: Any) -> np.ndarray:
        values = posterior[name].sel(**sel).transpose(*stacked, *order).values
        return values.reshape(n_chain * n_draw, *values.shape[2:])

    ability = flat("ability", (LLM_DIM, "dimension"), llm=responses.llms.astype(str))
    loading = flat("loading", (ITEM_DIM, "dimension"), item=items)
    intercept = flat("intercept", (ITEM_DIM,), item=items)
    floor = flat("floor", (ITEM_DIM,), item=items)
    capped = flat("capped_ceiling", (CEILING_ITEM_DIM,), **{CEILING_ITEM_DIM: items})
    share = flat("capped_share", ("ceiling_benchmark",), ceiling_benchmark=benchmarks)
    observed = responses.observed[:, columns]
    values = np.where(observed, responses.values[:, columns], 0.0)
    log_odds = np.empty_like(capped)
    chunk = max(1, CELLS_PER_CHUNK // max(1, observed.size))
    for start in range(0, log_odds.shape[0], chunk):
        part = slice(start, start + chunk)
        eta = np.einsum("snd,smd->snm", ability[part], loading[part]) + intercept[part][:, None, :]
        g = floor[part][:, None, :]
        sums = [
            np.where(observed, BINARY.log_likelihood(values, eta, floor=g, **cap), 0.0).sum(axis=1)
            for cap in ({"ceiling": capped[part][:, None, :]}, {})
        ]
        _, log_odds[part] = capped_or_not(*sums, share[part])
    probability = sigmoid(log_odds)
    if probability.shape[0] == 1:  # a point estimate (MAP): the ceiling the indicator averages to
        drawn = probability * capped + (1.0 - probability)
    else:
        indicator = np.random.default_rng([seed, INDICATOR_STREAM]).random(probability.shape) < probability
        drawn = np.where(indicator, capped, 1.0)
    shape = (n_chain, n_draw, columns.size)
    ceiling = ceiling.transpose(*stacked, ITEM_DIM).copy()
    position = ceiling.get_index(ITEM_DIM).get_indexer(items)
    ceiling.values[:, :, position] = drawn.reshape(shape)
    dims = (*stacked, CEILING_ITEM_DIM)
    return posterior.assign(
        ceiling=ceiling,
        capped_probability=(dims, probability.reshape(shape)),
    )

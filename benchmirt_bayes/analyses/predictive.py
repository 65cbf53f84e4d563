"""Posterior predictions of group mean scores, on thinned draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.response_types.base import linear_predictor


def predicted_group_scores(
    posterior: xr.DataTree, *, by: str = "benchmark", n_draws: int = 100, seed: int = 0
) -> xr.Dataset:
    """Observed and posterior-predicted mean score per LLM and item group.

    The prediction is the expected share correct (the expected score on ``[0, 1]`` for
    graded, continuous and count items) over the *observed* cells of each (LLM, group),
    so it is comparable with the observed mean.

    Returns
    -------
    Dataset
        ``observed (llm, group)`` and ``predicted (sample_index, llm, group)``.

    """
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    responses, layout = draws.responses, draws.layout
    groups = responses.data[by].values
    codes, names = pd.factorize(groups)
    observed = responses.observed
    values = np.where(observed, responses.scaled_values, 0.0)
    n_groups = len(names)
    counts = np.zeros((responses.n_llms, n_groups))
    sums = np.zeros_like(counts)
    for g in range(n_groups):
        cols = codes == g
        counts[:, g] = observed[:, cols].sum(axis=1)
        sums[:, g] = values[:, cols].sum(axis=1)
    predicted = np.zeros((len(draws), responses.n_llms, n_groups))
    for start in range(0, len(draws), 10):
        chunk = slice(start, start + 10)
        eta = linear_predictor(draws.ability[chunk], draws.loading[chunk], draws.intercept[chunk])
        params = layout.at_sample(draws.params, chunk)
        probs = layout.expected_score(eta, params) * observed[None]
        for g in range(n_groups):
            predicted[start : start + probs.shape[0], :, g] = probs[:, :, codes == g].sum(axis=2)
    with np.errstate(invalid="ignore", divide="ignore"):
        observed_mean = sums / counts
        predicted = predicted / counts[None]
    coords = {"llm": responses.llms, "group": list(map(str, names))}
    return xr.Dataset(
        {
            "observed": (("llm", "group"), observed_mean),
            "predicted": (("sample_index", "llm", "group"), predicted),
        },
        coords=coords,
        attrs={"by": by},
    )

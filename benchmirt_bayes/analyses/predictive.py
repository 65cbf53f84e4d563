"""Posterior predictions: cell probabilities and group mean scores, on thinned draws."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.model.layout import ItemParameters, ResponseLayout
from benchmirt_bayes.model.response_models import linear_predictor
from benchmirt_bayes.posterior import responses_from_tree, thinned_draws, type_parameters


class DrawCells:
    """One thinned posterior draw after another, as whole-matrix linear predictors.

    The per-draw loop that item fit, person fit, differential item functioning and the
    pointwise log-likelihood share: iterating gives ``(η (llm, item), item parameters)``
    for each draw, with the fit's :class:`ResponseLayout` to turn them into expected
    scores, variances, log-likelihoods and replicated responses.

    Parameters
    ----------
    posterior
        A fit.
    n_draws
        Draws used (seeded subsample; all when the fit has fewer).
    seed
        Seed of the subsample.
    responses
        The data the fit was made on (default: its ``observed_data``).

    """

    def __init__(
        self,
        posterior: xr.DataTree,
        *,
        n_draws: int = 100,
        seed: int = 0,
        responses: ResponseMatrix | None = None,
    ) -> None:
        self.responses = responses if responses is not None else responses_from_tree(posterior)
        self.layout = ResponseLayout.from_responses(self.responses)
        draws = thinned_draws(posterior, n_draws, seed=seed)
        self.params = type_parameters(self.layout, draws)
        llms = self.responses.llms.astype(str)
        items = self.responses.items.astype(str)
        self.ability = draws["ability"].sel(llm=llms).transpose("sample_index", "llm", "dimension").values
        self.loading = draws["loading"].sel(item=items).transpose("sample_index", "item", "dimension").values
        self.intercept = draws["intercept"].sel(item=items).transpose("sample_index", "item").values

    def __len__(self) -> int:
        return self.ability.shape[0]

    def __iter__(self) -> Iterator[tuple[np.ndarray, ItemParameters]]:
        for s in range(len(self)):
            eta = linear_predictor(self.ability[s], self.loading[s], self.intercept[s])
            yield eta, self.layout.at_sample(self.params, s)


def cell_probabilities(draws: xr.Dataset, layout: ResponseLayout | None = None) -> np.ndarray:
    """``(sample, llm, item)`` expected scores on ``[0, 1]`` for the given draws.

    For binary items the probability of a correct answer; for graded, continuous and
    count items (``layout`` from the fit's data) the expected score divided by the item's
    highest possible score.
    """
    ability = draws["ability"].transpose("sample_index", "llm", "dimension").values
    loading = draws["loading"].transpose("sample_index", "item", "dimension").values
    intercept = draws["intercept"].transpose("sample_index", "item").values
    eta = linear_predictor(ability, loading, intercept)
    if layout is None or layout.is_binary:
        return ResponseLayout.binary(eta.shape[-1]).expected_score(eta, {})
    return layout.expected_score(eta, type_parameters(layout, draws))


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
    responses = responses_from_tree(posterior)
    groups = responses.data[by].values
    codes, names = pd.factorize(groups)
    observed = responses.observed
    values = np.where(observed, responses.scaled_values, 0.0)
    layout = ResponseLayout.from_responses(responses)
    n_groups = len(names)
    counts = np.zeros((responses.n_llms, n_groups))
    sums = np.zeros_like(counts)
    for g in range(n_groups):
        cols = codes == g
        counts[:, g] = observed[:, cols].sum(axis=1)
        sums[:, g] = values[:, cols].sum(axis=1)
    draws = thinned_draws(posterior, n_draws, seed=seed)
    predicted = np.zeros((draws.sizes["sample_index"], responses.n_llms, n_groups))
    for start in range(0, draws.sizes["sample_index"], 10):
        chunk = draws.isel(sample_index=slice(start, start + 10))
        probs = cell_probabilities(chunk, layout) * observed[None]
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

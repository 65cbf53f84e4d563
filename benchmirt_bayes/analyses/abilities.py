"""The LLMs' abilities as a table: posterior mean, SD and interval per dimension (as R mirt's ``fscores``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.posterior import responses_from_tree
from benchmirt_bayes.summaries import CI_PROB, summarise_draws


def ability_table(posterior: xr.DataTree, *, ci_prob: float = CI_PROB) -> pd.DataFrame:
    """Each LLM's ability on each dimension with its posterior uncertainty.

    The Bayesian counterpart of R ``mirt``'s ``fscores(..., full.scores.SE = TRUE)``: the
    posterior mean is the EAP estimate and the posterior SD its standard error, here with
    item-parameter uncertainty integrated (every draw pairs abilities with that draw's
    items).

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior` (or :func:`fit_minibatch_advi`).
    ci_prob
        Probability mass of the equal-tailed interval.

    Returns
    -------
    DataFrame
        Long: index ``(llm, dimension)``, columns ``mean``, ``sd``, ``lower``, ``upper``,
        ``rank`` (1 = highest mean on that dimension) and ``n_answered`` (items the LLM has
        a response to). LLMs are ordered by their mean on the first dimension, highest
        first. ``table.xs("dim_1", level="dimension")`` gives one dimension;
        :meth:`LLMScore.ability_summary <benchmirt_bayes.LLMScore.ability_summary>` has the
        same layout for a scored LLM.

    Examples
    --------
    >>> table = ability_table(fit)  # doctest: +SKIP
    >>> table.head()  # doctest: +SKIP

    """
    ability = posterior["posterior"]["ability"]
    draws = ability.stack(sample_index=("chain", "draw")).transpose("sample_index", "llm", "dimension").values
    llms = ability["llm"].values.astype(str)
    dims = [str(d) for d in ability["dimension"].values]
    table = ability_frame(draws, llms, dims, ci_prob)
    table["rank"] = table.groupby(level="dimension")["mean"].rank(ascending=False, method="min").astype(int)
    if "observed_data" in posterior.children:
        responses = responses_from_tree(posterior)
        answered = pd.Series(responses.observed.sum(axis=1), index=responses.llms.astype(str))
        table["n_answered"] = answered.reindex(table.index.get_level_values("llm")).to_numpy()
    order = table.xs(dims[0], level="dimension")["mean"].sort_values(ascending=False).index
    return table.reindex(pd.MultiIndex.from_product([order, dims], names=["llm", "dimension"]))


def ability_frame(
    draws: np.ndarray, llms: Sequence[str], dims: Sequence[str], ci_prob: float
) -> pd.DataFrame:
    """Summary of ability draws ``(sample, llm, dimension)`` indexed by ``(llm, dimension)``."""
    summary = summarise_draws(np.asarray(draws), axis=0, ci_prob=ci_prob)
    index = pd.MultiIndex.from_product(
        [list(map(str, llms)), list(map(str, dims))], names=["llm", "dimension"]
    )
    return pd.DataFrame({key: value.ravel() for key, value in summary.items()}, index=index)

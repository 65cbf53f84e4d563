"""The LLMs' abilities as a table: posterior mean, SD and interval per dimension (as R mirt's ``fscores``)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.posterior import responses_from_tree
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws


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
        Index ``llm``; for every dimension ``d`` the columns ``d`` (posterior mean),
        ``d_sd``, ``d_lower``, ``d_upper`` and ``d_rank`` (1 = highest mean), then
        ``n_answered`` (items the LLM has a response to). Sorted by the first dimension,
        highest first.

    Examples
    --------
    >>> table = ability_table(fit)  # doctest: +SKIP
    >>> table.head()  # doctest: +SKIP

    """
    check_ci_prob(ci_prob)
    ability = posterior["posterior"]["ability"]
    draws = ability.stack(sample_index=("chain", "draw")).transpose("llm", "dimension", "sample_index").values
    llms = ability["llm"].values.astype(str)
    dims = [str(d) for d in ability["dimension"].values]
    columns: dict[str, np.ndarray] = {}
    for k, dim in enumerate(dims):
        summary = summarise_draws(draws[:, k, :], axis=1, ci_prob=ci_prob)
        mean = summary["mean"]
        columns[dim] = mean
        columns[f"{dim}_sd"] = summary["sd"]
        columns[f"{dim}_lower"] = summary["lower"]
        columns[f"{dim}_upper"] = summary["upper"]
        columns[f"{dim}_rank"] = pd.Series(mean).rank(ascending=False, method="min").to_numpy().astype(int)
    table = pd.DataFrame(columns, index=pd.Index(llms, name="llm"))
    if "observed_data" in posterior.children:
        responses = responses_from_tree(posterior)
        answered = pd.Series(responses.observed.sum(axis=1), index=responses.llms.astype(str))
        table["n_answered"] = answered.reindex(table.index).to_numpy()
    return table.sort_values(dims[0], ascending=False)

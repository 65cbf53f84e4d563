"""Probably mis-keyed items: ``miskeyed_items``.

A mis-keyed item (the answer key is wrong, or the scoring is reversed) is one that
discriminates against the direction of its benchmark (or subgroup): the LLMs that are
strong on that direction fail it. Per posterior draw, the direction is the mean loading of
the item's group without the item itself (so one reversed item cannot turn its group's
direction). Two views of the item along that direction:

* ``alignment``: the fitted loading projected on it. It is shrunk towards the group by the
  hierarchical prior, so a reversed item shows only part of its reversal here;
* ``slope``: the item's own discrimination along the direction, with the draw's abilities
  held fixed and a wide prior instead of the group's
  (:func:`~benchmirt_bayes.analyses.item_regression.item_coefficient` with the abilities
  projected on the direction as covariate), pooled over draws. This is what the ranking uses.

``p_against = P(slope < −margin)`` is the probability that the item works against its
group by at least ``margin`` (logits per ability SD), under a prior over items estimated
from all of them (:func:`~benchmirt_bayes.analyses.item_regression.probability_below`: one
item in thousands that lands far out by chance is shrunk, a few real reversals keep their
mass); the empirical check beside it is the item's success rate among the strongest
quarter of LLMs along the direction minus that among the weakest quarter.

In a fit where some benchmarks have ceilings (4PL), a wrong key or an ambiguous item can
also show as a ceiling credibly below one: the strongest LLMs fail it as often as mid-range
ones instead of more often than weak ones. Such items carry ``p_ceiling_below = P(u <
ceiling_below)`` (:func:`~benchmirt_bayes.analyses.asymptote_flags.asymptote_flags`).

Items are ranked by ``p_miskeyed``, the larger of ``p_against`` and ``p_ceiling_below`` (a lower
bound of the probability that either holds; ``p_against`` alone in fits without ceilings),
and flagged by the Bayesian FDR rule (``lfdr = 1 −`` that evidence), where the reversal
counts only when strong LLMs also succeed less than weak ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.asymptote_flags import DEFAULT_CEILING, asymptote_flags
from benchmirt_bayes.analyses.item_regression import (
    bayesian_fdr_selection,
    item_coefficient,
    pooled,
    probability_below,
)
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.response_types.base import mdisc
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws

DEFAULT_MARGIN = 0.25
"""Smallest reversed discrimination (logits per ability SD) that counts as working against."""


def miskeyed_items(
    posterior: xr.DataTree,
    *,
    by: str = "subgroup",
    margin: float = DEFAULT_MARGIN,
    fdr: float = 0.1,
    ceiling_below: float = DEFAULT_CEILING,
    n_draws: int = 50,
    seed: int = 0,
    ci_prob: float = CI_PROB,
) -> pd.DataFrame:
    """Items that discriminate against their group while strong LLMs fail them.

    Parameters
    ----------
    posterior
        A fit.
    by
        ``"subgroup"`` (default: the direction of the item's subgroup, so that e.g. the
        benign prompts of a jailbreak benchmark, which reward compliance, are not measured
        against its harmful prompts) or ``"benchmark"``.
    margin
        A slope below ``−margin`` counts as working against the group.
    fdr
        Level of the Bayesian false-discovery control. Measured at the default 0.1 on ADVI
        fits at the built-in scale (``benchmarks/audit_calibration.py``): no item flagged
        on a clean simulation; with 40 flipped keys, 36 of the 40 top-ranked items are
        flipped ones, and 36 of the 41 flagged (a false-discovery proportion of 0.12).
    ceiling_below
        In fits with ceilings, a ceiling below this counts as a low ceiling.
    n_draws, seed
        Posterior draws used and the seed that picks them.
    ci_prob
        Probability mass of the alignment's interval over draws.

    Returns
    -------
    DataFrame
        One row per item with at least two items in its group: ``item``, ``benchmark``,
        ``group``, ``alignment_mean``, ``alignment_sd``, ``alignment_lower``,
        ``alignment_upper`` (the item's loading projected on its group's direction, over
        draws), ``slope_mean`` and ``slope_sd`` (the item's own discrimination along its
        group), ``p_against``, ``strong_minus_weak`` (success rate
        of the strongest minus the weakest quarter of LLMs along the group direction),
        ``ceiling_mean`` and ``p_ceiling_below`` (NaN for items without a ceiling),
        ``p_miskeyed`` and ``flagged``. Sorted by ``p_miskeyed``, highest first.

    """
    if by not in ("subgroup", "benchmark"):
        raise ValueError(f"by must be 'subgroup' or 'benchmark', got {by!r}")
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    check_ci_prob(ci_prob)
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    responses, layout = draws.responses, draws.layout
    items = responses.items.astype(str)
    labels = responses.benchmarks.astype(str)
    if by == "subgroup":
        labels = np.char.add(np.char.add(labels, "/"), responses.subgroups.astype(str))
    groups = [np.flatnonzero(labels == g) for g in pd.unique(labels)]
    groups = [cols for cols in groups if cols.size >= 2]
    usable = np.zeros(items.size, dtype=bool)
    for cols in groups:
        usable[cols] = True
    observed = responses.observed
    y = np.where(observed, responses.values, 0.0)
    alignment = np.full((len(draws), items.size), np.nan)
    slopes, slope_variances = [], []
    mean_unit = np.zeros((items.size, draws.loading.shape[-1]))
    for s, (eta, params) in enumerate(draws):
        loading, ability = draws.loading[s], draws.ability[s]
        unit = np.zeros_like(loading)
        for cols in groups:
            others = (loading[cols].sum(axis=0) - loading[cols]) / (cols.size - 1)
            unit[cols] = others / np.maximum(mdisc(others), 1e-12)[:, None]
        alignment[s] = (loading * unit).sum(axis=-1)
        mean_unit += unit / len(draws)
        base = eta - ability @ loading.T  # the draw's intercepts (and type offsets) only
        slope, variance = item_coefficient(layout, y, base, params, observed, ability @ unit.T)
        slopes.append(slope)
        slope_variances.append(variance)
    slope, slope_sd = pooled(slopes, slope_variances)
    strong_minus_weak = _strong_minus_weak(responses, groups, draws.ability.mean(axis=0), mean_unit)
    kept = alignment[:, usable]
    table = pd.DataFrame(
        {
            "item": items[usable],
            "benchmark": responses.benchmarks.astype(str)[usable],
            "group": labels[usable],
            **summarise_draws(kept, ci_prob=ci_prob, prefix="alignment"),
            "slope_mean": slope[usable],
            "slope_sd": slope_sd[usable],
            "p_against": probability_below(slope[usable], slope_sd[usable], -margin)[0],
            "strong_minus_weak": strong_minus_weak[usable],
        }
    )
    table["ceiling_mean"], table["p_ceiling_below"] = _ceilings(posterior, table["item"], ceiling_below)
    low_ceiling = table["p_ceiling_below"].fillna(0.0).to_numpy()
    table["p_miskeyed"] = np.maximum(table["p_against"].to_numpy(), low_ceiling)
    reversed_evidence = np.where(
        table["strong_minus_weak"].to_numpy() < 0, table["p_against"].to_numpy(), 0.0
    )
    table["flagged"] = bayesian_fdr_selection(1.0 - np.maximum(reversed_evidence, low_ceiling), fdr)
    table.attrs = {"by": by, "margin": margin, "fdr": fdr, "ceiling_below": ceiling_below, "ci_prob": ci_prob}
    return table.sort_values(["p_miskeyed", "slope_mean"], ascending=[False, True]).reset_index(drop=True)


def _ceilings(
    posterior: xr.DataTree, items: pd.Series, ceiling_below: float
) -> tuple[np.ndarray, np.ndarray]:
    """Per item: posterior mean ceiling and ``P(u < ceiling_below)`` (NaN without a ceiling)."""
    nothing = np.full(len(items), np.nan)
    if "floor" not in posterior["posterior"]:
        return nothing, nothing
    # only the ceilings are read: min_llms=1 keeps the floor-flag rule (and its warning) out
    flags = asymptote_flags(posterior, ceiling_below=ceiling_below, min_llms=1).set_index("item")
    flags = flags.reindex(items.to_numpy())
    return flags["ceiling_mean"].to_numpy(), flags["p_ceiling_below"].to_numpy()


def _strong_minus_weak(responses, groups, mean_ability, mean_unit) -> np.ndarray:
    """Per item: success rate of the strongest minus the weakest quarter of LLMs along its group."""
    values, observed = responses.scaled_values, responses.observed
    result = np.full(responses.n_items, np.nan)
    for cols in groups:
        along = mean_ability @ mean_unit[cols].mean(axis=0)
        strong = along >= np.quantile(along, 0.75)
        weak = along <= np.quantile(along, 0.25)
        for c in cols:
            top, bottom = strong & observed[:, c], weak & observed[:, c]
            if top.any() and bottom.any():
                result[c] = values[top, c].mean() - values[bottom, c].mean()
    return result

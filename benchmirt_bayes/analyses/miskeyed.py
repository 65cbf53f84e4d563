"""Probably mis-keyed items: ``miskeyed_items``.

A mis-keyed item (the answer key is wrong, or the scoring is reversed) is one whose loading
points against the direction of its benchmark (or subgroup) while the LLMs that are strong
on that direction fail it. Per posterior draw, the direction is the mean loading of the
item's group without the item itself (so one reversed item cannot turn its group's
direction), and the item's *alignment* is its loading projected on it: the discrimination
of the item along what its group measures. ``p_against = P(alignment < −margin)`` is the
posterior probability that the item works against its group by at least ``margin``
(logits per ability SD); the empirical check beside it is the item's success rate among
the strongest quarter of LLMs along the direction minus that among the weakest quarter.
Items are ranked by ``p_against`` and flagged by the Bayesian FDR rule
(``lfdr = 1 − p_against``) when strong LLMs also succeed less than weak ones.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.dif import bayesian_fdr_selection
from benchmirt_bayes.model.response_models import mdisc
from benchmirt_bayes.posterior import responses_from_tree, thinned_draws

DEFAULT_MARGIN = 0.25
"""Smallest reversed discrimination (logits per ability SD) that counts as working against."""


def miskeyed_items(
    posterior: xr.DataTree,
    *,
    by: str = "subgroup",
    margin: float = DEFAULT_MARGIN,
    fdr: float = 0.1,
    n_draws: int = 200,
    seed: int = 0,
) -> pd.DataFrame:
    """Items whose loadings point against their group while strong LLMs fail them.

    Parameters
    ----------
    posterior
        A fit.
    by
        ``"subgroup"`` (default: the direction of the item's subgroup, so that e.g. the
        benign prompts of a jailbreak benchmark, which reward compliance, are not measured
        against its harmful prompts) or ``"benchmark"``.
    margin
        Alignment below ``−margin`` counts as pointing against the group.
    fdr
        Level of the Bayesian false-discovery control. Measured at the default 0.1 on ADVI
        fits at the built-in scale (``benchmarks/audit_calibration.py``): no item flagged
        on a clean simulation; with 40 flipped keys all 16 flagged items are flipped ones,
        but only 24 of the 40 top-ranked are (items with near-zero loadings whose noisy
        estimates point against their group rank among them).
    n_draws, seed
        Posterior draws used and the seed that picks them.

    Returns
    -------
    DataFrame
        One row per item with at least two items in its group: ``item``, ``benchmark``,
        ``group``, ``alignment`` (posterior mean) with ``alignment_lower`` /
        ``alignment_upper`` (90 %), ``p_against``, ``strong_minus_weak`` (success rate of
        the strongest minus the weakest quarter of LLMs along the group direction), and
        ``flagged``. Sorted by ``p_against``, highest first.

    """
    if by not in ("subgroup", "benchmark"):
        raise ValueError(f"by must be 'subgroup' or 'benchmark', got {by!r}")
    if not 0 < fdr < 1:
        raise ValueError(f"fdr must be in (0, 1), got {fdr!r}")
    responses = responses_from_tree(posterior)
    draws = thinned_draws(posterior, n_draws, seed=seed, variables=("ability", "loading"))
    items = responses.items.astype(str)
    loading = draws["loading"].sel(item=items).transpose("sample_index", "item", "dimension").values
    ability = (
        draws["ability"].sel(llm=responses.llms.astype(str)).transpose("sample_index", "llm", "dimension")
    )
    mean_ability = ability.values.mean(axis=0)
    labels = responses.benchmarks.astype(str)
    if by == "subgroup":
        labels = np.char.add(np.char.add(labels, "/"), responses.subgroups.astype(str))
    alignment = np.full(loading.shape[:2], np.nan)
    strong_minus_weak = np.full(loading.shape[1], np.nan)
    values, observed = responses.scaled_values, responses.observed
    for group in pd.unique(labels):
        cols = np.flatnonzero(labels == group)
        if cols.size < 2:
            continue
        total = loading[:, cols].sum(axis=1, keepdims=True)  # (draw, 1, dim)
        others = (total - loading[:, cols]) / (cols.size - 1)  # leave-one-out group direction
        unit = others / np.maximum(mdisc(others), 1e-12)[..., None]
        alignment[:, cols] = (loading[:, cols] * unit).sum(axis=-1)
        along = mean_ability @ (unit.mean(axis=0).mean(axis=0))  # LLMs along the group's direction
        strong = along >= np.quantile(along, 0.75)
        weak = along <= np.quantile(along, 0.25)
        for c in cols:
            top = strong & observed[:, c]
            bottom = weak & observed[:, c]
            if top.any() and bottom.any():
                strong_minus_weak[c] = values[top, c].mean() - values[bottom, c].mean()
    usable = ~np.isnan(alignment[0])
    kept = alignment[:, usable]
    table = pd.DataFrame(
        {
            "item": items[usable],
            "benchmark": responses.benchmarks.astype(str)[usable],
            "group": labels[usable],
            "alignment": kept.mean(axis=0),
            "alignment_lower": np.quantile(kept, 0.05, axis=0),
            "alignment_upper": np.quantile(kept, 0.95, axis=0),
            "p_against": np.mean(kept < -margin, axis=0),
            "strong_minus_weak": strong_minus_weak[usable],
        }
    )
    lfdr = np.where(table["strong_minus_weak"].to_numpy() < 0, 1.0 - table["p_against"].to_numpy(), 1.0)
    table["flagged"] = bayesian_fdr_selection(lfdr, fdr)
    table.attrs = {"by": by, "margin": margin, "fdr": fdr}
    return table.sort_values(["p_against", "alignment"], ascending=[False, True]).reset_index(drop=True)

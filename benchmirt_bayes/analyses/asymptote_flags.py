"""Items whose ceiling or floor says something is wrong with them (3PL / 4PL fits)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.posterior import fit_spec, responses_from_tree
from benchmirt_bayes.response_types import DEFAULT_TYPE, response_model
from benchmirt_bayes.response_types.asymptotes import CEILING_ITEM_DIM, AsymptoteItems
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws

DEFAULT_CEILING = 0.9
"""Ceilings credibly below this flag an item (a wrong key or an ambiguous item)."""


def asymptote_flags(
    posterior: xr.DataTree,
    *,
    ceiling_below: float = DEFAULT_CEILING,
    probability: float = 0.95,
    ci_prob: float = CI_PROB,
) -> pd.DataFrame:
    """Items whose ceiling is credibly low or whose floor is credibly above the chance rate.

    A ceiling ``u`` well below one means that even the strongest LLMs fail the item: a
    wrong key, an ambiguous question, a grader that rejects right answers. A floor ``g``
    above ``1 / n_options`` means that the weakest LLMs succeed more often than a guess:
    leaked answers, or options that give the key away.

    Parameters
    ----------
    posterior
        A fit whose spec gives benchmarks floors (``"3pl"``) or floors and ceilings
        (``"4pl"``) in its ``[binary]`` section.
    ceiling_below
        A ceiling below this counts as low.
    probability
        Posterior probability above which an item is flagged (``P(u < ceiling_below)``,
        ``P(g > chance)``).
    ci_prob
        Probability mass of the reported intervals.

    Returns
    -------
    DataFrame
        One row per item with a floor: ``item``, ``benchmark``, ``model`` (``3pl`` or
        ``4pl``), ``chance`` (the floor's prior centre: ``1 / n_options``, or the spec's
        ``unknown_options_floor`` where the options are not given), ``floor_mean`` … ``floor_upper``,
        ``p_floor_above_chance``, ``ceiling_mean`` … ``ceiling_upper`` (a 4PL item's
        ceiling is one in the draws that find it uncapped), ``p_capped`` (the posterior
        probability that the item is capped) and ``p_ceiling_below`` (that it is capped below
        ``ceiling_below``; both NaN for 3PL items), ``ceiling_flagged`` and
        ``floor_flagged`` (the flags).
        Sorted by ``p_ceiling_below``, then ``p_floor_above_chance``, highest first.

    Raises
    ------
    ValueError
        When the fit has no floors, or an argument is out of range.

    """
    if not 0 < ceiling_below < 1:
        raise ValueError(f"ceiling_below must lie in (0, 1), got {ceiling_below!r}")
    if not 0.5 <= probability < 1:
        raise ValueError(f"probability must lie in [0.5, 1), got {probability!r}")
    check_ci_prob(ci_prob)
    post = posterior["posterior"]
    spec = fit_spec(posterior)
    if "floor" not in post or spec is None:
        raise ValueError(
            "the fit has no floors or ceilings: fit with a spec whose [binary] section gives "
            "benchmarks '3pl' or '4pl' (see models/exploratory.toml)"
        )
    responses = responses_from_tree(posterior)
    binary = np.flatnonzero(np.asarray(responses.response_types) == DEFAULT_TYPE)
    benchmarks = np.asarray(responses.benchmarks, dtype=str)[binary]
    section = response_model(DEFAULT_TYPE).spec_section(spec.type_prior(DEFAULT_TYPE))
    plan = AsymptoteItems.for_items(responses, section, binary)
    columns = binary[plan.floored]
    items = responses.items.astype(str)[columns]
    floor = post["floor"].sel(item=items).stack(sample=("chain", "draw")).transpose("sample", ...).values
    ceiling = post["ceiling"].sel(item=items).stack(sample=("chain", "draw")).transpose("sample", ...).values
    chance = plan.chance[plan.floored]
    capped = plan.capped[plan.floored]
    out = pd.DataFrame(
        {
            "item": items,
            "benchmark": benchmarks[plan.floored],
            "model": plan.kind[plan.floored],
            "chance": chance,
        }
    )
    for column, values in summarise_draws(floor, ci_prob=ci_prob, prefix="floor").items():
        out[column] = values
    out["p_floor_above_chance"] = (floor > chance).mean(axis=0)
    for column, values in summarise_draws(ceiling, ci_prob=ci_prob, prefix="ceiling").items():
        out[column] = np.where(capped, values, np.nan)
    out["p_capped"] = np.nan
    out["p_ceiling_below"] = np.nan
    if capped.any():
        chance_capped = post["capped_probability"].sel({CEILING_ITEM_DIM: items[capped]})
        candidate = post["capped_ceiling"].sel({CEILING_ITEM_DIM: items[capped]})
        # Rao-Blackwellised: P(capped and u < ceiling_below), not the share of drawn indicators
        below = (chance_capped * (candidate < ceiling_below)).mean(("chain", "draw")).values
        out.loc[capped, "p_capped"] = chance_capped.mean(("chain", "draw")).values
        out.loc[capped, "p_ceiling_below"] = below
    out["ceiling_flagged"] = out["p_ceiling_below"].fillna(0.0) > probability
    out["floor_flagged"] = out["p_floor_above_chance"] > probability
    out.attrs = {"ceiling_below": ceiling_below, "probability": probability, "ci_prob": ci_prob}
    return out.sort_values(["p_ceiling_below", "p_floor_above_chance"], ascending=False, na_position="last")

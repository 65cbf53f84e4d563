"""Items whose ceiling or floor says something is wrong with them (3PL / 4PL fits)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.posterior import fit_spec, responses_from_tree
from benchmirt_bayes.response_types import DEFAULT_TYPE, response_model
from benchmirt_bayes.response_types.asymptotes import CEILING_ITEM_DIM, AsymptoteItems
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws

DEFAULT_CEILING = 0.9
"""Ceilings credibly below this flag an item (a wrong key or an ambiguous item)."""

MIN_FLOOR_LLMS = 50
"""Benchmarks answered by fewer LLMs get no floor flags.

With a few tens of LLMs, none of them near chance, a floor at chance under a flat item curve
and a higher floor under a steeper, shifted one fit about equally; the priors then place the
floor, and a whole benchmark's floors can sit credibly above chance when the planted ones do
not (measured in ``benchmarks/RESULTS.md``, "Floors and ceilings").
"""


def asymptote_flags(
    posterior: xr.DataTree,
    *,
    ceiling_below: float = DEFAULT_CEILING,
    probability: float = 0.95,
    min_llms: int = MIN_FLOOR_LLMS,
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
    min_llms
        Floors are flagged only in benchmarks that at least this many LLMs answered (see
        :data:`MIN_FLOOR_LLMS`); below it ``floor_flagged`` is False and a warning names the
        items the rule alone would have flagged. Ceilings are flagged at any size.
    ci_prob
        Probability mass of the reported intervals.

    Returns
    -------
    DataFrame
        One row per item with a floor: ``item``, ``benchmark``, ``model`` (``3pl`` or
        ``4pl``), ``benchmark_llms`` (LLMs that answered any item of the benchmark),
        ``chance`` (the floor's prior centre: ``1 / n_options``, or the spec's
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
    check_integer("min_llms", min_llms)
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
    item_benchmarks = benchmarks[plan.floored]
    answered = {
        bench: int(responses.observed[:, binary[benchmarks == bench]].any(axis=1).sum())
        for bench in np.unique(item_benchmarks)
    }
    out = pd.DataFrame(
        {
            "item": items,
            "benchmark": item_benchmarks,
            "model": plan.kind[plan.floored],
            "benchmark_llms": [answered[bench] for bench in item_benchmarks],
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
    above = out["p_floor_above_chance"] > probability
    enough = out["benchmark_llms"] >= min_llms
    out["floor_flagged"] = above & enough
    _warn_withheld(out[above & ~enough], min_llms)
    out.attrs = {
        "ceiling_below": ceiling_below,
        "probability": probability,
        "min_llms": min_llms,
        "ci_prob": ci_prob,
    }
    return out.sort_values(["p_ceiling_below", "p_floor_above_chance"], ascending=False, na_position="last")


def _warn_withheld(withheld: pd.DataFrame, min_llms: int) -> None:
    """Name the items whose floor flag the ``min_llms`` rule withholds, per benchmark."""
    if withheld.empty:
        return
    counts = withheld.groupby("benchmark")["benchmark_llms"].agg(["size", "first"])
    listed = ", ".join(
        f"{bench} ({row['size']} items, {row['first']} LLMs)" for bench, row in counts.iterrows()
    )
    warnings.warn(
        f"floor flags withheld where fewer than {min_llms} LLMs answered the benchmark: {listed} "
        "have P(floor above chance) above the threshold, but with this few LLMs, none near chance, "
        "the priors place the floor and such flags were mostly false in simulations; "
        "pass min_llms= to flag them anyway",
        UserWarning,
        stacklevel=3,
    )

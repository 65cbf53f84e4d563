"""Uncertainty-aware item rankings: ``rank_items``.

Every quantity is computed per posterior draw (items and abilities of the same
draw together), so ranks, intervals and top-k probabilities carry the posterior
uncertainty of both.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.response_types.base import mdisc, multidimensional_difficulty
from benchmirt_bayes.summaries import CI_PROB, summarise_draws

RankBy = Literal["information", "discrimination", "difficulty"]


def item_information_draws(
    posterior: xr.DataTree, *, dimension: str | None = None, n_draws: int = 100, seed: int = 0
) -> tuple[np.ndarray, PosteriorDraws]:
    """Per draw, each item's Fisher information averaged over the fitted LLMs.

    ``I_i = mean_j p_ij (1 - p_ij) ‖a_i‖²`` (the trace of the information
    matrix), or ``p_ij (1 - p_ij) a_id²`` along one ``dimension``. Abilities and
    items come from the same draw, so ability uncertainty is integrated.

    Returns
    -------
    information
        ``(draw, item)``.
    draws
        The thinned draws used (with the benchmarks' mean loadings in ``extra``).

    """
    draws = PosteriorDraws.from_posterior(
        posterior, n_draws, seed=seed, abilities=True, extra=("benchmark_loading_mean",)
    )
    loading = draws.loading
    if dimension is None:
        weight = mdisc(loading) ** 2
    else:
        if dimension not in draws.dimensions:
            raise KeyError(f"unknown dimension {dimension!r}; available: {draws.dimensions}")
        weight = loading[..., draws.dimensions.index(dimension)] ** 2
    info = np.empty(draws.intercept.shape)
    for s in range(len(draws)):
        info[s] = draws.information_weight(s, draws.ability[s]).mean(axis=0) * weight[s]
    return info, draws


def rank_items(
    posterior: xr.DataTree,
    *,
    by: RankBy = "information",
    dimension: str | None = None,
    within: Literal["benchmark"] | None = None,
    top_k: int = 10,
    ci_prob: float = CI_PROB,
    n_draws: int = 100,
    uninformative_share: float = 0.1,
    flag_probability: float = 0.9,
    seed: int = 0,
) -> pd.DataFrame:
    """Rank items with posterior uncertainty, and flag problem items.

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    by
        ``"information"`` (Fisher information over the fitted LLM population,
        highest first), ``"discrimination"`` (``mdisc = ‖loading‖``, or the
        loading on ``dimension``; highest first) or ``"difficulty"``
        (multidimensional difficulty ``−intercept/‖loading‖``, hardest first).
    dimension
        Restrict information and discrimination to one dimension (its name).
    within
        ``"benchmark"`` ranks items within their benchmark; ``None`` ranks all items.
    top_k
        ``p_top_k`` is the posterior probability that the item is among the top
        ``top_k`` (within its benchmark when ``within="benchmark"``).
    ci_prob
        Probability mass of the central credible intervals.
    n_draws
        Posterior draws used (seeded thinning).
    uninformative_share, flag_probability
        Thresholds of the flags below.
    seed
        Seed of the thinning.

    Returns
    -------
    DataFrame
        One row per item, sorted by ``rank_mean`` (with ``within="benchmark"``: by
        benchmark in data order, then ``rank_mean``, so each benchmark's best items come
        together): ``benchmark``, ``subgroup``,
        ``mdisc_*`` (``_mean``, ``_sd``, ``_lower``, ``_upper``), ``main_dimension`` (the
        dimension with the largest absolute loading in most draws) and
        ``p_main_dimension`` (the share of draws in which it is), ``difficulty_*``,
        ``information_*``, ``rank_*``,
        ``p_top_k``, each response type's own item summaries where it has any (for example
        ``cutpoint_span_*`` of graded items, ``p_exact_zero_*`` and ``p_exact_one_*`` of
        continuous ones; NaN for the other items), and three flags:

        ``uninformative``
            the upper end of the information interval is below
            ``uninformative_share`` × the median (over items) posterior mean information;
        ``negatively_keyed``
            ``P(loading · benchmark mean loading < 0) > flag_probability``: the item
            works against its benchmark's direction (higher ability, lower success);
        ``off_dimension``
            the benchmark's main dimension (largest absolute posterior-mean
            benchmark loading) is not the item's: with probability above
            ``flag_probability`` another dimension's absolute loading is larger.

    """
    if by not in ("information", "discrimination", "difficulty"):
        raise ValueError(f"by must be 'information', 'discrimination' or 'difficulty', got {by!r}")
    if within not in (None, "benchmark"):
        raise ValueError(f"within must be None or 'benchmark', got {within!r}")
    info, draws = item_information_draws(posterior, dimension=dimension, n_draws=n_draws, seed=seed)
    responses = draws.responses
    loading, intercept, dims = draws.loading, draws.intercept, draws.dimensions
    discrimination = mdisc(loading)
    difficulty = multidimensional_difficulty(intercept, discrimination)
    if by == "information":
        score = info
    elif by == "discrimination":
        score = discrimination if dimension is None else loading[..., dims.index(dimension)]
    else:
        score = difficulty
    groups = (
        responses.benchmarks.astype(str)
        if within == "benchmark"
        else np.zeros(len(responses.items), dtype=str)
    )
    ranks = np.empty_like(score)
    for group in pd.unique(groups):
        cols = groups == group
        # rank 1 = highest score (most informative / discriminating / hardest)
        ranks[:, cols] = (-score[:, cols]).argsort(axis=1).argsort(axis=1) + 1
    out = pd.DataFrame(index=pd.Index(responses.items.astype(str), name="item"))
    out["benchmark"] = responses.benchmarks.astype(str)
    out["subgroup"] = responses.subgroups.astype(str)
    for name, values in (("mdisc", discrimination), ("difficulty", difficulty), ("information", info)):
        for column, summary in summarise_draws(values, axis=0, ci_prob=ci_prob, prefix=name).items():
            out[column] = summary
    main = np.abs(loading).argmax(axis=-1)  # (draw, item)
    counts = np.stack([(main == d).mean(axis=0) for d in range(len(dims))], axis=1)
    out["main_dimension"] = np.array(dims)[counts.argmax(axis=1)]
    out["p_main_dimension"] = counts.max(axis=1)
    for column, summary in summarise_draws(ranks, axis=0, ci_prob=ci_prob, prefix="rank").items():
        out[column] = summary
    out["p_top_k"] = (ranks <= top_k).mean(axis=0)
    median_info = np.median(out["information_mean"])
    out["uninformative"] = out["information_upper"] < uninformative_share * median_info
    out["negatively_keyed"], out["off_dimension"] = _direction_flags(
        draws, responses.benchmarks.astype(str), loading, flag_probability
    )
    for name, values in draws.layout.item_summaries(intercept, draws.params).items():
        typed = ~np.isnan(values).any(axis=0)  # the items of the type that reports it
        for column, summary in summarise_draws(
            values[:, typed], axis=0, ci_prob=ci_prob, prefix=name
        ).items():
            out[column] = np.nan
            out.loc[out.index[typed], column] = summary
    out.attrs = {"by": by, "dimension": dimension, "within": within, "top_k": top_k, "ci_prob": ci_prob}
    if within == "benchmark":
        order = {name: i for i, name in enumerate(pd.unique(out["benchmark"]))}
        out = out.assign(_order=out["benchmark"].map(order))
        return out.sort_values(["_order", "rank_mean"]).drop(columns="_order")
    return out.sort_values("rank_mean")


def _direction_flags(
    draws: PosteriorDraws, benchmarks: np.ndarray, loading: np.ndarray, probability: float
) -> tuple[np.ndarray, np.ndarray]:
    n_items = loading.shape[1]
    if "benchmark_loading_mean" not in draws.extra:
        return np.zeros(n_items, bool), np.zeros(n_items, bool)
    mean = draws.extra["benchmark_loading_mean"].transpose("sample_index", "benchmark", "dimension")
    names = list(map(str, mean["benchmark"].values))
    codes = np.array([names.index(b) for b in benchmarks])
    bench_vectors = mean.values[:, codes, :]  # (draw, item, dim)
    negative = ((loading * bench_vectors).sum(axis=-1) < 0).mean(axis=0) > probability
    if loading.shape[-1] == 1:
        return negative, np.zeros(n_items, bool)
    bench_main = np.abs(mean.values.mean(axis=0)).argmax(axis=-1)[codes]  # (item,)
    on_bench = np.abs(np.take_along_axis(loading, bench_main[None, :, None], axis=-1)[..., 0])
    other = np.abs(loading).copy()
    np.put_along_axis(
        other, np.broadcast_to(bench_main[None, :, None], (loading.shape[0], n_items, 1)), -np.inf, -1
    )
    off = (other.max(axis=-1) > on_bench).mean(axis=0) > probability
    return negative, off

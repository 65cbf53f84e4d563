"""Paired comparisons of LLMs: ``compare_llms`` (base vs modified, before vs after, two checkpoints).

For every posterior draw the two LLMs' abilities and that draw's items give the difference
of abilities on each dimension and of expected scores on every benchmark (or subgroup), so
the intervals and ``P(difference < 0)`` carry the uncertainty of both LLMs and of the
items. An LLM scored later against the fitted items (:func:`~benchmirt_bayes.score_llm`)
is compared draw by draw in the same way: its ability samples are paired with the draws
they were computed under.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.scoring import LLMScore
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob, summarise_draws

LLMRef = str | LLMScore


@dataclass(frozen=True)
class LLMComparison:
    """Result of :func:`compare_llms` (``difference = b − a`` throughout).

    Attributes
    ----------
    ability
        One row per (pair, dimension): ``a``, ``b``, then the difference ``b − a`` as
        ``mean``, ``sd``, ``lower``, ``upper`` and ``p_below_zero`` = ``P(b − a < 0)``.
    scores
        One row per (pair, group): expected scores ``score_a``, ``score_b`` on ``[0, 1]``
        over all the group's items, and the difference as ``mean``, ``sd``, ``lower``,
        ``upper``, ``p_below_zero``.
    items
        Per pair, the ``top_items`` items whose expected score changes most (by the
        absolute posterior-mean difference), with its interval.

    """

    ability: pd.DataFrame
    scores: pd.DataFrame
    items: pd.DataFrame


def compare_llms(
    posterior: xr.DataTree,
    a: LLMRef | Sequence[tuple[LLMRef, LLMRef]],
    b: LLMRef | None = None,
    *,
    by: str = "benchmark",
    ci_prob: float = CI_PROB,
    n_draws: int | None = None,
    seed: int | None = None,
    top_items: int = 20,
) -> LLMComparison:
    """Compare two LLMs (``compare_llms(fit, "base", "modified")``) or many pairs.

    Parameters
    ----------
    posterior
        A fit.
    a, b
        The two LLMs: ids of fitted LLMs or :class:`~benchmirt_bayes.LLMScore` results
        of LLMs scored later; or ``a`` a list of ``(a, b)`` pairs and ``b`` omitted.
    by
        Item coordinate whose groups get expected-score differences (``"benchmark"``,
        ``"subgroup"``...).
    ci_prob
        Probability mass of the equal-tailed intervals.
    n_draws, seed
        Posterior draws used and the seed that picks them. With a scored LLM they are
        taken from it (its samples belong to those draws); default 200 and 0.
    top_items
        Items listed per pair in :attr:`LLMComparison.items`.

    Returns
    -------
    LLMComparison

    Examples
    --------
    >>> comparison = compare_llms(fit, "llm_003", "llm_003-modified")  # doctest: +SKIP
    >>> comparison.ability  # doctest: +SKIP

    """
    pairs = [(a, b)] if b is not None else list(a)  # type: ignore[arg-type]
    if not pairs:
        raise ValueError("give two LLMs, or a non-empty list of (a, b) pairs")
    scored = [x for pair in pairs for x in pair if isinstance(x, LLMScore)]
    settings = {(s.n_draws, s.seed, s.samples_per_draw) for s in scored}
    if len(settings) > 1:
        raise ValueError("the scored LLMs were scored with different n_draws / seed / samples_per_draw")
    draws_wanted, seed_used, per_draw = settings.pop() if settings else (200, 0, 1)
    if scored and (
        (n_draws is not None and n_draws != draws_wanted) or (seed is not None and seed != seed_used)
    ):
        raise ValueError(
            "a scored LLM pairs with the draws it was scored under "
            f"(n_draws={draws_wanted}, seed={seed_used})"
        )
    n_draws = draws_wanted if n_draws is None else n_draws
    seed = seed_used if seed is None else seed
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed, abilities=True)
    fitted = {llm: draws.ability[:, j] for j, llm in enumerate(draws.llms)}  # (sample, dimension)
    responses = draws.responses
    labels = responses.data[by].values.astype(str) if by in responses.item_coords else None
    if labels is None:
        raise KeyError(f"unknown item coordinate {by!r}; available: {responses.item_coords}")
    if by == "subgroup":
        labels = np.char.add(np.char.add(responses.benchmarks.astype(str), "/"), labels)
    groups = list(pd.unique(labels))
    check_ci_prob(ci_prob)
    ability_rows, score_rows, item_rows = [], [], []
    for first, second in pairs:
        samples = [_samples(x, fitted, per_draw) for x in (first, second)]
        names = [_name(x) for x in (first, second)]
        label = f"{names[0]} → {names[1]}"
        difference = samples[1] - samples[0]  # (sample, dim)
        for k, dim in enumerate(draws.dimensions):
            ability_rows.append(
                {
                    "pair": label,
                    "a": names[0],
                    "b": names[1],
                    "dimension": dim,
                    **_summary(difference[:, k], ci_prob),
                }
            )
        columns = np.arange(len(draws.items))
        expected = [draws.expected_scores(s[None], columns)[0] for s in samples]
        change = expected[1] - expected[0]  # (sample, item) in the data's item order
        for group in groups:
            cols = labels == group
            score_a, score_b = expected[0][:, cols].mean(axis=1), expected[1][:, cols].mean(axis=1)
            score_rows.append(
                {
                    "pair": label,
                    "group": group,
                    "n_items": int(cols.sum()),
                    "score_a": float(score_a.mean()),
                    "score_b": float(score_b.mean()),
                    **_summary(score_b - score_a, ci_prob),
                }
            )
        mean_change = change.mean(axis=0)
        for i in np.argsort(-np.abs(mean_change))[:top_items]:
            item_rows.append(
                {
                    "pair": label,
                    "item": str(responses.items[i]),
                    "benchmark": str(responses.benchmarks[i]),
                    "expected_a": float(expected[0][:, i].mean()),
                    "expected_b": float(expected[1][:, i].mean()),
                    **_summary(change[:, i], ci_prob),
                }
            )
    return LLMComparison(pd.DataFrame(ability_rows), pd.DataFrame(score_rows), pd.DataFrame(item_rows))


def _name(llm: LLMRef) -> str:
    return llm if isinstance(llm, str) else llm.llm


def _samples(llm: LLMRef, fitted: dict[str, np.ndarray], per_draw: int) -> np.ndarray:
    """``(sample, dimension)`` ability samples aligned with the item draws."""
    if isinstance(llm, LLMScore):
        return llm.ability.values
    if llm not in fitted:
        raise KeyError(f"LLM {llm!r} is not in the fit (score it with score_llm and pass the result)")
    return np.repeat(fitted[llm], per_draw, axis=0)


def _summary(values: np.ndarray, ci_prob: float) -> dict[str, float]:
    summary = {key: float(value) for key, value in summarise_draws(values, ci_prob=ci_prob).items()}
    return {**summary, "p_below_zero": float(np.mean(values < 0))}

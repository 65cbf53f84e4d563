"""Full-benchmark scores from a few items: ``fit_score_link`` and ``estimate_scores``.

The task as users pose it: a new LLM has answered a small subset of a benchmark's items;
what is its score on the *whole* benchmark (every item, including items the package never
saw), and how sure are we? Three steps:

1. **Abilities from the subset.** Each LLM's ability posterior given its answers on the
   kept items, averaged over posterior draws of the items (item uncertainty integrated):
   on a grid over the ability space for one or two dimensions, as Laplace-SIR samples for
   more (:func:`~benchmirt_bayes.analyses.ability_posterior.ability_posterior`).
2. **A link to the full score, learned from LLMs whose full scores are known**
   (:func:`fit_score_link`, :class:`~benchmirt_bayes.ScoreLink`). The fitted items are
   rarely the whole benchmark (metabench's reduced sets keep 2–10 % of the items, chosen to
   be informative), so the full score is not an expectation the IRT model can compute; it is
   learned, per benchmark, by a regression on the features the subset gives: a natural cubic
   spline of the posterior mean ability (on every dimension), the model's expected score on
   all fitted items, the plain mean on the kept items and, under a stronger ridge penalty,
   the answers to the kept items themselves. Two forms are fitted and the one with the
   smaller out-of-fold error is kept: *additive* (the terms added up) and *single-index* (a
   natural spline of one weighted sum of the same terms, fitted by Gauss–Newton), which lets
   the items' weights act inside the curve that maps ability to a percentage. Training LLMs
   far off every smooth link (such as LLMs trained on the test set, at the ceiling) are left
   out of this regression
   (:func:`~benchmirt_bayes.analyses.score_regression.gross_outliers`); their errors go to
   the kriging below. The training LLMs' features come from the *same* kept items and the
   same scorer as the new LLMs' will, so the link sees the noise it will meet. This is a
   posterior-predictive regression rather than a second likelihood term in the model: the
   model stays a model of item responses, the link is cheap to refit for another subset, and
   it needs no full scores to fit the items. Its errors cluster by family (fine-tunes and
   merges of one base model answer alike and miss alike), so the ``package`` estimate adds
   the out-of-fold error of the training LLMs that answered the kept items most alike,
   kriged from them (weighing how far apart their estimates are too), when that helps out of
   sample (:mod:`~benchmirt_bayes.analyses.score_neighbours`).
3. **Calibrated intervals.** The regression's out-of-fold residuals (cross-fitting within
   the training LLMs) are scaled by a fitted local spread and their empirical quantile
   gives the interval half-width (split-conformal prediction): 90 % intervals cover 90 %
   of held-out LLMs whatever the residuals' shape.

``estimate_scores`` returns, per LLM and benchmark, the link's estimate with its interval,
the IRT expectation on the fitted items and the plain mean on the kept items. Without a
link it returns the score the LLM would get on all fitted items of each benchmark (answered
items as answered), with posterior predictive intervals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.score_link import DEFAULT_DRAWS, LINK_ATTR, ScoreLink, score_table
from benchmirt_bayes.summaries import CI_PROB


def fit_score_link(
    posterior: xr.DataTree,
    full_scores: pd.DataFrame | Mapping[str, pd.Series],
    *,
    items: Sequence[str] | None = None,
    per_benchmark: int | None = None,
    method: str = "auto",
    responses=None,
    ci_prob: float = CI_PROB,
    folds: int = 5,
    n_draws: int = DEFAULT_DRAWS,
    seed: int = 0,
    score_max: float | None = None,
) -> ScoreLink:
    """Learn, per benchmark, the map from a subset's features to the full-benchmark score.

    Parameters
    ----------
    posterior
        A fit (its items, with uncertainty, score the subsets).
    full_scores
        The known full-benchmark scores (percent or fractions): a DataFrame indexed by LLM
        with one column per benchmark of the fit, or a mapping benchmark → Series. LLMs that
        are not training LLMs are ignored; benchmarks without scores get no link.
    items
        The kept items the new LLMs will answer (default: every fitted item). Items chosen
        on these LLMs' full scores (``select_for_scores(method="stepwise")``) make the
        interval too narrow, because the link's out-of-fold errors do not see the choice:
        give ``per_benchmark`` instead.
    per_benchmark, method
        Let the link choose ``per_benchmark`` items in each benchmark, by
        :func:`~benchmirt_bayes.select_for_scores`' ``method`` (same seed), instead of
        ``items``. Where the rule is stepwise, the choice is made again in each fold of the
        cross-fitting without that fold's LLMs, so the interval counts it. The chosen items
        are :attr:`~benchmirt_bayes.ScoreLink.items`.
    responses
        The training LLMs' responses (default: the fit's own data).
    ci_prob
        Coverage of the intervals :func:`estimate_scores` will give with the link
        (split-conformal, from the training LLMs' out-of-fold errors).
    folds
        Cross-fitting folds for the out-of-fold residuals behind the intervals and the
        blend weight.
    n_draws, seed
        Posterior draws of the items used to score subsets, and the seed that picks them.
    score_max
        The highest possible full score, the unit of every estimate
        :func:`estimate_scores` gives with this link (also of the IRT expectation of a
        benchmark without a link): default 100 (percent) when any known score exceeds 1,
        else 1.

    Returns
    -------
    ScoreLink
        Its :meth:`~benchmirt_bayes.ScoreLink.predict` is :func:`estimate_scores` with it.

    Raises
    ------
    ValueError
        A score column that is not a benchmark of the fit, a score that is not a finite
        number, no training LLM with a known score, or no benchmark with enough of them
        (:data:`~benchmirt_bayes.analyses.score_link.MIN_LINK_LLMS`) and a kept item.

    Warns
    -----
    UserWarning
        Benchmarks with kept items that get no link, with how many training LLMs have a
        known full score.

    """
    return ScoreLink.fit(
        posterior,
        full_scores,
        items=items,
        per_benchmark=per_benchmark,
        method=method,
        responses=responses,
        ci_prob=ci_prob,
        folds=folds,
        n_draws=n_draws,
        seed=seed,
        score_max=score_max,
    )


def with_score_link(posterior: xr.DataTree, link: ScoreLink) -> xr.DataTree:
    """A copy of ``posterior`` carrying ``link`` (saved and checked with the fit)."""
    out = posterior.copy(deep=False)
    out.attrs = {**posterior.attrs, LINK_ATTR: link.to_json()}
    return out


def estimate_scores(
    posterior: xr.DataTree,
    responses_on_subset: pd.DataFrame | Mapping[str, Mapping[str, float]],
    *,
    link: ScoreLink | None = None,
    estimator: str | Sequence[str] = "package",
    n_draws: int | None = None,
    seed: int | None = None,
    ci_prob: float = CI_PROB,
) -> pd.DataFrame:
    """Full-benchmark score estimates with intervals for LLMs evaluated on a subset of the items.

    Parameters
    ----------
    posterior
        A fit, carrying a link (:func:`with_score_link`) unless ``link`` is given.
    responses_on_subset
        ``(llm, item)`` responses: a DataFrame indexed by LLM with item columns (NaN = not
        asked), or a mapping LLM → {item: response}. Items must be fitted items.
    link
        The link to full scores (:func:`fit_score_link`). Without one (and none stored),
        the estimate is the score the LLM would get on all fitted items of each benchmark,
        on ``[0, 1]``, with a posterior predictive interval of mass ``ci_prob``: answered
        items count as answered, unanswered ones carry their response noise, the
        uncertainty of the ability and the items, and the LLM's own benchmark-specific
        deviation from the model (its spread measured on the fitted LLMs,
        :func:`~benchmirt_bayes.analyses.ability_posterior.benchmark_deviation_variance`;
        its mean informed by the LLM's answered items there);
        a benchmark the link has no link for gets the same, scaled to the link's ``score_max``.
    estimator
        One of :data:`~benchmirt_bayes.analyses.score_link.ESTIMATORS` (``"package"``: the
        default regression on all features), or several (one row per estimator each).
    n_draws, seed
        Posterior draws of the items that score the subsets, and the seed that picks them:
        by default the link's own (the draws that scored its training LLMs), else
        :data:`~benchmirt_bayes.analyses.score_link.DEFAULT_DRAWS` and 0.
    ci_prob
        Interval mass without a link (with one, the link's calibrated coverage applies).

    Returns
    -------
    DataFrame
        One row per (LLM, benchmark): ``mean`` (the estimate), ``lower``, ``upper``,
        ``irt_fitted_items``
        (expected mean score on the fitted items, ``[0, 1]``), ``kept_mean`` (plain mean on
        the answered items, ``[0, 1]``), ``n_answered``, ``estimator`` and ``score_max``
        (the highest possible score in the estimate's unit: 1 for fractions, 100 for
        percent, the same on every row).

    """
    if link is None and LINK_ATTR in posterior.attrs:
        link = ScoreLink.from_json(posterior.attrs[LINK_ATTR])
    if link is not None:
        return link.predict(
            posterior, responses_on_subset, estimator=estimator, n_draws=n_draws, seed=seed, ci_prob=ci_prob
        )
    n_draws = DEFAULT_DRAWS if n_draws is None else n_draws
    seed = 0 if seed is None else seed
    return score_table(posterior, responses_on_subset, None, estimator, n_draws, seed, ci_prob)

"""Place a new LLM given a fitted posterior: ``score_llm`` and ``adaptive_test``.

The ability posterior of a new LLM given its responses ``y`` is
``p(θ | y, D) = ∫ p(θ | y, items) p(items | D) d items``. We integrate over item
uncertainty by Monte Carlo over posterior draws of the item parameters, with the
Laplace-SIR samples of :func:`~benchmirt_bayes.analyses.ability_posterior.ability_posterior`
(any number of dimensions).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.abilities import ability_frame
from benchmirt_bayes.analyses.ability_posterior import (
    AbilityPosterior,
    ability_posterior,
    fitted_deviation_variance,
    predicted_mean_score,
)
from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.summaries import CI_PROB, check_ci_prob

# ---------------------------------------------------------------- score_llm
SCORE_SAMPLES_PER_DRAW = 4
"""Ability samples per item draw of :func:`score_llm` (and of every LLM of :func:`score_table`)."""


@dataclass
class LLMScore:
    """The posterior of a new LLM's abilities and predicted benchmark scores."""

    ability: xr.DataArray  # (sample, dimension)
    benchmark_scores: pd.DataFrame  # benchmark × mean, sd, lower, upper, observed, n_answered
    items_answered: int
    n_draws: int = 200
    samples_per_draw: int = SCORE_SAMPLES_PER_DRAW
    seed: int = 0
    llm: str = "scored LLM"
    """How the samples pair with posterior draws: sample ``k`` belongs to the ``k //
    samples_per_draw``-th of the ``n_draws`` draws that ``PosteriorDraws.from_posterior(..., seed=seed)``
    picks (what :func:`~benchmirt_bayes.compare_llms` needs to compare it with fitted LLMs)."""

    def ability_summary(self, ci_prob: float = CI_PROB) -> pd.DataFrame:
        """Mean, SD and central interval (of mass ``ci_prob``) of each ability dimension.

        The layout of :func:`~benchmirt_bayes.ability_table`: index ``(llm, dimension)``
        (``llm`` is this score's name), columns ``mean``, ``sd``, ``lower``, ``upper``.
        """
        dims = self.ability["dimension"].values
        return ability_frame(self.ability.values[:, None, :], [self.llm], dims, ci_prob)


def score_llm(
    posterior: xr.DataTree,
    responses_of_new_llm: Mapping[str, float] | pd.Series,
    *,
    n_draws: int = 200,
    samples_per_draw: int = SCORE_SAMPLES_PER_DRAW,
    ci_prob: float = CI_PROB,
    seed: int = 0,
    llm: str = "scored LLM",
) -> LLMScore:
    """Posterior of a new LLM's abilities from any subset of the fitted items.

    Item uncertainty is integrated over (``n_draws`` posterior draws, each with
    its own ability posterior), not plugged in at point estimates.

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    responses_of_new_llm
        ``{item_id: response}`` for the items the LLM was evaluated on (0/1 for binary
        items, a category, a score in [0, 1] or a count for the other types; NaN = not
        evaluated). Unknown item ids raise ``KeyError``; a value that does not fit its
        item's type raises ``ValueError``.
    n_draws, samples_per_draw
        Posterior draws of the items used, and ability samples per draw.
    ci_prob
        Probability mass of the reported central intervals.
    seed
        Seed of the thinning and the importance sampling.
    llm
        A name for the LLM (shown by :func:`~benchmirt_bayes.compare_llms`).

    Returns
    -------
    LLMScore
        ``ability (sample, dimension)`` and, per benchmark, the score the LLM would get
        on *all* its fitted items, on ``[0, 1]`` (share correct for binary items): a
        posterior predictive mean, SD and interval in which the answered items count as
        answered and each unanswered one adds its response noise, the parameters'
        uncertainty and the LLM's own benchmark-specific deviation from the model (its
        spread measured on the fitted LLMs, its mean informed by the answered items; no
        answer left out: the observed mean, with no uncertainty). Next to it the
        observed mean on the answered items.

    """
    check_ci_prob(ci_prob)
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    deviation = fitted_deviation_variance(posterior, seed=seed)
    return _score_with(draws, deviation, responses_of_new_llm, n_draws, samples_per_draw, ci_prob, seed, llm)


def _score_with(
    draws: PosteriorDraws,
    deviation: Mapping[str, float],
    responses_of_new_llm: Mapping[str, float] | pd.Series,
    n_draws: int,
    samples_per_draw: int,
    ci_prob: float,
    seed: int,
    llm: str,
) -> LLMScore:
    """:func:`score_llm` on thinned draws and benchmark deviations made once for many LLMs."""
    answers = pd.Series(responses_of_new_llm, dtype=float)
    columns = draws.columns(answers.index.astype(str).to_numpy())
    draws.check_responses(columns, answers.to_numpy())
    outcomes = np.full((1, len(draws.items)), np.nan)
    outcomes[0, columns] = answers.to_numpy()
    found = _ability_samples(draws, outcomes, samples_per_draw, seed)
    benchmarks = draws.responses.benchmarks.astype(str)
    rows = []
    for name in pd.unique(benchmarks):
        columns = np.flatnonzero(benchmarks == name)
        score = predicted_mean_score(
            found, draws, columns, outcomes, ci_prob, deviation_variance=deviation.get(name, 0.0)
        )
        answered = outcomes[0, columns] / draws.layout.score_scale[columns]
        n_answered = int((~np.isnan(answered)).sum())
        rows.append(
            {
                "benchmark": name,
                **{k: float(v[0]) for k, v in score.items()},
                "observed": np.nanmean(answered) if n_answered else np.nan,
                "n_answered": n_answered,
                "n_items": len(columns),
            }
        )
    dimensions = {"dimension": draws.dimensions}
    ability = xr.DataArray(found.points[0], dims=("sample", "dimension"), coords=dimensions)
    return LLMScore(
        ability,
        pd.DataFrame(rows).set_index("benchmark"),
        int(answers.notna().sum()),
        n_draws=n_draws,
        samples_per_draw=samples_per_draw,
        seed=seed,
        llm=llm,
    )


def table_answers(table: pd.DataFrame, llm_col: str, item_col: str, correct_col: str) -> pd.DataFrame:
    """A results table as ``(llm, item)`` numeric answers.

    Long (``llm_col``, ``item_col``, ``correct_col``) or wide (the first column holds LLM
    ids, the others item ids).
    """
    from benchmirt_bayes.data.tables import numeric_values

    columns = [str(c) for c in table.columns]
    if {llm_col, item_col, correct_col} <= set(columns):
        long = table.rename(columns={llm_col: "llm", item_col: "item", correct_col: "correct"})
        values, bad = numeric_values(long[["correct"]])
        if bad:
            raise ValueError(f"{len(bad)} non-numeric response(s) in column {correct_col!r}")
        long = long.assign(correct=values[:, 0], llm=long["llm"].astype(str), item=long["item"].astype(str))
        return long.pivot_table(index="llm", columns="item", values="correct", aggfunc="first")
    wide = table.set_index(table.columns[0])
    values, bad = numeric_values(wide)
    if bad:
        raise ValueError(f"{len(bad)} non-numeric response(s) in the wide table")
    return pd.DataFrame(values, index=wide.index.astype(str), columns=[str(c) for c in wide.columns])


def score_table(
    posterior: xr.DataTree,
    table: pd.DataFrame,
    *,
    llm_col: str = "llm",
    item_col: str = "item",
    correct_col: str = "correct",
    n_draws: int = 200,
    ci_prob: float = CI_PROB,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`score_llm` for every LLM of a results table (what ``benchmirt score`` writes).

    ``table`` is long (``llm_col``, ``item_col``, ``correct_col``) or wide (the first column
    holds LLM ids, the other columns are fitted item ids). Returns one tidy row per LLM and
    quantity: ``llm``, ``quantity`` (``ability`` or ``benchmark_score``), ``name`` (the
    dimension or benchmark), ``mean``, ``sd``, ``lower``, ``upper``, ``observed`` and
    ``n_answered``.
    """
    check_ci_prob(ci_prob)
    answers_table = table_answers(table, llm_col, item_col, correct_col)
    per_llm = {str(llm): row.dropna() for llm, row in answers_table.iterrows()}
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    deviation = fitted_deviation_variance(posterior, seed=seed)
    rows = []
    for llm, answers in per_llm.items():
        result = _score_with(draws, deviation, answers, n_draws, SCORE_SAMPLES_PER_DRAW, ci_prob, seed, llm)
        for (_, dim), row in result.ability_summary(ci_prob).iterrows():
            rows.append({"llm": llm, "quantity": "ability", "name": dim, **row.to_dict()})
        for bench, row in result.benchmark_scores.iterrows():
            values = row[["mean", "sd", "lower", "upper", "observed", "n_answered"]].to_dict()
            rows.append({"llm": llm, "quantity": "benchmark_score", "name": bench, **values})
    return pd.DataFrame(rows)


# ------------------------------------------------------------ adaptive test
def adaptive_test(
    posterior: xr.DataTree,
    answer: Callable[[str], float],
    *,
    budget: int,
    stop_sd: float | None = None,
    items: np.ndarray | list[str] | None = None,
    order: str = "information",
    n_draws: int = 50,
    samples_per_draw: int = 8,
    seed: int = 0,
) -> pd.DataFrame:
    """Computerised adaptive testing of a new LLM on the fitted items.

    At every step the next item maximises ``log det(P + I_i)``, where ``P`` is
    the precision of the current ability posterior and ``I_i`` the item's
    expected Fisher information over that posterior (D-optimality:
    the largest expected shrinkage of the multidimensional posterior).

    Parameters
    ----------
    posterior
        A fit from :func:`benchmirt_bayes.fit_posterior`.
    answer
        ``answer(item_id) -> response``: evaluates the LLM on one item (0/1 for a binary
        item; a category, score or count for the other types).
    budget
        Maximum number of items asked.
    stop_sd
        Stop early once every dimension's posterior SD is below this.
    items
        The item pool (default: every fitted item).
    order
        ``"information"`` (adaptive) or ``"random"`` (the baseline, seeded).
    n_draws, samples_per_draw
        Posterior draws of the items, ability samples per draw.
    seed
        Seed of thinning, sampling and random order.

    Returns
    -------
    DataFrame
        One row per step: ``step``, ``item``, ``response``, then
        ``<dim>_mean`` and ``<dim>_sd`` of the ability posterior after it.

    """
    check_integer("budget", budget)
    if order not in ("information", "random"):
        raise ValueError(f"order must be 'information' or 'random', got {order!r}")
    draws = PosteriorDraws.from_posterior(posterior, n_draws, seed=seed)
    pool = draws.items if items is None else np.asarray(items, dtype=str)
    pool_columns = list(draws.columns(pool))
    rng = np.random.default_rng(seed)
    outcomes = np.full((1, len(draws.items)), np.nan)
    k = draws.n_dims
    samples = _prior_samples(draws, samples_per_draw, rng)
    rows = []
    for step in range(1, min(budget, len(pool_columns)) + 1):
        if order == "random":
            choice = int(rng.integers(len(pool_columns)))
        else:
            info = draws.expected_information(samples[:, None, :], np.array(pool_columns))[0]
            precision = np.linalg.inv(np.cov(samples.T).reshape(k, k) + 1e-9 * np.eye(k))
            _, logdet = np.linalg.slogdet(precision[None] + info)
            choice = int(np.argmax(logdet))
        column = pool_columns.pop(choice)
        item = str(draws.items[column])
        response = float(answer(item))
        draws.check_responses(np.array([column]), np.array([response]))
        outcomes[0, column] = response
        samples = _ability_samples(draws, outcomes, samples_per_draw, seed + step).points[0]
        row = {"step": step, "item": item, "response": response}
        for d, name in enumerate(draws.dimensions):
            row[f"{name}_mean"] = samples[:, d].mean()
            row[f"{name}_sd"] = samples[:, d].std()
        rows.append(row)
        sds = samples.std(axis=0)
        if stop_sd is not None and np.all(sds < stop_sd):
            break
    return pd.DataFrame(rows)


def _ability_samples(
    draws: PosteriorDraws, outcomes: np.ndarray, per_draw: int, seed: int
) -> AbilityPosterior:
    """Laplace-SIR ability samples of the rows of ``outcomes`` (points ``(unit, sample, dimension)``)."""
    return ability_posterior(
        draws, outcomes, method="samples", samples_per_draw=per_draw, seed=seed, expected=False
    )


def _prior_samples(draws: PosteriorDraws, per_draw: int, rng: np.random.Generator) -> np.ndarray:
    n = len(draws) * per_draw
    chol = np.linalg.cholesky(draws.ability_prior_cov)
    return rng.standard_normal((n, chol.shape[0])) @ chol.T

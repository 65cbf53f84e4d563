"""Ability posteriors of new LLMs from their answers, with item uncertainty integrated.

The one scorer of every analysis that places an LLM the fit did not see
(:func:`~benchmirt_bayes.score_llm`, :func:`~benchmirt_bayes.adaptive_test`,
:func:`~benchmirt_bayes.fit_score_link`, :func:`~benchmirt_bayes.estimate_scores`, held-out
LLMs in cross-validation and subset evaluation): each LLM's posterior given its answers on
any subset of the fitted items, averaged over posterior draws of the items. Two methods
stand behind :func:`ability_posterior`: a grid over the ability space (one or two
dimensions) and Laplace-SIR samples (any number of dimensions). :func:`predicted_mean_score`
turns the posteriors into scores on sets of items, and :func:`benchmark_deviation_variance`
measures, out of sample, the benchmark-specific deviations a model with fewer dimensions
than benchmarks leaves out (on the Open LLM Leaderboard's five benchmarks under two
dimensions they are larger than the response noise), which the predictive then carries.
"""

from __future__ import annotations

import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.laplace_sir import laplace_sir
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.integrity import tree_checksum
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.summaries import CI_PROB, summarise_normal_mixture

GRID_POINTS = {1: 81, 2: 31}
"""Grid points per dimension of :func:`grid_ability_posterior`."""
GRID_LIMIT = 4.0
SAMPLES_PER_DRAW = 8
"""Ability samples per item draw of :func:`sampled_ability_posterior` (three or more dimensions)."""
ANSWERED_SHARE = 0.9
"""Share of a benchmark's items an LLM must have answered to measure its deviation there."""
DEVIATION_LLMS = 100
DEVIATION_ITEMS = 200
"""At most this many fitted LLMs, and items of the benchmark and of the others, per benchmark
in :func:`benchmark_deviation_variance` (seeded samples): the predictive variance it subtracts
includes the ability uncertainty these items leave, so fewer cost noise, not bias."""
DEVIATION_DRAWS = 20
"""Posterior draws :func:`fitted_deviation_variance` measures the deviations with."""
DEVIATION_CACHE_SIZE = 8
"""Fits (and seeds) whose deviations :func:`fitted_deviation_variance` keeps for the next call."""
_deviation_cache: OrderedDict[tuple[str, int], dict[str, float]] = OrderedDict()


@dataclass(frozen=True)
class AbilityPosterior:
    """Ability posteriors of many LLMs as weighted points.

    Attributes
    ----------
    points
        ``(point, dimension)`` abilities shared by every unit (a grid), or
        ``(unit, point, dimension)`` abilities of each unit (posterior samples).
    weights
        ``(unit, point)`` posterior probabilities (rows sum to one), averaged over item draws.
    expected
        ``(unit, item)`` posterior expected scores on ``[0, 1]`` of every fitted item
        (``None`` when not asked for).

    """

    points: np.ndarray
    weights: np.ndarray
    expected: np.ndarray | None

    @property
    def shared(self) -> bool:
        """Whether every unit has the same points (a grid)."""
        return self.points.ndim == 2

    def average(self, values: np.ndarray) -> np.ndarray:
        """Posterior mean of per-point ``values``: ``(point, …)`` if shared, else ``(unit, point, …)``."""
        if self.shared:
            return np.tensordot(self.weights, values, axes=(1, 0))
        return np.einsum("up,up...->u...", self.weights, values)

    @property
    def mean(self) -> np.ndarray:
        """``(unit, dimension)`` posterior means."""
        return self.average(self.points)

    @property
    def sd(self) -> np.ndarray:
        """``(unit, dimension)`` posterior SDs."""
        second = self.average(self.points**2)
        return np.sqrt(np.maximum(second - self.mean**2, 0.0))


def grid_ability_posterior(
    draws: PosteriorDraws, outcomes: np.ndarray, *, chunk: int = 256
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` on a grid (NaN = not answered).

    ``outcomes`` is in ``draws.items`` order. The prior is ``N(0, I)`` (the fitted LLMs'
    abilities are whitened in the sample); each item draw gives a posterior on the grid and
    the draws' posteriors are averaged, so item uncertainty widens the result. Works for one
    or two dimensions (:data:`GRID_POINTS`) and for every response type; for more,
    :func:`ability_posterior` samples instead.
    """
    k = draws.loading.shape[-1]
    if k not in GRID_POINTS:
        raise ValueError(
            f"grid posteriors are for 1 or 2 dimensions; the fit has {k} (use ability_posterior)"
        )
    axis = np.linspace(-GRID_LIMIT, GRID_LIMIT, GRID_POINTS[k])
    grid = np.stack(np.meshgrid(*[axis] * k, indexing="ij"), axis=-1).reshape(-1, k)
    log_prior = -0.5 * (grid**2).sum(axis=1)
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    answered = ~np.isnan(outcomes)
    n_units, n_draws = outcomes.shape[0], draws.loading.shape[0]
    weights = np.zeros((n_units, grid.shape[0]))
    expected = np.zeros((n_units, outcomes.shape[1]))
    columns = np.flatnonzero(answered.any(axis=0))
    layout = draws.layout
    for s in range(n_draws):
        eta = linear_predictor(grid, draws.loading[s], draws.intercept[s])  # (point, item)
        params = layout.at_sample(draws.params, s)
        score = layout.expected_score(eta, params, expand=0)  # (point, item)
        if layout.is_binary:
            asymptotes = layout.take_parameters(params, columns)  # floor and ceiling, if any
            log_p = BINARY.log_likelihood(
                1.0, eta[:, columns], **asymptotes
            )  # log P(correct) per point and item
            log_q = BINARY.log_likelihood(0.0, eta[:, columns], **asymptotes)
            y = np.where(answered[:, columns], outcomes[:, columns], 0.0)
            seen = answered[:, columns].astype(float)
            loglik = y @ log_p.T + (seen - y) @ log_q.T  # (unit, point)
        else:
            loglik = np.zeros((n_units, grid.shape[0]))
            sub = layout.take(columns)
            sub_params = layout.take_parameters(params, columns)
            for start in range(0, n_units, chunk):
                rows = outcomes[start : start + chunk][:, columns]
                cell = sub.log_likelihood(rows[:, None, :], eta[None, :, columns], sub_params, expand=0)
                loglik[start : start + chunk] = np.nansum(cell, axis=-1)
        log_post = loglik + log_prior[None, :]
        log_post -= log_post.max(axis=1, keepdims=True)
        post = np.exp(log_post)
        post /= post.sum(axis=1, keepdims=True)
        weights += post / n_draws
        expected += post @ score / n_draws
    return AbilityPosterior(grid, weights, expected)


def sampled_ability_posterior(
    draws: PosteriorDraws,
    outcomes: np.ndarray,
    *,
    samples_per_draw: int = SAMPLES_PER_DRAW,
    seed: int = 0,
    chunk: int = 256,
    expected: bool = True,
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` as samples, in any dimension.

    The samples are those of :func:`ability_samples` (per item draw, a Laplace
    approximation refined by sampling-importance-resampling), so item uncertainty is
    integrated as on the grid; each unit gets its own equally weighted points.
    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    samples = ability_samples(draws, outcomes, samples_per_draw=samples_per_draw, seed=seed)
    n_units, n_points = samples.shape[:2]
    weights = np.full((n_units, n_points), 1.0 / n_points)
    if not expected:
        return AbilityPosterior(samples, weights, None)
    everything = np.arange(len(draws.items))
    scores = (
        np.concatenate(
            [
                draws.expected_scores(samples[start : start + chunk], everything).mean(axis=1)
                for start in range(0, n_units, chunk)
            ]
        )
        if n_units
        else np.zeros((0, len(everything)))
    )
    return AbilityPosterior(samples, weights, scores)


def ability_samples(
    draws: PosteriorDraws,
    outcomes: np.ndarray,
    *,
    samples_per_draw: int = 4,
    seed: int = 0,
    chunk: int = 32,
) -> np.ndarray:
    """Laplace-SIR ability samples ``(unit, sample, dimension)`` for rows of ``outcomes (unit, item)``.

    ``outcomes`` is in ``draws.items`` order, NaN where not evaluated; the prior is the
    fit's (:attr:`PosteriorDraws.ability_prior_cov`). Sample ``k`` pairs with item draw
    ``k // samples_per_draw``.
    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    answered = np.flatnonzero((~np.isnan(outcomes)).any(axis=0))
    design = draws.loading[:, answered, :]
    offset = draws.intercept[:, answered]
    prior_var = np.diag(draws.ability_prior_cov)
    layout, params = draws.response_model(answered)
    parts = []
    for start in range(0, outcomes.shape[0], chunk):
        rows = outcomes[start : start + chunk][:, answered]
        parts.append(
            laplace_sir(
                design,
                offset,
                rows,
                0.0,
                prior_var,
                samples_per_draw=samples_per_draw,
                seed=seed + start,
                layout=layout,
                params=params,
            )
        )
    return np.concatenate(parts, axis=0)


Method = Literal["auto", "grid", "samples"]


def ability_posterior(
    draws: PosteriorDraws,
    outcomes: np.ndarray,
    *,
    method: Method = "auto",
    samples_per_draw: int = SAMPLES_PER_DRAW,
    seed: int = 0,
    expected: bool = True,
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` (NaN: not answered).

    Parameters
    ----------
    draws
        Posterior draws of the items (:class:`~benchmirt_bayes.draws.PosteriorDraws`);
        ``outcomes`` is in their item order.
    outcomes
        The units' answers.
    method
        ``"grid"`` (one or two dimensions; deterministic), ``"samples"`` (Laplace-SIR, any
        number of dimensions) or ``"auto"``: the grid up to two dimensions, samples above,
        so that training and new LLMs of the score link are scored alike.
    samples_per_draw, seed
        Samples per item draw and their seed (``"samples"``).
    expected
        Also compute every unit's expected score on every fitted item.

    """
    if method not in ("auto", "grid", "samples"):
        raise ValueError(f"method must be 'auto', 'grid' or 'samples', got {method!r}")
    if method == "grid" or (method == "auto" and draws.n_dims in GRID_POINTS):
        return grid_ability_posterior(draws, outcomes)
    return sampled_ability_posterior(
        draws, outcomes, samples_per_draw=samples_per_draw, seed=seed, expected=expected
    )


def predicted_mean_score(
    posterior: AbilityPosterior,
    draws: PosteriorDraws,
    columns: np.ndarray,
    outcomes: np.ndarray,
    ci_prob: float,
    *,
    predictive: bool = True,
    deviation_variance: float = 0.0,
    chunk: int = 64,
) -> dict[str, np.ndarray]:
    """Each unit's mean score on ``columns`` (on ``[0, 1]``) had it answered them all, summarised.

    With ``predictive`` (the default), the posterior predictive of the score the unit would
    get: its answered items count as answered, and each unanswered one adds its expected
    score and its response noise, over the unit's ability posterior and the item draws (a
    mixture of normals, moment-matched per ability point). Without it, the posterior of the
    model's *expected* mean score on all of ``columns``, answered or not: the interval of a
    parameter, not of the score the unit would get.

    ``deviation_variance`` (predictive only) is the variance ``v`` of a unit's own deviation
    ``δ`` from the model's mean score on these items (:func:`benchmark_deviation_variance`),
    shared by its answered and unanswered items. The unanswered share carries it: its mean
    moves by the posterior mean of ``δ`` given the answered items' mean against the model's
    (a normal–normal update at each ability point, the answered mean's response noise taken
    at the unit's posterior), and ``(share unanswered)² × v`` is added to the variance: the
    prior's, not the update's smaller one, which real deviations, less uniform over a
    benchmark's items than the update assumes, do not bear out.

    Returns
    -------
    dict
        ``mean``, ``sd``, ``lower``, ``upper`` (of mass ``ci_prob``), one value per unit.

    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    scale = draws.layout.score_scale[columns]
    observed = outcomes[:, columns] / scale
    unanswered = np.isnan(observed) if predictive else np.ones(observed.shape, dtype=bool)
    open_ = unanswered.astype(float)
    known = np.where(unanswered, 0.0, np.nan_to_num(observed)).sum(axis=1)
    update = bool(predictive and deviation_variance and (~unanswered).any())
    # (unit, point) sums over the open and the answered items: expected score and variance
    parts = {key: np.zeros(posterior.weights.shape) for key in ("open", "open_var", "seen", "seen_var")}
    if posterior.shared:
        second = {"open": np.zeros(posterior.weights.shape), "seen": np.zeros(posterior.weights.shape)}
        for s in range(len(draws)):
            layout, params = draws.response_model(columns, s)
            eta = draws.eta(s, posterior.points, columns)  # (point, item)
            expected = layout.expected_score(eta, params, expand=0).T
            variance = layout.variance(eta, params, expand=0).T if predictive else None
            for key, mask in (("open", open_), ("seen", 1.0 - open_ if update else None)):
                if mask is None:
                    continue
                total = mask @ expected  # (unit, point)
                parts[key] += total / len(draws)
                second[key] += total**2 / len(draws)
                if predictive:
                    parts[f"{key}_var"] += mask @ variance / len(draws)
        for key in second:  # the item draws' spread of the sums
            parts[f"{key}_var"] += np.maximum(second[key] - parts[key] ** 2, 0.0)
    else:  # each sample pairs with its own item draw
        for start in range(0, outcomes.shape[0], chunk):
            rows = slice(start, start + chunk)
            expected, variance = draws.score_moments(posterior.points[rows], columns, variance=predictive)
            for key, mask in (("open", open_[rows]), ("seen", 1.0 - open_[rows] if update else None)):
                if mask is None:
                    continue
                parts[key][rows] = np.einsum("usi,ui->us", expected, mask)
                if predictive:
                    parts[f"{key}_var"][rows] = np.einsum("usi,ui->us", variance, mask)
    n = len(columns)
    means = (known[:, None] + parts["open"]) / n
    variances = parts["open_var"] / n**2
    if predictive and deviation_variance:
        variances = variances + deviation_variance * (open_.sum(axis=1, keepdims=True) / n) ** 2
    if update:
        n_open = open_.sum(axis=1)
        means = means + _deviation_shift(parts, posterior.weights, known, n_open, n, deviation_variance)
    return summarise_normal_mixture(means, variances, posterior.weights, ci_prob)


def _deviation_shift(
    parts: dict[str, np.ndarray],
    weights: np.ndarray,
    known: np.ndarray,
    n_open: np.ndarray,
    n: int,
    deviation_variance: float,
) -> np.ndarray:
    """``(unit, point)`` move of the mean score: the unanswered share's posterior mean of ``δ``."""
    n_seen = np.maximum(n - n_open, 1)[:, None]
    residual = (known[:, None] - parts["seen"]) / n_seen  # answered mean − the model's
    noise = np.sum(weights * parts["seen_var"], axis=1, keepdims=True) / n_seen**2
    gain = deviation_variance / (deviation_variance + np.maximum(noise, 1e-12))
    return np.where(n_open[:, None] < n, (n_open[:, None] / n) * gain * residual, 0.0)


def benchmark_deviation_variance(draws: PosteriorDraws, *, seed: int = 0) -> pd.Series:
    """Per benchmark, the variance of the fitted LLMs' mean scores around what the other benchmarks predict.

    A model with fewer dimensions than benchmarks leaves each LLM a benchmark-specific
    deviation: its mean score on a benchmark differs from the model's prediction by more
    than the model's own uncertainty. For every fitted LLM that answered at least
    :data:`ANSWERED_SHARE` of a benchmark's items, its ability posterior is found from its
    answers on the *other* benchmarks, and its mean score on this one compared with the
    posterior predictive of it (:func:`predicted_mean_score`, every item of the benchmark
    unanswered): the squared difference less the predictive variance, averaged over LLMs and
    floored at zero. Out of sample, so the fit's own pull towards each LLM's answers does
    not hide the deviation; with a single benchmark there is nothing to deviate from and the
    variance is about zero. At most :data:`DEVIATION_LLMS` LLMs and :data:`DEVIATION_ITEMS`
    items of this benchmark and of the others enter (seeded samples), so the cost does not
    grow with the data.

    Parameters
    ----------
    draws
        Thinned draws of a fit with its data (``PosteriorDraws.from_posterior(fit, n)`` on a
        fit with ``observed_data``).
    seed
        Seed of the subsamples and of the ability samples (three or more dimensions).

    Returns
    -------
    pandas.Series
        Variance on the ``[0, 1]`` score scale, indexed by benchmark.

    """
    if draws.responses is None:
        raise ValueError("the deviation needs the answers the fit was made on (a fit with observed_data)")
    values = draws.responses.values
    benchmarks = draws.responses.benchmarks.astype(str)
    scaled = values / draws.layout.score_scale
    rng = np.random.default_rng(seed)
    variances = {}
    for name in pd.unique(benchmarks):
        columns = np.flatnonzero(benchmarks == name)
        share = (~np.isnan(values[:, columns])).mean(axis=1)
        rows = np.flatnonzero(share >= ANSWERED_SHARE)
        if rows.size == 0:
            rows = np.flatnonzero(share > 0)
        if rows.size > DEVIATION_LLMS:
            rows = np.sort(rng.choice(rows, DEVIATION_LLMS, replace=False))
        other_columns = np.flatnonzero(benchmarks != name)
        if other_columns.size > DEVIATION_ITEMS:
            other_columns = rng.choice(other_columns, DEVIATION_ITEMS, replace=False)
        if columns.size > DEVIATION_ITEMS:  # the deviation moves every item's score alike
            columns = np.sort(rng.choice(columns, DEVIATION_ITEMS, replace=False))
        others = ability_posterior(
            draws.take_items(other_columns), values[np.ix_(rows, other_columns)], seed=seed, expected=False
        )
        unanswered = np.full((rows.size, columns.size), np.nan)
        own = np.arange(columns.size)
        predicted = predicted_mean_score(others, draws.take_items(columns), own, unanswered, CI_PROB)
        seen = ~np.isnan(scaled[rows][:, columns])
        observed = np.nansum(scaled[rows][:, columns], axis=1) / np.maximum(seen.sum(axis=1), 1)
        excess = ((observed - predicted["mean"]) ** 2 - predicted["sd"] ** 2)[seen.any(axis=1)]
        variances[name] = max(float(excess.mean()), 0.0) if excess.size else 0.0
    return pd.Series(variances, name="deviation_variance").rename_axis("benchmark")


def fitted_deviation_variance(posterior: xr.DataTree, *, seed: int = 0) -> dict[str, float]:
    """:func:`benchmark_deviation_variance` of a fit on :data:`DEVIATION_DRAWS` draws, as a dict.

    Empty, with a warning, for a bare posterior (no ``observed_data``). Measured once per
    fit and seed: a later call on a fit with the same contents (the same
    :func:`~benchmirt_bayes.integrity.tree_checksum`) reuses the last
    :data:`DEVIATION_CACHE_SIZE` results, so scoring LLMs one call at a time (``score_llm``
    in a loop, repeated ``estimate_scores``) pays for it once.
    """
    key = (tree_checksum(posterior), seed)
    if key in _deviation_cache:
        _deviation_cache.move_to_end(key)
        return dict(_deviation_cache[key])
    draws = PosteriorDraws.from_posterior(posterior, DEVIATION_DRAWS, seed=seed)
    if draws.responses is None:
        warnings.warn(
            "the fit holds no observed_data, so the LLMs' benchmark-specific deviations cannot be "
            "estimated: predictive score intervals hold only the model's own uncertainty and are "
            "too narrow where the model misses such deviations",
            stacklevel=3,
        )
        return {}
    result = benchmark_deviation_variance(draws, seed=seed).to_dict()
    _deviation_cache[key] = result
    if len(_deviation_cache) > DEVIATION_CACHE_SIZE:
        _deviation_cache.popitem(last=False)
    return dict(result)

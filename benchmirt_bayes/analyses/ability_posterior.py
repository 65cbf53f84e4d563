"""Ability posteriors of new LLMs from their answers, with item uncertainty integrated.

The one scorer of every analysis that places an LLM the fit did not see
(:func:`~benchmirt_bayes.score_llm`, :func:`~benchmirt_bayes.adaptive_test`,
:func:`~benchmirt_bayes.fit_score_link`, :func:`~benchmirt_bayes.estimate_scores`, held-out
LLMs in cross-validation and subset evaluation): each LLM's posterior given its answers on
any subset of the fitted items, averaged over posterior draws of the items. Two methods
stand behind :func:`ability_posterior`: a grid over the ability space (one or two
dimensions) and Laplace-SIR samples (any number of dimensions). :func:`predicted_mean_score`
turns the posteriors into scores on sets of items, and :func:`benchmark_deviations`
measures, out of sample, the benchmark-specific deviations a model with fewer dimensions
than benchmarks leaves out (on the Open LLM Leaderboard's five benchmarks under two
dimensions they are larger than the response noise), which the predictive then carries.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Literal, NamedTuple

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.laplace_sir import laplace_sir
from benchmirt_bayes.draws import PosteriorDraws
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
in :func:`benchmark_deviations` (seeded samples): the predictive variance it subtracts
includes the ability uncertainty these items leave, so fewer cost noise, not bias."""
DEVIATION_DRAWS = 20
"""Posterior draws :func:`fitted_deviations` measures the deviations with."""


class Deviation(NamedTuple):
    """What a model leaves out of an LLM's scores on one benchmark (:func:`benchmark_deviations`).

    Attributes
    ----------
    variance
        Variance, on the ``[0, 1]`` score scale, of an LLM's own deviation from the model's
        mean score on the benchmark, shared by all its items.
    noise_factor
        The responses' variance around the model (and that deviation) over the model's own
        response variance (at least one): items answered alike beyond the model, such as
        items on one topic, make a subset's mean noisier than independent answers would.

    """

    variance: float = 0.0
    noise_factor: float = 1.0


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
    deviation: Deviation | None = None,
    chunk: int = 64,
) -> dict[str, np.ndarray]:
    """Each unit's mean score on ``columns`` (on ``[0, 1]``) had it answered them all, summarised.

    With ``predictive`` (the default), the posterior predictive of the score the unit would
    get: its answered items count as answered, and each unanswered one adds its expected
    score and its response noise, over the unit's ability posterior and the item draws (a
    mixture of normals, moment-matched per ability point). Without it, the posterior of the
    model's *expected* mean score on all of ``columns``, answered or not: the interval of a
    parameter, not of the score the unit would get.

    ``deviation`` (predictive only; :func:`benchmark_deviations`) scales the response noise
    by its ``noise_factor`` and adds a unit's own deviation ``δ`` from the model's mean score
    on these items, shared by its answered and unanswered items. The prior ``N(0, variance)``
    of ``δ`` is updated by the answered items' mean against the model's (a normal–normal
    update at each ability point, the answered mean's noise taken at the unit's posterior,
    which also reweights the points), and the unanswered share carries the updated ``δ``:
    with nothing answered ``(share unanswered)² × variance`` is added.

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
    deviation = deviation if predictive and deviation is not None else Deviation()
    update = bool(deviation.variance and (~unanswered).any())
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
                    parts[f"{key}_var"] += deviation.noise_factor * (mask @ variance) / len(draws)
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
                    noise = np.einsum("usi,ui->us", variance, mask)
                    parts[f"{key}_var"][rows] = deviation.noise_factor * noise
    n = len(columns)
    means = (known[:, None] + parts["open"]) / n
    variances = parts["open_var"] / n**2
    weights = posterior.weights
    if update:
        means, variances, weights = _update_deviation(
            means, variances, weights, parts, known, open_.sum(axis=1), n, deviation.variance
        )
    elif deviation.variance:
        variances = variances + deviation.variance * (open_.sum(axis=1, keepdims=True) / n) ** 2
    return summarise_normal_mixture(means, variances, weights, ci_prob)


def _update_deviation(
    means: np.ndarray,
    variances: np.ndarray,
    weights: np.ndarray,
    parts: dict[str, np.ndarray],
    known: np.ndarray,
    n_open: np.ndarray,
    n: int,
    deviation_variance: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The predictive's components and weights once the answered items have informed ``δ``."""
    n_seen = (n - n_open)[:, None]
    has = n_seen > 0
    per_seen = np.maximum(n_seen, 1)
    residual = (known[:, None] - parts["seen"]) / per_seen  # answered mean − the model's
    noise = np.sum(weights * parts["seen_var"], axis=1, keepdims=True) / per_seen**2
    noise = np.maximum(noise, 1e-12)
    gain = np.where(has, deviation_variance / (deviation_variance + noise), 0.0)
    share_open = n_open[:, None] / n
    means = means + share_open * gain * residual
    variances = variances + share_open**2 * deviation_variance * (1.0 - gain)
    # δ explains part of the answered mean's miss, so points that miss it are less penalised
    log_ratio = np.where(
        has,
        0.5 * residual**2 * (1.0 / noise - 1.0 / (noise + deviation_variance))
        - 0.5 * np.log1p(deviation_variance / noise),
        0.0,
    )
    log_weights = np.log(np.maximum(weights, 1e-300)) + log_ratio
    log_weights -= log_weights.max(axis=1, keepdims=True)
    updated = np.where(weights > 0, np.exp(log_weights), 0.0)
    return means, variances, updated / updated.sum(axis=1, keepdims=True)


def benchmark_deviations(draws: PosteriorDraws, *, seed: int = 0) -> pd.DataFrame:
    """Per benchmark, how far the fitted LLMs' scores stray from what the model predicts.

    A model with fewer dimensions than benchmarks leaves each LLM a benchmark-specific
    deviation: its mean score on a benchmark differs from the model's prediction by more
    than the model's own uncertainty. For every fitted LLM that answered at least
    :data:`ANSWERED_SHARE` of a benchmark's items, its ability posterior is found from its
    answers on the *other* benchmarks and its mean score on this one compared with the
    posterior predictive of it (:func:`predicted_mean_score`, every item of the benchmark
    unanswered), on all the benchmark's items and on two random halves of them. The halves
    share the LLM's deviation but not their response noise, so half the mean squared
    difference of the two halves' residuals (less what the ability's uncertainty puts
    between them), over the model's response variance of a half, is the ``noise_factor``
    (floored at one); the ``variance`` of the
    deviation is the whole benchmark's mean squared residual less the predictive variance
    with that factor (floored at zero). Out of sample, so the fit's own pull towards each
    LLM's answers does not hide the deviation; with a single benchmark there is nothing to
    deviate from and the variance is about zero. At most :data:`DEVIATION_LLMS` LLMs and
    :data:`DEVIATION_ITEMS` items of this benchmark and of the others enter (seeded
    samples), so the cost does not grow with the data.

    Parameters
    ----------
    draws
        Thinned draws of a fit with its data (``PosteriorDraws.from_posterior(fit, n)`` on a
        fit with ``observed_data``).
    seed
        Seed of the subsamples, the halves and the ability samples (three or more dimensions).

    Returns
    -------
    pandas.DataFrame
        ``variance`` (on the ``[0, 1]`` score scale) and ``noise_factor``, indexed by
        benchmark (the fields of :class:`Deviation`).

    """
    if draws.responses is None:
        raise ValueError("the deviation needs the answers the fit was made on (a fit with observed_data)")
    values = draws.responses.values
    benchmarks = draws.responses.benchmarks.astype(str)
    scaled = values / draws.layout.score_scale
    rng = np.random.default_rng(seed)
    found = {}
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
        half = rng.permutation(columns.size) < columns.size // 2
        own = np.arange(columns.size)
        residual, model_variance, noise = {}, {}, {}
        for part, subset in (("all", own), ("first", own[half]), ("second", own[~half])):
            residual[part], model_variance[part], noise[part] = _out_of_sample_residuals(
                others, draws.take_items(columns[subset]), scaled[np.ix_(rows, columns[subset])]
            )
        keep = np.isfinite(residual["all"])
        if not keep.any():
            found[name] = Deviation()
            continue
        halves = keep & np.isfinite(residual["first"]) & np.isfinite(residual["second"])
        factor = 1.0
        if halves.sum() >= 2 and columns.size >= 4:
            # the halves' residuals differ by their response noise and by how differently
            # their items feel the ability's uncertainty (the model's variances tell it)
            n_first, n_all = half.sum(), columns.size
            n_second = n_all - n_first
            model_covariance = (
                n_all**2 * model_variance["all"]
                - n_first**2 * model_variance["first"]
                - n_second**2 * model_variance["second"]
            ) / (2 * n_first * n_second)
            apart = 0.5 * (residual["first"] - residual["second"]) ** 2
            ability_apart = 0.5 * (model_variance["first"] + model_variance["second"]) - model_covariance
            model_noise = 0.5 * (noise["first"] + noise["second"])
            factor = max(float((apart - ability_apart)[halves].mean() / model_noise[halves].mean()), 1.0)
        excess = residual["all"] ** 2 - model_variance["all"] - factor * noise["all"]
        found[name] = Deviation(max(float(excess[keep].mean()), 0.0), float(factor))
    return pd.DataFrame(found, index=list(Deviation._fields)).T.rename_axis("benchmark")


def _out_of_sample_residuals(
    others: AbilityPosterior, item_draws: PosteriorDraws, scaled: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's observed mean on the items less the predictive's, and the predictive's two variances.

    The variances are the model's uncertainty of the expected mean (ability and items) and
    the response noise of the mean; NaN residual where a row answered none of the items.
    """
    columns = np.arange(scaled.shape[1])
    unanswered = np.full(scaled.shape, np.nan)
    predictive = predicted_mean_score(others, item_draws, columns, unanswered, CI_PROB)
    expected = predicted_mean_score(others, item_draws, columns, unanswered, CI_PROB, predictive=False)
    seen = ~np.isnan(scaled)
    mean = np.nansum(scaled, axis=1) / np.maximum(seen.sum(axis=1), 1)
    observed = np.where(seen.any(axis=1), mean, np.nan)
    model_variance = expected["sd"] ** 2
    noise = np.maximum(predictive["sd"] ** 2 - model_variance, 0.0)
    return observed - predictive["mean"], model_variance, noise


def fitted_deviations(posterior: xr.DataTree, *, seed: int = 0) -> dict[str, Deviation]:
    """:func:`benchmark_deviations` of a fit on :data:`DEVIATION_DRAWS` draws, by benchmark.

    Empty, with a warning, for a bare posterior (no ``observed_data``).
    """
    draws = PosteriorDraws.from_posterior(posterior, DEVIATION_DRAWS, seed=seed)
    if draws.responses is None:
        warnings.warn(
            "the fit holds no observed_data, so the LLMs' benchmark-specific deviations cannot be "
            "estimated: predictive score intervals hold only the model's own uncertainty and are "
            "too narrow where the model misses such deviations",
            stacklevel=3,
        )
        return {}
    table = benchmark_deviations(draws, seed=seed)
    return {str(name): Deviation(*row) for name, row in zip(table.index, table.to_numpy(), strict=True)}

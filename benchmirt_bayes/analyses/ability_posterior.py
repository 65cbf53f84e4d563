"""Ability posteriors of many LLMs from their answers, with item uncertainty integrated.

One scorer behind :func:`fit_score_link <benchmirt_bayes.fit_score_link>` and
:func:`estimate_scores <benchmirt_bayes.estimate_scores>`: each LLM's posterior given its
answers on any subset of the fitted items, averaged over posterior draws of the items, on a
grid over the ability space for one or two dimensions and as Laplace-SIR samples for more.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from benchmirt_bayes.analyses.scoring import ItemDraws, ability_samples, probabilities_for_samples
from benchmirt_bayes.model.response_models import BINARY, linear_predictor
from benchmirt_bayes.summaries import summarise_weighted

GRID_POINTS = {1: 81, 2: 31}
"""Grid points per dimension of :func:`grid_ability_posterior`."""
GRID_LIMIT = 4.0
SAMPLES_PER_DRAW = 8
"""Ability samples per item draw of :func:`sampled_ability_posterior` (three or more dimensions)."""


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
        ``(unit, item)`` posterior expected scores on ``[0, 1]`` of every fitted item.

    """

    points: np.ndarray
    weights: np.ndarray
    expected: np.ndarray

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
    item_draws: ItemDraws, outcomes: np.ndarray, *, chunk: int = 256
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` on a grid (NaN = not answered).

    ``outcomes`` is in ``item_draws.items`` order. The prior is ``N(0, I)`` (the fitted LLMs'
    abilities are whitened in the sample); each item draw gives a posterior on the grid and
    the draws' posteriors are averaged, so item uncertainty widens the result. Works for one
    or two dimensions (:data:`GRID_POINTS`) and for every response type; for more,
    :func:`ability_posterior` samples instead.
    """
    k = item_draws.loading.shape[-1]
    if k not in GRID_POINTS:
        raise ValueError(
            f"grid posteriors are for 1 or 2 dimensions; the fit has {k} (use ability_posterior)"
        )
    axis = np.linspace(-GRID_LIMIT, GRID_LIMIT, GRID_POINTS[k])
    grid = np.stack(np.meshgrid(*[axis] * k, indexing="ij"), axis=-1).reshape(-1, k)
    log_prior = -0.5 * (grid**2).sum(axis=1)
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    answered = ~np.isnan(outcomes)
    n_units, n_draws = outcomes.shape[0], item_draws.loading.shape[0]
    weights = np.zeros((n_units, grid.shape[0]))
    expected = np.zeros((n_units, outcomes.shape[1]))
    columns = np.flatnonzero(answered.any(axis=0))
    layout = item_draws.layout
    for s in range(n_draws):
        eta = linear_predictor(grid, item_draws.loading[s], item_draws.intercept[s])  # (point, item)
        params = layout.at_sample(item_draws.params, s)
        score = layout.expected_score(eta, params, expand=0)  # (point, item)
        if layout.is_binary:
            log_p = BINARY.log_likelihood(1.0, eta[:, columns])  # log P(correct) per point and item
            log_q = BINARY.log_likelihood(0.0, eta[:, columns])
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
    item_draws: ItemDraws,
    outcomes: np.ndarray,
    *,
    samples_per_draw: int = SAMPLES_PER_DRAW,
    seed: int = 0,
    chunk: int = 256,
) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes (unit, item)`` as samples, in any dimension.

    The samples are those of :func:`~benchmirt_bayes.analyses.scoring.ability_samples`
    (per item draw, a Laplace approximation refined by sampling-importance-resampling), so
    item uncertainty is integrated as on the grid; each unit gets its own equally weighted
    points.
    """
    outcomes = np.atleast_2d(np.asarray(outcomes, dtype=float))
    samples = ability_samples(item_draws, outcomes, samples_per_draw=samples_per_draw, seed=seed)
    n_units, n_points = samples.shape[:2]
    everything = np.arange(len(item_draws.items))
    expected = (
        np.concatenate(
            [
                probabilities_for_samples(item_draws, samples[start : start + chunk], everything).mean(axis=1)
                for start in range(0, n_units, chunk)
            ]
        )
        if n_units
        else np.zeros((0, len(everything)))
    )
    weights = np.full((n_units, n_points), 1.0 / n_points)
    return AbilityPosterior(samples, weights, expected)


def ability_posterior(item_draws: ItemDraws, outcomes: np.ndarray, *, seed: int = 0) -> AbilityPosterior:
    """Ability posteriors of the rows of ``outcomes``: on a grid up to two dimensions, sampled above.

    The one scorer of :func:`~benchmirt_bayes.fit_score_link` and
    :func:`~benchmirt_bayes.estimate_scores`, so training LLMs
    and new LLMs are scored alike. ``seed`` drives the sampling (the grid is deterministic).
    """
    if item_draws.loading.shape[-1] in GRID_POINTS:
        return grid_ability_posterior(item_draws, outcomes)
    return sampled_ability_posterior(item_draws, outcomes, seed=seed)


def expected_mean_score(
    posterior: AbilityPosterior, item_draws: ItemDraws, columns: np.ndarray, ci_prob: float
) -> dict[str, np.ndarray]:
    """Each unit's expected mean score on ``columns`` (on ``[0, 1]``), summarised.

    ``mean``, ``sd``, ``lower`` and ``upper`` (of mass ``ci_prob``) over the unit's ability
    posterior, with the item draws integrated.
    """
    layout = item_draws.layout
    if posterior.shared:
        n = item_draws.loading.shape[0]
        per_point = np.zeros(posterior.points.shape[0])  # the mean expected score at each grid point
        for s in range(n):
            eta = linear_predictor(
                posterior.points, item_draws.loading[s][columns], item_draws.intercept[s][columns]
            )
            params = layout.take_parameters(layout.at_sample(item_draws.params, s), columns)
            per_point += layout.take(columns).expected_score(eta, params, expand=0).mean(axis=1) / n
        per_point = np.broadcast_to(per_point, posterior.weights.shape)
    else:  # each sample pairs with its own item draw
        per_point = probabilities_for_samples(item_draws, posterior.points, columns).mean(axis=-1)
    return summarise_weighted(per_point, posterior.weights, ci_prob)

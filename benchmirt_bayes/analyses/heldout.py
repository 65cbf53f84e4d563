"""Held-out prediction: ``cross_validate`` against baselines, and ``choose_n_dims``.

Three schemes, each with K folds:

``cells``
    The published protocol: every observed cell falls in one fold; fit on the
    other folds, predict the held-out cells.
``llms``
    Held-out LLMs: fit on the other LLMs; reveal a share (``reveal_share``) of
    each held-out LLM's items, place it from those (:mod:`benchmirt_bayes.scoring`,
    item uncertainty integrated) and predict the rest.
``items``
    Held-out items: fit on the other items; reveal each held-out item's answers
    from a share of the LLMs, estimate the item from those (its benchmark's
    pooled prior, ability uncertainty integrated) and predict the other LLMs.

Every model sees exactly the same *known* cells when predicting a fold's *test*
cells; the baselines are means over the known cells (smoothed as
``(correct + 0.5) / (n + 1)`` so that a 0 % or 100 % group mean does not give an
infinite log loss).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.analyses.ability_posterior import ability_posterior
from benchmirt_bayes.analyses.laplace_sir import laplace_sir
from benchmirt_bayes.analyses.metrics import spearman
from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.model.spec import ModelSpec
from benchmirt_bayes.posterior import LOG_LIKELIHOOD_VARIABLE, fit_spec, pointwise_log_likelihood
from benchmirt_bayes.response_types import DEFAULT_TYPE, RESPONSE_MODELS
from benchmirt_bayes.response_types.base import cell_linear_predictor, linear_predictor
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.summaries import CI_PROB, interval_quantiles

Scheme = Literal["cells", "llms", "items"]
SCHEMES = ("cells", "llms", "items")
_PREDICTION_DRAWS = 100
_HYPERPARAMETERS = (
    "benchmark_loading_mean",
    "benchmark_loading_spread",
    "benchmark_intercept_mean",
    "benchmark_intercept_spread",
    "subgroup_intercept_offset",
)


# ------------------------------------------------------------------ folds
@dataclass(frozen=True)
class FoldSplit:
    """One fold: the matrix to fit on, and the known and test cells of the full matrix."""

    train: ResponseMatrix
    known: np.ndarray
    test: np.ndarray
    held_out: np.ndarray  # indices of held-out LLMs or items (empty for cells)


def check_fold_count(responses: ResponseMatrix, scheme: str, n_folds: int) -> None:
    """Refuse more folds than held-out units (LLMs or items; cells always suffice)."""
    if scheme == "cells":
        return
    size = responses.n_llms if scheme == "llms" else responses.n_items
    if n_folds > size:
        raise ValueError(f"{n_folds} folds need at least {n_folds} {scheme}, got {size}")


def fold_split(
    responses: ResponseMatrix,
    scheme: Scheme,
    fold: int,
    n_folds: int,
    seed: int,
    reveal_share: float = 0.5,
) -> FoldSplit:
    """Deterministic split of ``responses`` for one fold (same on every worker)."""
    observed = responses.observed
    if scheme == "cells":
        test = responses.cell_folds(n_folds, seed=seed) == fold
        return FoldSplit(responses.masked(test), observed & ~test, test, np.array([], dtype=np.int64))
    check_fold_count(responses, scheme, n_folds)
    axis = 0 if scheme == "llms" else 1
    size = observed.shape[axis]
    order = np.random.default_rng(seed).permutation(size)
    held = np.sort(order[fold::n_folds])
    kept = np.setdiff1d(np.arange(size), held)
    reveal_rng = np.random.default_rng([seed, fold])
    revealed = reveal_rng.random(observed.shape) < reveal_share
    in_held = np.zeros(observed.shape, dtype=bool)
    if axis == 0:
        in_held[held, :] = True
        train_data = responses.data.isel({LLM_DIM: kept})
    else:
        in_held[:, held] = True
        train_data = responses.data.isel({ITEM_DIM: kept})
    known = observed & (~in_held | revealed)
    test = observed & in_held & ~revealed
    return FoldSplit(ResponseMatrix(train_data, validate=False), known, test, held)


# ------------------------------------------------------------- predictions
def baseline_predictions(responses: ResponseMatrix, known: np.ndarray, by: str | None) -> np.ndarray:
    """``(llm, item)`` smoothed means over the known cells (scores on ``[0, 1]``).

    ``by="global"``: one mean; ``"llm"``: per LLM; any item coordinate: per
    LLM × item group (falling back to the LLM mean where the group has no known cell).
    """
    values = np.where(known, responses.scaled_values, 0.0)
    if by == "global":
        mean = values.sum() / known.sum()
        return np.full(known.shape, mean)
    llm_mean = (values.sum(axis=1) + 0.5) / (known.sum(axis=1) + 1.0)
    if by == "llm":
        return np.repeat(llm_mean[:, None], known.shape[1], axis=1)
    codes, _ = pd.factorize(responses.data[by].values)
    out = np.empty(known.shape)
    for g in range(codes.max() + 1):
        cols = codes == g
        count = known[:, cols].sum(axis=1)
        mean = (values[:, cols].sum(axis=1) + 0.5) / (count + 1.0)
        mean = np.where(count > 0, mean, llm_mean)
        out[:, cols] = mean[:, None]
    return out


def typed_predictive_scores(
    fit: xr.DataTree, responses: ResponseMatrix, test: np.ndarray, seed: int = 0
) -> pd.DataFrame:
    """Proper scores of the posterior predictive distribution of every test cell, any type.

    One row per test cell (in ``np.flatnonzero(test)`` order) with ``response_type``,
    ``benchmark``, ``log_score`` (log of the posterior-mean likelihood: the log predictive
    density, a point mass for binary, graded and count cells and for continuous 0s and
    1s), ``expected`` (predictive mean on ``[0, 1]``), ``outcome`` (on ``[0, 1]``), and
    the scoring rules each type declares: ``rps`` (whole-number types), ``crps`` and
    ``covered_90`` (the outcome inside the central 90% predictive interval).
    """
    from scipy.special import logsumexp

    from benchmirt_bayes.analyses.metrics import crps_from_samples, ranked_probability_score

    draws = PosteriorDraws.from_posterior(fit, _PREDICTION_DRAWS, seed=seed, abilities=True)
    layout, params = draws.layout, draws.params
    rows, cols = np.nonzero(test)
    ability, loading, intercept = draws.ability, draws.loading, draws.intercept
    n_samples = len(draws)
    types = layout.types[cols]
    ordinal = np.array(["rps" in RESPONSE_MODELS[name].scoring_rules for name in types], dtype=bool)
    sampled = np.array(["crps" in RESPONSE_MODELS[name].scoring_rules for name in types], dtype=bool)
    width = int(layout.score_scale[cols][ordinal].max()) + 1 if ordinal.any() else 1
    log_lik = np.empty((n_samples, rows.size))
    expected = np.zeros(rows.size)
    probabilities = np.zeros((int(ordinal.sum()), width))
    predictive = np.empty((n_samples, rows.size))
    rng = np.random.default_rng([seed, 11])
    for s in range(n_samples):
        eta = linear_predictor(ability[s], loading[s], intercept[s])
        at = layout.at_sample(params, s)
        log_lik[s] = layout.log_likelihood(responses.values, eta, at)[rows, cols]
        expected += layout.expected_score(eta, at)[rows, cols] / n_samples
        predictive[s] = layout.draw(eta, at, rng)[rows, cols]
        if ordinal.any():
            scale = layout.score_scale
            for k in range(width):
                level = np.broadcast_to(np.minimum(float(k), scale), responses.values.shape)
                lik = np.exp(layout.log_likelihood(level, eta, at)[rows, cols][ordinal])
                probabilities[:, k] += np.where(k <= scale[cols][ordinal], lik, 0.0) / n_samples
    outcome = responses.values[rows, cols]
    frame = pd.DataFrame(
        {
            "response_type": types,
            "benchmark": responses.benchmarks[cols],
            "log_score": logsumexp(log_lik, axis=0) - np.log(n_samples),
            "expected": expected,
            "outcome": outcome / layout.score_scale[cols],
            "rps": np.nan,
            "crps": np.nan,
            "covered_90": np.nan,
        }
    )
    if ordinal.any():
        frame.loc[ordinal, "rps"] = ranked_probability_score(probabilities, outcome[ordinal])
    if sampled.any():
        samples = predictive[:, sampled]
        frame.loc[sampled, "crps"] = crps_from_samples(samples, outcome[sampled])
        low, high = np.quantile(samples, interval_quantiles(0.9), axis=0)
        inside = (outcome[sampled] >= low) & (outcome[sampled] <= high)
        frame.loc[sampled, "covered_90"] = inside.astype(float)
    return frame


def typed_metric_rows(scores: pd.DataFrame) -> list[tuple[str, str, float]]:
    """``(metric, benchmark, value)`` rows from :func:`typed_predictive_scores`.

    ``log_score`` over every test cell, and per type other than the default (0/1, scored
    by the probability metrics) ``<type>_log_score`` and ``<type>_<rule>`` for each scoring
    rule it declares (``rps``, ``crps``, ``coverage_90``).
    """
    rows = [("log_score", "all", float(scores["log_score"].mean()))]
    for kind, part in scores.groupby("response_type", sort=False):
        if kind == DEFAULT_TYPE:
            continue
        rows.append((f"{kind}_log_score", "all", float(part["log_score"].mean())))
        for rule in RESPONSE_MODELS[kind].scoring_rules:
            rows.append((f"{kind}_{rule}", "all", float(part[_RULE_COLUMNS[rule]].mean())))
    return rows


_RULE_COLUMNS = {"rps": "rps", "crps": "crps", "coverage_90": "covered_90"}
"""The column of :func:`typed_predictive_scores` each scoring rule averages."""


def mirt_predictions(
    fit: xr.DataTree, responses: ResponseMatrix, split: FoldSplit, scheme: str, seed: int = 0
) -> np.ndarray:
    """Posterior mean probability of every test cell (flat, in ``np.flatnonzero(test)`` order)."""
    if scheme == "cells":
        return _cell_predictions(fit, split.test, seed)
    if scheme == "llms":
        return _held_out_llm_predictions(fit, responses, split, seed)
    return _held_out_item_predictions(fit, responses, split, seed)


def _cell_predictions(fit: xr.DataTree, test: np.ndarray, seed: int) -> np.ndarray:
    draws = PosteriorDraws.from_posterior(fit, _PREDICTION_DRAWS, seed=seed, abilities=True)
    rows, cols = np.nonzero(test)
    total = np.zeros(rows.size)
    ability, loading, intercept = draws.ability, draws.loading, draws.intercept
    layout, params = draws.layout, draws.params
    for s in range(ability.shape[0]):
        if layout.is_binary:
            eta = cell_linear_predictor(ability[s, rows], loading[s, cols], intercept[s, cols])
            asymptotes = layout.take_parameters(
                layout.at_sample(params, s), cols
            )  # floor and ceiling, if any
            total += BINARY.expected_score(eta, **asymptotes)
        else:
            eta = linear_predictor(ability[s], loading[s], intercept[s])
            total += layout.expected_score(eta, layout.at_sample(params, s))[rows, cols]
    return total / ability.shape[0]


def _held_out_llm_predictions(
    fit: xr.DataTree, responses: ResponseMatrix, split: FoldSplit, seed: int
) -> np.ndarray:
    item_draws = PosteriorDraws.from_posterior(fit, _PREDICTION_DRAWS, seed=seed)
    order = item_draws.columns(responses.items.astype(str))
    out = np.full(responses.observed.shape, np.nan)
    known_values = np.where(split.known, responses.values, np.nan)
    for j in split.held_out:
        outcomes = np.full((1, len(item_draws.items)), np.nan)
        outcomes[0, order] = known_values[j]
        samples = ability_posterior(
            item_draws, outcomes, method="samples", samples_per_draw=4, seed=seed + int(j), expected=False
        ).points
        cols = np.flatnonzero(split.test[j])
        probs = item_draws.expected_scores(samples, order[cols])[0]
        out[j, cols] = probs.mean(axis=0)
    return out[split.test]


def _held_out_item_predictions(
    fit: xr.DataTree, responses: ResponseMatrix, split: FoldSplit, seed: int
) -> np.ndarray:
    if not responses.is_binary or "floor" in fit["posterior"]:
        raise ValueError(
            "held-out items (scheme='items') are predicted for 2PL binary items only: a new graded "
            "or continuous item's cutpoints, or a 3PL/4PL item's floor and ceiling, have no "
            "estimate from the held-out regression; use scheme='cells' or 'llms'"
        )
    draws = PosteriorDraws.from_posterior(
        fit, _PREDICTION_DRAWS, seed=seed, abilities=True, extra=_HYPERPARAMETERS
    )
    position = {llm: j for j, llm in enumerate(draws.llms)}
    ability = draws.ability[:, [position[llm] for llm in responses.llms.astype(str)]]
    n_draw, n_llm, k = ability.shape
    design = np.concatenate([ability, np.ones((n_draw, n_llm, 1))], axis=2)
    offset = np.zeros((n_draw, n_llm))
    spec = fit_spec(fit)
    prior_mean, prior_var = _item_priors(draws.extra, spec, responses, split.held_out)
    known_values = np.where(split.known, responses.values, np.nan)
    outcomes = known_values[:, split.held_out].T  # (item, llm)
    per_draw = 4
    samples = laplace_sir(
        design, offset, outcomes, prior_mean, prior_var, samples_per_draw=per_draw, seed=seed
    )
    draw_of_sample = np.arange(samples.shape[1]) // per_draw
    out = np.full(responses.observed.shape, np.nan)
    for position, i in enumerate(split.held_out):
        rows = np.flatnonzero(split.test[:, i])
        theta = ability[draw_of_sample][:, rows, :]  # (sample, llm, k)
        eta = linear_predictor(theta, samples[position, :, None, :k], samples[position, :, k, None])
        out[rows, i] = BINARY.expected_score(eta[..., 0]).mean(axis=0)
    return out[split.test]


def _item_priors(
    hyper: xr.Dataset, spec: ModelSpec, responses: ResponseMatrix, items: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per (held-out item, draw) prior mean and variance of ``(loading, intercept)``."""
    k = hyper.sizes["dimension"]
    n_draw = hyper.sizes["sample_index"]
    fitted_benchmarks = list(map(str, hyper["benchmark"].values))
    fitted_subgroups = (
        list(map(str, hyper["subgroup_key"].values)) if "subgroup_intercept_offset" in hyper else []
    )
    mean = np.zeros((len(items), n_draw, k + 1))
    var = np.zeros((len(items), n_draw, k + 1))
    for position, i in enumerate(items):
        bench = str(responses.benchmarks[i])
        key = f"{bench}/{responses.subgroups[i]}"
        if bench in fitted_benchmarks:
            b = fitted_benchmarks.index(bench)
            mean[position, :, :k] = (
                hyper["benchmark_loading_mean"]
                .isel(benchmark=b)
                .transpose("sample_index", "dimension")
                .values
            )
            var[position, :, :k] = (hyper["benchmark_loading_spread"].isel(benchmark=b).values ** 2)[:, None]
            mean[position, :, k] = hyper["benchmark_intercept_mean"].isel(benchmark=b).values
            var[position, :, k] = hyper["benchmark_intercept_spread"].isel(benchmark=b).values ** 2
            if key in fitted_subgroups:
                mean[position, :, k] += (
                    hyper["subgroup_intercept_offset"].isel(subgroup_key=fitted_subgroups.index(key)).values
                )
        else:  # a benchmark with no training items: the top-level prior
            var[position, :, :k] = spec.loading.mean_sigma**2 + spec.loading.spread_sigma**2
            mean[position, :, k] = spec.intercept.mean_mu
            var[position, :, k] = spec.intercept.mean_sigma**2 + spec.intercept.spread_sigma**2
    return mean, var


# ---------------------------------------------------------------- results
@dataclass
class CrossValidation:
    """Result of :func:`cross_validate`.

    Attributes
    ----------
    table
        Tidy: one row per ``(scheme, model, fold, metric, benchmark)`` with
        ``value``; ``benchmark == "all"`` for pooled metrics, and per-benchmark
        rows for ``spearman`` (rank correlation, across LLMs, of mean predicted
        and mean actual score on the fold's test cells).
    calibration
        Reliability-curve data per model, pooled over folds.
    settings
        The call's settings (scheme, folds, seed, dims, fit arguments).

    """

    table: pd.DataFrame
    calibration: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)

    def summary(self, ci_prob: float = CI_PROB) -> pd.DataFrame:
        """Mean over folds per (model, metric) with standard error and a t-interval of mass ``ci_prob``.

        ``spearman`` is the mean over benchmarks of the per-benchmark
        correlation, per fold.
        """
        from scipy import stats

        overall = self.table[self.table["benchmark"] == "all"]
        per_bench = self.table[(self.table["metric"] == "spearman") & (self.table["benchmark"] != "all")]
        averaged = per_bench.groupby(["model", "fold"], as_index=False)["value"].mean()
        averaged["metric"] = "spearman"
        frame = pd.concat([overall[["model", "fold", "metric", "value"]], averaged])
        grouped = frame.groupby(["model", "metric"])["value"]
        out = pd.DataFrame({"mean": grouped.mean(), "se": grouped.sem(), "n_folds": grouped.count()})
        t = stats.t.ppf(interval_quantiles(ci_prob)[1], np.maximum(out["n_folds"] - 1, 1))
        out["lower"] = out["mean"] - t * out["se"]
        out["upper"] = out["mean"] + t * out["se"]
        return out

    def wide(self) -> pd.DataFrame:
        """Mean of each metric (columns) per model (rows), best first by log loss (binary cells).

        Without binary cells, MIRT models first by log score (the baselines have none).
        """
        table = self.summary()["mean"].unstack("metric")
        if "log_loss" in table:
            return table.sort_values("log_loss")
        return table.sort_values("log_score", ascending=False)


def mirt_name(n_dims: int) -> str:
    """Row label of an MIRT model (``mirt_1d`` is the 2PL)."""
    return f"mirt_{n_dims}d"


def spearman_by_benchmark(responses: ResponseMatrix, test: np.ndarray, prob: np.ndarray) -> dict[str, float]:
    """Per benchmark, Spearman across LLMs of mean predicted and mean actual score on the test cells."""
    predicted = np.full(test.shape, np.nan)
    predicted[test] = prob
    actual = np.where(test, responses.scaled_values, np.nan)
    out = {}
    for bench in responses.benchmark_names:
        cols = responses.benchmarks == bench
        has = test[:, cols].any(axis=1)
        if has.sum() < 3:
            continue
        with np.errstate(invalid="ignore"):
            mean_pred = np.nanmean(predicted[has][:, cols], axis=1)
            mean_act = np.nanmean(actual[has][:, cols], axis=1)
        out[bench] = spearman(mean_pred, mean_act)
    return out


def pool_calibration(cal: pd.DataFrame) -> pd.DataFrame:
    """Reliability-curve bins of every fold pooled per model (count-weighted)."""
    cal = cal.assign(
        weighted_pred=cal["predicted_mean"] * cal["count"], weighted_obs=cal["observed_rate"] * cal["count"]
    )
    grouped = cal.groupby(["model", "bin", "bin_left", "bin_right"], as_index=False)[
        ["weighted_pred", "weighted_obs", "count"]
    ].sum()
    grouped["predicted_mean"] = grouped["weighted_pred"] / grouped["count"]
    grouped["observed_rate"] = grouped["weighted_obs"] / grouped["count"]
    return grouped[["model", "bin", "bin_left", "bin_right", "predicted_mean", "observed_rate", "count"]]


# ------------------------------------------------------------------ PSIS-LOO
def pointwise_loo(posterior: xr.DataTree, items: np.ndarray | None = None) -> tuple[xr.Dataset, Any]:
    """The pointwise log-likelihood of a fit's cells and ArviZ's pointwise PSIS-LOO of it.

    ``items`` keeps the cells of those items only. Each cell's PSIS-LOO is its own (the
    relative efficiency comes from the posterior), so a subset's values equal the full set's.
    """
    import arviz as az

    log_lik = pointwise_log_likelihood(posterior)
    if items is not None:
        log_lik = log_lik.isel(cell=np.isin(log_lik["item"].values, items))
    tree = xr.DataTree.from_dict(
        {"posterior": posterior["posterior"].to_dataset()[["intercept"]], "log_likelihood": log_lik}
    )
    return log_lik, az.loo(tree, var_name=LOG_LIKELIHOOD_VARIABLE, pointwise=True)


def psis_loo(posterior: xr.DataTree) -> pd.Series:
    """PSIS-LOO over observed cells (ArviZ), for fits where draws × cells fits in memory.

    Meaningful for NUTS posteriors (importance sampling from an approximation such as
    ADVI is not PSIS-LOO proper); ``p_loo`` and the share of Pareto ``k > 0.7`` say how
    far to trust it. ``az.loo(with_log_likelihood(fit))`` gives ArviZ's own report.

    Returns
    -------
    Series
        ``elpd_loo``, ``se``, ``p_loo``, ``share_k_above_0.7``, ``n_cells``.

    Raises
    ------
    ValueError
        When draws × observed cells exceeds ``LOO_MAX_VALUES`` (use held-out log loss).

    """
    log_lik, result = pointwise_loo(posterior)
    pareto_k = np.asarray(result.pareto_k)
    return pd.Series(
        {
            "elpd_loo": float(result.elpd),
            "se": float(result.se),
            "p_loo": float(result.p),
            "share_k_above_0.7": float(np.mean(pareto_k > 0.7)),
            "n_cells": int(log_lik.sizes["cell"]),
        }
    )

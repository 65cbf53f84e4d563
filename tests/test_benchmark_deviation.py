"""LLMs' benchmark-specific deviations from the model, and the predictive intervals that carry them."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from benchmirt_bayes.analyses.ability_posterior import (
    ability_posterior,
    benchmark_deviation_variance,
    predicted_mean_score,
)
from benchmirt_bayes.draws import PosteriorDraws
from benchmirt_bayes.response_types.base import sigmoid
from tests.conftest import constructed_posterior, make_matrix

N_LLMS, PER_BENCHMARK = 300, 80


def planted(shift_sd: float, seed: int = 0):
    """Posterior draws at the truth, with answers whose logits move by an LLM × benchmark shift."""
    rng = np.random.default_rng(seed)
    benchmarks = ["A"] * PER_BENCHMARK + ["B"] * PER_BENCHMARK
    loading = rng.uniform(0.5, 1.5, (2 * PER_BENCHMARK, 1))
    intercept = rng.normal(0, 1, 2 * PER_BENCHMARK)
    ability = rng.normal(0, 1, (N_LLMS, 1))
    shift = rng.normal(0, shift_sd, (N_LLMS, 2)).repeat(PER_BENCHMARK, axis=1)
    eta = ability @ loading.T + intercept
    answers = (rng.random(eta.shape) < sigmoid(eta + shift)).astype(float)
    answers[rng.random(answers.shape) < 0.1] = np.nan  # some cells unanswered
    responses = make_matrix(answers, benchmarks)
    tree = constructed_posterior(loading, intercept, ability, benchmarks, noise=0.0, responses=responses)
    gap = sigmoid(eta + shift) - sigmoid(eta)  # each LLM's deviation on each item
    true_var = [np.var(gap[:, b * PER_BENCHMARK : (b + 1) * PER_BENCHMARK].mean(axis=1)) for b in range(2)]
    return PosteriorDraws.from_posterior(tree, 10), np.array(true_var)


def test_no_deviation_is_found_where_the_answers_follow_the_model():
    draws, _ = planted(0.0)
    found = benchmark_deviation_variance(draws)
    assert list(found.index) == ["A", "B"]
    # well below the response variance of a mean of ~72 answers (about 0.0025): noise
    assert (found < 0.0015).all(), found


def test_a_planted_deviation_is_found_out_of_sample():
    draws, true_var = planted(0.8)
    found = benchmark_deviation_variance(draws).to_numpy()
    assert true_var.min() > 0.008  # the planted deviation is several times the response noise
    # each LLM's ability comes from the other benchmark, whose own deviation moves it too: the
    # out-of-sample deviation is the planted one and more, not less
    assert (found > 0.9 * true_var).all() and (found < 2.5 * true_var).all(), (found, true_var)


def test_the_deviation_widens_the_predictive_by_the_unanswered_share():
    draws, _ = planted(0.0)
    columns = np.arange(PER_BENCHMARK)  # benchmark A
    outcomes = np.full((3, len(draws.items)), np.nan)
    outcomes[1, :20] = 1.0  # a quarter of A answered
    outcomes[2, :PER_BENCHMARK] = 0.0  # all of A answered
    abilities = ability_posterior(draws, outcomes)
    plain = predicted_mean_score(abilities, draws, columns, outcomes, 0.9)
    wider = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, deviation_variance=0.01)
    unanswered = np.array([1.0, 0.75, 0.0])
    added = wider["sd"] ** 2 - plain["sd"] ** 2
    np.testing.assert_allclose(added, 0.01 * unanswered**2, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(wider["mean"], plain["mean"])
    # the parameter interval (predictive=False) is the model's own and is left alone
    expected = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, predictive=False)
    same = predicted_mean_score(
        abilities, draws, columns, outcomes, 0.9, predictive=False, deviation_variance=0.01
    )
    np.testing.assert_allclose(same["sd"], expected["sd"])


def test_the_deviation_needs_the_answers_the_fit_was_made_on():
    draws, _ = planted(0.0)
    tree = constructed_posterior(
        draws.loading[0], draws.intercept[0], np.zeros((5, 1)), list(draws.layout.benchmarks)
    )
    bare = PosteriorDraws.from_posterior(
        xr.DataTree.from_dict({"posterior": tree["posterior"].to_dataset()}), 5
    )
    with pytest.raises(ValueError, match="observed_data"):
        benchmark_deviation_variance(bare)

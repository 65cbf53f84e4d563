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
    outcomes[1, :20] = np.tile([0.0, 1.0], 10)  # a quarter of A answered
    outcomes[2, :PER_BENCHMARK] = 0.0  # all of A answered
    abilities = ability_posterior(draws, outcomes)
    plain = predicted_mean_score(abilities, draws, columns, outcomes, 0.9)
    wider = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, deviation_variance=0.01)
    added = wider["sd"] ** 2 - plain["sd"] ** 2
    # the deviation's prior variance on the unanswered share: all of it, three quarters, none
    np.testing.assert_allclose(added[[0, 2]], [0.01, 0.0], rtol=1e-6, atol=1e-12)
    # (a quarter answered: the ability points that expect more of the rest expect a smaller
    # deviation, so the mixture's spread grows by less than three quarters squared of it)
    assert 0.0 < added[1] <= 0.01 * 0.75**2
    # nothing answered or everything answered: the mean does not move
    np.testing.assert_allclose(wider["mean"][[0, 2]], plain["mean"][[0, 2]])
    # a quarter answered, half of them right: the deviation's posterior mean moves the rest
    assert wider["mean"][1] != pytest.approx(plain["mean"][1], abs=1e-4)
    # the parameter interval (predictive=False) is the model's own and is left alone
    expected = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, predictive=False)
    same = predicted_mean_score(
        abilities, draws, columns, outcomes, 0.9, predictive=False, deviation_variance=0.01
    )
    np.testing.assert_allclose(same["sd"], expected["sd"])


def test_answered_items_inform_the_deviation_and_the_interval_stays_calibrated():
    """New LLMs with a planted benchmark shift: a third of A answered, all of B; A's full score predicted."""
    draws, _ = planted(0.3)
    deviation = benchmark_deviation_variance(draws)["A"]
    rng = np.random.default_rng(1)
    n_new, seen = 400, 30
    ability = rng.normal(0, 1, (n_new, 1))
    shift = rng.normal(0, 0.3, (n_new, 2)).repeat(PER_BENCHMARK, axis=1)
    eta = ability @ draws.loading[0].T + draws.intercept[0]
    answers = (rng.random(eta.shape) < sigmoid(eta + shift)).astype(float)
    truth = answers[:, :PER_BENCHMARK].mean(axis=1)
    outcomes = answers.copy()
    for row in outcomes:
        row[rng.choice(PER_BENCHMARK, PER_BENCHMARK - seen, replace=False)] = np.nan
    columns = np.arange(PER_BENCHMARK)
    abilities = ability_posterior(draws, outcomes)
    updated = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, deviation_variance=deviation)
    covered = np.mean((updated["lower"] <= truth) & (truth <= updated["upper"]))
    assert 0.85 <= covered <= 0.98, covered
    # the predictive whose mean the answered items do not move errs more
    plain = predicted_mean_score(abilities, draws, columns, outcomes, 0.9)
    gain = np.abs(plain["mean"] - truth) - np.abs(updated["mean"] - truth)
    assert gain.mean() > 2 * gain.std() / np.sqrt(n_new), (gain.mean(), gain.std())


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

import numpy as np
import pandas as pd
import pytest

from benchmirt_bayes.analyses.laplace_sir import laplace_sir
from benchmirt_bayes.analyses.scoring import adaptive_test, score_llm
from tests.conftest import constructed_posterior


def grid_posterior(a, b, y, limit):
    """Mean and SD of the 1-D logistic posterior with a N(0, 1) prior, on a fine grid."""
    grid = np.linspace(-limit, limit, 8001)
    eta = grid[:, None] * a + b
    logp = (y * eta - np.logaddexp(0, eta)).sum(axis=1) - 0.5 * grid**2
    w = np.exp(logp - logp.max())
    w /= w.sum()
    mean = (w * grid).sum()
    return mean, np.sqrt((w * (grid - mean) ** 2).sum())


def test_laplace_sir_matches_a_grid_posterior():
    rng = np.random.default_rng(0)
    a = rng.normal(1.0, 0.3, 15)
    b = rng.normal(0, 1, 15)
    y = (rng.random(15) < 1 / (1 + np.exp(-(a * 0.7 + b)))).astype(float)
    y[[0, 3, 4, 5]] = 1.0 - y[[0, 3, 4, 5]]  # make it a skewed, non-Gaussian likelihood
    samples = laplace_sir(a[None, :, None], b[None], y[None], 0.0, 1.0, samples_per_draw=40000, seed=1)
    mean, sd = grid_posterior(a, b, y, 6)
    assert samples[0, :, 0].mean() == pytest.approx(mean, abs=0.02)
    assert samples[0, :, 0].std() == pytest.approx(sd, rel=0.03)


@pytest.fixture(scope="module")
def known_items():
    rng = np.random.default_rng(1)
    n_items = 300
    loading = np.abs(rng.normal(1.2, 0.4, (n_items, 2))) * (rng.random((n_items, 2)) < 0.5) + 0.15
    intercept = rng.normal(0, 1.5, n_items)
    ability = rng.normal(size=(50, 2))
    posterior = constructed_posterior(loading, intercept, ability, ["A"] * 150 + ["B"] * 150, seed=2)
    return loading, intercept, posterior


def _answers(loading, intercept, true, seed):
    rng = np.random.default_rng(seed)
    prob = 1 / (1 + np.exp(-(loading @ true + intercept)))
    return (rng.random(len(prob)) < prob).astype(float)


def test_score_llm_recovers_a_known_ability_and_narrows_with_more_items(known_items):
    loading, intercept, posterior = known_items
    true = np.array([0.8, -0.5])
    answers = pd.Series(_answers(loading, intercept, true, 3), index=[f"q{i}" for i in range(300)])
    full = score_llm(posterior, answers, seed=1).ability_summary()
    few = score_llm(posterior, answers.iloc[:20], seed=1).ability_summary()
    assert np.all(np.abs(full["mean"].to_numpy() - true) < 2.5 * full["sd"].to_numpy() + 0.05)
    assert np.all(few["sd"].to_numpy() > 1.5 * full["sd"].to_numpy())
    scores = score_llm(posterior, answers.iloc[:20], seed=1).benchmark_scores
    assert list(scores.index) == ["A", "B"] and scores["n_answered"].tolist() == [20, 0]
    assert np.all((scores["lower"] <= scores["mean"]) & (scores["mean"] <= scores["upper"]))


def test_benchmark_score_interval_covers_the_score_the_llm_gets_on_all_items(known_items):
    """A predictive interval of the realised accuracy: answered items count, the others add noise."""
    loading, intercept, posterior = known_items
    rng = np.random.default_rng(11)
    items = np.array([f"q{i}" for i in range(300)])
    covered, widths = [], []
    for llm in range(40):
        every = _answers(loading, intercept, rng.normal(size=2), 100 + llm)
        asked = rng.choice(300, 30, replace=False)
        scores = score_llm(posterior, pd.Series(every[asked], index=items[asked]), n_draws=50, seed=0)
        realised = pd.Series([every[:150].mean(), every[150:].mean()], index=["A", "B"])
        table = scores.benchmark_scores
        covered += list((table["lower"] <= realised) & (realised <= table["upper"]))
        widths += list(table["upper"] - table["lower"])
    assert 0.8 <= np.mean(covered) <= 0.98, np.mean(covered)
    assert 0.05 < np.mean(widths) < 0.5
    # every item answered: the observed mean, with no uncertainty left
    full = score_llm(posterior, pd.Series(every, index=items), n_draws=20).benchmark_scores
    np.testing.assert_allclose(full["mean"], realised.to_numpy())
    np.testing.assert_allclose(full["upper"] - full["lower"], 0, atol=1e-6)


def test_score_llm_refuses_unknown_items_and_non_binary_answers(known_items):
    posterior = known_items[2]
    with pytest.raises(KeyError, match="not in the fitted posterior"):
        score_llm(posterior, {"nope": 1.0})
    with pytest.raises(ValueError, match=r"response types: \{'q1 \(binary, highest 1\)': 0.5\}"):
        score_llm(posterior, {"q1": 0.5})


def test_adaptive_testing_converges_and_beats_random_order(known_items):
    loading, intercept, posterior = known_items
    rng = np.random.default_rng(7)
    errors = {"information": [], "random": []}
    for j in range(6):
        true = rng.normal(size=2)
        for order in errors:
            answers = _answers(loading, intercept, true, 100 + j)
            trajectory = adaptive_test(
                posterior, lambda item, a=answers: a[int(item[1:])], budget=20, order=order, seed=j
            )
            estimate = trajectory[["dim_1_mean", "dim_2_mean"]].to_numpy()
            errors[order].append(np.linalg.norm(estimate - true, axis=1))
    adaptive, random = np.mean(errors["information"], axis=0), np.mean(errors["random"], axis=0)
    assert adaptive[-1] < adaptive[0]  # converges towards the truth
    assert adaptive[-1] < random[-1]  # beats random order at equal budget
    assert trajectory["item"].is_unique


def test_adaptive_test_stops_at_the_requested_sd(known_items):
    loading, intercept, posterior = known_items
    answers = _answers(loading, intercept, np.zeros(2), 5)
    trajectory = adaptive_test(posterior, lambda item: answers[int(item[1:])], budget=200, stop_sd=0.5)
    assert len(trajectory) < 200
    last = trajectory.iloc[-1]
    assert last["dim_1_sd"] < 0.5 and last["dim_2_sd"] < 0.5
    with pytest.raises(ValueError, match="budget"):
        adaptive_test(posterior, lambda item: 1.0, budget=0)


def test_laplace_sir_is_stable_for_an_llm_that_gets_almost_everything_right():
    # saturated logits: a plain Newton step overshoots here (seen on real leaderboard data)
    rng = np.random.default_rng(4)
    a = rng.uniform(3.0, 5.0, 40)
    b = rng.normal(4.0, 1.0, 40)
    y = np.ones(40)
    y[7] = 0.0
    samples = laplace_sir(a[None, :, None], b[None], y[None], 0.0, 1.0, samples_per_draw=20000, seed=2)
    assert np.isfinite(samples).all()
    assert samples[0, :, 0].mean() == pytest.approx(grid_posterior(a, b, y, 8)[0], abs=0.03)


def test_the_deviation_is_measured_once_per_fit_and_seed_and_again_for_a_changed_fit(monkeypatch, nuts_fit):
    import benchmirt_bayes.analyses.ability_posterior as module

    measured = []
    real = module.benchmark_deviation_variance

    def counting(draws, *, seed=0):
        measured.append(seed)
        return real(draws, seed=seed)

    monkeypatch.setattr(module, "benchmark_deviation_variance", counting)
    monkeypatch.setattr(module, "_deviation_cache", type(module._deviation_cache)())
    first = module.fitted_deviation_variance(nuts_fit, seed=0)
    again = module.fitted_deviation_variance(nuts_fit, seed=0)
    assert again == first and measured == [0]
    again["not a benchmark"] = 1.0  # the caller's dict is its own
    assert module.fitted_deviation_variance(nuts_fit, seed=0) == first and measured == [0]
    module.fitted_deviation_variance(nuts_fit, seed=1)
    assert measured == [0, 1]
    changed = nuts_fit.copy(deep=True)
    changed["posterior"]["intercept"] = changed["posterior"]["intercept"] + 0.5
    shifted = module.fitted_deviation_variance(changed, seed=0)
    assert measured == [0, 1, 0] and shifted != first

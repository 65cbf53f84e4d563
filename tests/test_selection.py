import numpy as np
import pytest

from benchmirt_bayes.analyses.selection import (
    evaluate_subset,
    fidelity_summary,
    held_out_benchmark_error,
    select_items,
    subset_estimates,
)
from tests.conftest import constructed_posterior, shared_path


@pytest.fixture(scope="module")
def planted():
    rng = np.random.default_rng(3)
    n = 400
    loading = np.zeros((n, 2))
    loading[:200, 0] = rng.uniform(0.1, 2.5, 200)
    loading[200:, 1] = rng.uniform(0.1, 2.5, 200)
    loading += 0.05 * np.abs(rng.standard_normal((n, 2)))
    intercept = rng.normal(0, 1.5, n)
    ability = rng.standard_normal((80, 2))
    benchmarks = ["A"] * 200 + ["B"] * 150 + ["C"] * 50
    return constructed_posterior(loading, intercept, ability, benchmarks, n_draws=30), loading, intercept


def test_sizes_seeds_and_errors(planted):
    posterior = planted[0]
    for method in ("published", "information", "random"):
        assert len(select_items(posterior, fraction=0.1, method=method)) <= 40
        assert len(select_items(posterior, n_items=25, method=method)) <= 25
    assert len(select_items(posterior, fraction=0.1, method="information")) == 40
    assert len(select_items(posterior, fraction=0.1, method="random")) == 40
    a = select_items(posterior, fraction=0.1, method="random", seed=1)
    assert a.equals(select_items(posterior, fraction=0.1, method="random", seed=1))
    assert not a.equals(select_items(posterior, fraction=0.1, method="random", seed=2))
    with pytest.raises(ValueError, match="exactly one"):
        select_items(posterior, fraction=0.1, n_items=10)
    with pytest.raises(ValueError, match="method must be"):
        select_items(posterior, fraction=0.1, method="best")


def test_published_rule_keeps_the_most_discriminating_items_of_every_difficulty_bin(planted):
    posterior, loading, intercept = planted
    kept = select_items(posterior, fraction=0.5, method="published", dimension="dim_1", n_bins=10)
    index = np.array([int(i[1:]) for i in kept])
    difficulty = -intercept / np.linalg.norm(loading, axis=1)
    order = np.argsort(difficulty)
    bins = np.empty(400, int)
    bins[order] = np.arange(400) * 10 // 400
    for b in range(10):
        members = np.flatnonzero(bins == b)
        chosen = np.intersect1d(members, index)
        rest = np.setdiff1d(members, index)
        assert len(chosen) > 0
        assert loading[chosen, 0].min() >= loading[rest, 0].max() - 0.02  # posterior means ~ truth


def test_information_selection_balances_benchmarks_and_beats_random(planted):
    posterior = planted[0]
    kept = select_items(posterior, fraction=0.1, method="information")
    counts = kept.str[1:].astype(int)
    per_bench = np.bincount(np.digitize(counts, [200, 350]), minlength=3)
    np.testing.assert_array_equal(per_bench, [20, 15, 5])  # proportional quotas
    table = evaluate_subset(posterior, fractions=(0.05,), repeats=4, n_draws=20, executor="serial")
    summary = fidelity_summary(table).loc["full_ability"]
    assert summary.loc[("information", 0.05), "pearson_mean"] > summary.loc[("random", 0.05), "pearson_mean"]
    assert summary.loc[("random", 0.05), "repeats"] == 4
    assert set(table["target"]) == {"full_ability", "benchmark_mean"}


@pytest.mark.realdata
@pytest.mark.slow
def test_held_out_llm_error_on_a_small_real_fit():
    from benchmirt_bayes import fit_posterior
    from benchmirt_bayes.data.real_data import load_open_llm_leaderboard

    data = load_open_llm_leaderboard(shared_path("open_llm_leaderboard_v1"))
    rng = np.random.default_rng(0)
    scores = data.llm_scores()["score"]
    weakest = scores.sort_values().index[:10].to_numpy()  # broken models: saturated logits
    others = rng.choice(np.setdiff1d(data.llms, weakest), size=140, replace=False)
    llms = np.concatenate([weakest, others[:110], others[110:]])
    train, test = data.subset(llms=llms[:120]), data.subset(llms=llms[120:])
    # Re-scoring places each LLM alone under an N(0, I) prior; that gives back the fitted
    # abilities only when the fit used the same prior per LLM, so this fit keeps prior-scaled
    # abilities. (Whitened abilities, the default, are not shrunk one by one; for the ten
    # broken LLMs with saturated logits they then sit up to 0.35 further out than a re-score.)
    fit = fit_posterior(
        train,
        2,
        method="advi",
        seed=1,
        progressbar=False,
        spec={"ability": {"correlation": "none"}},
        advi={"draws": 60},
    )
    # re-scoring the training LLMs from all their items gives back their fitted abilities
    rescored, _ = subset_estimates(fit, train, list(train.items), n_draws=20)
    fitted = fit["posterior"]["ability"].mean(("chain", "draw")).transpose("llm", "dimension").values
    np.testing.assert_allclose(rescored, fitted, atol=0.3)
    errors = held_out_benchmark_error(fit, test, fractions=(0.05, 0.25), repeats=2, n_draws=20)
    mean = errors.groupby(["method", "fraction"])["rmse_pp"].mean()
    assert set(errors["benchmark"]) == set(data.benchmark_names)
    for method in ("information", "published", "random", "random_naive_mean"):
        assert mean[(method, 0.25)] < mean[(method, 0.05)] + 0.5  # more items, no worse
    assert mean[("information", 0.05)] < mean[("random_naive_mean", 0.05)]  # model-based beats naive
    assert mean[("information", 0.25)] < 8.0  # percentage points

"""The verbs R mirt and ArviZ users reach for first: abilities with SDs, item fit, item curves,
a log-likelihood group, dimension names, ranking order."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit

from benchmirt_bayes import ability_table, item_fit, rank_items
from benchmirt_bayes.analyses.audit import name_dimensions
from benchmirt_bayes.posterior import pointwise_log_likelihood, with_log_likelihood
from benchmirt_bayes.reports.plots import plot_item_curves
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.response_types.continuous import CONTINUOUS
from benchmirt_bayes.response_types.count import COUNT
from benchmirt_bayes.response_types.graded import GRADED

from .conftest import constructed_posterior, make_matrix


@pytest.mark.parametrize(
    ("model", "params"),
    [
        (BINARY, {}),
        (GRADED, {"cutpoints": np.array([-1.0, 0.2, 1.5])}),
        (CONTINUOUS, {"cutpoints": np.array([-1.5, 1.2]), "precision": np.array(6.0)}),
        (COUNT, {"n_trials": np.array(5.0)}),
    ],
)
def test_variance_matches_draws(model, params):
    eta = np.array([-1.5, 0.0, 0.8])
    draws = model.draw(np.broadcast_to(eta, (200_000, 3)), np.random.default_rng(0), **params)
    np.testing.assert_allclose(draws.var(axis=0), model.variance(eta, **params), rtol=0.02)


def _fit_from_truth(n_llms=80, n_items=60, seed=0, flipped=()):
    """A constructed posterior around known parameters, data simulated from them.

    Items in ``flipped`` have their responses reversed after simulation (a miskeyed item).
    """
    rng = np.random.default_rng(seed)
    ability = rng.normal(size=(n_llms, 2))
    loading = np.abs(rng.normal(1.0, 0.3, size=(n_items, 2))) * np.array([1.0, 0.2])
    intercept = rng.normal(0, 1, size=n_items)
    prob = expit(ability @ loading.T + intercept)
    values = (rng.random(prob.shape) < prob).astype(float)
    for i in flipped:
        values[:, i] = 1 - values[:, i]
    responses = make_matrix(values, ["A"] * n_items)
    tree = constructed_posterior(
        loading, intercept, ability, ["A"] * n_items, responses=responses, n_draws=60
    )
    return tree, responses, ability


def test_ability_table_has_means_sds_intervals_and_ranks():
    tree, responses, _ = _fit_from_truth()
    table = ability_table(tree, ci_prob=0.9)
    assert list(table.index.names) == ["llm", "dimension"]
    assert list(table.columns[:5]) == ["mean", "sd", "lower", "upper", "rank"]
    dim_1 = table.xs("dim_1", level="dimension")
    draws = tree["posterior"]["ability"].sel(dimension="dim_1")
    expected = draws.mean(("chain", "draw")).to_series()
    np.testing.assert_allclose(dim_1["mean"], expected.loc[dim_1.index])
    np.testing.assert_allclose(dim_1["sd"], draws.std(("chain", "draw")).to_series().loc[dim_1.index])
    assert (dim_1["lower"] < dim_1["mean"]).all() and (dim_1["mean"] < dim_1["upper"]).all()
    assert dim_1["mean"].is_monotonic_decreasing and dim_1["rank"].iloc[0] == 1
    assert (table["n_answered"] == responses.n_items).all()
    with pytest.raises(ValueError, match="interval"):
        ability_table(tree, ci_prob=1.5)


def test_item_fit_finds_a_reversed_item_and_passes_the_others():
    tree, _, _ = _fit_from_truth(flipped=(7,))
    fit = item_fit(tree, n_draws=60, seed=1)
    assert fit.index[0] == "q7" and fit.loc["q7", "misfit"]
    assert fit.loc["q7", "outfit"] > 2 * fit.loc["q7", "outfit_rep"]
    others = fit.drop(index="q7")
    assert others["misfit"].mean() <= 0.15  # about alpha = 0.05 under the model
    assert others["outfit"].median() == pytest.approx(1.0, abs=0.25)
    assert {"infit", "p_value", "benchmark", "response_type"} <= set(fit.columns)


def test_log_likelihood_group_makes_arviz_loo_work():
    import arviz as az

    tree, responses, _ = _fit_from_truth(n_llms=30, n_items=20)
    log_lik = pointwise_log_likelihood(tree)
    assert log_lik["y"].dims == ("chain", "draw", "cell") and log_lik.sizes["cell"] == responses.n_observed
    # cell 5 is (llm, item) in row-major order; its value is the Bernoulli log-likelihood
    llm, item = str(log_lik["llm"].values[5]), str(log_lik["item"].values[5])
    post = tree["posterior"]
    eta = (post["ability"].sel(llm=llm) * post["loading"].sel(item=item)).sum("dimension") + post[
        "intercept"
    ].sel(item=item)
    y = responses.data.sel(llm=llm, item=item).item()
    expected = y * eta - np.logaddexp(0, eta)
    np.testing.assert_allclose(log_lik["y"].isel(cell=5).values, expected.values)
    with_ll = with_log_likelihood(tree)
    assert "log_likelihood" in with_ll.children and "log_likelihood" not in tree.children
    loo = az.loo(with_ll)
    assert np.isfinite(float(loo.elpd))


def test_item_curves_plot_expected_score_and_information(tmp_path):
    tree, _, _ = _fit_from_truth(n_llms=30, n_items=20)
    fig = plot_item_curves(tree, ["q0", "q3"], n_draws=20)
    left, right = fig.axes
    assert len(left.get_lines()) == 2 and left.get_ylim() == (0.0, 1.0)
    assert "information" in right.get_ylabel()
    fig.savefig(tmp_path / "curves.png")
    with pytest.raises(KeyError, match="unknown item"):
        plot_item_curves(tree, ["nope"])
    with pytest.raises(KeyError, match="unknown dimension"):
        plot_item_curves(tree, ["q0"], dimension="dim_9")


def test_dimension_names_come_only_from_benchmarks_that_load_on_the_dimension():
    rng = np.random.default_rng(0)
    ability = rng.normal(size=(40, 2))
    loading = np.repeat([[1.0, 0.0], [0.0, 1.0], [0.4, 0.9]], 10, axis=0)  # C loads mainly on dim 2
    benchmarks = ["A"] * 10 + ["B"] * 10 + ["C"] * 10
    tree = constructed_posterior(loading, np.zeros(30), ability, benchmarks, n_draws=10)
    named = name_dimensions(tree).proposals.set_index("dimension")
    assert named.loc["dim_1", "proposed"] == "A"  # not "A+C": C's share on dim_1 is 0.16
    assert named.loc["dim_2", "proposed"] == "B+C"
    shares = [float(v) for v in named.loc["dim_2", "shares"].split(", ")]
    assert min(shares) >= 0.5


def test_rank_items_within_benchmark_groups_each_benchmark_together():
    rng = np.random.default_rng(1)
    benchmarks = ["big"] * 40 + ["small"] * 5
    loading = np.abs(rng.normal(1, 0.5, size=(45, 2)))
    tree = constructed_posterior(
        loading, rng.normal(size=45), rng.normal(size=(30, 2)), benchmarks, n_draws=20
    )
    ranked = rank_items(tree, within="benchmark", n_draws=20)
    assert list(pd.unique(ranked["benchmark"])) == ["big", "small"]
    assert ranked.head(10)["benchmark"].eq("big").all()
    for _, part in ranked.groupby("benchmark"):
        assert part["rank_mean"].is_monotonic_increasing


def test_minimal_trees_without_observed_data_still_give_abilities():
    tree, _, _ = _fit_from_truth(n_llms=10, n_items=8)
    bare = xr.DataTree.from_dict({"posterior": tree["posterior"].to_dataset()})
    assert "n_answered" not in ability_table(bare).columns

"""Full-benchmark scores from few items: grid ability posteriors, the learned link, calibrated intervals."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from benchmirt_bayes import (
    estimate_scores,
    fit_posterior,
    fit_score_link,
    select_for_scores,
    select_items,
    simulate_benchmirt,
    with_score_link,
)
from benchmirt_bayes.analyses.ability_posterior import grid_ability_posterior, sampled_ability_posterior
from benchmirt_bayes.analyses.score_link import BenchmarkLink, LinkFeatures, ScoreLink
from benchmirt_bayes.analyses.score_neighbours import (
    Kernel,
    between_neighbours,
    choose_kernel,
    correction,
    decode_answers,
    disagreement,
    encode_answers,
    nearest,
)
from benchmirt_bayes.analyses.score_regression import IndexCurve, gross_outliers, natural_spline_basis, ridge
from benchmirt_bayes.analyses.score_selection import forward_stepwise
from benchmirt_bayes.draws import PosteriorDraws


@pytest.fixture(scope="module")
def setting():
    """400 LLMs; the package sees 40 % of each benchmark's items; full scores use every item."""
    sim = simulate_benchmirt(scale=0.03, n_llms=400, seed=21)
    truth = sim.truth
    prob = expit(truth["ability"].values @ truth["loading"].values.T + truth["intercept"].values)
    benchmarks = sim.responses.benchmarks
    full = pd.DataFrame(
        {b: 100 * prob[:, benchmarks == b].mean(axis=1) for b in sim.responses.benchmark_names},
        index=sim.responses.llms,
    )
    rng = np.random.default_rng(0)
    seen = [i for b in sim.responses.benchmark_names for i in sim.responses.items[benchmarks == b][::5]]
    seen += [str(i) for i in rng.choice(sim.responses.items, 200, replace=False) if str(i) not in seen]
    reduced = sim.responses.subset(items=sorted(set(seen), key=list(sim.responses.items).index))
    llms = sim.responses.llms
    train, test = llms[:300], llms[300:]
    fit = fit_posterior(
        reduced.subset(llms=list(train)),
        2,
        method="advi",
        seed=3,
        progressbar=False,
        advi={"draws": 100},
    )
    return sim, reduced, full, train, test, fit


def test_grid_posterior_matches_the_abilities_of_the_fit(setting):
    _, reduced, _, train, _, fit = setting
    draws = PosteriorDraws.from_posterior(fit, 10)
    outcomes = reduced.data.sel(llm=list(train[:40]), item=list(draws.items)).values
    grid = grid_ability_posterior(draws, outcomes)
    fitted = fit["posterior"]["ability"].mean(("chain", "draw")).sel(llm=list(train[:40])).values
    for k in range(2):
        assert np.corrcoef(grid.mean[:, k], fitted[:, k])[0, 1] > 0.97
    assert np.allclose(grid.weights.sum(axis=1), 1) and (grid.sd > 0).all()
    empty = grid_ability_posterior(draws, np.full((1, len(draws.items)), np.nan))
    np.testing.assert_allclose(empty.mean, 0.0, atol=1e-9)  # no answers: the prior


def test_link_estimates_full_scores_of_held_out_llms_with_calibrated_intervals(setting):
    _, reduced, full, train, test, fit = setting
    kept = list(select_items(fit, n_items=48, method="information", n_draws=20))
    link = fit_score_link(fit, full.loc[train], items=kept, n_draws=10)
    assert set(link.benchmarks) == set(reduced.benchmark_names)
    answers = reduced.data.sel(llm=list(test), item=kept).to_pandas()
    table = estimate_scores(
        fit, answers, link=link, estimator=["package", "naive", "irt", "blend"], n_draws=10
    )
    table["truth"] = [full.loc[llm, b] for llm, b in zip(table["llm"], table["benchmark"], strict=True)]
    error = (table["mean"] - table["truth"]).abs()
    rmse = table.assign(e2=error**2).groupby("estimator")["e2"].mean() ** 0.5
    raw = ((100 * table["kept_mean"] - table["truth"]) ** 2).mean() ** 0.5
    assert rmse["package"] < 0.6 * raw  # the model-based link beats the plain mean of the kept items
    assert rmse["package"] <= rmse["naive"] + 0.1
    package = table[table["estimator"] == "package"]
    covered = ((package["lower"] <= package["truth"]) & (package["truth"] <= package["upper"])).mean()
    assert 0.8 <= covered <= 0.97
    assert (package["n_answered"] <= 48).all()


def test_a_stored_link_travels_with_the_fit_and_without_one_the_irt_estimate_is_given(setting, tmp_path):
    from benchmirt_bayes import load_posterior, save_posterior

    _, reduced, full, train, test, fit = setting
    kept = list(reduced.items[:60])
    linked = list(reduced.benchmark_names[:2])  # two links show the round trip at an eighth of the cost
    link = fit_score_link(fit, full.loc[train, linked], items=kept, n_draws=5)
    with pytest.warns(UserWarning, match=r"of the .* LLMs with full scores are not among the fit's"):
        fit_score_link(fit, full[linked], items=kept, n_draws=5)  # A10: the held-out LLMs' scores are named
    stored = load_posterior(save_posterior(with_score_link(fit, link), tmp_path / "fit.nc"))
    answers = reduced.data.sel(llm=list(test[:5]), item=kept).to_pandas()
    a = estimate_scores(stored, answers, n_draws=5)
    b = estimate_scores(fit, answers, link=ScoreLink.from_json(link.to_json()), n_draws=5)
    pd.testing.assert_frame_equal(a, b)
    plain = estimate_scores(fit, answers, n_draws=5)
    assert set(plain["estimator"]) == {"irt_fitted_items"}
    assert ((plain["lower"] <= plain["mean"]) & (plain["mean"] <= plain["upper"])).all()
    assert plain["mean"].between(0, 1).all()
    with pytest.raises(KeyError, match="not in the fitted posterior"):
        estimate_scores(fit, pd.DataFrame({"no_such_item": [1.0]}, index=["x"]))


def test_natural_spline_is_linear_beyond_the_boundary_knots():
    knots = np.array([-1.0, 0.0, 1.0, 2.0])
    x = np.array([3.0, 4.0, 5.0])
    basis = natural_spline_basis(x, knots)
    np.testing.assert_allclose(np.diff(basis, 2, axis=0), 0.0, atol=1e-9)
    # quantiles of a variable with few values repeat: each knot counts once, no division by zero
    tied = natural_spline_basis(np.array([0.0, 0.5, 1.0, 1.5]), np.array([0.0, 0.0, 1.0, 1.0, 2.0]))
    assert tied.shape == (4, 2) and np.isfinite(tied).all()
    np.testing.assert_array_equal(natural_spline_basis(x, np.array([1.0, 1.0])), x[:, None])


def test_select_writes_item_ids_per_benchmark_for_an_evaluation_harness(setting, tmp_path):
    from benchmirt_bayes import save_posterior
    from benchmirt_bayes.cli import main

    _, reduced, _, _, _, fit = setting
    path = save_posterior(fit, tmp_path / "fit.nc")
    out = tmp_path / "subset.json"
    assert main(["select", str(path), "--n-items", "30", "--method", "information", "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    ids = [i for items in document["benchmarks"].values() for i in items]
    assert len(ids) == 30 == document["n_items"] and set(ids) <= set(reduced.items)
    bench = reduced.data["benchmark"].to_series()
    assert all(bench[i] == b for b, items in document["benchmarks"].items() for i in items)
    text = tmp_path / "subset.txt"
    assert main(["select", str(path), "--n-items", "10", "--method", "random", "--out", str(text)]) == 0
    assert len(text.read_text().split()) == 10


def test_link_and_score_commands(setting, tmp_path):
    from benchmirt_bayes import save_posterior
    from benchmirt_bayes.cli import main

    _, reduced, full, train, test, fit = setting
    path = save_posterior(fit, tmp_path / "fit.nc")
    subset = tmp_path / "subset.txt"
    assert main(["select", str(path), "--n-items", "40", "--method", "random", "--out", str(subset)]) == 0
    kept_per_benchmark = reduced.data["benchmark"].to_series().loc[subset.read_text().split()].value_counts()
    with_scores = list(kept_per_benchmark.index[:3])  # three links show the route; sixteen cost 5x
    full.loc[train, with_scores].rename_axis("llm").reset_index().to_csv(tmp_path / "full.csv", index=False)
    linked = tmp_path / "linked.nc"
    args = ["link", str(path), "--full-scores", str(tmp_path / "full.csv"), "--items", str(subset)]
    assert main([*args, "--draws", "5", "--out", str(linked)]) == 0
    kept = subset.read_text().split()
    answers = reduced.data.sel(llm=list(test[:3]), item=kept).to_pandas().rename_axis("llm").reset_index()
    answers.to_csv(tmp_path / "new.csv", index=False)
    out = tmp_path / "scores.csv"
    assert main(["score", str(linked), str(tmp_path / "new.csv"), "--draws", "5", "--out", str(out)]) == 0
    table = pd.read_csv(out)
    assert set(table["quantity"]) == {"ability", "benchmark_score", "full_benchmark_score"}
    full_rows = table[table["quantity"] == "full_benchmark_score"]
    assert full_rows["llm"].nunique() == 3
    # a benchmark without a link says so: its estimate is the IRT expectation of its fitted items
    by_link = full_rows["estimator"] != "irt_fitted_items"
    assert set(full_rows.loc[by_link, "name"]) == set(with_scores) and by_link.sum() == 3 * len(with_scores)
    # the link can choose its items (stepwise: again in each fold) and write them for a harness
    chosen = tmp_path / "chosen.txt"
    args = ["link", str(path), "--full-scores", str(tmp_path / "full.csv"), "--per-benchmark", "4"]
    args += [
        "--method",
        "stepwise",
        "--draws",
        "5",
        "--subset-out",
        str(chosen),
        "--out",
        str(tmp_path / "l2.nc"),
    ]
    assert main(args) == 0
    expected = select_for_scores(fit, full.loc[train, with_scores], per_benchmark=4, method="stepwise")
    assert chosen.read_text().split() == list(expected)
    refused = ["link", str(path), "--full-scores", str(tmp_path / "full.csv"), "--subset-out", str(chosen)]
    assert main([*refused, "--out", str(tmp_path / "l3.nc")]) == 2
    ranking = tmp_path / "ranking.csv"
    assert main(["rank", str(path), "--within", "benchmark", "--out", str(ranking)]) == 0
    assert len(pd.read_csv(ranking)) == reduced.n_items


def test_forward_stepwise_takes_the_columns_the_target_depends_on_and_never_a_copy():
    rng = np.random.default_rng(4)
    x = rng.integers(0, 2, size=(500, 12)).astype(float)
    x[:, 7] = x[:, 2]  # a copy of a useful column
    y = 3 * x[:, 2] - 2 * x[:, 5] + 0.5 * x[:, 9] + rng.normal(0, 0.3, 500)
    chosen = forward_stepwise(x, y, 4)
    assert chosen[:3] == [2, 5, 9]
    assert 7 not in chosen and len(chosen) == 4
    assert forward_stepwise(x[:, [2, 7]], y, 5) == [0]  # nothing new to add after the first
    with pytest.raises(ValueError, match="one row per y"):
        forward_stepwise(x, y[:-1], 2)


def test_single_index_form_follows_a_curved_link_that_the_additive_form_cannot():
    rng = np.random.default_rng(5)
    answers = rng.integers(0, 2, size=(2000, 30)).astype(float)
    weights = rng.uniform(0.2, 1.0, 30)
    target = 100 * expit(2.5 * (answers @ weights - weights.sum() / 2) / np.sqrt(weights @ weights))
    target += rng.normal(0, 0.5, len(target))
    design = (np.column_stack([np.ones(len(target)), answers]), np.r_[0.0, np.full(30, 1e-4)])
    index = IndexCurve.fit(design, target)
    curved = np.sqrt(np.mean((index.predict(design[0]) - target) ** 2))
    straight = np.sqrt(np.mean((design[0] @ ridge(design, target) - target) ** 2))
    assert curved < 0.5 * straight
    assert np.corrcoef(index.weights[1:], weights)[0, 1] > 0.95  # the items' relative weights


@pytest.mark.parametrize("seed", range(20))
def test_single_index_form_survives_a_singular_gauss_newton_step(seed):
    # fewer LLMs than columns and a steep curve: the penalty vanishes beside JᵀJ in floating
    # point (a real 16-LLM fold of ARC raised LinAlgError from fit_score_link this way)
    rng = np.random.default_rng(seed)
    x = np.column_stack([np.ones(12), rng.normal(size=(12, 16))]) * 1e8
    penalty = np.r_[np.zeros(7), np.full(10, 0.01)]
    target = rng.normal(50, 15, size=12)
    curve = IndexCurve.fit((x, penalty), target)
    assert np.isfinite(curve.predict(x)).all()


@pytest.mark.slow
def test_stepwise_items_predict_held_out_full_scores_better_than_random_items(setting):
    _, reduced, full, train, test, fit = setting
    stepwise = list(select_for_scores(fit, full.loc[train], per_benchmark=6, method="stepwise"))
    bench = reduced.data["benchmark"].to_series()
    assert bench.loc[stepwise].value_counts().max() <= 6
    assert set(bench.loc[stepwise]) == set(reduced.benchmark_names)
    rng = np.random.default_rng(0)
    sizes = {b: min(6, int((bench == b).sum())) for b in reduced.benchmark_names}
    random = [str(i) for b, k in sizes.items() for i in rng.choice(bench.index[bench == b], k, replace=False)]

    def held_out_rmse(items):
        link = fit_score_link(fit, full.loc[train], items=items, n_draws=5)
        answers = reduced.data.sel(llm=list(test), item=items).to_pandas()
        table = estimate_scores(fit, answers, link=link, n_draws=5)
        truth = [full.loc[llm, b] for llm, b in zip(table["llm"], table["benchmark"], strict=True)]
        return float(np.sqrt(np.mean((table["mean"] - truth) ** 2)))

    assert held_out_rmse(stepwise) < held_out_rmse(random)
    with pytest.raises(ValueError, match="no benchmark of the fit has full scores"):
        select_for_scores(fit, pd.DataFrame({"not_a_benchmark": full.iloc[:, 0]}), per_benchmark=3)
    with pytest.raises(ValueError, match="method must be one of"):
        select_for_scores(fit, full.loc[train], per_benchmark=3, method="information")
    with pytest.raises(ValueError, match="exactly one"):
        select_for_scores(fit, full.loc[train])


def test_select_for_scores_says_when_it_keeps_fewer_items_than_asked(setting):
    """With 30 training LLMs, at most 29 items per benchmark can add to the fit: said, not silent."""
    _, reduced, full, train, _, fit = setting
    few = full.loc[train].copy()
    few.iloc[30:] = np.nan  # 30 LLMs with known scores
    name = str(reduced.benchmark_names[0])
    with pytest.warns(UserWarning, match=rf"fewer items than asked in {name}: \d+ of 40 .* 30 training LLMs"):
        kept = select_for_scores(fit, few[[name]], per_benchmark=40, method="stepwise")
    assert 0 < len(kept) < 40


def test_with_few_known_scores_the_default_selection_is_random_and_reads_no_scores(setting):
    """Below STEPWISE_MIN_LLMS known scores ``auto`` draws seeded random items; stratified bins difficulty."""
    from benchmirt_bayes.analyses import score_selection
    from benchmirt_bayes.posterior import point_parameters
    from benchmirt_bayes.response_types.base import mdisc, multidimensional_difficulty

    _, reduced, full, train, _, fit = setting
    assert len(train) < score_selection.STEPWISE_MIN_LLMS
    counts = reduced.summary()["items"]
    known = full.loc[train, list(counts.index[counts >= 10])]
    auto = select_for_scores(fit, known, per_benchmark=5, seed=4)
    assert list(auto) == list(select_for_scores(fit, known, per_benchmark=5, method="random", seed=4))
    assert list(auto) != list(select_for_scores(fit, known, per_benchmark=5, method="random", seed=5))
    assert list(auto) != list(select_for_scores(fit, known, per_benchmark=5, method="stepwise"))
    bench = reduced.data["benchmark"].to_series()
    assert {name: int((bench[auto] == name).sum()) for name in known.columns} == dict.fromkeys(
        known.columns, 5
    )
    shuffled = known.copy()
    shuffled[:] = shuffled.to_numpy()[::-1]  # other scores: the random choice does not read them
    assert list(select_for_scores(fit, shuffled, per_benchmark=5, seed=4)) == list(auto)

    stratified = select_for_scores(fit, known, per_benchmark=5, method="stratified", seed=4)
    loading, intercept, _, _ = point_parameters(fit)
    items = fit["posterior"]["item"].values.astype(str)
    difficulty = pd.Series(multidimensional_difficulty(intercept, mdisc(loading)), index=items)
    for name in known.columns:
        ranks = difficulty[bench.index[bench == name]].rank(method="first").astype(int) - 1
        bin_of_rank = np.concatenate([np.full(len(p), b) for b, p in enumerate(np.array_split(ranks, 5))])
        picked_bins = sorted(int(bin_of_rank[ranks[i]]) for i in stratified if bench[i] == name)
        assert picked_bins == [0, 1, 2, 3, 4], (name, picked_bins)  # one per fifth of the difficulty range
    assert list(select_for_scores(fit, shuffled, per_benchmark=5, method="stratified", seed=4)) == list(
        stratified
    )


def test_without_a_link_the_interval_is_for_the_score_the_llm_would_get(setting):
    """A posterior predictive interval of the realised score on the fitted items, not of its expectation."""
    from benchmirt_bayes.analyses.ability_posterior import ability_posterior, predicted_mean_score

    _, reduced, _, _, test, fit = setting
    kept = list(np.random.default_rng(1).choice(reduced.items, 60, replace=False))
    answers = reduced.data.sel(llm=list(test), item=kept).to_pandas()
    table = estimate_scores(fit, answers, n_draws=20)
    realised = reduced.subset(llms=list(test)).benchmark_scores()
    truth = np.array([realised.loc[u, b] for u, b in zip(table["llm"], table["benchmark"], strict=True)])
    covered = ((table["lower"] <= truth) & (truth <= table["upper"])).mean()
    assert 0.84 <= covered <= 0.96, covered
    draws = PosteriorDraws.from_posterior(fit, 20)
    outcomes = np.full((len(test), len(draws.items)), np.nan)
    outcomes[:, draws.columns(kept)] = answers.to_numpy()
    abilities = ability_posterior(draws, outcomes)
    columns = np.flatnonzero(reduced.benchmarks == reduced.benchmark_names[0])
    parameter = predicted_mean_score(abilities, draws, columns, outcomes, 0.9, predictive=False)
    predicted = predicted_mean_score(abilities, draws, columns, outcomes, 0.9)
    widths = [result["upper"] - result["lower"] for result in (predicted, parameter)]
    assert np.median(widths[0] / widths[1]) > 1.05  # response noise on top of the parameters'
    every = np.nan_to_num(reduced.data.sel(llm=list(test[:3])).transpose("llm", "item").values)
    # every item answered: the observed mean, with no uncertainty left
    exact = predicted_mean_score(ability_posterior(draws, every), draws, columns, every, 0.9)
    np.testing.assert_allclose(exact["mean"], every[:, columns].mean(axis=1))
    np.testing.assert_allclose(exact["upper"] - exact["lower"], 0, atol=1e-6)


def test_select_stepwise_command_needs_full_scores(setting, tmp_path, capsys):
    from benchmirt_bayes import save_posterior
    from benchmirt_bayes.cli import main

    _, reduced, full, train, _, fit = setting
    path = save_posterior(fit, tmp_path / "fit.nc")
    out = tmp_path / "subset.json"
    assert main(["select", str(path), "--per-benchmark", "4", "--method", "stepwise", "--out", str(out)]) == 2
    assert "--full-scores" in capsys.readouterr().err and not out.exists()
    full.loc[train].rename_axis("llm").reset_index().to_csv(tmp_path / "full.csv", index=False)
    scores = ["--method", "stepwise", "--full-scores", str(tmp_path / "full.csv"), "--out", str(out)]
    # n_items is a total everywhere; stepwise keeps a number per benchmark and says so
    assert main(["select", str(path), "--n-items", "4", *scores]) == 2
    assert "--per-benchmark" in capsys.readouterr().err and not out.exists()
    assert main(["select", str(path), "--per-benchmark", "4", "--method", "random", "--out", str(out)]) == 2
    assert "--n-items" in capsys.readouterr().err
    assert main(["select", str(path), "--per-benchmark", "4", *scores]) == 0
    document = json.loads(out.read_text())
    sizes = reduced.data["benchmark"].to_series().value_counts().clip(upper=4)
    assert {b: len(items) for b, items in document["benchmarks"].items()} == sizes.to_dict()


def test_neighbour_helpers_round_trip_and_find_the_nearest_rows():
    rng = np.random.default_rng(0)
    answers = rng.integers(0, 2, size=(30, 12)).astype(float)
    answers[0, 3] = np.nan
    answers[1, :5] = 0.37  # a continuous answer survives to the stored resolution
    decoded = decode_answers(encode_answers(answers))
    assert np.isnan(decoded[0, 3]) and np.isnan(decoded).sum() == 1
    np.testing.assert_allclose(np.nan_to_num(decoded), np.nan_to_num(answers), atol=0.5 / 254)
    found = nearest(answers, answers, 4, exclude_self=True, chunk=7)
    for u in range(30):
        seen = ~np.isnan(answers[u]) & ~np.isnan(answers)
        a, b = np.nan_to_num(answers[u]), np.nan_to_num(answers)
        distance = ((a * (1 - b) + (1 - a) * b) * seen).sum(axis=1) / seen.sum(axis=1)
        distance[u] = np.inf
        np.testing.assert_allclose(np.sort(distance)[:4], distance[found.index[u]])
        np.testing.assert_allclose(found.distance[u], distance[found.index[u]])
    assert (found.index != np.arange(30)[:, None]).all()
    np.testing.assert_array_equal(nearest(answers[:3], answers, 1).index[:, 0], [0, 1, 2])  # itself
    among = between_neighbours(found, answers)
    for u in (0, 5):
        pairs = [
            nearest(answers[[i]], answers[[j]], 1).distance[0, 0]
            for i in found.index[u]
            for j in found.index[u]
        ]
        np.testing.assert_allclose(among[u], np.reshape(pairs, (4, 4)) * (1 - np.eye(4)))
    # a row that shares no answered item with the reference has no neighbours and no correction
    lone = nearest(np.full((1, 12), np.nan), answers, 3)
    np.testing.assert_array_equal(lone.index, [[-1, -1, -1]])
    assert correction(np.arange(30.0), lone, between_neighbours(lone, answers), Kernel(0.1, 0.1))[0] == 0.0


def test_kriging_matches_a_full_gaussian_process_on_its_neighbours():
    """With every other row as a neighbour, the correction is the GP's leave-one-out mean."""
    rng = np.random.default_rng(2)
    answers = rng.integers(0, 2, size=(25, 40)).astype(float)
    residuals = rng.normal(size=25)
    found = nearest(answers, answers, 24, exclude_self=True)
    kernel = Kernel(0.2, 0.3)
    kriged = correction(residuals, found, between_neighbours(found, answers), kernel)
    full = disagreement(answers, answers)
    for u in (0, 7, 24):
        others = np.delete(np.arange(25), u)
        gram = np.exp(-full[np.ix_(others, others)] / kernel.length) + kernel.noise * np.eye(24)
        expected = np.exp(-full[u, others] / kernel.length) @ np.linalg.solve(gram, residuals[others])
        np.testing.assert_allclose(kriged[u], expected)


def test_no_kernel_is_chosen_when_residuals_do_not_cluster():
    rng = np.random.default_rng(1)
    answers = rng.integers(0, 2, size=(400, 30)).astype(float)
    found = nearest(answers, answers, 50, exclude_self=True)
    assert choose_kernel(rng.normal(size=400), found, between_neighbours(found, answers)) is None
    family = np.repeat(np.arange(80), 5)
    relatives = np.abs(answers[family * 5] - (rng.random((400, 30)) < 0.05))  # five alike per family
    found = nearest(relatives, relatives, 50, exclude_self=True)
    among = between_neighbours(found, relatives)
    clustered = rng.normal(0, 3, size=80)[family] + rng.normal(size=400)
    kernel = choose_kernel(clustered, found, among)
    assert kernel is not None
    assert np.mean((clustered - correction(clustered, found, among, kernel)) ** 2) < 0.5 * np.var(clustered)


def test_the_kernel_weighs_estimates_when_answers_alone_mix_up_families():
    """Twin families answer alike but score apart; their estimates tell them apart."""
    rng = np.random.default_rng(3)
    family = np.repeat(np.arange(80), 5)
    bases = rng.integers(0, 2, size=(40, 30)).astype(float)
    answers = np.abs(bases[family // 2] - (rng.random((400, 30)) < 0.05))  # families 2k and 2k+1 alike
    estimates = 40 + 10 * (family % 2) + rng.normal(0, 1, size=400)
    residuals = rng.normal(0, 3, size=80)[family] + rng.normal(size=400)
    found = nearest(answers, answers, 50, exclude_self=True)
    among = between_neighbours(found, answers)
    by_answers = choose_kernel(residuals, found, among)
    by_both = choose_kernel(residuals, found, among, estimates)
    assert by_answers.score_weight == 0 and by_both.score_weight > 0

    def error(kernel: Kernel) -> float:
        kriged = correction(residuals, found, among, kernel, estimates, estimates)
        return float(np.mean((residuals - kriged) ** 2))

    assert error(by_both) < 0.8 * error(by_answers)
    with pytest.raises(ValueError, match="estimates"):
        correction(residuals, found, among, by_both)


@pytest.mark.slow
def test_neighbour_corrections_learn_family_errors_that_the_items_cannot_see(setting):
    """Relatives answer alike and share a shift of the full score that no kept item shows."""
    import dataclasses

    import xarray as xr

    from benchmirt_bayes.data.responses import ResponseMatrix

    _, reduced, full, train, _, fit = setting
    rng = np.random.default_rng(5)
    originals = list(train[:100])
    base = reduced.data.sel(llm=originals)
    copies = []
    for r in range(5):
        flips = rng.random(base.shape) < 0.03
        values = np.where(flips, 1 - base.values, base.values)
        copies.append(base.copy(data=values).assign_coords(llm=[f"{o}~{r}" for o in originals]))
    relatives = ResponseMatrix(xr.concat(copies, dim="llm"))
    shift = np.tile(rng.normal(0, 4, size=len(originals)), 5)
    scores = pd.DataFrame(
        {b: np.tile(full.loc[originals, b].to_numpy(), 5) + shift for b in reduced.benchmark_names},
        index=relatives.llms,
    )
    held_out = [f"{o}~4" for o in originals]
    training = [name for name in relatives.llms if name not in set(held_out)]
    kept = list(reduced.items[::3])
    link = fit_score_link(
        fit, scores.loc[training], items=kept, responses=relatives.subset(llms=training), n_draws=5
    )
    counts = [bench.neighbours.count if bench.neighbours else 0 for bench in link.benchmarks.values()]
    assert sum(c > 0 for c in counts) >= 0.75 * len(counts)  # a benchmark's own noise may hide the shift
    plain = dataclasses.replace(
        link,
        benchmarks={b: dataclasses.replace(bench, neighbours=None) for b, bench in link.benchmarks.items()},
    )
    answers = relatives.data.sel(llm=held_out, item=kept).to_pandas()
    truth = scores.loc[held_out]

    def rmse(table: pd.DataFrame) -> float:
        table = table[table["estimator"] == "package"]  # a benchmark without kept items has no link
        pairs = zip(table["llm"], table["benchmark"], strict=True)
        error = table["mean"].to_numpy() - np.array([truth.loc[u, b] for u, b in pairs])
        return float(np.sqrt(np.mean(error**2)))

    corrected = estimate_scores(fit, answers, link=link, n_draws=5)
    # the answers' own regression already learns part of each family's shift (its relatives
    # in training answer alike), so the neighbours take a share of what is left
    assert rmse(corrected) < 0.95 * rmse(estimate_scores(fit, answers, link=plain, n_draws=5))
    stored = ScoreLink.from_json(link.to_json())
    pd.testing.assert_frame_equal(corrected, estimate_scores(fit, answers, link=stored, n_draws=5))
    for earlier in (1, 2, 3, 4):  # one storage format: a link stored otherwise is refitted
        with pytest.raises(ValueError, match="refit"):
            ScoreLink.from_json(json.dumps(json.loads(link.to_json()) | {"format": earlier}))
    unanswered = answers.iloc[:1] * np.nan  # nothing to find relatives by: the plain link's estimate
    pd.testing.assert_frame_equal(
        estimate_scores(fit, unanswered, link=link, n_draws=5),
        estimate_scores(fit, unanswered, link=plain, n_draws=5),
    )


def test_a_cluster_of_ceiling_scores_does_not_lend_a_kept_item_its_weight():
    """Test-set-trained LLMs score 100 and alone get one item; an ordinary LLM getting it is not one."""
    rng = np.random.default_rng(11)
    n, n_items = 1500, 40
    ability = rng.normal(size=n)
    difficulty = rng.normal(size=n_items)
    answers = (rng.random((n, n_items)) < expit(ability[:, None] - difficulty)).astype(float)
    answers[:, -1] = 0.0  # an item no ordinary LLM answers right
    target = 100 * expit(0.6 * ability - 1.0) + rng.normal(0, 1, n)
    trained = rng.choice(n, 25, replace=False)
    answers[trained] = 1.0
    ability[trained] = 2.5
    target[trained] = 100.0
    features = LinkFeatures(
        ability=ability[:, None],
        irt=expit(ability[:, None] - difficulty).mean(axis=1),
        naive=answers.mean(axis=1),
        answers=answers,
    )
    found = nearest(answers, answers, 50, exclude_self=True)
    link = BenchmarkLink.fit(
        features,
        target,
        items=[],
        ci_prob=0.9,
        folds=5,
        rng=np.random.default_rng(0),
        neighbours=found,
        among=between_neighbours(found, answers),
    )
    x, penalty = link.design.matrix(features, "package")
    smooth = x.shape[1] - n_items
    flagged = gross_outliers((x[:, :smooth], penalty[:smooth]), target)
    assert set(np.flatnonzero(flagged)) >= set(trained) and flagged.sum() <= len(trained) + 5
    assert link.training["outliers_left_out"] == flagged.sum()

    ordinary = np.setdiff1d(np.arange(n), trained)[:200]
    lucky = features.take(ordinary)
    lucky.answers[:, -1] = 1.0
    jump = link.predict(lucky, "package") - link.predict(features.take(ordinary), "package")
    assert np.abs(jump).max() < 3.0  # least squares on every row gives this item +37 points


def test_sampled_ability_posterior_agrees_with_the_grid_in_two_dimensions(setting):
    _, reduced, _, train, _, fit = setting
    draws = PosteriorDraws.from_posterior(fit, 10)
    outcomes = reduced.data.sel(llm=list(train[:40]), item=list(draws.items)).values
    outcomes[:20, ::2] = np.nan  # fewer answers: wider posteriors
    grid = grid_ability_posterior(draws, outcomes)
    sampled = sampled_ability_posterior(draws, outcomes, seed=1)
    assert sampled.points.shape[:2] == sampled.weights.shape and not sampled.shared
    np.testing.assert_allclose(sampled.weights.sum(axis=1), 1)
    assert np.abs(sampled.mean - grid.mean).max() < 0.2
    for k in range(2):
        assert np.corrcoef(sampled.mean[:, k], grid.mean[:, k])[0, 1] > 0.98
    assert 0.75 < np.median(sampled.sd / grid.sd) < 1.3
    assert np.abs(sampled.expected - grid.expected).mean() < 0.02
    # the IRT interval of a sampled posterior is an interval of the same quantity
    answers = pd.DataFrame(outcomes, index=[f"u{u}" for u in range(40)], columns=draws.items)
    on_grid = estimate_scores(fit, answers, n_draws=10)
    from benchmirt_bayes.analyses import score_link

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            score_link, "ability_posterior", lambda d, o, seed: sampled_ability_posterior(d, o, seed=seed)
        )
        by_samples = estimate_scores(fit, answers, n_draws=10)
    assert np.abs(by_samples["mean"] - on_grid["mean"]).max() < 0.03
    width = on_grid["upper"] - on_grid["lower"]
    assert 0.7 < np.median((by_samples["upper"] - by_samples["lower"]) / width) < 1.3


def test_a_link_says_which_benchmarks_have_too_few_known_scores_and_keeps_one_unit(setting):
    _, reduced, full, train, test, fit = setting
    bench = reduced.data["benchmark"].to_series()
    kept = [str(i) for b in reduced.benchmark_names for i in bench.index[bench == b][:3]]
    few, *others = reduced.benchmark_names[:4]
    scores = full.loc[train, [few, *others]].copy()
    scores.loc[scores.index[8:], few] = np.nan  # 8 known scores: too few for a link
    with pytest.warns(UserWarning, match=rf"{few}: 8 training LLMs have a known full score; .* at least 10"):
        link = fit_score_link(fit, scores, items=kept, n_draws=5)
    assert few not in link.benchmarks and set(link.benchmarks) == set(others)
    assert link.score_max == 100
    answers = reduced.data.sel(llm=list(test[:5]), item=kept).to_pandas()
    table = estimate_scores(fit, answers, link=link, n_draws=5)
    assert (table["score_max"] == 100).all()
    unlinked = table[table["benchmark"] == few]
    assert set(unlinked["estimator"]) == {"irt_fitted_items"}
    assert unlinked["mean"].between(1, 100).all()  # percent, as every other row
    plain = estimate_scores(fit, answers, n_draws=5)
    np.testing.assert_allclose(
        unlinked["mean"].to_numpy(), 100 * plain.loc[plain["benchmark"] == few, "mean"].to_numpy()
    )
    assert (plain["score_max"] == 1).all()
    fractions = fit_score_link(fit, full.loc[train, others[:2]] / 100, items=kept, n_draws=5)
    assert fractions.score_max == 1
    assert ScoreLink.from_json(fractions.to_json()).score_max == 1
    with pytest.raises(ValueError, match="no benchmark gets a link"):
        fit_score_link(fit, full.loc[train[:8], others], items=kept, n_draws=5)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.rename(columns={s.columns[0]: "renamed"}), "no benchmark of the fit has full scores"),
        (lambda s: s.assign(**{s.columns[0]: np.inf}), "must be finite numbers"),
        (lambda s: s.astype(object).assign(**{s.columns[1]: "ten"}), "must be finite numbers"),
        (lambda s: s.set_axis([f"other_{i}" for i in range(len(s))]), "none of the 300 LLMs"),
    ],
)
def test_full_scores_that_cannot_be_used_are_refused_by_name(setting, change, message):
    _, reduced, full, train, _, fit = setting
    with pytest.raises(ValueError, match=message):
        fit_score_link(fit, change(full.loc[train]), items=list(reduced.items[::4]), n_draws=5)


@pytest.mark.realdata
@pytest.mark.slow
def test_the_score_link_works_on_a_three_dimension_fit_of_the_real_leaderboard():
    from benchmirt_bayes import load_open_llm_leaderboard
    from benchmirt_bayes.data.real_data import load_open_llm_leaderboard_reference

    from .conftest import shared_path

    path = shared_path("open_llm_leaderboard_v1")
    board = load_open_llm_leaderboard(path)
    llms = np.random.default_rng(0).choice(board.llms, 360, replace=False)
    train, test = list(llms[:300]), list(llms[300:])
    fit = fit_posterior(
        board.subset(llms=train), 3, method="advi", seed=1, progressbar=False, advi={"draws": 100}
    )
    full = pd.DataFrame(
        {b: load_open_llm_leaderboard_reference(path, b)["full_score"] for b in board.benchmark_names}
    )
    kept = list(select_items(fit, n_items=50, method="random", seed=0))
    link = fit_score_link(fit, full, items=kept, n_draws=10)
    assert set(link.benchmarks) == set(board.benchmark_names)
    assert all(len(bench.design.knots) == 3 for bench in link.benchmarks.values())  # a spline per dimension
    answers = board.data.sel(llm=test, item=kept).to_pandas()
    table = estimate_scores(fit, answers, link=link, n_draws=10, estimator=["package", "naive"])
    truth = np.array([full.loc[u, b] for u, b in zip(table["llm"], table["benchmark"], strict=True)])
    table["error"] = table["mean"] - truth
    table["covered"] = (table["lower"] <= truth) & (truth <= table["upper"])
    rmse = table.groupby("estimator")["error"].apply(lambda e: float(np.sqrt(np.mean(e**2))))
    assert rmse["package"] < rmse["naive"]
    assert 0.8 <= table.loc[table["estimator"] == "package", "covered"].mean() <= 0.97


def test_the_regression_is_kept_only_where_it_beats_the_blend_by_a_paired_se():
    from benchmirt_bayes.analyses.score_link import regression_beats_blend

    rng = np.random.default_rng(0)
    target = rng.normal(50, 10, 200)
    close = target + rng.normal(0, 1, 200)
    far = target + rng.normal(0, 3, 200)
    assert regression_beats_blend(target, close, far)
    assert not regression_beats_blend(target, far, close)
    equally_good = target + rng.normal(0, 1, 200)
    assert not regression_beats_blend(target, close, equally_good)  # no clear win: the blend
    assert not regression_beats_blend(target[:1], close[:1], far[:1])
    assert not regression_beats_blend(target[:60], close[:60], far[:60])  # too few LLMs: the blend


def test_a_link_from_few_llms_has_one_spread_and_intervals_that_cover(setting):
    """15 training LLMs of known score: a link (leave-fold-out), one spread for every LLM, and
    per-estimator conformal quantiles whose intervals cover held-out LLMs."""
    _, reduced, full, train, test, fit = setting
    kept = list(select_for_scores(fit, full.loc[train], per_benchmark=8, seed=1))
    link = fit_score_link(fit, full.loc[train[:15]], items=kept, n_draws=10)
    assert set(link.benchmarks) == set(reduced.benchmark_names)
    answers = reduced.data.sel(llm=list(test), item=kept).to_pandas()
    table = estimate_scores(fit, answers, link=link, estimator=["package", "blend"], n_draws=10)
    table["truth"] = [full.loc[llm, b] for llm, b in zip(table["llm"], table["benchmark"], strict=True)]
    width = (
        (table["upper"] - table["lower"])
        .groupby([table["estimator"], table["benchmark"]])
        .agg(["min", "max"])
    )
    np.testing.assert_allclose(width["min"], width["max"], rtol=1e-9)  # one spread per benchmark
    for bench in link.benchmarks.values():
        assert bench.training["n_llms"] == 15 and bench.training["folds"] == 5
        if bench.package_is_blend:
            assert bench.neighbours is None and bench.quantiles["package"] == bench.quantiles["blend"]
            assert bench.training["out_of_fold_rmse_package"] == bench.training["out_of_fold_rmse_blend"]
            assert "out_of_fold_rmse_regression" in bench.training and bench.package_form == "blend"
    covered = (table["lower"] <= table["truth"]) & (table["truth"] <= table["upper"])
    assert covered.groupby(table["estimator"]).mean().min() >= 0.8


def test_a_link_that_chooses_its_stepwise_items_chooses_them_again_without_each_folds_llms(
    setting, monkeypatch
):
    import benchmirt_bayes.analyses.score_link as score_link

    _, reduced, full, train, _, fit = setting
    scores = full.loc[train, list(reduced.benchmark_names[:3])]
    kept = list(select_for_scores(fit, scores, per_benchmark=6, method="stepwise"))
    fixed = fit_score_link(fit, scores, items=kept, n_draws=5)
    calls = []
    real = score_link.stepwise_choice

    def recording(answers, target, k):
        calls.append((answers.shape[0], k))
        return real(answers, target, k)

    monkeypatch.setattr(score_link, "stepwise_choice", recording)
    chosen = fit_score_link(fit, scores, per_benchmark=6, method="stepwise", n_draws=5)
    assert chosen.items == kept  # the same items as select_for_scores, chosen on every training LLM
    # each benchmark's items are chosen again in each of the 5 folds, on the other folds' LLMs
    assert calls == [(len(train) - len(train) // 5, 6)] * 15
    for name, link in chosen.benchmarks.items():
        assert link.items == fixed.benchmarks[name].items
        # the out-of-fold errors now count the choice: larger than with the items held fixed
        assert (
            link.training["out_of_fold_rmse_naive"]
            > fixed.benchmarks[name].training["out_of_fold_rmse_naive"]
        )
        # out-of-fold errors from other items in each fold are not kriged across folds
        assert link.neighbours is None and link.training["neighbour_count"] == 0
    # random items read no scores: nothing is chosen again and the link is the fixed-items one
    calls.clear()
    drawn = fit_score_link(fit, scores, per_benchmark=6, method="random", n_draws=5)
    random_items = list(select_for_scores(fit, scores, per_benchmark=6, method="random"))
    assert calls == [] and drawn.items == random_items
    assert drawn.to_json() == fit_score_link(fit, scores, items=random_items, n_draws=5).to_json()
    with pytest.raises(ValueError, match="not both"):
        fit_score_link(fit, scores, items=kept, per_benchmark=6)

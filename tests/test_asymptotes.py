"""Floors and ceilings of binary items (3PL / 4PL): formulas, layout, model terms, spec, simulator."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy.special import expit

from benchmirt_bayes import (
    AsymptotePlan,
    ResponseMatrix,
    asymptote_flags,
    check_convergence,
    choose_asymptotes,
    compare_asymptote_models,
    fit_posterior,
    miskeyed_items,
    psis_loo,
    rank_items,
    score_llm,
    simulate_benchmirt,
)
from benchmirt_bayes.analyses.asymptote_choice import recommend_model
from benchmirt_bayes.analyses.heldout import fold_split, mirt_predictions
from benchmirt_bayes.dims import ITEM_DIM
from benchmirt_bayes.model.layout import ResponseLayout
from benchmirt_bayes.model.pymc_model import build_model, resolve_likelihood
from benchmirt_bayes.model.spec import load_spec
from benchmirt_bayes.posterior import (
    LOG_LIKELIHOOD_VARIABLE,
    fit_spec,
    pointwise_log_likelihood,
    responses_from_tree,
)
from benchmirt_bayes.reports.report import write_report
from benchmirt_bayes.response_types.asymptotes import AsymptoteItems
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.response_types.capped_ceilings import draw_ceilings
from benchmirt_bayes.workflows.asymptote_fits import CHOICE_ATTR
from benchmirt_bayes.workflows.audit_tables import write_audit_tables

from .conftest import jittered_point_values
from .test_uniform_api import _check_columns


def numerical_derivative(f, eta, step=1e-6):
    return (f(eta + step) - f(eta - step)) / (2 * step)


@pytest.fixture(scope="module")
def mixed_sim():
    return simulate_benchmirt(scale=0.005, n_llms=30, seed=2, response_types="mixed")


# ------------------------------------------------------------------ formulas
FLOOR, CEILING = 0.25, 0.9


def four_pl(eta, floor=FLOOR, ceiling=CEILING):
    return floor + (ceiling - floor) * expit(eta)


def test_binary_asymptotes_give_the_4pl_probability_and_its_log_likelihood():
    eta = np.linspace(-6, 6, 25)
    params = {"floor": np.full(eta.shape, FLOOR), "ceiling": np.full(eta.shape, CEILING)}
    prob = four_pl(eta)
    np.testing.assert_allclose(BINARY.expected_score(eta, **params), prob, rtol=1e-12)
    np.testing.assert_allclose(BINARY.variance(eta, **params), prob * (1 - prob), rtol=1e-12)
    np.testing.assert_allclose(BINARY.log_likelihood(1.0, eta, **params), np.log(prob), rtol=1e-12)
    np.testing.assert_allclose(BINARY.log_likelihood(0.0, eta, **params), np.log1p(-prob), rtol=1e-12)
    # far out the probability sits on its asymptotes, and the logs stay exact there
    far = np.array([-60.0, 60.0])
    far_params = {k: v[:2] for k, v in params.items()}
    np.testing.assert_allclose(BINARY.log_likelihood(1.0, far, **far_params)[0], np.log(FLOOR), rtol=1e-12)
    np.testing.assert_allclose(
        BINARY.log_likelihood(0.0, far, **far_params)[1], np.log1p(-CEILING), rtol=1e-12
    )
    assert np.isfinite(BINARY.log_likelihood(np.array([0.0, 1.0]), far, **far_params)).all()


def test_binary_without_asymptotes_is_the_2pl_and_neutral_asymptotes_change_nothing():
    eta = np.linspace(-8, 8, 33)
    y = (np.arange(eta.size) % 2).astype(float)
    neutral = {"floor": np.zeros(eta.shape), "ceiling": np.ones(eta.shape)}
    np.testing.assert_allclose(BINARY.expected_score(eta), expit(eta), rtol=1e-12)
    np.testing.assert_allclose(
        BINARY.log_likelihood(y, eta, **neutral), BINARY.log_likelihood(y, eta), atol=1e-12
    )
    np.testing.assert_allclose(BINARY.score_residual(y, eta, **neutral), y - expit(eta), atol=1e-12)
    np.testing.assert_allclose(
        BINARY.information_weight(eta, **neutral), expit(eta) * (1 - expit(eta)), rtol=1e-9
    )
    for got, want in zip(
        BINARY.log_likelihood_moments(eta, **neutral), BINARY.log_likelihood_moments(eta), strict=True
    ):
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_binary_asymptote_score_information_and_moments_match_their_definitions():
    eta = np.linspace(-5, 5, 21)
    params = {"floor": np.full(eta.shape, FLOOR), "ceiling": np.full(eta.shape, CEILING)}
    prob = four_pl(eta)
    scores = {}
    for y in (0.0, 1.0):
        scores[y] = BINARY.score_residual(y, eta, **params)
        numeric = numerical_derivative(lambda e, y=y: BINARY.log_likelihood(y, e, **params), eta)
        np.testing.assert_allclose(scores[y], numeric, rtol=1e-6, atol=1e-9)
    fisher = prob * scores[1.0] ** 2 + (1 - prob) * scores[0.0] ** 2
    np.testing.assert_allclose(BINARY.information_weight(eta, **params), fisher, rtol=1e-10)
    log_p, log_q = np.log(prob), np.log1p(-prob)
    mean = prob * log_p + (1 - prob) * log_q
    variance = prob * log_p**2 + (1 - prob) * log_q**2 - mean**2
    got_mean, got_var = BINARY.log_likelihood_moments(eta, **params)
    np.testing.assert_allclose(got_mean, mean, rtol=1e-10)
    np.testing.assert_allclose(got_var, variance, rtol=1e-8, atol=1e-12)
    # a floor takes information from the bottom of the ability range
    bottom = eta < -2
    assert (BINARY.information_weight(eta, **params)[bottom] < BINARY.information_weight(eta)[bottom]).all()


def test_score_and_information_stay_finite_where_an_uncapped_item_is_certain():
    # a 4PL item drawn uncapped (u = 1) at a large η: 1 − p is below double precision as a difference
    eta = np.array([-800.0, -60.0, 0.0, 38.0, 60.0, 800.0])
    params = {"floor": np.full(eta.shape, FLOOR), "ceiling": np.ones(eta.shape)}
    for y in (0.0, 1.0):
        assert np.isfinite(BINARY.score_residual(y, eta, **params)).all()
    large = {key: value[3:5] for key, value in params.items()}
    np.testing.assert_allclose(BINARY.score_residual(0.0, eta[3:5], **large), -expit(eta[3:5]), rtol=1e-9)
    weight = BINARY.information_weight(eta, **params)
    assert np.isfinite(weight).all() and (weight >= 0).all()
    mean, variance = BINARY.log_likelihood_moments(eta, **params)
    assert np.isfinite(mean).all() and np.isfinite(variance).all()


def test_binary_asymptote_draws_have_the_4pl_rate():
    rng = np.random.default_rng(5)
    eta = np.array([-8.0, 0.0, 8.0])
    params = {"floor": np.full(3, FLOOR), "ceiling": np.full(3, CEILING)}
    draws = BINARY.draw(eta, rng, (40_000, 3), **params)
    np.testing.assert_allclose(draws.mean(axis=0), four_pl(eta), atol=0.01)


def test_a_layout_reads_floors_and_ceilings_where_the_fit_has_them(mixed_sim):
    layout = ResponseLayout.from_responses(mixed_sim.responses)
    binary = layout.columns["binary"]
    truth = mixed_sim.truth
    eta = linear_predictor(truth["ability"].values, truth["loading"].values, truth["intercept"].values)
    source = {name: truth[name].values for name in truth.data_vars}
    plain = layout.parameters(source)
    assert "floor" not in plain  # no asymptotes in the fit: the 2PL
    floored = layout.parameters({**source, "floor": np.full(layout.types.size, FLOOR)})
    assert set(floored) == set(plain) | {"floor"}
    before = layout.expected_score(eta, plain, expand=0)
    after = layout.expected_score(eta, floored, expand=0)
    np.testing.assert_allclose(after[:, binary], four_pl(eta[:, binary], ceiling=1.0), rtol=1e-12)
    others = np.setdiff1d(np.arange(layout.types.size), binary)
    np.testing.assert_allclose(after[:, others], before[:, others], rtol=1e-12)
    assert (floored["floor"][others] == 0).all()


# ------------------------------------------------------------------ simulator
PLAN = AsymptotePlan(n_options={"GPQA": 4, "MMLU-Pro": 10}, capped_share={"GPQA": 0.4})


def test_the_simulator_plants_chance_floors_and_capped_items_and_leaves_the_rest():
    planted = simulate_benchmirt(scale=0.02, n_llms=200, seed=3, asymptotes=PLAN)
    plain = simulate_benchmirt(scale=0.02, n_llms=200, seed=3)
    benchmarks = np.asarray(planted.responses.benchmarks)
    floor, ceiling = planted.truth["floor"].values, planted.truth["ceiling"].values
    gpqa, mmlu_pro = benchmarks == "GPQA", benchmarks == "MMLU-Pro"
    assert np.median(floor[gpqa]) == pytest.approx(0.25, abs=0.05)
    assert np.median(floor[mmlu_pro]) == pytest.approx(0.10, abs=0.03)
    assert 0.1 < (ceiling[gpqa] < 1).mean() < 0.8 and (ceiling[mmlu_pro] == 1).all()
    assert (floor[~(gpqa | mmlu_pro)] == 0).all() and (ceiling[~gpqa] == 1).all()
    # the weakest LLMs answer floored items at about their floors, not near zero
    weakest = np.argsort(planted.truth["ability"].values.sum(axis=1))[:20]
    low = np.nanmean(planted.responses.values[np.ix_(weakest, np.flatnonzero(gpqa))])
    assert low > np.nanmean(plain.responses.values[np.ix_(weakest, np.flatnonzero(gpqa))]) + 0.1
    others = ~(gpqa | mmlu_pro)
    np.testing.assert_array_equal(planted.responses.values[:, others], plain.responses.values[:, others])


def test_an_asymptote_plan_refuses_nonsense():
    with pytest.raises(ValueError, match="n_options"):
        AsymptotePlan(n_options={"GPQA": 1})
    with pytest.raises(ValueError, match="capped_share"):
        AsymptotePlan(capped_share={"GPQA": 1.5})
    with pytest.raises(ValueError, match="not binary benchmarks"):
        simulate_benchmirt(scale=0.005, n_llms=10, asymptotes=AsymptotePlan(n_options={"Nope": 4}))


# ------------------------------------------------------------------ model terms and spec
SPEC = {
    "binary": {"benchmarks": {"GPQA": "4pl", "MMLU-Pro": "3pl"}, "n_options": {"GPQA": 4, "MMLU-Pro": 10}}
}


def test_an_item_metadata_column_of_options_sets_each_floor_prior_centre():
    responses = simulate_benchmirt(scale=0.005, n_llms=10, seed=1).responses
    gpqa = np.asarray(responses.benchmarks) == "GPQA"
    options = np.full(responses.n_items, np.nan)
    options[np.flatnonzero(gpqa)[:2]] = [5, 2]
    with_options = ResponseMatrix(responses.data.assign_coords(n_options=(ITEM_DIM, options)))
    section = BINARY.spec_section(SPEC["binary"])
    plan = AsymptoteItems.for_items(with_options, section)
    chance = plan.chance[gpqa]
    assert chance[:2].tolist() == [0.2, 0.5] and (chance[2:] == 0.25).all()
    fit = fit_posterior(with_options, 1, method="map", spec=SPEC, seed=1, progressbar=False)
    flags = asymptote_flags(fit).set_index("item")
    assert flags.loc[responses.items[gpqa][:3], "chance"].tolist() == [0.2, 0.5, 0.25]
    unchanged = AsymptoteItems.for_items(responses, section)
    assert (unchanged.chance[gpqa] == 0.25).all() and (unchanged.kind == plan.kind).all()
    for bad, message in ((1, "at least 2"), (2.5, "at least 2"), ("four", "not a number")):
        values = options.astype(object)
        values[np.flatnonzero(gpqa)[0]] = bad
        with pytest.raises(ValueError, match=message):
            AsymptoteItems.for_items(
                ResponseMatrix(responses.data.assign_coords(n_options=(ITEM_DIM, values))), section
            )


def test_the_model_terms_equal_the_layout_log_likelihood_with_floors_and_ceilings():
    responses = simulate_benchmirt(scale=0.01, n_llms=25, seed=1, asymptotes=PLAN).responses
    model = build_model(responses, 2, spec=SPEC, likelihood="cells")
    assert [rv.name for rv in model.observed_RVs] == ["correct", "correct_asymptotic"]
    assert [p.name for p in model.potentials] == ["correct_capped_or_not"]
    names = ["ability", "loading", "intercept", "floor", "capped_ceiling", "capped_share"]
    point, values = jittered_point_values(model, names)
    benchmarks = np.asarray(responses.benchmarks)
    gpqa, mmlu_pro = benchmarks == "GPQA", benchmarks == "MMLU-Pro"
    assert (values["floor"][~(gpqa | mmlu_pro)] == 0).all() and (values["floor"][gpqa | mmlu_pro] > 0).all()
    capped = values["capped_ceiling"]
    assert capped.shape == (gpqa.sum(),) and (capped > values["floor"][gpqa]).all() and (capped < 1).all()
    layout = ResponseLayout.from_responses(responses)
    eta = linear_predictor(values["ability"], values["loading"], values["intercept"])
    three_pl = layout.log_likelihood(responses.values, eta, layout.parameters({"floor": values["floor"]}))
    ceiling = np.ones(responses.n_items)
    ceiling[gpqa] = capped
    four_pl = layout.log_likelihood(
        responses.values, eta, layout.parameters({"floor": values["floor"], "ceiling": ceiling})
    )
    plain, floored = model.compile_logp(vars=model.observed_RVs, sum=False)(point)
    assert plain.sum() == pytest.approx(np.nansum(three_pl[:, ~(gpqa | mmlu_pro)]), rel=1e-9)
    assert floored.sum() == pytest.approx(np.nansum(three_pl[:, gpqa | mmlu_pro]), rel=1e-9)
    # the potential: per GPQA item, log(π e^{ℓ(u)} + (1 − π) e^{ℓ(1)}) − ℓ(1)
    share = float(values["capped_share"][0])
    with_cap, without = np.nansum(four_pl[:, gpqa], axis=0), np.nansum(three_pl[:, gpqa], axis=0)
    expected = np.logaddexp(np.log(share) + with_cap, np.log1p(-share) + without) - without
    potential = model.compile_fn(model.replace_rvs_by_values(model.potentials), inputs=model.value_vars)(
        point
    )
    assert float(np.sum(potential)) == pytest.approx(expected.sum(), rel=1e-9)
    assert np.isfinite(model.compile_dlogp()(point)).all()
    draws = np.asarray(pm.draw(model["correct_asymptotic"], draws=3, random_seed=1))
    assert draws.shape == (3, floored.size) and set(np.unique(draws)) <= {0, 1}
    # the fused kernels give the same total, as one observed matrix (in float64 here: the
    # default "fused" computes the 2PL items' cells in float32, tested in test_fused_asymptotes)
    fused = build_model(responses, 2, spec=SPEC, likelihood="fused64")
    assert fused.benchmirt_likelihood == "fused64" and not fused.potentials
    total = plain.sum() + floored.sum() + float(np.sum(potential))
    (matrix,) = fused.compile_logp(vars=fused.observed_RVs, sum=False)(point)
    assert float(np.sum(matrix)) == pytest.approx(total, rel=1e-9)
    draws = np.asarray(pm.draw(fused["correct"], draws=2, random_seed=1))
    assert draws.shape == (2, *responses.values.shape) and set(np.unique(draws)) <= {0, 1}


def test_floors_take_the_fused_or_cells_likelihood_and_a_sound_spec():
    responses = simulate_benchmirt(scale=0.005, n_llms=12, seed=1).responses
    spec = load_spec(SPEC)
    assert resolve_likelihood(responses, "auto", spec=spec) == "fused"
    assert resolve_likelihood(responses, "auto", spec=spec, jax=True) == "cells"
    assert resolve_likelihood(responses, "auto", spec=load_spec(None)) == "fused"
    assert resolve_likelihood(responses, "auto", spec=load_spec(None), jax=True) == "dense"
    with pytest.raises(ValueError, match="3PL/4PL"):
        resolve_likelihood(responses, "dense", spec=spec)
    with pytest.raises(ValueError, match="must be one of"):
        load_spec({"binary": {"asymptotes": "5pl"}})
    with pytest.raises(ValueError, match="at least 2"):
        load_spec({"binary": {"n_options": {"GPQA": 1}}})
    with pytest.raises(ValueError, match="strictly between"):
        load_spec({"binary": {"unknown_options_floor": 1.5}})
    with pytest.raises(ValueError, match="do not have"):
        build_model(responses, 2, spec={"binary": {"benchmarks": {"Nope": "3pl"}}})


def test_the_minibatch_path_refuses_floors():
    from benchmirt_bayes.inference.minibatch import fit_minibatch_advi

    responses = simulate_benchmirt(scale=0.005, n_llms=12, seed=1).responses
    with pytest.raises(ValueError, match="minibatch path fits the 2PL only"):
        fit_minibatch_advi(responses, 2, spec=SPEC)


# ------------------------------------------------------------------ a fit, end to end
@pytest.fixture(scope="module")
def asymptote_fit():
    sim = simulate_benchmirt(scale=0.005, n_llms=30, seed=4, asymptotes=PLAN)
    fit = fit_posterior(
        sim.responses,
        2,
        spec=SPEC,
        method="nuts",
        nuts={"chains": 2, "tune": 200, "draws": 200},
        seed=1,
        progressbar=False,
    )
    return sim, fit


def test_a_4pl_fit_carries_floors_and_ceilings_to_the_verbs(asymptote_fit):
    sim, fit = asymptote_fit
    post = fit["posterior"]
    benchmarks = np.asarray(sim.responses.benchmarks)
    gpqa, floored = benchmarks == "GPQA", np.isin(benchmarks, ["GPQA", "MMLU-Pro"])
    floor, ceiling = (
        post["floor"].transpose(..., "item").values,
        post["ceiling"].transpose(..., "item").values,
    )
    assert (floor[..., ~floored] == 0).all() and (floor[..., floored] > 0).all()
    assert (ceiling[..., ~gpqa] == 1).all() and (ceiling > floor).all()
    # a GPQA item's ceiling is its capped ceiling in the draws that drew it capped, else one
    capped = post["capped_ceiling"].sel(ceiling_item=sim.responses.items[gpqa]).transpose(..., "ceiling_item")
    drawn = ceiling[..., gpqa]
    assert ((drawn == 1) | (drawn == capped.values)).all() and 0 < (drawn < 1).mean() < 1
    probability = post["capped_probability"].values
    assert ((probability >= 0) & (probability <= 1)).all() and 0 < probability.mean() < 1
    assert abs((drawn < 1).mean() - probability.mean()) < 0.05
    # the indicators are drawn from the fit's seed: the stored ceilings are reproducible
    bare = post.to_dataset().drop_vars(["ceiling", "capped_probability"])
    again = draw_ceilings(bare, sim.responses, fit.attrs["benchmirt_random_seed"])
    order = ("chain", "draw", "item")
    assert np.array_equal(again["ceiling"].transpose(*order).values, post["ceiling"].transpose(*order).values)
    report = check_convergence(fit)  # constant floors of 2PL items do not count as failures
    assert {"floor", "capped_ceiling"} <= set(report.table.index)
    ranks = rank_items(fit)
    assert ranks.loc[ranks["benchmark"] == "GPQA", "ceiling_mean"].lt(1).all()
    assert ranks.loc[ranks["benchmark"] == "BBH", "floor_mean"].isna().all()
    loo = psis_loo(fit)
    assert np.isfinite(loo["elpd_loo"])
    # an LLM that gets every GPQA item wrong is still expected to score about MMLU-Pro's floors there
    items = sim.responses.items[gpqa].astype(str)
    score = score_llm(fit, pd.Series(0.0, index=items), n_draws=50)
    assert np.isfinite(score.ability.values).all()
    mmlu_floor = float(post["floor"].mean(("chain", "draw")).values[benchmarks == "MMLU-Pro"].mean())
    assert score.benchmark_scores.loc["MMLU-Pro", "mean"] > 0.9 * mmlu_floor


def test_asymptote_flags_report_floors_and_ceilings_with_intervals(asymptote_fit):
    sim, fit = asymptote_fit
    flags = asymptote_flags(fit, ceiling_below=0.9)
    benchmarks = np.asarray(sim.responses.benchmarks)
    assert len(flags) == int(np.isin(benchmarks, ["GPQA", "MMLU-Pro"]).sum())
    gpqa, mmlu_pro = flags[flags["benchmark"] == "GPQA"], flags[flags["benchmark"] == "MMLU-Pro"]
    assert (gpqa["model"] == "4pl").all() and (mmlu_pro["model"] == "3pl").all()
    assert np.allclose(gpqa["chance"], 0.25) and np.allclose(mmlu_pro["chance"], 0.1)
    assert mmlu_pro["ceiling_mean"].isna().all() and gpqa["ceiling_mean"].notna().all()
    assert (flags["floor_lower"] <= flags["floor_mean"]).all() and (
        flags["floor_mean"] <= flags["floor_upper"]
    ).all()
    assert flags["p_floor_above_chance"].between(0, 1).all()
    # flags follow the stated rule
    assert (flags["ceiling_flagged"] == (flags["p_ceiling_below"].fillna(0) > 0.95)).all()
    assert not _check_columns("asymptote_flags", flags)  # the package's column naming rules
    with pytest.raises(ValueError, match="ceiling_below"):
        asymptote_flags(fit, ceiling_below=1.2)


def test_floor_flags_are_withheld_below_min_llms_and_the_warning_names_them(asymptote_fit):
    sim, fit = asymptote_fit  # 30 LLMs: below the default min_llms
    everyone = asymptote_flags(fit, probability=0.5, min_llms=1)
    assert (everyone["benchmark_llms"] == sim.responses.n_llms).all()
    assert (everyone["floor_flagged"] == (everyone["p_floor_above_chance"] > 0.5)).all()
    would = everyone[everyone["floor_flagged"]]
    assert len(would) > 0  # at probability 0.5 some floors of a planted set are above chance
    with pytest.warns(UserWarning, match="floor flags withheld where fewer than 50 LLMs") as caught:
        withheld = asymptote_flags(fit, probability=0.5)
    message = str(caught[0].message)
    for bench, count in would["benchmark"].value_counts().items():
        assert f"{bench} ({count} items, 30 LLMs)" in message
    assert not withheld["floor_flagged"].any() and withheld.attrs["min_llms"] == 50
    # the ceilings are flagged as before, and nothing else moves
    pd.testing.assert_frame_equal(
        withheld.drop(columns="floor_flagged"), everyone.drop(columns="floor_flagged"), check_like=True
    )
    with pytest.raises(ValueError, match="min_llms"):
        asymptote_flags(fit, min_llms=0)


def test_low_ceilings_count_as_miskeying_evidence_and_reach_the_report_and_audit_tables(
    asymptote_fit, tmp_path
):
    sim, fit = asymptote_fit
    keyed = miskeyed_items(fit, n_draws=20).set_index("item")
    gpqa = keyed["benchmark"] == "GPQA"
    assert (
        keyed.loc[gpqa, "p_ceiling_below"].between(0, 1).all()
        and keyed.loc[~gpqa, "p_ceiling_below"].isna().all()
    )
    assert not _check_columns("miskeyed_items", keyed)
    expected = np.maximum(keyed["p_against"], keyed["p_ceiling_below"].fillna(0))
    assert np.allclose(keyed["p_miskeyed"], expected)
    assert keyed["p_miskeyed"].is_monotonic_decreasing
    # planted caps (ceilings 0.55-0.85) carry more low-ceiling evidence than uncapped GPQA items
    planted = sim.truth["ceiling"].to_series().reindex(keyed.index) < 1
    below = keyed["p_ceiling_below"]
    assert below[gpqa & planted].mean() > below[gpqa & ~planted].mean()
    written = {path.name for path in write_audit_tables(fit, tmp_path / "audit", n_draws=20)}
    assert "asymptote_flags.csv" in written
    page = write_report(fit, tmp_path / "report").read_text()
    assert "Floors and ceilings" in page and "p_ceiling_below" in page


def test_asymptote_flags_say_what_to_do_without_floors(nuts_fit):
    with pytest.raises(ValueError, match="no floors or ceilings"):
        asymptote_flags(nuts_fit)


def test_held_out_items_of_a_4pl_fit_are_refused_with_the_schemes_that_work(asymptote_fit):
    sim, fit = asymptote_fit
    split = fold_split(sim.responses, "items", 0, 5, seed=0)
    with pytest.raises(ValueError, match=r"3PL/4PL item's floor and ceiling.*scheme='cells' or 'llms'"):
        mirt_predictions(fit, sim.responses, split, "items")


AUTO_SPEC = {
    "binary": {
        "benchmarks": {"GPQA": "auto", "MMLU-Pro": "auto"},
        "n_options": {"GPQA": 4, "MMLU-Pro": 10},
    }
}


@pytest.fixture(scope="module")
def asymptote_choice(asymptote_fit):
    sim, _ = asymptote_fit
    return choose_asymptotes(
        sim.responses,
        2,
        spec=AUTO_SPEC,
        candidates=("4pl", "2pl"),
        nuts={"chains": 2, "tune": 200, "draws": 200},
        seed=1,
        progressbar=False,
    )


def test_auto_asymptotes_are_chosen_per_benchmark_and_the_fit_names_the_choice(
    asymptote_fit, asymptote_choice
):
    sim, _ = asymptote_fit
    choice = asymptote_choice
    assert list(choice.candidate_fits) == ["2pl", "4pl"]  # simplest first, whatever the order given
    assert set(choice.chosen) == {"GPQA", "MMLU-Pro"} and set(choice.chosen.values()) <= {"2pl", "4pl"}
    assert set(choice.comparison["benchmark"]) == {"GPQA", "MMLU-Pro"}
    # a benchmark the screen moved off the 2PL keeps that choice only where the fit of the
    # screen's choices confirms it; the others keep the 2PL
    screened = choice.comparison.groupby("benchmark")["recommended"].first()
    moved = sorted(screened.index[screened != "2pl"])
    assert sorted(choice.confirmation["benchmark"].unique()) == moved
    for bench, kind in choice.chosen.items():
        if bench in moved:
            confirmed = choice.confirmation.loc[choice.confirmation["benchmark"] == bench, "recommended"]
            assert kind == (screened[bench] if (confirmed == "screened").all() else "2pl")
        else:
            assert kind == "2pl"
    # the fit's own spec names every choice, so refitting from its attrs needs no comparison
    named = fit_spec(choice.fit)["binary"]["benchmarks"]
    assert {b: named[b] for b in choice.chosen} == choice.chosen
    assert named["BBH"] == "2pl"
    assert json.loads(choice.fit.attrs[CHOICE_ATTR]) == choice.chosen
    if len(set(choice.chosen.values())) == 1:
        assert choice.fit["posterior"].equals(
            choice.candidate_fits[next(iter(choice.chosen.values()))]["posterior"]
        )
    # the candidates differ on the 'auto' benchmarks only
    assert "floor" not in choice.candidate_fits["2pl"]["posterior"]
    floors = choice.candidate_fits["4pl"]["posterior"]["floor"].mean(("chain", "draw")).values
    auto = np.isin(np.asarray(sim.responses.benchmarks), ["GPQA", "MMLU-Pro"])
    assert (floors[auto] > 0).all() and (floors[~auto] == 0).all()


def test_auto_asymptotes_are_refused_where_nothing_chooses_them():
    responses = simulate_benchmirt(scale=0.005, n_llms=12, seed=1).responses
    with pytest.raises(ValueError, match="choose_asymptotes"):
        fit_posterior(responses, 2, spec=AUTO_SPEC, method="map", progressbar=False)
    with pytest.raises(ValueError, match=r"no benchmark .* is 'auto'"):
        choose_asymptotes(responses, 2, spec=SPEC, progressbar=False)
    with pytest.raises(ValueError, match="at least two distinct"):
        choose_asymptotes(responses, 2, spec=AUTO_SPEC, candidates=("4pl",), progressbar=False)


@pytest.fixture(scope="module")
def asymptote_comparison(asymptote_choice):
    return compare_asymptote_models(asymptote_choice.candidate_fits)


def test_comparing_asymptote_models_recommends_one_per_benchmark_and_says_by_how_much(
    asymptote_fit, asymptote_choice, asymptote_comparison
):
    sim, fit = asymptote_fit
    table = asymptote_comparison
    benchmarks = set(np.asarray(sim.responses.benchmarks))
    assert set(table["benchmark"]) == benchmarks and len(table) == 2 * len(benchmarks)
    assert (table["elpd_diff"] >= 0).all() and (table.groupby("benchmark")["elpd_diff"].min() == 0).all()
    # where both models are the same (2PL benchmarks in both fits) the simpler one is chosen
    same = table[~table["benchmark"].isin(["GPQA", "MMLU-Pro"])]
    assert (same["recommended"] == "2pl").mean() > 0.8
    # the recommendation follows the stated rule on every benchmark: without the fits' Monte
    # Carlo error, the cells' paired SE alone; with it (the default), both
    cells_only = compare_asymptote_models(
        asymptote_choice.candidate_fits, monte_carlo_error=False, benchmarks=["GPQA", "MMLU-Pro"]
    )
    assert sorted(set(cells_only["benchmark"])) == ["GPQA", "MMLU-Pro"]
    # a benchmark's rows do not depend on which other benchmarks are compared beside it
    alone = compare_asymptote_models(asymptote_choice.candidate_fits, benchmarks=["MMLU-Pro"])
    pd.testing.assert_frame_equal(
        alone, table[table["benchmark"] == "MMLU-Pro"].reset_index(drop=True), check_like=True
    )
    for _, part in cells_only.groupby("benchmark"):
        first = part.iloc[0]
        chosen = "2pl" if first["elpd_diff"] <= 2 * first["se_diff"] else "4pl"
        assert (part["recommended"] == chosen).all()
        gain = part.set_index("model").loc[chosen, "elpd"] - part.set_index("model").loc["2pl", "elpd"]
        assert first["gain_over_first"] == pytest.approx(gain)
    for _, part in table.groupby("benchmark"):
        first, best = part.iloc[0], part.loc[part["elpd_diff"] == 0].iloc[0]
        margin = 2 * np.sqrt(first["se_diff"] ** 2 + first["mcse"] ** 2 + best["mcse"] ** 2)
        assert (part["recommended"] == ("2pl" if first["elpd_diff"] <= margin else "4pl")).all()
    assert not _check_columns("compare_asymptote_models", table)
    with pytest.raises(ValueError, match="at least two"):
        compare_asymptote_models({"4pl": fit})


def test_a_fit_whose_chains_disagree_on_a_benchmark_carries_its_monte_carlo_error_into_the_choice(
    asymptote_choice, asymptote_comparison
):
    fits = asymptote_choice.candidate_fits
    table = asymptote_comparison
    # the candidates' chains mixed on every benchmark of this set (at 2 × (200 + 200) draws an
    # R-hat up to about 1.07 is the chains' noise)
    assert (table["rhat"] < 1.1).all() and (table["mcse"] < table["se_diff"].max()).all()
    # a fit's draws dealt to the chains by their log-likelihood on one benchmark (low half to
    # one chain, high half to the other): the same draws, so the same PSIS-LOO up to its
    # relative efficiencies, but chains that disagree, and a larger Monte Carlo error
    rows = table.set_index(["benchmark", "model"])
    bench = "MMLU-Pro"
    broken = fits["4pl"].copy()
    post = broken["posterior"].to_dataset().transpose("chain", "draw", ...)
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    log_lik = pointwise_log_likelihood(broken)[LOG_LIKELIHOOD_VARIABLE]
    responses = responses_from_tree(broken)
    on_bench = np.isin(log_lik["item"].values, responses.items[np.asarray(responses.benchmarks) == bench])
    order = np.argsort(log_lik.transpose("chain", "draw", "cell").values[..., on_bench].sum(-1).ravel())
    for name, values in post.data_vars.items():
        flat = values.values.reshape(chains * draws, *values.shape[2:])
        post[name] = values.copy(data=flat[order].reshape(values.shape))
    broken["posterior"] = post
    mixed = compare_asymptote_models({"2pl": fits["2pl"], "4pl": broken}, benchmarks=[bench])
    mixed = mixed.set_index(["benchmark", "model"])
    assert mixed.loc[(bench, "4pl"), "elpd"] == pytest.approx(rows.loc[(bench, "4pl"), "elpd"], abs=0.1)
    assert mixed.loc[(bench, "4pl"), "rhat"] > 1.1
    assert mixed.loc[(bench, "4pl"), "mcse"] > 3 * rows.loc[(bench, "4pl"), "mcse"]
    # every recommendation follows the rule on the table's own columns
    for table_ in (table, mixed.reset_index()):
        for _, part in table_.groupby("benchmark"):
            part = part.set_index("model")
            expected = recommend_model(
                part["elpd"].to_dict(), part["se_diff"].to_dict(), part["mcse"].to_dict(), 2.0
            )
            assert (part["recommended"] == expected).all()


def test_the_monte_carlo_error_of_a_fit_can_overturn_a_gain_that_the_cells_alone_would_take():
    elpd, se_diff = {"2pl": -100.0, "3pl": -89.0}, {"2pl": 4.9, "3pl": 0.0}
    assert recommend_model(elpd, se_diff, {"2pl": 0.0, "3pl": 0.0}, 2.0) == "3pl"  # 11 > 2 × 4.9
    assert recommend_model(elpd, se_diff, {"2pl": 0.5, "3pl": 12.5}, 2.0) == "2pl"  # 11 < 2 × 13.4
    assert recommend_model(elpd, se_diff, {"2pl": 0.0, "3pl": 0.0}, 3.0) == "2pl"


@pytest.mark.parametrize(
    ("screen", "confirm", "chosen", "fits_made", "final"),
    [
        # nothing moved: the 2PL candidate, no confirmation
        ({}, {}, {"GPQA": "2pl", "MMLU-Pro": "2pl"}, 3, "2pl"),
        # both moved to the same model: its candidate is the screened fit; both confirmed
        (
            {"GPQA": "3pl", "MMLU-Pro": "3pl"},
            {"GPQA", "MMLU-Pro"},
            {"GPQA": "3pl", "MMLU-Pro": "3pl"},
            3,
            "3pl",
        ),
        # both moved to the same model, neither confirmed: back to the 2PL candidate
        ({"GPQA": "3pl", "MMLU-Pro": "3pl"}, set(), {"GPQA": "2pl", "MMLU-Pro": "2pl"}, 3, "2pl"),
        # moved to different models: one screened fit; both confirmed, it is the final fit
        (
            {"GPQA": "3pl", "MMLU-Pro": "4pl"},
            {"GPQA", "MMLU-Pro"},
            {"GPQA": "3pl", "MMLU-Pro": "4pl"},
            4,
            "screened",
        ),
        # one confirmed of two: fitted once more with the confirmed choice only
        ({"GPQA": "3pl", "MMLU-Pro": "4pl"}, {"MMLU-Pro"}, {"GPQA": "2pl", "MMLU-Pro": "4pl"}, 5, "chosen"),
    ],
)
def test_choose_asymptotes_confirms_the_screens_choices_on_their_own_fit(
    monkeypatch, screen, confirm, chosen, fits_made, final
):
    import benchmirt_bayes.workflows.asymptote_fits as workflow

    responses = simulate_benchmirt(scale=0.005, n_llms=12, seed=1).responses
    made = []

    def fake_fit(responses, n_dims, *, spec, **_):
        made.append(spec)
        return xr.DataTree(name=spec.name.split("+")[-1])

    def fake_compare(fits, *, tolerance_se, monte_carlo_error, benchmarks):
        labels = list(fits)
        if not monte_carlo_error:  # the screen, over the candidates
            pick = {b: screen.get(b, "2pl") for b in benchmarks}
        else:  # the confirmation, the screened fit against the 2PL candidate
            assert labels == ["2pl", "screened"] and fits["screened"].name == (
                "screened" if len(set(screen.values())) > 1 else next(iter(screen.values()))
            )
            assert sorted(benchmarks) == sorted(screen)
            pick = {b: "screened" if b in confirm else "2pl" for b in benchmarks}
        rows = [
            {"benchmark": b, "model": m, "rhat": 1.0, "recommended": pick[b]}
            for b in benchmarks
            for m in labels
        ]
        return pd.DataFrame(rows)

    monkeypatch.setattr(workflow, "fit_posterior", fake_fit)
    monkeypatch.setattr(workflow, "compare_asymptote_models", fake_compare)
    choice = workflow.choose_asymptotes(responses, 2, spec=AUTO_SPEC, progressbar=False)
    assert choice.chosen == chosen and json.loads(choice.fit.attrs[CHOICE_ATTR]) == chosen
    assert len(made) == fits_made and choice.fit.name == final
    assert sorted(choice.confirmation["benchmark"].unique()) == sorted(screen)
    named = made[-1]["binary"]["benchmarks"] if final in ("screened", "chosen") else None
    if final == "chosen":
        assert {b: named[b] for b in chosen} == chosen
    if final == "screened":
        assert {b: named[b] for b in screen} == screen

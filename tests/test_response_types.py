"""Graded, continuous and count response models: formulas against independent computations."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pymc as pm
import pytest
import xarray as xr
from scipy import stats
from scipy.special import expit

from benchmirt_bayes import ResponseMatrix, simulate_benchmirt
from benchmirt_bayes.errors import ResponseDataError
from benchmirt_bayes.model.layout import ResponseLayout
from benchmirt_bayes.model.pymc_model import build_model
from benchmirt_bayes.response_types.base import linear_predictor
from benchmirt_bayes.response_types.binary import BINARY
from benchmirt_bayes.response_types.continuous import CONTINUOUS
from benchmirt_bayes.response_types.count import COUNT
from benchmirt_bayes.response_types.graded import GRADED

from .conftest import jittered_point_values

ETA = np.linspace(-3.0, 3.0, 7)
CUTS = np.array([-1.2, 0.3, 1.4])  # four categories


def numerical_derivative(f, eta, step=1e-6):
    return (f(eta + step) - f(eta - step)) / (2 * step)


# ------------------------------------------------------------------ graded
def graded_probabilities(eta, cuts):
    at_least = np.concatenate([[1.0], expit(eta - cuts), [0.0]])
    return at_least[:-1] - at_least[1:]


def test_graded_log_likelihood_is_the_log_of_the_category_probability():
    for eta in ETA:
        probs = graded_probabilities(eta, CUTS)
        assert probs.sum() == pytest.approx(1.0)
        for y in range(4):
            ll = GRADED.log_likelihood(np.array(y), np.array(eta), cutpoints=CUTS)
            assert ll == pytest.approx(np.log(probs[y]), rel=1e-10)


def test_graded_with_two_categories_is_the_binary_model():
    y = np.array([0, 1, 1, 0, 1, 0, 1])
    graded = GRADED.log_likelihood(y, ETA, cutpoints=np.zeros((7, 1)))
    np.testing.assert_allclose(graded, BINARY.log_likelihood(y, ETA), rtol=1e-12)
    info = GRADED.information_weight(ETA, cutpoints=np.zeros((7, 1)))
    np.testing.assert_allclose(info, BINARY.information_weight(ETA), rtol=1e-10)


def test_graded_tails_are_finite_far_from_the_cutpoints():
    ll = GRADED.log_likelihood(np.array([0, 3]), np.array([40.0, -40.0]), cutpoints=CUTS)
    assert np.all(np.isfinite(ll)) and np.all(ll < -30)


def _reference_interval(lower, upper, eta):
    """log(σ(a) − σ(b)) = log σ(a) + log σ(−b) + log(1 − e^(b − a)), each term exact in floats."""
    a, b = eta - lower, eta - upper
    with np.errstate(divide="ignore"):
        gap = np.where(np.isinf(b - a), 0.0, np.log(-np.expm1(np.minimum(b - a, -1e-300))))
    return -np.logaddexp(0, -a) - np.logaddexp(0, b) + gap


@pytest.mark.parametrize("backend", ["numpy", "pytensor"])
def test_interval_probability_is_accurate_in_both_tails_and_at_open_ends(backend):
    import pytensor
    import pytensor.tensor as pt

    from benchmirt_bayes.response_types.base import PYTENSOR
    from benchmirt_bayes.response_types.cutpoints import interval_log_probability

    # far tails too: η of ±900 and cutpoints a million away, where both sigmoids underflow
    # (an optimiser's random draws of wide cutpoints get there; the log density must not be −∞)
    eta = np.repeat(np.concatenate([np.linspace(-60.0, 60.0, 121), [-900.0, 900.0]]), 5)
    lower = np.tile([-np.inf, -1.0, 0.5, 2.0, 1e6], 123)
    upper = np.tile([-0.5, np.inf, 0.6, 30.0, 2e6], 123)
    expected = _reference_interval(lower, upper, eta)
    if backend == "numpy":
        got = interval_log_probability(lower, upper, eta)
    else:
        x = pt.vector("eta")
        value = interval_log_probability(pt.as_tensor(lower), pt.as_tensor(upper), x, PYTENSOR)
        fn = pytensor.function([x], [value, pytensor.grad(value.sum(), x)])
        got, gradient = fn(eta)
        assert np.all(np.isfinite(gradient))
        np.testing.assert_allclose(gradient, 1 - expit(eta - lower) - expit(eta - upper), atol=1e-12)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_graded_score_residual_and_information():
    cuts = np.broadcast_to(CUTS, (7, 3))
    for y in range(4):
        ys = np.full(7, y)
        residual = GRADED.score_residual(ys, ETA, cutpoints=cuts)
        numeric = numerical_derivative(lambda e, ys=ys: GRADED.log_likelihood(ys, e, cutpoints=cuts), ETA)
        np.testing.assert_allclose(residual, numeric, rtol=1e-5, atol=1e-8)
    # Fisher information = E[score²], summed exactly over the categories
    expected = sum(
        graded_probabilities(e, CUTS)[y]
        * GRADED.score_residual(np.array(y), np.array(e), cutpoints=CUTS) ** 2
        for e in ETA[:1]
        for y in range(4)
    )
    assert GRADED.information_weight(ETA[:1], cutpoints=CUTS[None])[0] == pytest.approx(expected)
    # expected score = Σ k P(k)
    means = [np.dot(np.arange(4), graded_probabilities(e, CUTS)) for e in ETA]
    np.testing.assert_allclose(GRADED.expected_score(ETA, cutpoints=cuts), means)


def test_graded_padding_gives_items_fewer_categories():
    padded = np.array([[-0.5, 0.5, np.inf]])  # three categories in a four-wide layout
    ll = GRADED.log_likelihood(np.array([2]), np.array([0.2]), cutpoints=padded)
    assert ll[0] == pytest.approx(np.log(expit(0.2 - 0.5)))
    draws = GRADED.draw(np.zeros(20000), np.random.default_rng(0), cutpoints=padded)
    assert draws.max() == 2
    probs = graded_probabilities(0.0, np.array([-0.5, 0.5]))
    np.testing.assert_allclose(np.bincount(draws, minlength=3) / draws.size, probs, atol=0.015)


# --------------------------------------------------------------- continuous
KAPPA = np.array([-1.0, 1.5])
PHI = 6.0


def ordered_beta_log_density(y, eta):
    p0 = 1 - expit(eta - KAPPA[0])
    p1 = expit(eta - KAPPA[1])
    if y == 0:
        return np.log(p0)
    if y == 1:
        return np.log(p1)
    mu = expit(eta)
    return np.log(1 - p0 - p1) + stats.beta.logpdf(y, mu * PHI, (1 - mu) * PHI)


@pytest.mark.parametrize("y", [0.0, 0.05, 0.5, 0.93, 1.0])
def test_ordered_beta_log_likelihood_matches_scipy(y):
    ll = CONTINUOUS.log_likelihood(np.full(7, y), ETA, cutpoints=KAPPA, precision=PHI)
    np.testing.assert_allclose(ll, [ordered_beta_log_density(y, e) for e in ETA], rtol=1e-9)
    residual = CONTINUOUS.score_residual(np.full(7, y), ETA, cutpoints=KAPPA, precision=PHI)
    numeric = numerical_derivative(
        lambda e: CONTINUOUS.log_likelihood(np.full(7, y), e, cutpoints=KAPPA, precision=PHI), ETA
    )
    np.testing.assert_allclose(residual, numeric, rtol=1e-5, atol=1e-7)


def test_ordered_beta_draws_match_expected_score_and_information():
    rng = np.random.default_rng(1)
    for eta in (-1.0, 0.4, 2.0):
        draws = CONTINUOUS.draw(np.full(200_000, eta), rng, cutpoints=KAPPA, precision=PHI)
        assert np.mean(draws == 0) == pytest.approx(1 - expit(eta - KAPPA[0]), abs=0.005)
        assert np.mean(draws == 1) == pytest.approx(expit(eta - KAPPA[1]), abs=0.005)
        expected = CONTINUOUS.expected_score(np.array(eta), cutpoints=KAPPA, precision=PHI)
        assert draws.mean() == pytest.approx(expected, abs=0.005)
        # Fisher information = E[score²] (Monte Carlo over the draws)
        scores = CONTINUOUS.score_residual(draws, np.full(draws.size, eta), cutpoints=KAPPA, precision=PHI)
        info = CONTINUOUS.information_weight(np.array(eta), cutpoints=KAPPA, precision=PHI)
        assert np.mean(scores) == pytest.approx(0.0, abs=0.02)
        assert np.mean(scores**2) == pytest.approx(info, rel=0.03)


# -------------------------------------------------------------------- count
def test_count_model_is_the_binomial():
    n = np.full(7, 5.0)
    for y in (0, 2, 5):
        ll = COUNT.log_likelihood(np.full(7, float(y)), ETA, n_trials=n)
        np.testing.assert_allclose(ll, stats.binom.logpmf(y, 5, expit(ETA)), rtol=1e-10)
    np.testing.assert_allclose(COUNT.expected_score(ETA, n_trials=n), 5 * expit(ETA))
    np.testing.assert_allclose(COUNT.information_weight(ETA, n_trials=n), 5 * expit(ETA) * (1 - expit(ETA)))


def test_jax_log_likelihoods_equal_numpy():
    jnp = pytest.importorskip("jax.numpy")
    y = np.array([0.0, 0.2, 1.0, 0.7, 0.0, 1.0, 0.4])
    numpy_ll = CONTINUOUS.log_likelihood(y, ETA, cutpoints=KAPPA, precision=PHI)
    jax_ll = CONTINUOUS.log_likelihood(jnp.asarray(y), jnp.asarray(ETA), jnp, cutpoints=KAPPA, precision=PHI)
    np.testing.assert_allclose(np.asarray(jax_ll), numpy_ll, rtol=1e-5)
    yg = np.array([0, 1, 2, 3, 2, 1, 0])
    numpy_g = GRADED.log_likelihood(yg, ETA, cutpoints=CUTS)
    jax_g = GRADED.log_likelihood(jnp.asarray(yg), jnp.asarray(ETA), jnp, cutpoints=jnp.asarray(CUTS))
    np.testing.assert_allclose(np.asarray(jax_g), numpy_g, rtol=1e-5)


# ------------------------------------------------------------------- data
def typed_matrix(values, types, **coords):
    items = [f"q{i}" for i in range(len(types))]
    return xr.DataArray(
        np.asarray(values, dtype=float),
        dims=("llm", "item"),
        coords={
            "llm": [f"m{j}" for j in range(len(values))],
            "item": items,
            "benchmark": ("item", [f"B{t}" for t in types]),
            "subgroup": ("item", [f"B{t}" for t in types]),
            "response_type": ("item", list(types)),
            **{k: ("item", v) for k, v in coords.items()},
        },
    )


def test_typed_matrix_keeps_scores_and_scales_them():
    data = typed_matrix(
        [[1, 3, 0.25, 4], [0, 0, 1.0, 2]],
        ["binary", "graded", "continuous", "count"],
        n_categories=[2, 4, 0, 0],
        n_trials=[1, 1, 1, 5],
    )
    matrix = ResponseMatrix(data)
    assert list(matrix.response_types) == ["binary", "graded", "continuous", "count"]
    np.testing.assert_allclose(matrix.scaled_values, [[1, 1, 0.25, 0.8], [0, 0, 1, 0.4]])
    assert not matrix.is_binary


@pytest.mark.parametrize(
    ("values", "types", "coords", "named"),
    [
        ([[0.5, 1], [0, 1]], ["binary", "binary"], {}, "(m0, q0: binary)=0.5"),
        (
            [[4, 1], [0, 1]],
            ["graded", "binary"],
            {"n_categories": [4, 2]},
            "(m0, q0: graded, 4 categories)=4.0",
        ),
        ([[1.5, 1], [0, 1]], ["graded", "binary"], {}, "q0"),
        ([[6, 1], [0, 1]], ["count", "binary"], {"n_trials": [5, 1]}, "(m0, q0: count, n_trials=5)=6.0"),
        ([[1.2, 1], [0, 1]], ["continuous", "binary"], {}, "(m0, q0: continuous)=1.2"),
        ([[2, 1], [0, 1]], ["count", "binary"], {}, "count item(s) need n_trials"),
        ([[1, 1], [0, 1]], ["ordinal", "binary"], {}, "q0='ordinal'"),
    ],
)
def test_values_outside_their_type_are_named(values, types, coords, named):
    with pytest.raises(ResponseDataError) as info:
        ResponseMatrix(typed_matrix(values, types, **coords))
    assert named in str(info.value)


# ---------------------------------------------------------- model and data
@pytest.fixture(scope="module")
def mixed_sim():
    return simulate_benchmirt(scale=0.005, n_llms=30, seed=2, response_types="mixed")


def test_mixed_simulation_declares_types_and_truth(mixed_sim):
    responses, truth = mixed_sim.responses, mixed_sim.truth
    types = dict(zip(responses.benchmarks, responses.response_types, strict=True))
    assert types["StrongREJECT"] == "continuous" and types["IFEval"] == "graded" and types["MATH"] == "count"
    assert types["BBH"] == "binary"
    assert {"cutpoint", "continuous_cutpoints", "continuous_precision"} <= set(truth.data_vars)
    assert json.loads(truth.attrs["response_types"])["IFEval"] == "graded"
    continuous = responses.values[:, responses.response_types == "continuous"]
    observed = continuous[~np.isnan(continuous)]
    assert np.any(observed == 0) and np.any((observed > 0) & (observed < 1))
    # the binary default is untouched by the new option
    plain = simulate_benchmirt(scale=0.005, n_llms=30, seed=2)
    assert plain.responses.is_binary
    assert "response_type" not in plain.responses.data.coords


@pytest.mark.slow
def test_model_terms_equal_the_layout_log_likelihood(mixed_sim):
    responses = mixed_sim.responses
    model = build_model(responses, 2)
    assert [rv.name for rv in model.observed_RVs] == ["correct", "graded", "continuous", "count"]
    point, values = jittered_point_values(
        model, ["ability", "loading", "intercept", "cutpoint", "continuous_cutpoints", "continuous_precision"]
    )
    terms = model.compile_logp(vars=model.observed_RVs, sum=False)(point)
    layout = ResponseLayout.from_responses(responses)
    eta = linear_predictor(values["ability"], values["loading"], values["intercept"])
    loglik = layout.log_likelihood(responses.values, eta, layout.parameters(values))
    for term, cols in zip(terms, layout.columns.values(), strict=True):
        assert np.sum(term) == pytest.approx(np.nansum(loglik[:, cols]), rel=1e-9)
    assert np.all(np.isfinite(model.compile_dlogp()(point)))


def test_mixed_data_refuse_the_binary_only_likelihood_forms(mixed_sim):
    with pytest.raises(ValueError, match="all-binary"):
        build_model(mixed_sim.responses, 2, likelihood="fused")


# ------------------------------------------------------- graded against ML
def graded_marginal_ml(values: np.ndarray, n_categories: int) -> tuple[np.ndarray, np.ndarray]:
    """Maximum marginal likelihood of a 1-dimension logistic graded model, θ ~ N(0, 1).

    Written here independently of the package: Gauss–Hermite quadrature over θ, slopes
    ``a`` and decreasing intercepts ``d_1 > … > d_{K−1}`` (R mirt's slope–intercept form,
    ``P(y ≥ k) = σ(a θ + d_k)``), optimised by L-BFGS.
    """
    from numpy.polynomial.hermite_e import hermegauss
    from scipy.optimize import minimize

    nodes, weights = hermegauss(61)
    log_w = np.log(weights / weights.sum())
    n_items = values.shape[1]
    y = values.astype(int)

    def unpack(x):
        a = x[:n_items]
        rest = x[n_items:].reshape(n_items, n_categories - 1)
        steps = np.concatenate([rest[:, :1], -np.exp(rest[:, 1:])], axis=1)
        return a, np.cumsum(steps, axis=1)

    def negative_log_marginal(x):
        a, d = unpack(x)
        at_least = expit(a[None, :, None] * nodes[:, None, None] + d[None])  # (node, item, K-1)
        ones, zeros = np.ones_like(at_least[..., :1]), np.zeros_like(at_least[..., :1])
        probs = np.concatenate([ones, at_least], -1) - np.concatenate([at_least, zeros], -1)
        log_p = np.log(np.clip(probs, 1e-300, None))  # (node, item, K)
        per_person = log_p[:, np.arange(n_items)[None, :], y].sum(-1)  # (node, person)
        return -np.sum(np.logaddexp.reduce(per_person + log_w[:, None], axis=0))

    start = np.concatenate([np.ones(n_items), np.tile([1.0, 0.0, 0.0], n_items)])
    result = minimize(negative_log_marginal, start, method="L-BFGS-B")
    assert result.success, result.message
    return unpack(result.x)


@pytest.mark.realdata
@pytest.mark.slow
def test_science_graded_fit_agrees_with_maximum_likelihood():
    from benchmirt_bayes import fit_posterior, load_mirt_reference

    from .conftest import shared_path

    responses = load_mirt_reference(shared_path("mirt_reference"), "Science")
    assert list(responses.n_categories) == [4, 4, 4, 4]
    slopes, intercepts = graded_marginal_ml(responses.values, 4)
    fit = fit_posterior(
        responses,
        1,
        spec="2pl",
        method="nuts",
        seed=4,
        progressbar=False,
        nuts={"draws": 1000, "tune": 500, "chains": 4},
    )
    # the pooled loading prior shrinks the steepest slope (ML 2.30) about 1.8 posterior SDs
    # towards the others; 4 x 1,000 draws keep Monte Carlo error (~0.03 SD) from deciding
    post = fit["posterior"].to_dataset().stack(sample=("chain", "draw"))
    loading = post["loading"].values[:, 0, :]  # (item, sample)
    # R mirt's d_k = intercept − cutpoint_k
    cutpoint = post["cutpoint"].values.reshape(4, 3, -1)
    thresholds = post["intercept"].values[:, None, :] - cutpoint
    for name, draws, ml in (("slope", loading, slopes), ("threshold", thresholds, intercepts)):
        distance = np.abs(draws.mean(-1) - ml) / draws.std(-1)
        assert np.all(distance <= 2.0), (name, draws.mean(-1), ml, distance)


# ------------------------------------------------------ analyses on mixed data
@pytest.fixture(scope="module")
def mixed_fit(mixed_sim):
    from benchmirt_bayes import fit_posterior

    return fit_posterior(mixed_sim.responses, 2, method="advi", seed=3, progressbar=False, advi={"draws": 60})


@pytest.mark.slow
def test_every_analysis_runs_on_a_mixed_fit(mixed_fit, mixed_sim, tmp_path):
    from benchmirt_bayes import (
        adaptive_test,
        benchmark_correlations,
        rank_items,
        score_llm,
        select_items,
        write_report,
    )
    from benchmirt_bayes.analyses.predictive import predicted_group_scores

    responses = mixed_sim.responses
    types = dict(zip(responses.items, responses.response_types, strict=True))
    ranked = rank_items(mixed_fit, n_draws=20)
    kind = ranked.index.map(types).to_numpy()  # each type's own summaries, NaN for other items
    assert ranked.loc[kind == "graded", "cutpoint_span_mean"].gt(0).all()
    assert ranked.loc[kind != "graded", "cutpoint_span_mean"].isna().all()
    exact = ranked.loc[kind == "continuous", ["p_exact_zero_mean", "p_exact_one_mean"]]
    assert exact.gt(0).all().all() and exact.sum(axis=1).lt(1).all()
    assert ranked["information_mean"].notna().all() and (ranked["information_mean"] >= 0).all()
    assert {types[i] for i in ranked.index} >= {"graded", "continuous", "count"}
    chosen = select_items(mixed_fit, fraction=0.3, method="information")
    assert len(chosen) > 0
    groups = predicted_group_scores(mixed_fit, n_draws=20)
    predicted = groups["predicted"].mean("sample_index")
    assert float(predicted.min()) >= 0 and float(predicted.max()) <= 1
    # the posterior predictive mean score tracks the observed mean score on every benchmark type
    for bench in ("IFEval", "StrongREJECT", "MATH"):
        observed = groups["observed"].sel(group=bench).values
        assert np.corrcoef(observed, predicted.sel(group=bench).values)[0, 1] > 0.5, bench
    audit = benchmark_correlations(mixed_fit).wide()
    assert np.isfinite(audit.loc[["IFEval", "StrongREJECT", "MATH"]].to_numpy()).all()
    llm = responses.llms[0]
    answers = pd.Series(responses.values[0], index=responses.items).dropna()
    scored = score_llm(mixed_fit, answers, n_draws=20)
    assert scored.benchmark_scores["mean"].between(0, 1).all()
    with pytest.raises(ValueError, match="outside their items' response types"):
        graded_item = responses.items[responses.response_types == "graded"][0]
        score_llm(mixed_fit, {graded_item: 7.0}, n_draws=10)
    truth_row = dict(zip(responses.items, responses.values[0], strict=True))
    steps = adaptive_test(
        mixed_fit, lambda item: truth_row[item], budget=3, items=list(answers.index), n_draws=10
    )
    assert len(steps) == 3, llm
    write_report(mixed_fit, tmp_path / "report")
    assert (tmp_path / "report" / "index.html").exists()


@pytest.mark.slow
def test_mixed_fit_round_trips_with_its_continuous_scores(mixed_fit, mixed_sim, tmp_path):
    from benchmirt_bayes import load_posterior, save_posterior
    from benchmirt_bayes.posterior import response_layout, responses_from_tree

    path = save_posterior(mixed_fit, tmp_path / "mixed.nc")
    back = load_posterior(path, mixed_sim.responses)  # raises when the stored data hash differs
    stored = responses_from_tree(back)
    np.testing.assert_array_equal(stored.values, mixed_sim.responses.values)
    assert list(response_layout(back).types) == list(response_layout(mixed_fit).types)


@pytest.mark.slow
def test_a_bare_trace_is_binary_only_without_typed_parameters(mixed_fit):
    from benchmirt_bayes.posterior import response_layout

    bare = xr.DataTree.from_dict({"posterior": mixed_fit["posterior"].to_dataset()})
    with pytest.raises(ValueError, match="no observed_data"):
        response_layout(bare)
    binary_only = bare["posterior"].to_dataset()[["ability", "loading", "intercept"]]
    layout = response_layout(xr.DataTree.from_dict({"posterior": binary_only}))
    assert layout.is_binary and layout.types.size == binary_only.sizes["item"]


# ---------------------------------------------------- scoring rules per type
def test_ranked_probability_score_and_crps_against_direct_formulas():
    from benchmirt_bayes.analyses.metrics import crps_from_samples, ranked_probability_score

    probs = np.array([[0.1, 0.2, 0.3, 0.4], [0.5, 0.5, 0.0, 0.0]])
    rps = ranked_probability_score(probs, np.array([2, 0]))
    assert rps[0] == pytest.approx(((0.1 - 0) ** 2 + (0.3 - 0) ** 2 + (0.6 - 1) ** 2) / 3)
    assert rps[1] == pytest.approx((0.5 - 1) ** 2 / 1)
    assert ranked_probability_score(np.array([[0.0, 1.0, 0.0]]), np.array([1]))[0] == 0.0
    rng = np.random.default_rng(0)
    samples = rng.normal(size=(4000, 1))
    # CRPS of N(0, 1) at y = 0 is 2φ(0) − 1/√π
    expected = 2 * stats.norm.pdf(0) - 1 / np.sqrt(np.pi)
    assert crps_from_samples(samples, np.zeros(1))[0] == pytest.approx(expected, abs=0.01)


@pytest.mark.slow
def test_cross_validation_scores_every_type(mixed_sim):
    from benchmirt_bayes import cross_validate

    # in this process: each fold compiles its own graph, and fold processes beside the other
    # CI worker only fight over the two cores
    cv = cross_validate(
        mixed_sim.responses, n_dims=(1,), folds=2, method="map", seed=3, progressbar=False, executor="serial"
    )
    summary = cv.summary()["mean"].unstack("metric")
    for metric in ("log_score", "graded_rps", "count_rps", "continuous_crps", "continuous_coverage_90"):
        assert np.isfinite(summary.loc["mirt_1d", metric]), metric
    assert 0 <= summary.loc["mirt_1d", "continuous_coverage_90"] <= 1
    # baselines are scored on every type by the squared error of their mean
    assert np.isfinite(summary.loc["llm_x_benchmark_mean", "graded_mse"])
    assert np.isfinite(summary.loc["mirt_1d", "log_loss"])  # binary cells keep their metrics
    with pytest.raises(ValueError, match="scheme='cells'"):
        cross_validate(mixed_sim.responses, n_dims=(1,), folds=2, scheme="llms", method="map")


@pytest.mark.parametrize("response_type", ["graded", "continuous", "count"])
def test_the_pymc_term_draws_one_response_per_observed_cell_in_the_type_range(response_type):
    from benchmirt_bayes.workflows.sbc import SbcSetting, sbc_design

    design = sbc_design(SbcSetting(n_llms=6, items_per_benchmark=3, response_type=response_type))
    model = build_model(design, 1)
    (observed,) = model.observed_RVs
    draws = pm.draw(observed, draws=20, random_seed=1)
    assert draws.shape == (20, int(np.isfinite(design.values).sum()))
    scale = np.broadcast_to(design.score_scale, design.values.shape)[np.isfinite(design.values)]
    assert (draws >= 0).all() and (draws <= scale).all()
    assert len(np.unique(draws)) > 2  # more than two values: the categories, counts or scores move

"""Minibatch ADVI and the streaming cell sources."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from benchmirt_bayes import fit_minibatch_advi
from benchmirt_bayes.rotations import procrustes
from benchmirt_bayes.simulation.streaming import MatrixSource, StreamingSimulation, cell_uniforms

from .conftest import correlation


def _aligned_correlations(estimate, truth, loading_est, loading_true):
    rotation = procrustes(loading_est, loading_true)
    aligned = estimate @ rotation
    return [correlation(aligned[:, d], truth[:, d]) for d in range(truth.shape[1])]


@pytest.fixture(scope="module")
def stream():
    return StreamingSimulation(n_llms=200, n_items=2000, seed=4)


STREAM_FIT = {"item_batch": 500, "advi": {"draws": 400}, "seed": 1, "progressbar": False}


@pytest.fixture(scope="module")
def stream_fit(stream):
    return fit_minibatch_advi(stream, 2, **STREAM_FIT)


def _means(fit, name):
    return fit["posterior"][name].mean(("chain", "draw")).values


def test_cells_do_not_depend_on_the_block_that_asked(stream):
    rows, cols = np.arange(40), np.arange(300)
    whole = stream.block_numpy(rows, cols)
    part = stream.block_numpy(rows[[3, 17, 25]], cols[[0, 99, 250, 299]])
    np.testing.assert_array_equal(part, whole[np.ix_([3, 17, 25], [0, 99, 250, 299])])
    again = StreamingSimulation(n_llms=200, n_items=2000, seed=4).block_numpy(rows, cols)
    np.testing.assert_array_equal(whole, again)
    other_seed = StreamingSimulation(n_llms=200, n_items=2000, seed=5).block_numpy(rows, cols)
    assert np.nanmean(whole != other_seed) > 0.2


def test_cell_uniforms_are_uniform_and_streams_independent():
    u1 = np.asarray(cell_uniforms(np.arange(300), np.arange(1000), 0, 1)).ravel()
    u2 = np.asarray(cell_uniforms(np.arange(300), np.arange(1000), 0, 2)).ravel()
    assert abs(u1.mean() - 0.5) < 0.003 and abs(u1.var() - 1 / 12) < 0.002
    counts = np.histogram(u1, bins=20, range=(0, 1))[0]
    assert counts.min() > 0.97 * u1.size / 20
    assert abs(correlation(u1, u2)) < 0.01


def test_simulated_responses_follow_the_true_probabilities(stream):
    rows, cols = np.arange(200), np.arange(0, 2000, 4)
    block = stream.block_numpy(rows, cols)
    truth = stream.truth
    logits = truth["ability"].values[rows] @ truth["loading"].values[cols].T
    prob = 1 / (1 + np.exp(-(logits + truth["intercept"].values[cols])))
    observed = ~np.isnan(block)
    assert abs(1 - observed.mean() - stream.missing_share) < 0.005
    residual = (block[observed] - prob[observed]).mean()
    assert abs(residual) < 0.01
    # calibration: cells with high true probability are mostly correct
    assert np.nanmean(block[prob > 0.9]) > 0.88 and np.nanmean(block[prob < 0.1]) < 0.12


def test_minibatch_fit_recovers_the_truth(stream, stream_fit):
    truth = stream.truth
    loading_est = _means(stream_fit, "loading")
    ability_r = _aligned_correlations(
        _means(stream_fit, "ability"), truth["ability"].values, loading_est, truth["loading"].values
    )
    loading_r = _aligned_correlations(
        loading_est, truth["loading"].values, loading_est, truth["loading"].values
    )
    intercept_r = correlation(_means(stream_fit, "intercept"), truth["intercept"].values)
    assert min(ability_r) > 0.97
    assert min(loading_r) > 0.85
    assert intercept_r > 0.95
    elbo = stream_fit["elbo"]["elbo"].values[0]
    elbo = elbo[np.isfinite(elbo)]
    assert elbo[-100:].mean() > elbo[:100].mean()
    assert stream_fit.attrs["benchmirt_blocks_per_epoch"] == 4


def test_minibatch_fit_is_identified_as_fit_posterior_identifies(stream_fit, advi_fit):
    """One identification for every path: the same attrs, abilities whitened, the sign convention."""
    assert stream_fit.attrs["benchmirt_identification"] == advi_fit.attrs["benchmirt_identification"]
    ability = stream_fit["posterior"]["ability"].values[0]  # (draw, llm, dim)
    covariance = np.einsum("dlk,dlm->dkm", ability, ability) / (ability.shape[1] - 1)
    np.testing.assert_allclose(covariance, np.broadcast_to(np.eye(2), covariance.shape), atol=1e-4)
    loading = _means(stream_fit, "loading")
    main = np.argmax(np.abs(loading), axis=1)
    for d in range(2):
        assert loading[main == d, d].mean() > 0


def test_minibatch_fit_is_reproducible_from_its_seed(stream, stream_fit):
    again = fit_minibatch_advi(stream, 2, **STREAM_FIT)
    np.testing.assert_array_equal(again["elbo"]["q_mean"].values, stream_fit["elbo"]["q_mean"].values)
    np.testing.assert_array_equal(again["elbo"]["q_sd"].values, stream_fit["elbo"]["q_sd"].values)
    assert again.attrs["benchmirt_settings"] == stream_fit.attrs["benchmirt_settings"]
    other = fit_minibatch_advi(
        stream, 2, **{**STREAM_FIT, "seed": 2, "advi": {"draws": 10, "max_steps": 100, "polish_steps": 0}}
    )
    assert not np.allclose(other["elbo"]["q_mean"].values, stream_fit["elbo"]["q_mean"].values)


def test_samples_match_the_variational_moments(stream_fit):
    """The centred intercepts are free variables without a transform: their draws show q's moments."""
    from benchmirt_bayes.posterior import variational_parameters

    draws = stream_fit["posterior"]
    mean, sd = variational_parameters(stream_fit)["intercept"]
    assert draws["ability"].dims == ("chain", "draw", "llm", "dimension")
    np.testing.assert_allclose(draws["intercept"].mean(("chain", "draw")), mean, atol=0.05)
    np.testing.assert_allclose(draws["intercept"].std(("chain", "draw")), sd, rtol=0.15)


def test_minibatch_agrees_with_full_data_advi(small_sim, advi_fit):
    """The same model: posterior means within ADVI noise of fit_posterior(method="advi"), the same spreads."""
    fit = fit_minibatch_advi(small_sim.responses, 2, item_batch=230, seed=0, progressbar=False)
    full_loading = _means(advi_fit, "loading")
    r = _aligned_correlations(
        _means(fit, "ability"), _means(advi_fit, "ability"), _means(fit, "loading"), full_loading
    )
    assert min(r) > 0.99
    for name in ("ability", "loading", "intercept", "benchmark_intercept_mean", "subgroup_intercept_offset"):
        ours, theirs = fit["posterior"][name], advi_fit["posterior"][name]
        if "dimension" in ours.dims:  # align the rotation once, on the loadings
            rotation = procrustes(_means(fit, "loading"), full_loading)
            ours_mean = ours.mean(("chain", "draw")).values @ rotation
        else:
            ours_mean = ours.mean(("chain", "draw")).values
        spread = float(theirs.std(("chain", "draw")).mean())
        gap = float(np.abs(ours_mean - theirs.mean(("chain", "draw")).values).mean())
        assert gap < 0.25 * spread, (name, gap, spread)
        ratio = float(ours.std(("chain", "draw")).mean()) / spread
        assert 0.85 < ratio < 1.15, (name, ratio)
    source = MatrixSource(small_sim.responses)
    names = np.asarray(source.benchmarks)[source.item_benchmark]
    np.testing.assert_array_equal(names, small_sim.responses.benchmarks)


def test_a_source_too_large_to_hold_is_fitted_without_its_matrix(monkeypatch):
    """Beyond the in-memory limit the model is built from the source's names alone."""
    from benchmirt_bayes.inference import minibatch

    monkeypatch.setattr(minibatch, "OBSERVED_DATA_MAX_CELLS", 0)
    source = StreamingSimulation(n_llms=60, n_items=300, seed=3)
    fit = fit_minibatch_advi(source, 2, item_batch=100, advi={"draws": 20}, progressbar=False)
    assert "observed_data" not in fit.children
    assert fit["posterior"]["loading"].shape == (1, 20, 300, 2)
    assert fit.attrs["benchmirt_data_hash"] == minibatch._source_hash(source)
    r = correlation(_means(fit, "intercept"), source.truth["intercept"].values)
    assert r > 0.9


def test_bad_settings_are_refused(stream):
    with pytest.raises(ValueError, match="item_batch"):
        fit_minibatch_advi(stream, 2, item_batch=0, progressbar=False)
    with pytest.raises(ValueError, match="one start"):
        fit_minibatch_advi(stream, 2, advi={"starts": 2}, progressbar=False)
    with pytest.raises(ValueError, match="anchors"):
        fit_minibatch_advi(
            StreamingSimulation(n_llms=200_000, n_items=1_000, seed=1),
            2,
            spec={"identification": {"anchors": "auto"}},
            progressbar=False,
        )
    with pytest.raises(ValueError, match="positive"):
        StreamingSimulation(n_llms=0)


def test_a_minibatch_fit_is_the_same_model_and_refuses_other_types(stream_fit):
    """Nothing differs from fit_posterior's model (the attr says so); other types are refused."""
    import json

    from benchmirt_bayes import simulate_benchmirt
    from benchmirt_bayes.inference.minibatch import MODEL_DIFFERENCES_ATTR

    assert json.loads(stream_fit.attrs[MODEL_DIFFERENCES_ATTR]) == []
    mixed = simulate_benchmirt(scale=0.003, n_llms=20, seed=2, response_types="mixed").responses
    for source in (mixed, MatrixSource(mixed)):
        with pytest.raises(ValueError, match="0/1 responses only"):
            fit_minibatch_advi(source, 2, progressbar=False)


SHARDED_RUN = """
import numpy as np, jax
from benchmirt_bayes import fit_minibatch_advi, StreamingSimulation
from benchmirt_bayes.inference.minibatch import _placements
assert len(jax.devices()) == 2, jax.devices()
source = StreamingSimulation(n_llms=100, n_items=1000, seed=2)
kw = dict(item_batch=250, advi={"max_steps": 40, "polish_steps": 0, "draws": 10}, seed=0, progressbar=False)
one = fit_minibatch_advi(source, 2, **kw)
two = fit_minibatch_advi(source, 2, devices=2, **kw)
for name in ("q_mean", "q_sd"):
    np.testing.assert_allclose(one["elbo"][name].values, two["elbo"][name].values, atol=1e-4, err_msg=name)
np.testing.assert_allclose(one["elbo"]["elbo"].values, two["elbo"]["elbo"].values, rtol=1e-5)
cols, _ = _placements(2, 250)
block = jax.device_put(np.arange(250, dtype=np.int32), cols)
assert len(block.sharding.device_set) == 2
print("sharded ok")
"""


def test_sharding_items_across_devices_gives_the_same_fit():
    """The step splits each block's items over (here: two virtual CPU) devices unchanged."""
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    result = subprocess.run(
        [sys.executable, "-c", SHARDED_RUN], env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "sharded ok" in result.stdout


def test_device_settings_are_checked(stream):
    with pytest.raises(ValueError, match="devices"):
        fit_minibatch_advi(stream, 2, devices=64, progressbar=False)


def test_a_minibatch_fit_is_an_ordinary_fit_for_every_analysis(small_sim, tmp_path):
    """Same identified DataTree as fit_posterior: the audits, rankings and the report accept it."""
    from benchmirt_bayes import (
        benchmark_correlations,
        check_convergence,
        fit_posterior,
        rank_items,
        write_report,
    )

    fit = fit_minibatch_advi(
        small_sim.responses, 2, item_batch=230, advi={"draws": 50}, seed=0, progressbar=False
    )
    advi = fit_posterior(small_sim.responses, 2, method="advi", seed=0, advi={"draws": 5, "max_steps": 400})
    for group in ("posterior", "observed_data", "sample_stats", "elbo"):
        assert group in fit.children
    assert set(fit["posterior"].data_vars) == set(advi["posterior"].data_vars)
    for name, var in advi["posterior"].data_vars.items():
        assert fit["posterior"][name].dims == var.dims, name
    assert list(fit["posterior"]["dimension"].values) == list(advi["posterior"]["dimension"].values)
    assert set(advi.attrs) <= set(fit.attrs)
    audit = benchmark_correlations(fit, n_draws=20)
    assert set(audit.table["group"]) == set(small_sim.responses.benchmark_names)
    ranking = rank_items(fit, n_draws=20)
    assert len(ranking) == small_sim.responses.n_items and ranking["information_mean"].gt(0).all()
    report = check_convergence(fit)
    assert report.method == "minibatch_advi" and "stopping_criterion" in report.table
    page = write_report(fit, tmp_path / "report", ppc_draws=20).read_text()
    assert "minibatch_advi" in page and "id='ppc'" in page and "id='elbo'" in page

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


@pytest.fixture(scope="module")
def stream_fit(stream):
    return fit_minibatch_advi(
        stream, 2, llm_batch=100, item_batch=500, max_epochs=60, draws=400, seed=1, progressbar=False
    )


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
    loading_est = stream_fit["variational"]["loading_mean"].values
    ability_r = _aligned_correlations(
        stream_fit["variational"]["ability_mean"].values,
        truth["ability"].values,
        loading_est,
        truth["loading"].values,
    )
    loading_r = _aligned_correlations(
        loading_est, truth["loading"].values, loading_est, truth["loading"].values
    )
    intercept_r = correlation(stream_fit["variational"]["intercept_mean"], truth["intercept"])
    assert min(ability_r) > 0.97
    assert min(loading_r) > 0.85
    assert intercept_r > 0.95
    assert stream_fit["elbo"]["elbo"].values[0, -1] > stream_fit["elbo"]["elbo"].values[0, 0]
    assert stream_fit.attrs["benchmirt_blocks_per_epoch"] == 2 * 4


def test_identification_leaves_predictions_unchanged(stream_fit):
    variational = stream_fit["variational"]
    before = variational["raw_ability_loc"].values @ variational["raw_loading_loc"].values.T
    after = variational["ability_mean"].values @ variational["loading_mean"].values.T
    np.testing.assert_allclose(after, before, atol=1e-8)
    rotation = variational["rotation"].values
    np.testing.assert_allclose(rotation @ rotation.T, np.eye(2), atol=1e-12)


def test_minibatch_fit_is_reproducible_from_its_seed(stream, stream_fit):
    again = fit_minibatch_advi(
        stream, 2, llm_batch=100, item_batch=500, max_epochs=60, draws=400, seed=1, progressbar=False
    )
    np.testing.assert_array_equal(
        again["variational"]["ability_mean"].values, stream_fit["variational"]["ability_mean"].values
    )
    assert again.attrs["benchmirt_settings"] == stream_fit.attrs["benchmirt_settings"]
    other = fit_minibatch_advi(
        stream,
        2,
        llm_batch=100,
        item_batch=500,
        max_epochs=2,
        min_epochs=1,
        seed=2,
        progressbar=False,
    )
    assert not np.allclose(
        other["variational"]["raw_ability_loc"].values, stream_fit["variational"]["raw_ability_loc"].values
    )


def test_samples_match_the_variational_moments(stream_fit):
    draws = stream_fit["posterior"]
    variational = stream_fit["variational"]
    assert draws["ability"].dims == ("chain", "draw", "llm", "dimension")
    np.testing.assert_allclose(
        draws["ability"].mean(("chain", "draw")), variational["ability_mean"], atol=0.05
    )
    np.testing.assert_allclose(draws["loading"].std(("chain", "draw")), variational["loading_sd"], rtol=0.15)


def test_minibatch_agrees_with_full_data_advi(small_sim, advi_fit):
    fit = fit_minibatch_advi(
        small_sim.responses,
        2,
        llm_batch=30,
        item_batch=230,
        max_epochs=60,
        seed=0,
        progressbar=False,
    )
    full_loading = advi_fit["posterior"]["loading"].mean(("chain", "draw")).values
    full_ability = advi_fit["posterior"]["ability"].mean(("chain", "draw")).values
    r = _aligned_correlations(
        fit["variational"]["ability_mean"].values,
        full_ability,
        fit["variational"]["loading_mean"].values,
        full_loading,
    )
    assert min(r) > 0.97
    source = MatrixSource(small_sim.responses)
    names = np.asarray(source.benchmarks)[source.item_benchmark]
    np.testing.assert_array_equal(names, small_sim.responses.benchmarks)


def test_bad_settings_are_refused(stream):
    with pytest.raises(ValueError, match="min_epochs"):
        fit_minibatch_advi(stream, 2, max_epochs=2, min_epochs=3, progressbar=False)
    with pytest.raises(ValueError, match="exploratory"):
        fit_minibatch_advi(stream, 2, spec="confirmatory_safety_reasoning", progressbar=False)
    with pytest.raises(ValueError, match="positive"):
        StreamingSimulation(n_llms=0)


def test_a_minibatch_fit_says_where_its_model_differs(stream_fit):
    """The fit's attrs list what differs from fit_posterior's model; other types are refused."""
    import json

    from benchmirt_bayes import simulate_benchmirt
    from benchmirt_bayes.inference.minibatch import MODEL_DIFFERENCES_ATTR

    differences = json.loads(stream_fit.attrs[MODEL_DIFFERENCES_ATTR])
    assert any(d.startswith("abilities:") for d in differences)
    assert any("zero" in d for d in differences) and "response types: binary only" in differences
    mixed = simulate_benchmirt(scale=0.003, n_llms=20, seed=2, response_types="mixed").responses
    for source in (mixed, MatrixSource(mixed)):
        with pytest.raises(ValueError, match="binary responses only"):
            fit_minibatch_advi(source, 2, progressbar=False)


SHARDED_RUN = """
import numpy as np, jax
from benchmirt_bayes import fit_minibatch_advi, StreamingSimulation
from benchmirt_bayes.inference.minibatch import _placements
assert len(jax.devices()) == 2, jax.devices()
source = StreamingSimulation(n_llms=100, n_items=1000, seed=2)
kw = dict(llm_batch=50, item_batch=250, max_epochs=3, min_epochs=3, anneal_epochs=0,
          seed=0, progressbar=False)
one = fit_minibatch_advi(source, 2, **kw)
two = fit_minibatch_advi(source, 2, devices=2, **kw)
for name in ("ability_loc", "loading_loc", "intercept_loc"):
    np.testing.assert_allclose(
        one["variational"][f"raw_{name}"].values, two["variational"][f"raw_{name}"].values, atol=1e-5
    )
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
        small_sim.responses,
        2,
        llm_batch=30,
        item_batch=230,
        max_epochs=30,
        draws=50,
        seed=0,
        progressbar=False,
    )
    advi = fit_posterior(small_sim.responses, 2, method="advi", seed=0, advi={"draws": 5, "max_steps": 400})
    for group in ("posterior", "observed_data", "sample_stats", "elbo"):
        assert group in fit.children
    for name, var in advi["posterior"].data_vars.items():
        if name == "subgroup_intercept_offset":
            continue  # the minibatch model has no subgroup offsets
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

"""Simulation-based calibration: shared observations, the run, and the uniformity check."""

from __future__ import annotations

import numpy as np
import pytest
import xarray as xr

from benchmirt_bayes.diagnostics.calibration import SBC_GROUP, normalised_ranks, sbc_uniformity
from benchmirt_bayes.inference.fit import resolve_settings, sample_model
from benchmirt_bayes.inference.nutpie_run import compile_nutpie
from benchmirt_bayes.model.pymc_model import build_model
from benchmirt_bayes.model.shared_data import observed_values, set_observations, with_shared_observations
from benchmirt_bayes.model.spec import load_spec
from benchmirt_bayes.reports.plots import plot_sbc
from benchmirt_bayes.response_types import RESPONSE_TYPES
from benchmirt_bayes.workflows.sbc import SbcSetting, sbc_design, simulation_based_calibration


@pytest.mark.parametrize("response_type", RESPONSE_TYPES)
def test_a_model_with_shared_observations_scores_new_data_as_a_model_built_for_them(response_type):
    setting = SbcSetting(
        n_llms=8, items_per_benchmark=4, n_benchmarks=2, n_dims=1, response_type=response_type
    )
    first, second = sbc_design(setting, seed=0), sbc_design(setting, seed=1)
    assert not np.array_equal(first.values, second.values)
    shared = with_shared_observations(build_model(first, 1))
    fresh = build_model(second, 1)
    rng = np.random.default_rng(3)
    point = {k: v + 0.3 * rng.standard_normal(np.shape(v)) for k, v in fresh.initial_point().items()}
    shared_logp = shared.compile_logp(mode="FAST_COMPILE")  # compiled once, as the SBC runs do
    before = shared_logp(point)
    set_observations(shared, observed_values(fresh))
    after = shared_logp(point)
    assert np.isfinite(after)
    assert after == pytest.approx(fresh.compile_logp(mode="FAST_COMPILE")(point), rel=1e-10)
    assert after != pytest.approx(before, rel=1e-6)


def test_one_compiled_nutpie_model_samples_whatever_data_were_set_into_it():
    setting = SbcSetting(n_llms=12, items_per_benchmark=5, n_benchmarks=2, n_dims=1)
    design = sbc_design(setting, seed=0)
    flipped = design.with_values(1.0 - design.values)
    model = with_shared_observations(build_model(design, 1))
    settings = resolve_settings(design, 1, method="nuts", nuts={"chains": 2, "tune": 150, "draws": 100})
    compiled = compile_nutpie(model)
    means = []
    for data in (design, flipped):
        set_observations(model, observed_values(build_model(data, 1)))
        raw = sample_model(model, data, settings, seed=1, nutpie_model=compiled)
        means.append(raw.posterior["intercept"].mean(("chain", "draw")).values)
    # flipping every answer flips every item's intercept: the second run saw the new data
    assert np.corrcoef(means[0], means[1])[0, 1] < -0.8
    advi = resolve_settings(design, 1, method="advi")
    with pytest.raises(ValueError, match=r"compiled nutpie model .* 'advi'"):
        sample_model(model, flipped, advi, seed=1, nutpie_model=compiled)


def test_new_observations_must_keep_the_shape():
    design = sbc_design(SbcSetting(n_llms=8, items_per_benchmark=4))
    shared = with_shared_observations(build_model(design, 1))
    (name, values), *_ = observed_values(shared).items()
    with pytest.raises(ValueError, match="differ"):
        set_observations(shared, {name: values[:-1]})
    with pytest.raises(ValueError, match="not an observed variable"):
        set_observations(shared, {"nope": values})


def _ranks_tree(pits: np.ndarray) -> xr.DataTree:
    return xr.DataTree.from_dict({SBC_GROUP: xr.Dataset({"q": (("chain", "draw", "q_index"), pits[None])})})


def test_the_uniformity_check_passes_uniform_ranks_and_flags_overconfident_ones():
    rng = np.random.default_rng(1)
    uniform = rng.random((200, 3))
    assert sbc_uniformity(_ranks_tree(uniform))["inside"].all()
    # an overconfident posterior: truths fall in its tails far more often than 10 %
    tails = np.where(rng.random((200, 3)) < 0.5, rng.random((200, 3)) * 0.05, 1 - rng.random((200, 3)) * 0.05)
    table = sbc_uniformity(_ranks_tree(np.where(rng.random((200, 3)) < 0.4, tails, uniform)))
    assert not table["inside"].any()
    assert (table["coverage_90"] < 0.7).all()


def test_normalised_ranks_count_draws_below_the_truth():
    posterior = np.arange(9.0)[:, None] * np.ones((1, 2))
    u = normalised_ranks(posterior, np.array([-1.0, 4.5]), np.random.default_rng(0))
    assert 0 < u[0] < 0.1
    assert 0.5 < u[1] < 0.6


@pytest.mark.parametrize("method", ["nuts", pytest.param("advi", marks=pytest.mark.slow)])
def test_a_small_calibration_run_records_ranks_and_fit_diagnostics(method):
    setting = SbcSetting(n_llms=10, items_per_benchmark=4, n_benchmarks=2, n_dims=2)
    settings = (
        {"nuts": {"chains": 2, "tune": 100, "draws": 100}} if method == "nuts" else {"advi": {"draws": 200}}
    )
    tree = simulation_based_calibration(
        setting, method=method, n_replications=3, seed=4, n_ranks=50, progressbar=False, **settings
    )
    sbc = tree[SBC_GROUP].to_dataset()
    assert set(sbc.data_vars) >= {
        "eta",
        "mdisc",
        "difficulty",
        "ability_distance",
        "benchmark_loading_cosine",
    }
    for values in sbc.data_vars.values():
        assert values.sizes["draw"] == 3
        assert ((values > 0) & (values < 1)).all()
    reps = tree["replications"].to_dataset()
    assert reps.sizes["replication"] == 3
    if method == "nuts":
        assert (reps["max_rhat"] > 0.99).all()
    else:
        assert (reps["pareto_k"] > 0).all()  # the mean-field q is never exact here
    assert tree.attrs["method"] == method and tree.attrs["n_replications"] == 3
    fig = plot_sbc(tree)
    assert len([ax for ax in fig.axes if ax.get_visible()]) == len(sbc.data_vars)


def test_ranks_of_a_point_mass_are_uniform_when_the_posterior_is_the_truths_distribution():
    # a ceiling: one with probability 0.7, else uniform below one; truth and draws alike
    rng = np.random.default_rng(1)

    def ceilings(shape):
        return np.where(rng.random(shape) < 0.7, 1.0, rng.uniform(0.5, 1.0, shape))

    u = np.concatenate([normalised_ranks(ceilings((99, 1)), ceilings(1), rng) for _ in range(2000)])
    counts = np.histogram(u, bins=10, range=(0, 1))[0]
    assert counts.min() > 150 and counts.max() < 250  # 200 each; ranks without tie-breaks put none above 0.4


def test_a_calibration_run_with_floors_and_ceilings_monitors_them():
    setting = SbcSetting(n_llms=12, items_per_benchmark=4, n_benchmarks=2, n_dims=1, asymptotes="4pl")
    assert setting.label == "binary 4PL (4 options), 12 LLMs x 8 items, 1 dims"
    tree = simulation_based_calibration(
        setting, n_replications=3, seed=4, n_ranks=50, progressbar=False, nuts={"tune": 100, "draws": 100}
    )
    sbc = tree[SBC_GROUP].to_dataset()
    for name in ("floor", "ceiling"):
        assert sbc[name].sizes[f"{name}_index"] == 3  # the picked items
    for name in ("floor_offset", "floor_spread", "ceiling_mean", "ceiling_spread", "capped_share"):
        assert sbc[name].sizes[f"{name}_index"] == 2  # per benchmark
    for values in sbc.data_vars.values():
        assert ((values > 0) & (values < 1)).all()
    assert np.isfinite(tree["replications"].to_dataset()["max_rhat"]).all()
    assert '"asymptotes": "4pl"' in tree.attrs["setting"]


def test_a_prior_draw_caps_each_item_with_its_own_benchmarks_share():
    from benchmirt_bayes.workflows.sbc import _CeilingDraw

    setting = SbcSetting(n_llms=6, items_per_benchmark=3, n_benchmarks=2, n_dims=1, asymptotes="4pl")
    design = sbc_design(setting)
    model = build_model(design, 1, spec=load_spec().with_overrides(setting.spec_overrides()))
    draw = _CeilingDraw.of(model, design)
    capped = np.linspace(0.5, 0.9, 6)  # over the model's capped items, in draw.columns' order
    shares = np.where(np.asarray(model.coords["ceiling_benchmark"]) == "bench_1", 1.0, 0.0)
    ceiling = draw.draw({"capped_ceiling": capped, "capped_share": shares}, np.random.default_rng(0))
    in_bench_1 = np.asarray(design.benchmarks, dtype=str)[draw.columns] == "bench_1"
    assert in_bench_1.sum() == 3
    np.testing.assert_array_equal(ceiling[draw.columns], np.where(in_bench_1, capped, 1.0))


def test_a_failed_fit_is_recorded_and_the_run_goes_on(monkeypatch):
    from benchmirt_bayes.workflows import sbc as workflow

    calls = []
    sample = workflow.sample_model

    def second_fails(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise FloatingPointError("ADVI diverged (a NaN ELBO) at learning rates 0.02, 0.005")
        return sample(*args, **kwargs)

    monkeypatch.setattr(workflow, "sample_model", second_fails)
    setting = SbcSetting(n_llms=10, items_per_benchmark=4, n_benchmarks=2, n_dims=1)
    with pytest.warns(RuntimeWarning, match=r"SBC nuts: replication 1 failed: ADVI diverged"):
        tree = simulation_based_calibration(
            setting,
            n_replications=3,
            seed=4,
            n_ranks=20,
            progressbar=False,
            nuts={"chains": 2, "tune": 50, "draws": 50},
        )
    reps = tree["replications"].to_dataset()
    assert reps["failed"].values.tolist() == [False, True, False]
    assert tree.attrs["failed_fits"] == 1 and tree.attrs["n_replications"] == 3
    assert all(v.sizes["draw"] == 2 for v in tree[SBC_GROUP].to_dataset().data_vars.values())
    assert (sbc_uniformity(tree)["replications"] == 2).all()


def test_a_calibration_setting_refuses_nonsense():
    with pytest.raises(ValueError, match="n_llms"):
        SbcSetting(n_llms=2)
    with pytest.raises(ValueError, match="response_type"):
        SbcSetting(response_type="ordinal")
    with pytest.raises(ValueError, match="method"):
        simulation_based_calibration(SbcSetting(), method="map", n_replications=2)
    with pytest.raises(ValueError, match="asymptotes must be one of"):
        SbcSetting(asymptotes="5pl")
    with pytest.raises(ValueError, match="asymptotes are for binary items"):
        SbcSetting(response_type="count", asymptotes="3pl")
    with pytest.raises(ValueError, match="n_options"):
        SbcSetting(asymptotes="3pl", n_options=1)

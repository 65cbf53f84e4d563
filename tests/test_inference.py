import json

import numpy as np
import pytest
import xarray as xr
from pymc.initial_point import make_initial_point_fn

from benchmirt_bayes import AdviSettings, MissingExtraError, NutsSettings, build_model, fit_posterior
from benchmirt_bayes.inference.advi import run_advi
from benchmirt_bayes.inference.fit import (
    FitSettings,
    advi_start,
    assemble_posterior,
    fit_once,
    fit_settings_from_attrs,
)
from benchmirt_bayes.posterior import responses_from_tree

from .conftest import correlation


def assert_common_structure(fit, responses, method):
    post = fit["posterior"]
    assert post["ability"].dims == ("chain", "draw", "llm", "dimension")
    assert post["loading"].dims == ("chain", "draw", "item", "dimension")
    for name in ("intercept", "difficulty", "mdisc"):
        assert post[name].dims == ("chain", "draw", "item")
    for name in (
        "benchmark_loading_mean",
        "benchmark_loading_spread",
        "benchmark_intercept_mean",
        "benchmark_intercept_spread",
    ):
        assert name in post
    assert not any(name.endswith("_z") or name.endswith("_raw") for name in post.data_vars)
    assert "sample_stats" in fit.children and "observed_data" in fit.children
    assert fit.attrs["benchmirt_method"] == method
    assert fit.attrs["benchmirt_data_hash"] == responses.data_hash()
    assert json.loads(fit.attrs["benchmirt_spec"])["name"] == "exploratory"
    assert "pymc" in json.loads(fit.attrs["benchmirt_versions"])
    assert responses_from_tree(fit) == responses
    np.testing.assert_allclose(post["mdisc"], np.sqrt((post["loading"] ** 2).sum("dimension")))
    np.testing.assert_allclose(post["difficulty"], -post["intercept"] / post["mdisc"])


def test_advi_returns_the_common_structure(advi_fit, small_sim):
    assert_common_structure(advi_fit, small_sim.responses, "advi")
    elbo = advi_fit["elbo"]
    assert elbo["elbo"].dims == ("restart", "step")
    assert elbo.attrs["stopping_rule_fired"] in (0, 1)
    assert advi_fit["posterior"].sizes["draw"] == 200


def test_map_returns_the_common_structure(map_fit, tiny_sim):
    assert_common_structure(map_fit, tiny_sim.responses, "map")
    assert map_fit["posterior"].sizes["chain"] == 1 and map_fit["posterior"].sizes["draw"] == 1


def test_nuts_returns_the_common_structure(nuts_fit, tiny_sim):
    assert_common_structure(nuts_fit, tiny_sim.responses, "nuts")
    assert "diverging" in nuts_fit["sample_stats"]
    assert nuts_fit.attrs["benchmirt_sampler"] == "nutpie"


def test_advi_recovers_the_truth(advi_fit, small_sim):
    from benchmirt_bayes.rotations import procrustes

    truth = small_sim.truth
    loading = advi_fit["posterior"]["loading"].mean(("chain", "draw")).values
    rotation = procrustes(loading, truth["loading"].values)
    ability = advi_fit["posterior"]["ability"].mean(("chain", "draw")).values @ rotation
    for k in range(2):
        assert correlation(ability[:, k], truth["ability"].values[:, k]) > 0.9
    assert correlation(advi_fit["posterior"]["intercept"].mean(("chain", "draw")), truth["intercept"]) > 0.9


@pytest.mark.slow
def test_advi_is_seeded(small_sim):
    kwargs = {"method": "advi", "advi": {"draws": 20, "max_steps": 300}, "progressbar": False}
    a = fit_posterior(small_sim.responses, 2, seed=9, **kwargs)
    b = fit_posterior(small_sim.responses, 2, seed=9, **kwargs)
    c = fit_posterior(small_sim.responses, 2, seed=10, **kwargs)
    xr.testing.assert_equal(a["posterior"]["ability"], b["posterior"]["ability"])
    assert not np.allclose(a["posterior"]["ability"], c["posterior"]["ability"])


def test_fit_is_reproducible_from_its_attrs(tiny_sim):
    fit = fit_posterior(
        tiny_sim.responses, 2, method="advi", progressbar=False, advi={"draws": 20, "max_steps": 300}
    )  # seed drawn from the OS and stored
    settings, seed, _restarts = fit_settings_from_attrs(fit)
    raw = [fit_once(tiny_sim.responses, settings, seed)]
    again = assemble_posterior(tiny_sim.responses, settings, raw, seed)
    np.testing.assert_allclose(again["posterior"]["ability"], fit["posterior"]["ability"])


def test_nutpie_kernel_and_adaptation_reach_the_sampler_and_the_attrs(tiny_sim, monkeypatch):
    import nutpie

    seen = {}

    class Stop(Exception):
        pass

    def spy(*args, **kwargs):
        seen.update(kwargs)
        raise Stop

    with monkeypatch.context() as patch:
        patch.setattr(nutpie, "sample", spy)
        with pytest.raises(Stop):
            fit_posterior(tiny_sim.responses, 1, method="nuts", nuts={"kernel": "mclmc"}, progressbar=False)
    assert seen["sampler"] == "mclmc" and seen["adaptation"] == "diag" and "maxdepth" not in seen
    nuts = {"draws": 30, "tune": 30, "chains": 1, "adaptation": "low_rank"}
    fit = fit_posterior(tiny_sim.responses, 1, method="nuts", nuts=nuts, seed=3, progressbar=False)
    settings, _, _ = fit_settings_from_attrs(fit)
    assert (settings.nuts.kernel, settings.nuts.adaptation) == ("nuts", "low_rank")


def test_non_finite_draws_are_one_clear_error(tiny_sim):
    fit = fit_posterior(
        tiny_sim.responses, 2, method="advi", seed=1, progressbar=False, advi={"draws": 20, "max_steps": 300}
    )
    settings, seed, _restarts = fit_settings_from_attrs(fit)
    raw = fit_once(tiny_sim.responses, settings, seed)
    raw.posterior["loading"][0, 3] = np.nan
    with pytest.raises(FloatingPointError, match="non-finite draws of loading"):
        assemble_posterior(tiny_sim.responses, settings, [raw], seed)


def test_missing_sampler_names_the_extra(tiny_sim, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "numpyro":
            raise ImportError("no numpyro")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    import importlib

    monkeypatch.setattr(importlib, "import_module", lambda name: fake_import(name))
    with pytest.raises(MissingExtraError, match=r"benchmirt_bayes\[jax\]"):
        fit_posterior(tiny_sim.responses, 2, method="nuts", nuts={"sampler": "numpyro"})


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "gibbs"}, "method must be one of"),
        ({"nuts": {"sampler": "stan"}}, "sampler must be one of"),
        ({"nuts": {"draws": 0}}, "draws must be a positive integer"),
        ({"restarts": 0}, "restarts must be a positive integer"),
        ({"nuts": {"init": "map"}}, "init must be one of"),
        ({"nuts": {"max_treedepth": 0}}, "max_treedepth must be an integer in 1..15"),
        ({"nuts": {"init": "prior"}, "advi": {"draws": 5}}, "advi settings apply to ADVI fits"),
        ({"nuts": {"thin": 0}}, "thin must be a positive integer"),
        ({"method": "advi", "nuts": {"thin": 2}}, "nuts settings apply to method='nuts' only"),
        ({"nuts": {"thinning": 2}}, r"unknown nuts setting\(s\) \['thinning'\]"),
        ({"method": "advi", "advi": {"max_steps": 0}}, "max_steps must be a positive integer"),
        ({"method": "map", "advi": {"draws": 5}}, "advi settings apply to ADVI fits"),
        ({"nuts": {"kernel": "hmc"}}, "kernel must be one of"),
        ({"nuts": {"adaptation": "dense"}}, "adaptation must be one of"),
        ({"nuts": {"kernel": "mclmc", "sampler": "pymc"}}, "kernel='mclmc' is nutpie's"),
    ],
)
def test_bad_arguments_are_explained(tiny_sim, kwargs, message):
    with pytest.raises(ValueError, match=message):
        fit_posterior(tiny_sim.responses, 2, **kwargs)


def test_restarts_are_chains_with_a_restart_coordinate(tiny_sim, tmp_path):
    kwargs = {"method": "advi", "advi": {"draws": 30, "max_steps": 400}, "progressbar": False}
    fit = fit_posterior(tiny_sim.responses, 2, restarts=2, seed=3, restart_dir=tmp_path, **kwargs)
    post = fit["posterior"]
    assert post.sizes["chain"] == 2 and post["restart"].values.tolist() == [0, 1]
    seeds = json.loads(fit.attrs["benchmirt_restart_seeds"])
    assert len(set(seeds)) == 2 and seeds[0] == 3
    saved = sorted(p.name for p in tmp_path.glob("restart_*.nc"))
    assert len(saved) == 2
    # a rerun with the same folder loads the finished restarts instead of refitting
    again = fit_posterior(tiny_sim.responses, 2, restarts=2, seed=3, restart_dir=tmp_path, **kwargs)
    assert again.attrs["benchmirt_fit_seconds"] == fit.attrs["benchmirt_fit_seconds"]
    xr.testing.assert_allclose(again["posterior"]["ability"], post["ability"])


def test_defaults_are_chosen_from_the_data_size_and_recorded(tiny_sim):
    from benchmirt_bayes import ResponseMatrix
    from benchmirt_bayes.inference.fit import resolve_settings
    from benchmirt_bayes.inference.settings import LARGE_NUTS_CELLS

    small = resolve_settings(tiny_sim.responses, 2, method="nuts")
    assert (small.nuts.draws, small.nuts.init, small.nuts.max_treedepth, small.nuts.thin) == (
        3000,
        "prior",
        10,
        1,
    )
    assert small.likelihood == "fused" and small.advi is None
    notes = dict(small.automatic)
    assert set(notes) == {"likelihood", "nuts.draws", "nuts.init", "nuts.max_treedepth", "nuts.thin"}
    # ADVI settings given for an automatic start that resolved to the sampler's own are noted
    unused = resolve_settings(tiny_sim.responses, 2, method="nuts", advi={"max_steps": 100})
    assert unused.advi is None and "unused" in dict(unused.automatic)["advi"]
    # the large-data path: as many cells as the built-in full set
    n_llms, n_items = 100, LARGE_NUTS_CELLS // 100
    values = (np.random.default_rng(0).random((n_llms, n_items)) < 0.5).astype(float)
    big = ResponseMatrix(
        xr.DataArray(
            values,
            dims=("llm", "item"),
            coords={
                "llm": [f"m{j}" for j in range(n_llms)],
                "item": [f"q{i}" for i in range(n_items)],
                "benchmark": ("item", ["A"] * n_items),
                "subgroup": ("item", ["A"] * n_items),
            },
        )
    )
    large = resolve_settings(big, 2, method="nuts", advi={"max_steps": 100})
    assert (large.nuts.draws, large.nuts.init, large.nuts.max_treedepth, large.nuts.thin) == (
        1000,
        "spectral",
        5,
        2,
    )
    assert large.advi is None and "unused" in dict(large.automatic)["advi"]
    assert "large-data path" in dict(large.automatic)["nuts.thin"]
    # a spec that rules out the unrotated spectral start starts large data from ADVI
    anchored = {"identification": {"anchors": "auto"}}
    from_advi = resolve_settings(big, 2, method="nuts", advi={"max_steps": 100}, spec=anchored)
    assert from_advi.nuts.init == "advi" and from_advi.advi.max_steps == 100
    with pytest.raises(ValueError, match="spectral"):
        resolve_settings(big, 2, method="nuts", nuts={"init": "spectral"}, spec=anchored)
    # explicit values are kept and not recorded as automatic
    mine = resolve_settings(
        big, 2, method="nuts", nuts={"max_treedepth": 8, "thin": 1, "init": "prior", "draws": 300}
    )
    assert (mine.nuts.max_treedepth, mine.nuts.thin, mine.nuts.draws) == (8, 1, 300)
    assert not {"nuts.thin", "nuts.draws"} & set(dict(mine.automatic))
    assert FitSettings.from_json(large.to_json()) == large


def test_settings_round_trip():
    settings = FitSettings(2, "nuts", "{}", "cells", NutsSettings(draws=10, init="advi"), AdviSettings())
    assert FitSettings.from_json(json.dumps(json.loads(settings.to_json()))) == settings


@pytest.mark.slow
def test_restarts_give_identical_numbers_on_any_executor(tiny_sim):
    from concurrent.futures import ThreadPoolExecutor

    kwargs = {
        "method": "advi",
        "advi": {"draws": 20, "max_steps": 300},
        "progressbar": False,
        "restarts": 2,
        "seed": 8,
    }
    serial = fit_posterior(tiny_sim.responses, 2, executor="serial", **kwargs)
    pooled = fit_posterior(tiny_sim.responses, 2, executor="auto", **kwargs)  # process pool on >= 2 cores
    with ThreadPoolExecutor(2) as pool:
        threaded = fit_posterior(tiny_sim.responses, 2, executor=pool, **kwargs)
    for other in (pooled, threaded):
        # equal up to BLAS summation order (threads differ between processes)
        np.testing.assert_allclose(
            other["posterior"]["ability"], serial["posterior"]["ability"], rtol=1e-9, atol=1e-12
        )


@pytest.mark.slow
def test_advi_start_is_the_advi_mean_of_every_free_variable(tiny_sim):
    model = build_model(tiny_sim.responses, 2, spec="confirmatory_safety_reasoning")  # with LKJ
    result = run_advi(model, draws=20, max_steps=300, seed=1, progressbar=False)
    start = advi_start(model, result.posterior)
    assert set(start) == {rv.name for rv in model.free_RVs}
    np.testing.assert_allclose(start["loading_z"], result.posterior["loading_z"].mean(("chain", "draw")))

    def initial_point(transformed):
        fn = make_initial_point_fn(
            model=model, overrides=start, jitter_rvs=set(), return_transformed=transformed
        )
        return fn(0)

    assert np.isfinite(model.compile_logp()(initial_point(True)))
    spread = initial_point(False)["benchmark_loading_spread"]
    np.testing.assert_allclose(spread, start["benchmark_loading_spread"])


@pytest.mark.slow
def test_nuts_from_advi_with_capped_trees(tiny_sim):
    fit = fit_posterior(
        tiny_sim.responses,
        2,
        method="nuts",
        seed=6,
        progressbar=False,
        nuts={"init": "advi", "max_treedepth": 3, "chains": 2, "draws": 30, "tune": 30},
        advi={"max_steps": 400},
    )
    assert "elbo" in fit.children  # the initialising ADVI run is kept
    stats = fit["sample_stats"]
    assert int(stats["n_steps"].max()) <= 2**3 - 1
    # nutpie's trace went through a store on disk: only per-draw statistics come back,
    # with the model's own labels and NumPy (not StringDType) coordinates
    assert all(set(var.dims) == {"chain", "draw"} for var in stats.data_vars.values())
    assert list(fit["posterior"]["item"].values) == list(tiny_sim.responses.data["item"].values)
    assert fit["posterior"]["item"].dtype.kind == "U"
    settings, _, _ = fit_settings_from_attrs(fit)
    assert settings.nuts.init == "advi" and settings.nuts.max_treedepth == 3


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["nutpie", "pymc"])
def test_thinned_nuts_keeps_every_thin_th_iteration_of_the_same_chain(tiny_sim, sampler):
    nuts = {"sampler": sampler, "chains": 2, "tune": 30, "max_treedepth": 3}
    kwargs = {"method": "nuts", "seed": 2, "progressbar": False}
    full = fit_posterior(tiny_sim.responses, 2, nuts={**nuts, "draws": 40}, **kwargs)
    thinned = fit_posterior(tiny_sim.responses, 2, nuts={**nuts, "draws": 20, "thin": 2}, **kwargs)
    assert thinned["posterior"].sizes["draw"] == 20
    # intercepts do not depend on the per-draw rotation, so the draws compare directly
    np.testing.assert_allclose(
        thinned["posterior"]["intercept"].values, full["posterior"]["intercept"].values[:, 1::2]
    )
    steps = full["sample_stats"]["n_steps"].values
    np.testing.assert_array_equal(thinned["sample_stats"]["n_steps"], steps[:, 0::2] + steps[:, 1::2])
    settings, _, _ = fit_settings_from_attrs(thinned)
    assert settings.nuts.thin == 2 and settings.draws == 20


def test_auto_intercepts_are_resolved_for_nuts_per_benchmark_and_centred_for_optimisers(tiny_sim):
    from benchmirt_bayes.inference.fit import resolve_settings

    nuts = resolve_settings(tiny_sim.responses, 2, method="nuts")
    assert nuts.spec.intercept.noncentered == "auto"  # resolved per benchmark by build_model
    for method in ("advi", "map"):
        settings = resolve_settings(tiny_sim.responses, 2, method=method)
        assert settings.spec.intercept.noncentered is False and settings.spec.name == "exploratory"
        assert "NUTS only" in dict(settings.automatic)["intercept.noncentered"]
    explicit = resolve_settings(
        tiny_sim.responses, 2, method="advi", spec={"intercept": {"noncentered": True}}
    )
    assert explicit.spec.intercept.noncentered is True and "intercept.noncentered" not in dict(
        explicit.automatic
    )


def test_spectral_start_of_the_sampler_rotates_after_the_first_restart(tiny_sim):
    from benchmirt_bayes.inference.initialisation import sampler_start
    from benchmirt_bayes.model.pymc_model import build_model, whiten

    responses = tiny_sim.responses
    model = build_model(responses, 2)
    first, second = (sampler_start(model, responses, 2, seed=5, restart=r) for r in (0, 1))

    def logits(start):
        ability = whiten(start["ability_raw"].T, 2).eval()
        mean, spread = start["benchmark_loading_mean_free"], start["benchmark_loading_spread"]
        codes = np.array([list(model.coords["benchmark"]).index(b) for b in responses.benchmarks])
        return ability, ability @ (mean[codes] + spread[codes][:, None] * start["loading_z"]).T

    (ability0, eta0), (ability1, eta1) = logits(first), logits(second)
    assert not np.allclose(ability0, ability1)  # another rotation of the same solution
    np.testing.assert_allclose(eta0, eta1, atol=1e-9)  # the same predictions
    # nutpie refuses a start with an exactly zero gradient entry (its mass matrix starts there):
    # subgroup offsets keep a prior draw, since at zero a lone subgroup's gradient is zero
    from pymc.initial_point import make_initial_point_fn

    point = make_initial_point_fn(model=model, overrides=first, jitter_rvs=set(), return_transformed=True)(0)
    assert np.all(model.compile_dlogp()(point) != 0)


@pytest.mark.slow
def test_nuts_from_the_spectral_start_with_restarts(tiny_sim):
    fit = fit_posterior(
        tiny_sim.responses,
        2,
        method="nuts",
        seed=4,
        restarts=2,
        executor="serial",
        progressbar=False,
        nuts={"init": "spectral", "chains": 1, "draws": 20, "tune": 20, "max_treedepth": 4},
    )
    assert fit["posterior"].sizes["chain"] == 2 and "elbo" not in fit.children

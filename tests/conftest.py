"""Shared fixtures: seeded simulated data, small fits made once per session, shared data paths."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import numba
import numpy as np
import pytest
import xarray as xr
from filelock import FileLock

from benchmirt_bayes import ResponseMatrix, fit_posterior, load_posterior, save_posterior, simulate_benchmirt

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("BENCHMIRT_SHARED_DATA", ROOT.parent / "shared" / "data"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` a module's tests share one worker, except the notebooks.

    A module's tests stay together so that its module-scoped fits are made once; each
    notebook is a group of its own, so the notebooks spread over the workers.
    """
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        module = item.nodeid.split("::")[0]
        item.add_marker(
            pytest.mark.xdist_group(item.nodeid if module.endswith("test_notebooks.py") else module)
        )


def shared_path(*parts: str) -> Path:
    """Path under ../shared/data; fails under CI=true when missing (never a silent skip)."""
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"real data missing: {path} (tests read ../shared/data; see data/README.md)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return path


@pytest.fixture(scope="session")
def small_sim():
    """60 LLMs × ~690 items, 2 dimensions (seeded)."""
    return simulate_benchmirt(scale=0.02, n_llms=60, seed=11)


@pytest.fixture(scope="session")
def tiny_sim():
    """40 LLMs × ~100 items (minimum subgroup sizes), for fast structural tests."""
    return simulate_benchmirt(scale=0.002, n_llms=40, seed=3)


def shared_fit(name: str, make: Callable[[], xr.DataTree], tmp_path_factory, worker_id: str) -> xr.DataTree:
    """A fit made once per test run and shared by every pytest-xdist worker.

    The first worker to ask makes it and saves it (a lossless, checksummed netCDF) under the
    run's common temporary folder, behind a file lock; the others load it (the recipe of
    pytest-xdist's documentation). Without xdist the fit is made in process.
    """
    if worker_id == "master":
        return make()
    folder = tmp_path_factory.getbasetemp().parent
    path = folder / f"shared_{name}.nc"
    with FileLock(str(path) + ".lock"):
        if not path.is_file():
            save_posterior(make(), path)
    return load_posterior(path)


@pytest.fixture(scope="session")
def advi_fit(small_sim, tmp_path_factory, worker_id):
    def make():
        return fit_posterior(
            small_sim.responses, 2, method="advi", seed=5, progressbar=False, advi={"draws": 200}
        )

    return shared_fit("advi_fit", make, tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def map_fit(tiny_sim, tmp_path_factory, worker_id):
    def make():
        return fit_posterior(tiny_sim.responses, 2, method="map", seed=2, progressbar=False)

    return shared_fit("map_fit", make, tmp_path_factory, worker_id)


@pytest.fixture(scope="session")
def nuts_fit(tiny_sim, tmp_path_factory, worker_id):
    """A small real NUTS fit (2 chains) shared by structural tests."""

    def make():
        return fit_posterior(
            tiny_sim.responses,
            2,
            method="nuts",
            seed=4,
            progressbar=False,
            nuts={"draws": 150, "tune": 150, "chains": 2},
        )

    return shared_fit("nuts_fit", make, tmp_path_factory, worker_id)


def correlation(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.corrcoef(np.ravel(a), np.ravel(b))[0, 1])


def make_matrix(values, benchmarks=None, subgroups=None):
    """A ResponseMatrix with LLMs m0.., items q0.. and the given benchmarks / subgroups."""
    values = np.asarray(values, dtype=float)
    n_llms, n_items = values.shape
    benchmarks = benchmarks or ["A"] * n_items
    return ResponseMatrix(
        xr.DataArray(
            values,
            dims=("llm", "item"),
            coords={
                "llm": [f"m{j}" for j in range(n_llms)],
                "item": [f"q{i}" for i in range(n_items)],
                "benchmark": ("item", benchmarks),
                "subgroup": ("item", subgroups or benchmarks),
            },
        )
    )


def constructed_posterior(
    loading,
    intercept,
    ability,
    benchmarks,
    *,
    n_draws=40,
    noise=0.02,
    seed=0,
    responses=None,
    bench_means=None,
):
    """A posterior DataTree built from known parameters (draws = truth + small noise).

    Observed data are simulated from the parameters unless ``responses`` is given.
    """
    from benchmirt_bayes.model.spec import load_spec
    from benchmirt_bayes.posterior import observed_dataset

    rng = np.random.default_rng(seed)
    loading = np.asarray(loading, float)
    intercept = np.asarray(intercept, float)
    ability = np.asarray(ability, float)
    k = loading.shape[1]
    if responses is None:
        prob = 1 / (1 + np.exp(-(ability @ loading.T + intercept)))
        responses = make_matrix((rng.random(prob.shape) < prob).astype(float), list(benchmarks))
    names = sorted(set(benchmarks))
    if bench_means is None:
        bench_means = np.array([loading[np.asarray(benchmarks) == b].mean(axis=0) for b in names])

    def draws(value):
        value = np.asarray(value, float)
        return value[None, None] + noise * rng.standard_normal((1, n_draws, *value.shape))

    dims = [f"dim_{d + 1}" for d in range(k)]
    posterior = xr.Dataset(
        {
            "ability": (("chain", "draw", "llm", "dimension"), draws(ability)),
            "loading": (("chain", "draw", "item", "dimension"), draws(loading)),
            "intercept": (("chain", "draw", "item"), draws(intercept)),
            "benchmark_loading_mean": (("chain", "draw", "benchmark", "dimension"), draws(bench_means)),
        },
        coords={
            "chain": [0],
            "draw": np.arange(n_draws),
            "llm": responses.llms,
            "item": responses.items,
            "dimension": dims,
            "benchmark": names,
        },
    )
    tree = xr.DataTree.from_dict({"posterior": posterior, "observed_data": observed_dataset(responses)})
    tree.attrs = {"benchmirt_spec": load_spec(None).to_json(), "benchmirt_data_hash": responses.data_hash()}
    return tree


def jittered_point_values(model, names: list[str], seed: int = 4) -> tuple[dict, dict[str, np.ndarray]]:
    """A jittered initial point of ``model`` and the values of its variables ``names`` there."""
    from pymc.initial_point import make_initial_point_fn

    point = make_initial_point_fn(model=model, jitter_rvs=set(model.free_RVs))(seed)
    outs = model.replace_rvs_by_values([model[n] for n in names])
    computed = model.compile_fn(outs, inputs=model.value_vars, on_unused_input="ignore")(point)
    return point, dict(zip(names, computed, strict=True))


@numba.njit(nogil=True)
def _matching_calls(n_calls, kernel, inputs, same):
    first = kernel(*inputs)
    matching = 0
    for _ in range(n_calls):
        matching += same(kernel(*inputs), first)
    return matching


@numba.njit
def _same_four(out, first):
    return (
        out[0] == first[0]
        and np.all(out[1] == first[1])
        and np.all(out[2] == first[2])
        and np.all(out[3] == first[3])
    )


@numba.njit
def _same_seven(out, first):
    return (
        _same_four(out, first)
        and np.all(out[4] == first[4])
        and np.all(out[5] == first[5])
        and np.all(out[6] == first[6])
    )


def calls_matching_the_first_in_two_threads(kernel, inputs: tuple, n_calls: int) -> list[int]:
    """Per thread, how many of ``n_calls`` calls of a fused kernel gave the bits of its first call.

    Two threads call ``kernel(*inputs)`` at once (without the GIL), so their allocations
    interleave and the kernel's work arrays land at other addresses from call to call.
    """
    same = _same_seven if len(kernel(*inputs)) == 7 else _same_four
    counts: list[int] = []
    threads = [
        threading.Thread(target=lambda: counts.append(_matching_calls(n_calls, kernel, inputs, same)))
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return counts

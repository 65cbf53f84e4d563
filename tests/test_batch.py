"""The batch runner: executors, resumable result folders, failures, and a real Dask cluster."""

import os
import signal
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
import xarray as xr

from benchmirt_bayes import MissingExtraError, fit_posterior
from benchmirt_bayes.batch import BatchError, DaskExecutor, run_batch
from benchmirt_bayes.workflows.crossval import cross_validate

CALLS: list[str] = []


@dataclass(frozen=True)
class CountingTask:
    key: str
    value: float
    fail: bool = False

    @property
    def fingerprint(self):
        return f"{self.value}"

    def run(self, shared):
        CALLS.append(self.key)
        if self.fail:
            raise RuntimeError(f"task {self.key} broke")
        return xr.DataTree(xr.Dataset({"x": ("i", np.full(3, self.value * shared.n_llms))}))


def test_results_are_saved_and_a_rerun_skips_finished_tasks(tiny_sim, tmp_path):
    CALLS.clear()
    tasks = [CountingTask(f"t{i}", float(i)) for i in range(3)]
    first = run_batch(tasks, tiny_sim.responses, executor="serial", results_dir=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t0.nc", "t1.nc", "t2.nc"]
    again = run_batch([*tasks, CountingTask("t3", 3.0)], tiny_sim.responses, results_dir=tmp_path)
    assert CALLS == ["t0", "t1", "t2", "t3"]  # only the new task ran the second time
    xr.testing.assert_equal(again["t1"]["x"], first["t1"]["x"])
    changed = [CountingTask("t0", 9.0)]  # same key, different settings: recomputed
    run_batch(changed, tiny_sim.responses, executor="serial", results_dir=tmp_path)
    assert CALLS[-1] == "t0"


def test_failures_are_retried_then_reported_with_finished_results_kept(tiny_sim, tmp_path):
    CALLS.clear()
    tasks = [CountingTask("ok", 1.0), CountingTask("bad", 2.0, fail=True)]
    with ThreadPoolExecutor(2) as pool, pytest.raises(BatchError) as info:
        run_batch(tasks, tiny_sim.responses, executor=pool, results_dir=tmp_path, retries=1)
    assert CALLS.count("bad") == 2  # one retry
    assert list(info.value.failed) == ["bad"] and info.value.done == ["ok"]
    assert "task bad broke" in str(info.value) and "rerun the same call" in str(info.value)
    assert (tmp_path / "ok.nc").exists()


@dataclass(frozen=True)
class DyingTask:
    """Kills its own worker process the first time it runs (a marker file remembers)."""

    key: str
    value: float
    marker: str = ""

    @property
    def fingerprint(self):
        return f"{self.value}"

    def run(self, shared):
        if self.marker and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            os._exit(1)  # the worker dies: the pool breaks for every task it held
        time.sleep(0.3)
        return xr.DataTree(xr.Dataset({"x": ("i", np.full(3, self.value))}))


def test_a_killed_worker_of_the_default_pool_loses_no_healthy_result(tiny_sim, tmp_path):
    marker = str(tmp_path / "died_once")
    tasks = [DyingTask(f"t{i}", float(i)) for i in range(3)] + [DyingTask("dies", 9.0, marker)]
    results = run_batch(tasks, tiny_sim.responses, executor="auto", results_dir=tmp_path / "out", retries=1)
    assert os.path.exists(marker)  # the worker did die
    assert [float(results[t.key]["x"][0]) for t in tasks] == [0.0, 1.0, 2.0, 9.0]
    assert len(list((tmp_path / "out").glob("*.nc"))) == 4


def test_an_edited_cached_result_is_recomputed_and_reported(tiny_sim, tmp_path):
    CALLS.clear()
    tasks = [CountingTask("t0", 1.0)]
    run_batch(tasks, tiny_sim.responses, executor="serial", results_dir=tmp_path)
    with xr.open_datatree(tmp_path / "t0.nc", engine="h5netcdf") as handle:
        stored = handle.load()
    edited = xr.DataTree(xr.Dataset({"x": ("i", np.full(3, 123.0))}, attrs=stored.attrs))
    edited.to_netcdf(tmp_path / "t0.nc", engine="h5netcdf")
    with pytest.warns(UserWarning, match="t0.nc is not used: its contents changed"):
        again = run_batch(tasks, tiny_sim.responses, executor="serial", results_dir=tmp_path)
    assert CALLS == ["t0", "t0"] and float(again["t0"]["x"][0]) == 1.0 * tiny_sim.responses.n_llms


def test_bad_executor_and_duplicate_keys(tiny_sim):
    with pytest.raises(TypeError, match="executor must be"):
        run_batch([CountingTask("a", 1.0)], tiny_sim.responses, executor="cluster")
    with pytest.raises(ValueError, match="unique"):
        run_batch([CountingTask("a", 1.0), CountingTask("a", 2.0)], tiny_sim.responses)


def test_missing_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(MissingExtraError, match="dask"), DaskExecutor(workers=1):
        pass


# ------------------------------------------------------------ a real cluster
ADVI = {"method": "advi", "advi": {"draws": 20, "max_steps": 300}}


@pytest.fixture(scope="module")
def dask_executor():
    # the dask extra is part of the dev install; without it DaskExecutor raises MissingExtraError
    with DaskExecutor(workers=2) as executor:
        yield executor


def small_cv(responses, executor, **extra):
    """The same 2-fold × (1, 2)-dimension cross-validation on any executor."""
    return cross_validate(
        responses,
        n_dims=(1, 2),
        folds=2,
        seed=5,
        **ADVI,
        executor=executor,
        progressbar=False,
        **extra,
    )


@pytest.fixture(scope="module")
def serial_cv(tiny_sim):
    return small_cv(tiny_sim.responses, "serial")


@pytest.mark.slow
def test_restarts_and_folds_on_a_local_dask_cluster_match_serial(tiny_sim, dask_executor, serial_cv):
    kwargs = {**ADVI, "restarts": 2, "seed": 8, "progressbar": False}
    serial = fit_posterior(tiny_sim.responses, 2, executor="serial", **kwargs)
    on_dask = fit_posterior(tiny_sim.responses, 2, executor=dask_executor, **kwargs)
    np.testing.assert_allclose(
        on_dask["posterior"]["ability"], serial["posterior"]["ability"], rtol=1e-9, atol=1e-12
    )
    cv = small_cv(tiny_sim.responses, dask_executor)
    pd.testing.assert_frame_equal(cv.table, serial_cv.table, rtol=1e-9)


@pytest.mark.slow
def test_killing_a_worker_mid_run_loses_nothing(tiny_sim, dask_executor, serial_cv, tmp_path):
    client = dask_executor._client
    pids = client.run(os.getpid)
    killed = []

    def kill_a_busy_worker():
        deadline = time.time() + 300
        while time.time() < deadline and not killed:
            busy = [w for w, keys in client.processing().items() if keys]
            if any(tmp_path.glob("*.nc")) and busy:  # one fit done, another one running
                os.kill(pids[busy[0]], signal.SIGKILL)
                killed.append(busy[0])
            time.sleep(0.2)

    watcher = threading.Thread(target=kill_a_busy_worker)
    watcher.start()
    cv = small_cv(tiny_sim.responses, dask_executor, results_dir=tmp_path)
    watcher.join()
    assert killed, "no worker was killed during the run"
    assert len(list(tmp_path.glob("*.nc"))) == 4  # every fold fit is on disk
    pd.testing.assert_frame_equal(cv.table, serial_cv.table, rtol=1e-9)
    client.wait_for_workers(2, timeout=120)  # the nanny restarted the killed worker

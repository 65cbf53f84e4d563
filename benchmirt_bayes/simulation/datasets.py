"""The package's own generated data: the stored simulated BenchMIRT set."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.errors import ResponseDataError
from benchmirt_bayes.simulation.simulate import SimulatedBenchmark, simulate_benchmirt

DATA_DIR = Path(__file__).resolve().parents[2] / "data"
STORED_SIMULATION = DATA_DIR / "benchmirt_simulated.nc"
BUILTIN_SEED = 20260301
"""Seed of the stored built-in set (and of reduced versions made with the same design)."""
REGENERATE_COMMAND = f"benchmirt simulate --scale 1.0 --seed {BUILTIN_SEED} --out data/benchmirt_simulated.nc"


def write_simulated(
    path: str | Path, *, scale: float = 1.0, n_llms: int = 100, seed: int = BUILTIN_SEED
) -> Path:
    """Simulate and write responses and truth to one compressed netCDF file."""
    sim = simulate_benchmirt(scale=scale, n_llms=n_llms, seed=seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    responses = sim.responses.data.rename("correct").to_dataset()
    truth = sim.truth.rename({name: f"true_{name}" for name in sim.truth.data_vars})
    ds = xr.merge([responses, truth.drop_vars(["benchmark", "subgroup", "category"])])
    ds.attrs = {f"simulation_{k}": v for k, v in sim.truth.attrs.items()}
    ds.attrs["regenerate"] = REGENERATE_COMMAND
    encoding: dict[str, dict] = {
        "correct": {
            "dtype": "int8",
            "_FillValue": -1,
            "zlib": True,
            "complevel": 9,
            "chunksizes": (n_llms, min(4096, sim.responses.n_items)),
        },
    }
    for name in ds.data_vars:
        if name != "correct":
            encoding[name] = {"dtype": "float32", "zlib": True, "complevel": 9}
    for name in ("llm", "item", "benchmark", "subgroup", "category"):
        ds[name] = ds[name].astype(str)
        encoding[name] = {"dtype": "S1", "zlib": True, "complevel": 9}
    ds.to_netcdf(path, encoding=encoding, engine="h5netcdf")
    return path


def read_response_netcdf(path: str | Path) -> ResponseMatrix:
    """Read a ResponseMatrix written by :func:`write_simulated` or ``ResponseMatrix.to_netcdf``."""
    path = Path(path)
    if not path.exists():
        raise ResponseDataError([f"file not found: {path}"])
    try:
        ds = xr.open_dataset(path, engine="h5netcdf").load()
    except Exception as exc:
        raise ResponseDataError([f"could not read {path.name} as netCDF: {exc}"]) from exc
    if "correct" not in ds:
        raise ResponseDataError([f"{path.name} has no 'correct' variable"])
    return ResponseMatrix(ds["correct"].astype(float).drop_attrs())


def builtin_set(scale: float = 1.0) -> SimulatedBenchmark:
    """The stored built-in set at ``scale=1``; below it, a reduced set of the same design and seed."""
    return load_builtin() if scale == 1 else simulate_benchmirt(scale=scale, seed=BUILTIN_SEED)


def load_builtin(path: str | Path = STORED_SIMULATION) -> SimulatedBenchmark:
    """The stored full-scale simulated set (responses and truth) from ``data/``."""
    path = Path(path)
    responses = read_response_netcdf(path)
    ds = xr.open_dataset(path, engine="h5netcdf").load()
    truth = ds[[n for n in ds.data_vars if n.startswith("true_")]]
    truth = truth.rename({n: n.removeprefix("true_") for n in truth.data_vars}).astype(float)
    truth = truth.assign_coords(responses.data.coords)
    truth.attrs = {
        k.removeprefix("simulation_"): v for k, v in ds.attrs.items() if k.startswith("simulation_")
    }
    return SimulatedBenchmark(responses, truth)

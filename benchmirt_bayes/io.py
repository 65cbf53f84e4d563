"""`save_posterior` / `load_posterior`: lossless netCDF or zarr round trips, no pickle."""

from __future__ import annotations

from pathlib import Path

import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.errors import PosteriorFileError

REQUIRED_GROUPS = ("posterior", "observed_data")


def save_posterior(posterior: xr.DataTree, path: str | Path) -> Path:
    """Write a fitted posterior to ``.nc`` (netCDF4/HDF5) or ``.zarr``.

    The file is written under a temporary name and renamed when complete, so an
    interrupted write never leaves a file that looks finished.

    Returns
    -------
    Path
        The path written.

    """
    path = Path(path)
    _check_tree(posterior, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".zarr":
        posterior.to_zarr(path, mode="w")
        return path
    if path.suffix not in (".nc", ".h5", ".netcdf"):
        raise ValueError(f"use a .nc or .zarr path, got {path.name!r}")
    partial = path.with_name(path.name + ".partial")
    posterior.to_netcdf(partial, engine="h5netcdf")
    partial.replace(path)
    return path


def load_posterior(path: str | Path, responses: ResponseMatrix | None = None) -> xr.DataTree:
    """Read a posterior written by :func:`save_posterior`.

    Parameters
    ----------
    path
        A ``.nc`` or ``.zarr`` path.
    responses
        If given, the data the caller means to analyse: a fit made on other
        data (different hash) is refused.

    Raises
    ------
    PosteriorFileError
        The file is missing, truncated, corrupt, not a benchmirt fit, or for
        other data.

    """
    path = Path(path)
    if not path.exists():
        raise PosteriorFileError(f"no posterior file at {path}")
    try:
        if path.suffix == ".zarr":
            tree = xr.open_datatree(path, engine="zarr").load()
        else:
            tree = xr.open_datatree(path, engine="h5netcdf").load()
    except Exception as exc:
        raise PosteriorFileError(
            f"{path} is not a readable posterior file (truncated or corrupt?): {type(exc).__name__}: {exc}"
        ) from exc
    _check_tree(tree, str(path))
    if responses is not None:
        stored = tree.attrs["benchmirt_data_hash"]
        if stored != responses.data_hash():
            raise PosteriorFileError(
                f"{path} was fitted on other data (hash {stored[:12]}…, given data "
                f"{responses.data_hash()[:12]}…)"
            )
    return tree


def _check_tree(tree: xr.DataTree, where: str) -> None:
    missing = [g for g in REQUIRED_GROUPS if g not in tree.children]
    if missing or "benchmirt_data_hash" not in tree.attrs:
        raise PosteriorFileError(
            f"{where} is not a benchmirt_bayes posterior (missing groups {missing} or provenance attrs)"
        )

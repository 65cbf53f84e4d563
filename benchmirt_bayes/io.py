"""`save_posterior` / `load_posterior`: lossless netCDF or Zarr round trips, no pickle, checked on load.

Every saved fit carries a checksum of its contents and the names of the variables it must
hold (:mod:`benchmirt_bayes.integrity`); :func:`load_posterior` recomputes the checksum and
refuses, naming the file, a fit whose bytes changed, that lacks a variable, or that was
made on other data. Both formats are written under a temporary name and moved into place
only when complete, so a killed save never replaces a finished fit with a partial one.
"""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path

import xarray as xr

from benchmirt_bayes.data.responses import ResponseMatrix
from benchmirt_bayes.errors import PosteriorFileError
from benchmirt_bayes.integrity import CHECKSUM_ATTR, checksum_problem, with_checksum

REQUIRED_GROUPS = ("posterior", "observed_data")
REQUIRED_VARIABLES = {"posterior": ("ability", "loading", "intercept"), "observed_data": ("correct",)}
"""Variables every fit must hold, by group (stored with the fit, checked on load)."""
REQUIRED_ATTR = "benchmirt_required_variables"
SUFFIXES = (".nc", ".h5", ".netcdf", ".zarr")


def save_posterior(posterior: xr.DataTree, path: str | Path, *, overwrite: bool = False) -> Path:
    """Write a fitted posterior to ``.nc`` (netCDF4/HDF5) or ``.zarr``, with a checksum.

    The file (or Zarr folder) is written under a temporary name and renamed when complete;
    an existing fit at ``path`` is replaced only then (for Zarr it is moved aside first and
    deleted last), so an interrupted write leaves the previous file intact. Anything else at
    ``path`` (data, a folder of other files) is an error unless ``overwrite``.

    Returns
    -------
    Path
        The path written.

    """
    path = Path(path)
    if path.suffix not in SUFFIXES:
        raise ValueError(f"use a .nc or .zarr path, got {path.name!r}")
    _check_tree(posterior, str(path))
    if path.exists() and not overwrite and not is_fit_file(path):
        raise PosteriorFileError(
            f"{path} exists and is not a fit written by benchmirt_bayes (data or other files?): "
            "it is not replaced; choose another path, or pass overwrite=True"
        )
    required = ";".join(f"{group}:{','.join(names)}" for group, names in REQUIRED_VARIABLES.items())
    tree = with_checksum(posterior, {REQUIRED_ATTR: required})
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".partial")
    if path.suffix == ".zarr":
        shutil.rmtree(partial, ignore_errors=True)
        tree.to_zarr(partial, mode="w")
        replace_folder(partial, path)
        return path
    tree.to_netcdf(partial, engine="h5netcdf")
    partial.replace(path)
    return path


def is_fit_file(path: str | Path) -> bool:
    """Whether ``path`` is a fit written by :func:`save_posterior` (read from its attributes only)."""
    path = Path(path)
    try:
        if path.suffix == ".zarr":
            import zarr

            attrs = dict(zarr.open_group(str(path), mode="r").attrs)
        else:
            import h5netcdf

            with h5netcdf.File(path, "r") as handle:
                attrs = dict(handle.attrs)
    except Exception:
        return False
    return REQUIRED_ATTR in attrs


def replace_folder(new: Path, path: Path) -> None:
    """Move the complete folder ``new`` to ``path``, keeping the old one until then."""
    old = path.with_name(path.name + ".old")
    if path.exists():
        _remove(old)
        path.rename(old)
    new.rename(path)
    _remove(old)


def _remove(path: Path) -> None:
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def load_posterior(path: str | Path, responses: ResponseMatrix | None = None) -> xr.DataTree:
    """Read a posterior written by :func:`save_posterior`, checking that it is intact.

    Parameters
    ----------
    path
        A ``.nc`` or ``.zarr`` path.
    responses
        If given, the data the caller means to analyse: a fit made on other data
        (different hash) is refused.

    Raises
    ------
    PosteriorFileError
        The file is missing, truncated, corrupt (its checksum does not match its contents),
        not a benchmirt fit, lacks a variable a fit holds, or is for other data. The
        message names the file.

    Warns
    -----
    UserWarning
        For a fit written before checksums were stored (it cannot be verified).

    """
    path = Path(path)
    if not path.exists():
        old = path.with_name(path.name + ".old")
        hint = f" ({old.name} holds the fit an interrupted save replaced)" if old.exists() else ""
        raise PosteriorFileError(f"no posterior file at {path}{hint}")
    try:
        engine = "zarr" if path.suffix == ".zarr" else "h5netcdf"
        with xr.open_datatree(path, engine=engine) as handle:
            tree = handle.load()
    except Exception as exc:
        raise PosteriorFileError(
            f"{path} is not a readable posterior file (truncated or corrupt?): {type(exc).__name__}: {exc}"
        ) from exc
    _check_tree(tree, str(path))
    problem = checksum_problem(tree)
    if problem is not None and (CHECKSUM_ATTR in tree.attrs or REQUIRED_ATTR in tree.attrs):
        # since 0.2 every fit is written with its checksum: one without it was edited
        raise PosteriorFileError(f"{path} is refused: {problem}; refit or restore the file")
    if problem is not None:
        warnings.warn(f"{path} {problem} (written before 0.2): it cannot be verified", stacklevel=2)
    missing = [
        f"{group}/{name}"
        for group, names in REQUIRED_VARIABLES.items()
        for name in names
        if name not in tree[group].data_vars
    ]
    if missing:
        raise PosteriorFileError(f"{path} lacks the variable(s) {missing} that every fit holds")
    tree.attrs = {k: v for k, v in tree.attrs.items() if k not in (CHECKSUM_ATTR, REQUIRED_ATTR)}
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

"""`ResponseMatrix`: the one in-memory form of benchmark response data.

An ``xarray.DataArray`` with dims ``(llm, item)``, values 1.0 (correct), 0.0
(wrong) and NaN (not evaluated), and item coordinates ``benchmark`` and
``subgroup`` plus any other item metadata (``category``, ...).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.errors import ResponseDataError, limit_listing

LLM_DIM = "llm"
ITEM_DIM = "item"
REQUIRED_ITEM_COORDS = ("benchmark", "subgroup")


@dataclass(frozen=True)
class ItemFilterReport:
    """What :meth:`ResponseMatrix.filter_items` removed and why.

    Attributes
    ----------
    removed
        One row per removed item: ``item``, ``benchmark``, ``subgroup``,
        ``share_correct``, ``n_observed`` and ``reason``.
    kept
        Number of items kept.
    rule
        The rule applied, in words.

    """

    removed: pd.DataFrame
    kept: int
    rule: str

    def __str__(self) -> str:
        by_bench = self.removed.groupby("benchmark").size().to_dict() if len(self.removed) else {}
        return (
            f"{self.rule}: removed {len(self.removed)} item(s), kept {self.kept}. "
            f"Removed per benchmark: {by_bench}"
        )


class ResponseMatrix:
    """Binary responses of LLMs to benchmark items, with item metadata.

    Parameters
    ----------
    data
        A DataArray with dims ``("llm", "item")``, values in {0, 1, NaN} and at
        least the item coordinates ``benchmark`` and ``subgroup``.
    validate
        Check the values and coordinates (default). Internal callers that
        already validated pass ``False``.

    Raises
    ------
    ResponseDataError
        Listing every problem: wrong dims, values outside {0, 1}, missing item
        metadata, duplicate ids, LLMs or items with no observation.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> da = xr.DataArray(
    ...     np.array([[1.0, 0.0], [np.nan, 1.0]]),
    ...     dims=("llm", "item"),
    ...     coords={"llm": ["a", "b"], "item": ["q1", "q2"],
    ...             "benchmark": ("item", ["B", "B"]), "subgroup": ("item", ["B", "B"])},
    ... )
    >>> ResponseMatrix(da).n_observed
    3

    """

    def __init__(self, data: xr.DataArray, *, validate: bool = True) -> None:
        if validate:
            data = _validated(data)
        self._data = data

    # ------------------------------------------------------------------ basics
    @property
    def data(self) -> xr.DataArray:
        """The underlying ``(llm, item)`` DataArray (a copy is cheap to make)."""
        return self._data

    @property
    def llms(self) -> np.ndarray:
        """LLM ids, in row order."""
        return self._data[LLM_DIM].values

    @property
    def items(self) -> np.ndarray:
        """Item ids, in column order."""
        return self._data[ITEM_DIM].values

    @property
    def benchmarks(self) -> np.ndarray:
        """Benchmark of each item."""
        return self._data["benchmark"].values

    @property
    def subgroups(self) -> np.ndarray:
        """Subgroup of each item."""
        return self._data["subgroup"].values

    @property
    def benchmark_names(self) -> list[str]:
        """Distinct benchmarks, in order of first appearance."""
        return list(pd.unique(self.benchmarks))

    @property
    def n_llms(self) -> int:
        """Number of LLMs."""
        return self._data.sizes[LLM_DIM]

    @property
    def n_items(self) -> int:
        """Number of items."""
        return self._data.sizes[ITEM_DIM]

    @property
    def values(self) -> np.ndarray:
        """Dense ``(llm, item)`` float array with NaN for unobserved cells."""
        return self._data.values

    @property
    def observed(self) -> np.ndarray:
        """Boolean ``(llm, item)`` mask of evaluated cells."""
        return ~np.isnan(self._data.values)

    @property
    def n_observed(self) -> int:
        """Number of evaluated cells."""
        return int(self.observed.sum())

    @property
    def missing_share(self) -> float:
        """Share of cells not evaluated."""
        return 1.0 - self.n_observed / (self.n_llms * self.n_items)

    @property
    def item_coords(self) -> list[str]:
        """Names of the item metadata coordinates."""
        return [
            name
            for name, coord in self._data.coords.items()
            if coord.dims == (ITEM_DIM,) and name != ITEM_DIM
        ]

    def item_metadata(self) -> pd.DataFrame:
        """Item metadata as a DataFrame indexed by item."""
        meta = {name: self._data[name].values for name in self.item_coords}
        return pd.DataFrame(meta, index=pd.Index(self.items, name=ITEM_DIM))

    def data_hash(self) -> str:
        """SHA-256 of ids, metadata and values: identifies the data a fit used."""
        digest = hashlib.sha256()
        for ids in (self.llms, self.items, self.benchmarks, self.subgroups):
            digest.update("\x1f".join(map(str, ids)).encode())
            digest.update(b"\x1e")
        coded = np.where(self.observed, self.values, 2).astype(np.int8)
        digest.update(coded.tobytes())
        return digest.hexdigest()

    def __repr__(self) -> str:
        return (
            f"<ResponseMatrix {self.n_llms} LLMs × {self.n_items} items, "
            f"{len(self.benchmark_names)} benchmarks, {self.missing_share:.1%} missing>"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResponseMatrix):
            return NotImplemented
        return self._data.equals(other._data)

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> pd.DataFrame:
        """Per-benchmark counts: items, subgroups, observed cells and mean score."""
        frame = self.to_long(include_missing=False)
        grouped = frame.groupby("benchmark", sort=False)
        out = pd.DataFrame(
            {
                "items": grouped["item"].nunique(),
                "subgroups": grouped["subgroup"].nunique(),
                "observed_cells": grouped.size(),
                "mean_score": grouped["correct"].mean(),
            }
        )
        return out

    # ---------------------------------------------------------------- subsets
    def subset(
        self,
        *,
        llms: Sequence[str] | None = None,
        items: Sequence[str] | None = None,
        benchmarks: Sequence[str] | None = None,
    ) -> ResponseMatrix:
        """Return a new matrix restricted to the given LLMs, items and/or benchmarks.

        Raises
        ------
        KeyError
            If an id or benchmark is unknown (all unknown ones are listed).

        """
        data = self._data
        if llms is not None:
            _check_known(llms, self.llms, "LLM")
            data = data.sel({LLM_DIM: list(llms)})
        if items is not None:
            _check_known(items, self.items, "item")
            data = data.sel({ITEM_DIM: list(items)})
        if benchmarks is not None:
            _check_known(benchmarks, self.benchmark_names, "benchmark")
            keep = np.isin(data["benchmark"].values, list(benchmarks))
            data = data.isel({ITEM_DIM: np.flatnonzero(keep)})
        return ResponseMatrix(data)

    def with_values(self, values: np.ndarray) -> ResponseMatrix:
        """Same ids and metadata with new ``(llm, item)`` values (validated)."""
        return ResponseMatrix(self._data.copy(data=np.asarray(values, dtype=float)))

    # ----------------------------------------------------------------- scores
    def llm_scores(self, by: str | None = None) -> pd.DataFrame:
        """Mean score per LLM, overall (``by=None``) or per item group.

        Parameters
        ----------
        by
            An item coordinate such as ``"benchmark"`` or ``"subgroup"``.

        Returns
        -------
        DataFrame
            Index ``llm``; one column ``score`` or one column per group.

        """
        if by is None:
            return pd.DataFrame(
                {"score": np.nanmean(self.values, axis=1)}, index=pd.Index(self.llms, name=LLM_DIM)
            )
        groups = self._group_values(by)
        values, observed = self.values, self.observed
        columns = {}
        for group in pd.unique(groups):
            cols = groups == group
            count = observed[:, cols].sum(axis=1)
            total = np.nansum(values[:, cols], axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                columns[group] = np.where(count > 0, total / np.maximum(count, 1), np.nan)
        return pd.DataFrame(columns, index=pd.Index(self.llms, name=LLM_DIM))

    def benchmark_scores(self) -> pd.DataFrame:
        """Mean score per LLM (rows) and benchmark (columns)."""
        return self.llm_scores(by="benchmark")

    def item_scores(self) -> pd.Series:
        """Share of evaluated LLMs that got each item right."""
        return pd.Series(np.nanmean(self.values, axis=0), index=pd.Index(self.items, name=ITEM_DIM))

    def _group_values(self, by: str) -> np.ndarray:
        if by not in self.item_coords:
            raise KeyError(f"unknown item coordinate {by!r}; available: {self.item_coords}")
        return self._data[by].values

    # ------------------------------------------------------------------ folds
    def cell_folds(self, n_folds: int = 10, *, seed: int = 42) -> np.ndarray:
        """Assign each observed cell to one of ``n_folds`` folds, shuffled with ``seed``.

        Returns
        -------
        ndarray
            Integer ``(llm, item)`` array: fold number for observed cells, -1 for
            unobserved cells (an internal index, never a response code).

        """
        if n_folds < 2:
            raise ValueError(f"n_folds must be at least 2, got {n_folds}")
        flat = np.flatnonzero(self.observed.ravel())
        rng = np.random.default_rng(seed)
        order = rng.permutation(flat.size)
        folds = np.full(self.observed.size, -1, dtype=np.int64)
        folds[flat[order]] = np.arange(flat.size) % n_folds
        return folds.reshape(self.observed.shape)

    def split_cells(self, test_share: float = 0.1, *, seed: int = 42) -> tuple[ResponseMatrix, np.ndarray]:
        """Hide a seeded random share of observed cells.

        Returns
        -------
        train
            The matrix with the test cells set to NaN.
        test_mask
            Boolean ``(llm, item)`` mask of the hidden cells.

        """
        if not 0 < test_share < 1:
            raise ValueError(f"test_share must be in (0, 1), got {test_share}")
        rng = np.random.default_rng(seed)
        observed = self.observed
        test_mask = observed & (rng.random(observed.shape) < test_share)
        return self.masked(test_mask), test_mask

    def masked(self, hide: np.ndarray) -> ResponseMatrix:
        """Return a copy with the cells in boolean ``hide`` set to NaN (not validated).

        Unlike :meth:`with_values`, LLMs or items left with no observation are
        allowed here, so that cross-validation folds can hide whole rows.
        """
        values = self.values.copy()
        values[np.asarray(hide, dtype=bool)] = np.nan
        return ResponseMatrix(self._data.copy(data=values), validate=False)

    # ---------------------------------------------------------------- filters
    def filter_items(
        self, min_share: float = 0.05, max_share: float = 0.95
    ) -> tuple[ResponseMatrix, ItemFilterReport]:
        """Drop items that fewer than ``min_share`` or more than ``max_share`` of LLMs get right.

        This is the published BenchMIRT rule (5% / 95%). Nothing is dropped
        silently: the report lists every removed item and why.
        """
        share = np.nanmean(self.values, axis=0)
        too_hard = share < min_share
        too_easy = share > max_share
        drop = too_hard | too_easy
        reason = np.where(too_hard, f"share correct < {min_share}", f"share correct > {max_share}")
        removed = pd.DataFrame(
            {
                "item": self.items[drop],
                "benchmark": self.benchmarks[drop],
                "subgroup": self.subgroups[drop],
                "share_correct": share[drop],
                "n_observed": self.observed.sum(axis=0)[drop],
                "reason": reason[drop],
            }
        )
        kept = self._data.isel({ITEM_DIM: np.flatnonzero(~drop)})
        rule = f"keep items with {min_share:.0%} ≤ share correct ≤ {max_share:.0%}"
        return ResponseMatrix(kept), ItemFilterReport(removed, int((~drop).sum()), rule)

    # ------------------------------------------------------------ conversions
    def to_long(self, *, include_missing: bool = False) -> pd.DataFrame:
        """Long table: one row per cell with ``llm, item, correct`` and the item metadata."""
        llm_idx, item_idx = np.indices(self.values.shape)
        mask = np.ones(self.values.shape, bool) if include_missing else self.observed
        frame = pd.DataFrame(
            {
                LLM_DIM: self.llms[llm_idx[mask]],
                ITEM_DIM: self.items[item_idx[mask]],
                "correct": self.values[mask],
            }
        )
        meta = self.item_metadata()
        for name in meta.columns:
            frame[name] = meta[name].values[item_idx[mask]]
        return frame

    def to_wide(self, *, orient: Literal["llms", "items"] = "llms") -> pd.DataFrame:
        """Wide table: LLMs as rows (``orient="llms"``) or items as rows with metadata columns."""
        frame = self._data.to_pandas()
        if orient == "llms":
            frame.index.name, frame.columns.name = LLM_DIM, ITEM_DIM
            return frame
        if orient == "items":
            wide = frame.T
            wide.columns.name = None
            meta = self.item_metadata()
            return pd.concat([meta, wide], axis=1)
        raise ValueError(f"orient must be 'llms' or 'items', got {orient!r}")

    def to_netcdf(self, path: str, **kwargs: object) -> None:
        """Write the matrix to a compressed netCDF file (int8 storage, NaN preserved)."""
        ds = self._data.rename("correct").to_dataset()
        encoding = {"correct": {"dtype": "int8", "_FillValue": -1, "zlib": True, "complevel": 6}}
        for name in self.item_coords:
            if self._data[name].dtype == object:
                ds[name] = ds[name].astype(str)
        ds.to_netcdf(path, encoding=encoding, engine="h5netcdf", **kwargs)


def _check_known(requested: Sequence[str], known: Sequence[str], what: str) -> None:
    unknown = sorted(set(requested) - set(known), key=str)
    if unknown:
        raise KeyError(f"unknown {what}(s): {limit_listing(unknown)}")


def _validated(data: xr.DataArray) -> xr.DataArray:
    """Check a candidate DataArray; raise one ResponseDataError listing every problem."""
    problems: list[str] = []
    if not isinstance(data, xr.DataArray):
        raise ResponseDataError([f"expected an xarray.DataArray, got {type(data).__name__}"])
    if set(data.dims) != {LLM_DIM, ITEM_DIM}:
        raise ResponseDataError([f"dims must be ('llm', 'item'), got {data.dims}"])
    data = data.transpose(LLM_DIM, ITEM_DIM)
    if data.sizes[LLM_DIM] == 0 or data.sizes[ITEM_DIM] == 0:
        raise ResponseDataError(["the table is empty (no LLMs or no items)"])
    for name in REQUIRED_ITEM_COORDS:
        if name not in data.coords or data[name].dims != (ITEM_DIM,):
            problems.append(f"item coordinate {name!r} is missing")
        elif pd.isna(data[name].values).any():
            missing = data[ITEM_DIM].values[pd.isna(data[name].values)]
            problems.append(f"items without {name!r} metadata: {limit_listing(missing)}")
    for dim in (LLM_DIM, ITEM_DIM):
        ids = pd.Index(data[dim].values)
        if ids.has_duplicates:
            problems.append(f"duplicate {dim} ids: {limit_listing(ids[ids.duplicated()].unique())}")
    try:
        values = np.asarray(data.values, dtype=float)
    except (TypeError, ValueError):
        raise ResponseDataError([*problems, "values are not numeric"]) from None
    problems.extend(value_problems(values, data[LLM_DIM].values, data[ITEM_DIM].values))
    if problems:
        raise ResponseDataError(problems)
    if values.dtype != data.dtype:
        data = data.copy(data=values)
    return data


def value_problems(values: np.ndarray, llms: np.ndarray, items: np.ndarray) -> list[str]:
    """Problems with a dense ``(llm, item)`` value array: values outside {0, 1}, empty rows/columns."""
    problems = []
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        rows, cols = np.nonzero(bad)
        cells = [f"({llms[r]}, {items[c]})={values[r, c]}" for r, c in zip(rows[:10], cols[:10], strict=True)]
        problems.append(
            f"{int(bad.sum())} value(s) outside {{0, 1}}: {', '.join(cells)}"
            + (" …" if bad.sum() > 10 else "")
            + " — pass binarize=THRESHOLD to load_responses for continuous scores"
        )
    observed = ~np.isnan(values)
    empty_llms = llms[~observed.any(axis=1)]
    if empty_llms.size:
        problems.append(f"LLMs with no observation at all: {limit_listing(empty_llms)}")
    empty_items = items[~observed.any(axis=0)]
    if empty_items.size:
        problems.append(f"items with no observation at all: {limit_listing(empty_items)}")
    return problems

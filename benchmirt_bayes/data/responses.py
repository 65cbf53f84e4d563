"""`ResponseMatrix`: the one in-memory form of benchmark response data.

An ``xarray.DataArray`` with dims ``(llm, item)``, NaN for cells not evaluated, and item
coordinates ``benchmark`` and ``subgroup`` plus any other item metadata (``category``,
...). Each item has a response type (item coordinate ``response_type``; the registry's
default, 0/1, when absent) and the item metadata its type reads (``n_categories``,
``n_trials``). The values each type accepts, and the metadata it needs, are declared in
its own module under :mod:`benchmirt_bayes.response_types`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.checks import check_integer
from benchmirt_bayes.data.tables import numeric_values
from benchmirt_bayes.dims import ITEM_DIM, LLM_DIM
from benchmirt_bayes.errors import ResponseDataError, limit_listing
from benchmirt_bayes.response_types import (
    DEFAULT_TYPE,
    RESPONSE_TYPES,
    response_model,
    type_columns,
    whole_numbers,
)

REQUIRED_ITEM_COORDS = ("benchmark", "subgroup")
TYPE_COORD = "response_type"


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
    """Responses of LLMs to benchmark items, with item metadata.

    Parameters
    ----------
    data
        A DataArray with dims ``("llm", "item")``, values of each item's response type
        (module docstring; binary {0, 1} by default) or NaN, and at least the item
        coordinates ``benchmark`` and ``subgroup``.
    validate
        Check the values and coordinates (default). Internal callers that
        already validated pass ``False``.

    Raises
    ------
    ResponseDataError
        Listing every problem: wrong dims, values outside {0, 1}, missing item
        metadata, duplicate ids, LLMs or items with no observation, a value outside
        its item's type (naming the item and the value).

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
    def response_types(self) -> np.ndarray:
        """Response type of each item (``"binary"`` for every item of a plain 0/1 matrix)."""
        if TYPE_COORD not in self._data.coords:
            return np.full(self.n_items, DEFAULT_TYPE, dtype=object)
        return self._data[TYPE_COORD].values.astype(str).astype(object)

    @property
    def is_binary(self) -> bool:
        """Whether every item is binary."""
        return TYPE_COORD not in self._data.coords or bool(np.all(self.response_types == DEFAULT_TYPE))

    @property
    def n_categories(self) -> np.ndarray:
        """Number of ordered categories per item (2 for binary items, 0 for continuous and count)."""
        return _int_coord(self._data, "n_categories", np.where(self.response_types == DEFAULT_TYPE, 2, 0))

    @property
    def n_trials(self) -> np.ndarray:
        """Tries per item for count items (1 for the others)."""
        return _int_coord(self._data, "n_trials", np.ones(self.n_items, dtype=np.int64))

    @property
    def score_scale(self) -> np.ndarray:
        """Highest possible value per item (each response type's own scale: 1, ``K − 1``, ``n``)."""
        return score_scale(self.response_types, self.n_categories, self.n_trials)

    @property
    def scaled_values(self) -> np.ndarray:
        """Values divided by :attr:`score_scale`: every response type on ``[0, 1]``."""
        if self.is_binary:
            return self.values
        return self.values / self.score_scale

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

    @property
    def llm_coords(self) -> list[str]:
        """Names of the LLM metadata coordinates (family, base model, ...)."""
        return [
            name for name, coord in self._data.coords.items() if coord.dims == (LLM_DIM,) and name != LLM_DIM
        ]

    def llm_metadata(self) -> pd.DataFrame:
        """LLM metadata as a DataFrame indexed by LLM (no columns when there is none)."""
        meta = {name: self._data[name].values for name in self.llm_coords}
        return pd.DataFrame(meta, index=pd.Index(self.llms, name=LLM_DIM))

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
        if self.is_binary:
            digest.update(np.where(self.observed, self.values, 2).astype(np.int8).tobytes())
        else:
            digest.update("\x1f".join(self.response_types).encode())
            digest.update(self.n_categories.tobytes() + self.n_trials.tobytes())
            digest.update(np.ascontiguousarray(self.values, dtype=np.float64).tobytes())
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

    def take_items(self, columns: Sequence[int] | np.ndarray) -> ResponseMatrix:
        """The items at integer ``columns`` (not validated: LLMs may be left without observations)."""
        return ResponseMatrix(self._data.isel({ITEM_DIM: np.asarray(columns)}), validate=False)

    def with_values(self, values: np.ndarray) -> ResponseMatrix:
        """Same ids and metadata with new ``(llm, item)`` values (validated)."""
        return ResponseMatrix(self._data.copy(data=np.asarray(values, dtype=float)))

    # ----------------------------------------------------------------- scores
    def llm_scores(self, by: str | None = None) -> pd.DataFrame:
        """Mean score per LLM, overall (``by=None``) or per item group (on the ``[0, 1]`` scale).

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
                {"score": np.nanmean(self.scaled_values, axis=1)}, index=pd.Index(self.llms, name=LLM_DIM)
            )
        groups = self._group_values(by)
        values, observed = self.scaled_values, self.observed
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
        """Mean score of each item over the LLMs evaluated on it (share correct for binary items)."""
        return pd.Series(np.nanmean(self.scaled_values, axis=0), index=pd.Index(self.items, name=ITEM_DIM))

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
        check_integer("n_folds", n_folds, minimum=2)
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
        share = np.nanmean(self.scaled_values, axis=0)
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
        """Write the matrix to a compressed netCDF file (int8 storage for binary data, NaN preserved)."""
        ds = self._data.rename("correct").to_dataset()
        encoding = {"correct": {"dtype": "int8", "_FillValue": -1, "zlib": True, "complevel": 6}}
        if not self.is_binary:
            encoding = {"correct": {"dtype": "float64", "zlib": True, "complevel": 6}}
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
    infinite = infinite_value_problems(values, data[LLM_DIM].values, data[ITEM_DIM].values)
    if infinite:  # named once here, and kept out of the type checks below (no 'inf categories')
        problems.extend(infinite)
        values = np.where(np.isinf(values), np.nan, values)
    if TYPE_COORD in data.coords:
        data, type_problems = _typed_coords(data, values)
        problems.extend(type_problems)
        if not type_problems:
            problems.extend(
                typed_value_problems(
                    values, data[LLM_DIM].values, data[ITEM_DIM].values, ResponseMatrix(data, validate=False)
                )
            )
    else:
        problems.extend(value_problems(values, data[LLM_DIM].values, data[ITEM_DIM].values))
    if problems:
        raise ResponseDataError(problems)
    if values.dtype != data.dtype:
        data = data.copy(data=values)
    return data


def score_scale(types: np.ndarray, categories: np.ndarray, trials: np.ndarray) -> np.ndarray:
    """Highest possible value of each item, from its response type and metadata."""
    scale = np.ones(np.shape(types)[0])
    for name, columns in type_columns(types).items():
        scale[columns] = response_model(name).score_scale(categories[columns], trials[columns])
    return scale


def _int_coord(data: xr.DataArray, name: str, default: np.ndarray) -> np.ndarray:
    if name not in data.coords:
        return np.asarray(default, dtype=np.int64)
    return np.asarray(data[name].values).astype(float).astype(np.int64)


def _metadata_numbers(data: xr.DataArray, name: str) -> tuple[np.ndarray, list[str]]:
    """An item coordinate as floats (NaN where missing) and ``item='cell'`` for cells that are not numbers."""
    if name not in data.coords:
        return np.full(data.sizes[ITEM_DIM], np.nan), []
    cells = pd.DataFrame({name: pd.Series(np.asarray(data[name].values), dtype=object)})
    parsed, bad = numeric_values(cells)
    items, raw = data[ITEM_DIM].values, cells[name].to_numpy()
    return parsed[:, 0], [f"{str(items[row])!r}: {raw[row]!r}" for row, _ in bad]


def _typed_coords(data: xr.DataArray, values: np.ndarray) -> tuple[xr.DataArray, list[str]]:
    """Check ``response_type`` and fill ``n_categories`` / ``n_trials``; list the problems."""
    items = data[ITEM_DIM].values
    types = np.asarray(data[TYPE_COORD].values).astype(str)
    unknown = ~np.isin(types, RESPONSE_TYPES)
    if unknown.any():
        listed = [f"{items[i]}={str(types[i])!r}" for i in np.flatnonzero(unknown)]
        return data, [
            f"unknown response_type for item(s) {limit_listing(listed)}; known: {list(RESPONSE_TYPES)}"
        ]
    problems = []
    observed = ~np.isnan(values)
    with np.errstate(invalid="ignore"):
        largest = np.where(observed.any(axis=0), np.nanmax(np.where(observed, values, -np.inf), axis=0), 0)
    given = {}
    for name in ("n_categories", "n_trials"):
        given[name], not_numbers = _metadata_numbers(data, name)
        if not_numbers:
            problems.append(
                f"{name} must be a number (or empty for the default); item(s) with another "
                f"cell: {', '.join(not_numbers[:10])}" + (" …" if len(not_numbers) > 10 else "")
            )
    categories, trials = np.zeros(types.size), np.ones(types.size)
    for name, columns in type_columns(types).items():
        filled = response_model(name).item_metadata(
            largest[columns], given["n_categories"][columns], given["n_trials"][columns]
        )
        categories[columns], trials[columns], bad, message = filled
        if bad.any():
            problems.append(f"{message}: {limit_listing(list(items[columns][bad]))}")
    data = data.assign_coords(
        {
            TYPE_COORD: (ITEM_DIM, types.astype(object)),
            "n_categories": (ITEM_DIM, np.nan_to_num(categories).astype(np.int64)),
            "n_trials": (ITEM_DIM, trials.astype(np.int64)),
        }
    )
    return data, problems


def typed_value_problems(
    values: np.ndarray, llms: np.ndarray, items: np.ndarray, matrix: ResponseMatrix
) -> list[str]:
    """Values that do not fit their item's response type, each named by LLM, item and value."""
    types, categories, trials = matrix.response_types, matrix.n_categories, matrix.n_trials
    observed = ~np.isnan(values)
    whole = np.where(observed, values == np.round(values), True)
    upper = matrix.score_scale
    integral = whole_numbers(types)
    with np.errstate(invalid="ignore"):
        bad = observed & ((values < 0) | (values > upper[None, :]) | (integral[None, :] & ~whole))
    problems = []
    if bad.any():
        rows, cols = np.nonzero(bad)
        cells = [
            f"({llms[r]}, {items[c]}: {types[c]}"
            + response_model(types[c]).describe_item(int(categories[c]), int(trials[c]))
            + f")={values[r, c]}"
            for r, c in zip(rows[:10], cols[:10], strict=True)
        ]
        problems.append(
            f"{int(bad.sum())} value(s) outside their item's response type: {', '.join(cells)}"
            + (" …" if bad.sum() > 10 else "")
        )
    problems.extend(value_problems(np.where(observed, 0.0, np.nan), llms, items))
    return problems


def infinite_value_problems(values: np.ndarray, llms: np.ndarray, items: np.ndarray) -> list[str]:
    """Infinite scores, named by cell: no response type has them, and ``binarize`` must not see them.

    Harnesses write them where a per-sample metric could not be computed (lm-evaluation-harness
    logs ``"mae": Infinity`` for an answer it cannot parse as a number).
    """
    infinite = np.isinf(values)
    if not infinite.any():
        return []
    rows, cols = np.nonzero(infinite)
    cells = [f"({llms[r]}, {items[c]})={values[r, c]}" for r, c in zip(rows[:10], cols[:10], strict=True)]
    return [
        f"{int(infinite.sum())} value(s) are infinite: {', '.join(cells)}"
        + (" …" if infinite.sum() > 10 else "")
        + " — a score the evaluation could not compute (for example an answer it could not parse); "
        "leave those cells empty (missing) or give them a finite score"
    ]


def value_problems(values: np.ndarray, llms: np.ndarray, items: np.ndarray) -> list[str]:
    """Problems with a dense ``(llm, item)`` value array: values outside {0, 1}, empty rows/columns."""
    problems = []
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    seen = values[~np.isnan(values)]
    if bad.any() and np.isin(seen, (-1.0, 1.0)).all():
        problems.append(
            f"values are coded -1/+1 ({int((seen == -1).sum())} cells are -1): this package reads 0/1; "
            "recode -1 as 0, or pass binarize=0 (score >= 0 becomes 1, -1 becomes 0)"
        )
        bad = np.zeros_like(bad)
    if bad.any():
        rows, cols = np.nonzero(bad)
        cells = [f"({llms[r]}, {items[c]})={values[r, c]}" for r, c in zip(rows[:10], cols[:10], strict=True)]
        problems.append(
            f"{int(bad.sum())} value(s) outside {{0, 1}}: {', '.join(cells)}"
            + (" …" if bad.sum() > 10 else "")
            + " — declare the response type (load_responses(..., response_type="
            + " or ".join(repr(name) for name in RESPONSE_TYPES if name != DEFAULT_TYPE)
            + ", or a benchmark → type mapping), or pass binarize=THRESHOLD to make them 0/1"
        )
    observed = ~np.isnan(values)
    empty_llms = llms[~observed.any(axis=1)]
    if empty_llms.size:
        problems.append(f"LLMs with no observation at all: {limit_listing(empty_llms)}")
    empty_items = items[~observed.any(axis=0)]
    if empty_items.size:
        problems.append(f"items with no observation at all: {limit_listing(empty_items)}")
    return problems

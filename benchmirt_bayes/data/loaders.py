"""`load_responses`: every on-disk form of LLM benchmark results into a `ResponseMatrix`.

Every reader converts to one core path (:func:`from_wide_frame`) that checks the values and
metadata and raises a single :class:`ResponseDataError` listing every problem it found.
Ids are kept as written (:mod:`benchmirt_bayes.data.tables`), the orientation of a wide
table is never guessed silently, and no LLM or item is dropped without an error.
The evaluation tools' own result layouts (lm-evaluation-harness, Open LLM Leaderboard
details, HELM, OpenCompass, py-irt) are read by :mod:`benchmirt_bayes.data.harness_formats`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.data import harness_formats
from benchmirt_bayes.data.responses import (
    ITEM_DIM,
    LLM_DIM,
    ResponseMatrix,
    infinite_value_problems,
    value_problems,
)
from benchmirt_bayes.data.tables import (
    TableLike,
    looks_numeric,
    numeric_values,
    read_table,
    refuse_git_lfs_pointers,
    text_ids,
)
from benchmirt_bayes.errors import ResponseDataError, limit_listing
from benchmirt_bayes.response_types import DEFAULT_TYPE

Format = Literal[
    "auto",
    "long",
    "wide",
    "wide_items",
    "benchmirt",
    "pyirt",
    "lm_eval",
    "oll_details",
    "helm",
    "opencompass",
    "inspect",
]
FORMATS: tuple[str, ...] = Format.__args__
TABLE_FORMATS = ("long", "wide", "wide_items", "benchmirt")
BENCHMIRT_METADATA_COLUMNS = (
    "benchmark",
    "category",
    "subcategory_one",
    "subcategory_two",
    "subcategory_three",
    "question_text",
)
LLM_ID_COLUMNS = ("llm", "model", "model_name", "subject_id")
"""First-column names that mark a wide table with LLMs as rows."""
ITEM_ID_COLUMNS = ("question_id", "item", "item_id")
"""Column names that mark a table with items as rows."""


def load_responses(
    source: TableLike,
    *,
    format: Format = "auto",
    item_metadata: TableLike | None = None,
    llm_metadata: TableLike | None = None,
    llm_col: str = "llm",
    item_col: str = "item",
    correct_col: str = "correct",
    benchmark: str | None = None,
    subgroup_col: str | None = None,
    metadata_columns: tuple[str, ...] | None = None,
    metric: str | Mapping[str, str] | None = None,
    filter: str | Mapping[str, str] | None = None,
    split: str | None = None,
    run: str | Mapping[str, str] | None = None,
    binarize: float | None = None,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Read benchmark results into a :class:`ResponseMatrix`.

    Parameters
    ----------
    source
        A DataFrame, a CSV / TSV / CSV.gz / Parquet file, a py-irt JSON-lines file, or a
        folder of results written by an evaluation harness.
    format
        Tables: ``"long"`` (one row per LLM × item), ``"wide"`` (LLMs as rows, items as
        columns), ``"wide_items"`` (items as rows with metadata columns and one score
        column per LLM) or ``"benchmirt"`` (the BenchMIRT release: items as rows indexed
        by ``question_id``, LLM columns ``acc_norm_<org>__<model>``). Results of evaluation
        tools: ``"pyirt"``, ``"lm_eval"`` (lm-evaluation-harness ``--log_samples``
        folders), ``"oll_details"`` (Open LLM Leaderboard details Parquet files, v1 and
        v2, and lighteval's), ``"helm"`` (HELM run folders), ``"inspect"`` (Inspect AI
        ``.eval`` / ``.json`` logs, a file or a folder) and ``"opencompass"`` (an OpenCompass work
        folder run with ``--dump-eval-details``). ``"auto"`` recognises each of them
        (:func:`detect_format`); a wide table whose orientation cannot be told from its
        column names or its item metadata is an error asking for ``format=``.
    item_metadata
        Table with ``item_col`` (or ``item``) and ``benchmark`` columns, and optionally
        ``subgroup``, ``response_type`` and any other item metadata (``category``...).
    llm_metadata
        Table with ``llm_col`` (or ``llm``) and any LLM metadata (``family``,
        ``reasoning``, ``base_of``...): LLM coordinates of the matrix, for audits by
        group. Unknown LLMs and LLMs without a row are errors.
    llm_col, item_col, correct_col
        Column names of the long form; ``llm_col`` also names the id column of a wide
        table and of ``llm_metadata``, ``item_col`` the id column of a table with items as
        rows and of ``item_metadata`` (``question_id`` is recognised too).
    benchmark
        Give every item this benchmark when no metadata exists (a single test).
    subgroup_col
        Metadata column to use as ``subgroup``; default ``subgroup`` when present, else
        the benchmark name.
    metadata_columns
        Tables with items as rows: the columns that are metadata, not LLM scores
        (default: the BenchMIRT release columns that are present).
    metric
        ``lm_eval``, ``oll_details`` and ``helm``: the per-sample metric to read (``acc``,
        ``exact_match``, ``prompt_level_strict_acc``...), or a mapping task → metric for
        folders that mix tasks scored differently. Default: ``acc`` (lm-eval), the metric
        the leaderboard reports per benchmark (Open LLM Leaderboard details), and for HELM
        the run group's main metric in ``helm-summarize``'s ``schema.json``, else
        ``exact_match``.
    filter
        ``lm_eval``: the filter whose rows to read (``strict-match``, ...) for tasks that
        log several; a mapping task → filter works too.
    split
        ``helm``: the split whose instances to read (default: the one HELM reports, the run
        group's main split in ``schema.json``, else ``"test"``). Splits are never pooled.
    run
        ``lm_eval`` (0.4.3 and later): which rerun to read, by the date in its log's file
        name (``"2024-06-01"``, or the whole ``"2024-06-01T10-00-00.123456"``); default the
        newest of each model and task. A mapping task → date chooses per task (for a run that
        reran some tasks only); tasks it does not name take their newest log.
    binarize
        Threshold for continuous scores: ``score >= binarize`` becomes 1 (only when asked:
        scores are otherwise kept as they are).
    response_type
        The response type of every item (a name in
        :data:`~benchmirt_bayes.response_types.RESPONSE_TYPES`) or a mapping benchmark →
        type; benchmarks not named stay 0/1. An item-metadata column ``response_type`` does
        the same per item (with the metadata its type reads: ``n_categories``,
        ``n_trials``). Without either, any value other than 0, 1 or missing is an error.

    Returns
    -------
    ResponseMatrix

    Raises
    ------
    ResponseDataError
        One error listing every problem (missing file, unreadable bytes, empty table,
        duplicate or empty ids, conflicting duplicates or metadata, an ambiguous
        orientation, values outside their type, items without metadata or metadata
        without items, LLMs or items with no observation).

    Examples
    --------
    A long table with an item-metadata table:

    >>> long = pd.DataFrame({"llm": ["a", "a", "b"], "item": ["q1", "q2", "q1"],
    ...                      "correct": [1, 0, 1]})
    >>> meta = pd.DataFrame({"item": ["q1", "q2"], "benchmark": ["MATH", "MATH"]})
    >>> load_responses(long, item_metadata=meta).n_observed
    3

    A wide table (LLMs as rows, first column the LLM id) with one benchmark:

    >>> wide = pd.DataFrame({"llm": ["a", "b"], "q1": [1, 0], "q2": [0, 1]})
    >>> load_responses(wide, format="wide", benchmark="LSAT7").n_items
    2

    The published BenchMIRT layout and evaluation-harness folders::

        load_responses("benchmirt_release.csv", subgroup_col="category")
        load_responses("lm_eval_output/", metric={"arc_easy": "acc", "gsm8k": "exact_match"})
        load_responses("helm/benchmark_output/runs/v1/", metric="exact_match")

    """
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r}; use one of {FORMATS}")
    label = _label(source)
    meta = None if item_metadata is None else read_table(item_metadata)
    if format == "auto":
        format = detect_format(source)
    if split is not None and format != "helm":
        raise ValueError(f"split= chooses a HELM run's split; {label} is read as {format!r}")
    if run is not None and format != "lm_eval":
        raise ValueError(f"run= chooses among lm-evaluation-harness reruns; {label} is read as {format!r}")
    common = {"benchmark": benchmark, "subgroup_col": subgroup_col, "binarize": binarize}
    if format in harness_formats.READERS:
        options = {"metric": metric, "filter": filter}
        options |= {name: value for name, value in (("split", split), ("run", run)) if value is not None}
        long, found_meta = harness_formats.READERS[format](source, **options)
        matrix = from_long_frame(
            long,
            meta if meta is not None else found_meta,
            response_type=response_type,
            source=label,
            **common,
        )
    else:
        table = read_table(source)
        if format == "table":
            format = _table_orientation(table, meta, llm_col, item_col, correct_col, label)
        matrix = _read_table_format(
            format,
            table,
            meta,
            llm_col=llm_col,
            item_col=item_col,
            correct_col=correct_col,
            metadata_columns=metadata_columns,
            response_type=response_type,
            source=label,
            **common,
        )
    if llm_metadata is not None:
        matrix = with_llm_metadata(matrix, read_table(llm_metadata), llm_col=llm_col)
    matrix.data.attrs[FORMAT_ATTR] = format
    if format in harness_formats.READERS:
        matrix.data.attrs[READ_ATTR] = "\n".join(long.attrs.get(harness_formats.READ_ATTR, []))
    return matrix


def _label(source: object) -> str:
    return "a DataFrame" if isinstance(source, pd.DataFrame) else str(source)


FORMAT_TITLES = {
    "long": "long table (one row per LLM × item)",
    "wide": "wide table (LLMs as rows, items as columns)",
    "wide_items": "wide table (items as rows, one column per LLM)",
    "benchmirt": "BenchMIRT release (items as rows, acc_norm_<org>__<model> columns)",
    "netcdf": "ResponseMatrix netCDF (benchmirt simulate)",
    **harness_formats.FORMAT_NAMES,
}
"""Plain names of the formats (what ``benchmirt info`` prints)."""

FORMAT_ATTR = "format"
"""``matrix.data.attrs[FORMAT_ATTR]``: the format :func:`load_responses` read the data as."""
READ_ATTR = "read"
"""``matrix.data.attrs[READ_ATTR]``: evaluation-tool formats: per task (one line each) what was
read and what else the files offer."""


PYIRT_SUFFIXES = (".jsonl", ".jsonlines")


def _json_file_format(path: Path) -> str:
    """``"pyirt"`` for py-irt lines saved as ``.json``; any other JSON document is refused by name."""
    refuse_git_lfs_pointers([path], path)
    with path.open("rb") as handle:
        first = handle.readline(1 << 20).strip()
    if first.startswith(b"{") and b'"subject_id"' in first:
        return "pyirt"
    if harness_formats.is_inspect_log(path):
        return "inspect"
    raise ResponseDataError(
        [
            f"{path.name} is a JSON document, not py-irt JSON lines (one "
            '{"subject_id": ..., "responses": {item: value}} per line); for a harness\'s '
            "results pass its folder (with format= if needed), for a table save it as CSV or Parquet"
        ],
        source=str(path),
    )


def detect_format(source: TableLike) -> str:
    """The format of ``source``: a folder's evaluation tool, ``"pyirt"``, or ``"table"``.

    Folders are recognised by the files their tool writes (``samples_*.jsonl`` beside
    ``results_*.json``; ``per_instance_stats.json``; ``results/<model>/<dataset>.json``
    with ``details``; Parquet files named by Open LLM Leaderboard configs). For a table
    the caller decides the orientation (:func:`_table_orientation`).
    """
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            found = harness_formats.detect_folder(path)
            if found is None:
                raise ResponseDataError(
                    [
                        f"{path} holds no results this package recognises: lm-evaluation-harness "
                        "samples_*.jsonl (or results.json with <model_args>_<task>.jsonl), HELM "
                        "per_instance_stats.json, OpenCompass results/, Open LLM Leaderboard or "
                        "lighteval details *.parquet, or Inspect AI logs (.eval, .json)"
                    ]
                )
            return found
        if path.suffix.lower() in PYIRT_SUFFIXES:
            return "pyirt"
        if path.suffix.lower() == ".eval":
            return "inspect"
        if path.suffix.lower() == ".json" and path.is_file():
            return _json_file_format(path)
        if path.suffix.lower() in (".parquet", ".pq") and harness_formats.oll_config(path) is not None:
            return "oll_details"
    return "table"


def _table_orientation(
    table: pd.DataFrame,
    meta: pd.DataFrame | None,
    llm_col: str,
    item_col: str,
    correct_col: str,
    label: str,
) -> str:
    """Which table format ``table`` is in, from its column names (or its item metadata)."""
    columns = [str(c) for c in table.columns]
    if {llm_col, item_col, correct_col} <= set(columns):
        return "long"
    item_ids = [c for c in (item_col, *ITEM_ID_COLUMNS) if c in columns]
    if item_ids:
        if any(c.startswith("acc_norm_") for c in columns):
            return "benchmirt"
        return "wide_items"
    if columns[0] in (llm_col, *LLM_ID_COLUMNS):
        return "wide"
    if meta is not None:
        key = item_col if item_col in meta.columns else ITEM_DIM
        if key in meta.columns:
            known = set(meta[key].astype(str))
            header_hits = len(known & set(columns[1:]))
            row_hits = len(known & set(table.iloc[:, 0].astype(str)))
            if header_hits > row_hits:
                return "wide"
            if row_hits > header_hits:
                return "wide_items"
    raise ResponseDataError(
        [
            f"cannot tell whether the rows of this table are LLMs or items (first column "
            f"{columns[0]!r}, {len(table)} rows × {len(columns)} columns): pass format='wide' "
            f"(LLMs as rows) or format='wide_items' (items as rows), or name the id column "
            f"({LLM_ID_COLUMNS[0]!r}/{LLM_ID_COLUMNS[1]!r} for LLMs, {ITEM_ID_COLUMNS[0]!r}/"
            f"{ITEM_ID_COLUMNS[1]!r} for items), or give item_metadata"
        ],
        source=label,
    )


def _read_table_format(
    format: str,
    table: pd.DataFrame,
    meta: pd.DataFrame | None,
    *,
    llm_col: str,
    item_col: str,
    correct_col: str,
    metadata_columns: tuple[str, ...] | None,
    benchmark: str | None,
    subgroup_col: str | None,
    binarize: float | None,
    response_type: str | Mapping[str, str] | None,
    source: str,
) -> ResponseMatrix:
    common = {
        "benchmark": benchmark,
        "subgroup_col": subgroup_col,
        "binarize": binarize,
        "response_type": response_type,
        "source": source,
    }
    if format == "long":
        return from_long_frame(
            table, meta, llm_col=llm_col, item_col=item_col, correct_col=correct_col, **common
        )
    if format == "wide":
        scores = _llms_as_rows(table, llm_col, source)
        return from_wide_frame(scores, meta, item_col=item_col, **common)
    if format in ("wide_items", "benchmirt"):
        return _from_items_as_rows(
            table,
            meta,
            item_col=item_col,
            metadata_columns=metadata_columns,
            release=format == "benchmirt",
            **common,
        )
    raise ValueError(f"{format!r} is not a table format; use one of {TABLE_FORMATS}")


def _llms_as_rows(table: pd.DataFrame, llm_col: str, source: str) -> pd.DataFrame:
    """A wide table's scores indexed by its LLM-id column (``llm_col``, else the first column)."""
    columns = [str(c) for c in table.columns]
    id_column = llm_col if llm_col in columns else columns[0]
    ids = table[table.columns[columns.index(id_column)]]
    if id_column != llm_col and looks_numeric(ids):
        raise ResponseDataError(
            [
                f"the first column {id_column!r} holds numbers, not LLM ids: the table seems to have "
                f"no LLM-id column; name it with llm_col= (or add one)"
            ],
            source=source,
        )
    llms, problems = text_ids(ids, "LLM")
    if problems:
        raise ResponseDataError(problems, source=source)
    scores = table.drop(columns=table.columns[columns.index(id_column)])
    if scores.shape[1] == 0:
        raise ResponseDataError([f"no score columns besides the LLM-id column {id_column!r}"], source=source)
    scores.index = pd.Index(llms, name=LLM_DIM)
    return scores


# ----------------------------------------------------------------- core path
def from_long_frame(
    table: pd.DataFrame,
    item_metadata: pd.DataFrame | None = None,
    *,
    llm_col: str = "llm",
    item_col: str = "item",
    correct_col: str = "correct",
    benchmark: str | None = None,
    subgroup_col: str | None = None,
    binarize: float | None = None,
    source: str | None = None,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Build a matrix from a long table; metadata may come from its own columns.

    Metadata columns of the long table (``benchmark``, ``subgroup``, ...) must hold one
    value per item: an item listed under two benchmarks is an error naming it.
    """
    columns = [str(c) for c in table.columns]
    missing_cols = [c for c in (llm_col, item_col, correct_col) if c not in columns]
    if missing_cols:
        raise ResponseDataError(
            [
                f"long table lacks column(s) {missing_cols}; it has {columns[:20]} "
                "(set llm_col=, item_col=, correct_col=)"
            ],
            source=source,
        )
    table = table.copy()
    table.columns = columns
    llms, llm_problems = text_ids(table[llm_col], "LLM")
    items, item_problems = text_ids(table[item_col], "item")
    problems = llm_problems + item_problems
    values, bad = numeric_values(table[[correct_col]])
    if bad:
        rows = [r for r, _ in bad]
        problems.append(
            f"{len(bad)} non-numeric value(s) in column {correct_col!r} at table row(s) "
            f"{limit_listing(rows)}: {limit_listing(pd.unique(table[correct_col].iloc[rows].astype(str)))}"
        )
    if llm_problems or item_problems:  # without ids there is no matrix to check further
        raise ResponseDataError(problems, source=source)
    frame = pd.DataFrame({LLM_DIM: llms, ITEM_DIM: items, "correct": values[:, 0]})
    dup = frame.duplicated([LLM_DIM, ITEM_DIM], keep=False)
    if dup.any():
        spread = frame[dup].groupby([LLM_DIM, ITEM_DIM])["correct"].nunique(dropna=False)
        conflicting = spread[spread > 1]
        if len(conflicting):
            pairs = [f"({a}, {b})" for a, b in conflicting.index[:10]]
            problems.append(
                f"{len(conflicting)} duplicate (llm, item) pair(s) with conflicting values: "
                + ", ".join(pairs)
                + (" …" if len(conflicting) > 10 else "")
            )
        frame = frame.drop_duplicates([LLM_DIM, ITEM_DIM])
    if item_metadata is None:
        extra = [c for c in columns if c not in (llm_col, item_col, correct_col)]
        if "benchmark" in extra:
            carried = table[extra].assign(**{item_col: items})
            conflicts = [
                f"{name}: {limit_listing(counts.index[counts > 1])}"
                for name in extra
                for counts in [carried.groupby(item_col)[name].nunique(dropna=False)]
                if (counts > 1).any()
            ]
            if conflicts:
                problems.append(
                    "item metadata in the long table disagrees within an item (one value per item "
                    "expected) — " + "; ".join(conflicts)
                )
            item_metadata = carried.drop_duplicates(item_col)[[item_col, *extra]]
    wide = frame.pivot(index=LLM_DIM, columns=ITEM_DIM, values="correct")
    wide = wide.reindex(index=pd.unique(frame[LLM_DIM]), columns=pd.unique(frame[ITEM_DIM]))
    return from_wide_frame(
        wide,
        item_metadata,
        item_col=item_col,
        benchmark=benchmark,
        subgroup_col=subgroup_col,
        binarize=binarize,
        source=source,
        earlier_problems=problems,
        response_type=response_type,
    )


def from_wide_frame(
    scores: pd.DataFrame,
    item_metadata: pd.DataFrame | None = None,
    *,
    item_col: str = "item",
    benchmark: str | None = None,
    subgroup_col: str | None = None,
    binarize: float | None = None,
    source: str | None = None,
    earlier_problems: list[str] | None = None,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Build a matrix from a wide ``llm × item`` frame of scores plus item metadata.

    This is the one validation path every loader ends in; ``earlier_problems`` (from a
    long table, say) are reported together with the ones found here. The index holds the
    LLM ids and the columns the item ids, both kept as written.
    """
    problems: list[str] = list(earlier_problems or [])
    llms, id_problems = text_ids(scores.index, "LLM")
    problems += id_problems
    items = np.asarray([str(c) for c in scores.columns], dtype=object)
    values, bad = numeric_values(scores)
    if bad:
        cells = [f"({llms[r]}, {items[c]})={scores.iat[r, c]!r}" for r, c in bad[:10]]
        problems.append(f"{len(bad)} non-numeric value(s): " + ", ".join(cells))
    infinite = infinite_value_problems(values, llms, items)
    problems.extend(infinite)
    array = np.where(np.isinf(values), np.nan, values) if infinite else values
    if binarize is not None:
        array = np.where(np.isnan(array), np.nan, (array >= binarize).astype(float))
    meta, meta_problems = _item_metadata(items, item_metadata, item_col, benchmark, subgroup_col)
    problems.extend(meta_problems)
    if response_type is not None:
        meta, type_problems = _declared_types(meta, response_type)
        problems.extend(type_problems)
    if "response_type" not in meta.columns:
        problems.extend(value_problems(array, llms, items))
    if problems:
        raise ResponseDataError(problems, source=source)
    coords = {LLM_DIM: llms.astype(str), ITEM_DIM: items.astype(str)}
    for name in meta.columns:
        coords[name] = (ITEM_DIM, meta[name].to_numpy())
    data = xr.DataArray(array, dims=(LLM_DIM, ITEM_DIM), coords=coords, name="correct")
    try:
        return ResponseMatrix(data)
    except ResponseDataError as exc:
        raise ResponseDataError(exc.problems, source=source) from None


def with_llm_metadata(
    responses: ResponseMatrix, metadata: pd.DataFrame, *, llm_col: str = "llm"
) -> ResponseMatrix:
    """``responses`` with LLM metadata (family, base model, ...) as coordinates on ``llm``.

    Every LLM needs exactly one row; rows for LLMs not in the responses, LLMs without a
    row and repeated rows are errors that name them.
    """
    key = llm_col if llm_col in metadata.columns else LLM_DIM
    if key not in metadata.columns:
        raise ResponseDataError([f"LLM metadata lacks an LLM id column ({llm_col!r} or 'llm')"])
    ids, problems = text_ids(metadata[key], "LLM")
    meta = metadata.drop(columns=key).set_axis(pd.Index(ids, name=LLM_DIM), axis=0)
    if meta.index.has_duplicates:
        problems.append(f"LLM metadata repeats LLM ids: {limit_listing(meta.index[meta.index.duplicated()])}")
    llms = pd.Index(responses.llms.astype(str))
    unknown = meta.index.difference(llms)
    if len(unknown):
        problems.append(
            f"{len(unknown)} LLM metadata row(s) for LLMs not in the responses: {limit_listing(unknown)}"
        )
    without = llms.difference(meta.index)
    if len(without):
        problems.append(f"{len(without)} LLM(s) without metadata: {limit_listing(without)}")
    reserved = set(meta.columns) & {ITEM_DIM, *responses.item_coords}
    if reserved:
        problems.append(f"LLM metadata columns clash with item coordinates: {sorted(reserved)}")
    if problems:
        raise ResponseDataError(problems, source="LLM metadata")
    meta = meta[~meta.index.duplicated()].reindex(llms)
    coords = {name: (LLM_DIM, meta[name].astype(str).to_numpy()) for name in meta.columns}
    return ResponseMatrix(responses.data.assign_coords(coords), validate=False)


def _declared_types(
    meta: pd.DataFrame, response_type: str | Mapping[str, str]
) -> tuple[pd.DataFrame, list[str]]:
    """Set the ``response_type`` column from one type for all or a benchmark → type mapping."""
    meta = meta.copy()
    if isinstance(response_type, str):
        meta["response_type"] = response_type
        return meta, []
    known = set(meta["benchmark"].dropna()) if "benchmark" in meta.columns else set()
    unknown = sorted(set(response_type) - known)
    if unknown:
        return meta, [f"response_type names unknown benchmark(s): {limit_listing(unknown)}"]
    current = (
        meta["response_type"] if "response_type" in meta.columns else pd.Series(DEFAULT_TYPE, meta.index)
    )
    declared = meta["benchmark"].map(dict(response_type))
    meta["response_type"] = declared.where(declared.notna(), current.fillna(DEFAULT_TYPE))
    return meta, []


def _item_metadata(
    items: np.ndarray,
    metadata: pd.DataFrame | None,
    item_col: str,
    benchmark: str | None,
    subgroup_col: str | None,
) -> tuple[pd.DataFrame, list[str]]:
    """Align item metadata to ``items``; report items without and metadata without items."""
    problems: list[str] = []
    if metadata is None:
        if benchmark is None:
            return pd.DataFrame(index=items), [
                "no item metadata: pass item_metadata= (a table with item and benchmark columns) "
                "or benchmark='NAME' for a single benchmark"
            ]
        meta = pd.DataFrame({"benchmark": benchmark}, index=pd.Index(items, name=ITEM_DIM))
    else:
        key = next((c for c in (item_col, ITEM_DIM, "question_id") if c in metadata.columns), None)
        if key is None:
            return pd.DataFrame(index=items), [
                f"item metadata lacks an item id column ({item_col!r}, 'item' or 'question_id')"
            ]
        meta = metadata.copy()
        ids, id_problems = text_ids(meta[key], "item")
        problems += id_problems
        meta[key] = ids
        if meta[key].duplicated().any():
            problems.append(
                f"item metadata repeats item ids: {limit_listing(meta[key][meta[key].duplicated()])}"
            )
            meta = meta.drop_duplicates(key)
        meta = meta.set_index(key)
        for name in meta.columns:
            if meta[name].dtype == object or pd.api.types.is_string_dtype(meta[name]):
                meta[name] = (
                    meta[name]
                    .map(lambda v: np.nan if isinstance(v, str) and not v.strip() else v)
                    .astype(object)
                )
        if "benchmark" not in meta.columns:
            if benchmark is None:
                problems.append("item metadata has no 'benchmark' column")
            meta["benchmark"] = benchmark
        elif (blank := meta["benchmark"].isna()).any():
            if benchmark is None:
                problems.append(
                    f"{int(blank.sum())} item(s) with an empty benchmark cell in the item metadata: "
                    f"{limit_listing(meta.index[blank])} (fill them, or pass benchmark='NAME' for them)"
                )
            meta.loc[blank, "benchmark"] = benchmark
        without_meta = pd.Index(items).difference(meta.index)
        if len(without_meta):
            problems.append(f"{len(without_meta)} item(s) without metadata: {limit_listing(without_meta)}")
        without_items = meta.index.difference(pd.Index(items))
        if len(without_items):
            problems.append(
                f"{len(without_items)} metadata row(s) for items not in the responses: "
                f"{limit_listing(without_items)}"
            )
        meta = meta.reindex(items)
        meta.index.name = ITEM_DIM
    if subgroup_col is not None:
        if subgroup_col not in meta.columns:
            problems.append(f"subgroup column {subgroup_col!r} is not in the item metadata")
        else:
            meta["subgroup"] = meta[subgroup_col]
    if "subgroup" not in meta.columns:
        meta["subgroup"] = meta["benchmark"]
    else:
        meta["subgroup"] = meta["subgroup"].where(meta["subgroup"].notna(), meta["benchmark"])
    for name in meta.columns:
        text = meta[name].dtype == object or pd.api.types.is_string_dtype(meta[name])
        if text or name in ("benchmark", "subgroup"):
            meta[name] = meta[name].where(meta[name].isna(), meta[name].astype(str))
    return meta, problems


def _from_items_as_rows(
    table: pd.DataFrame,
    item_metadata: pd.DataFrame | None,
    *,
    item_col: str,
    metadata_columns: tuple[str, ...] | None,
    release: bool,
    benchmark: str | None,
    subgroup_col: str | None,
    binarize: float | None,
    source: str,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Items as rows: an item-id column, metadata columns, then one score column per LLM.

    ``release``: the BenchMIRT release, whose LLM columns are ``acc_norm_<org>__<model>``
    (read as the LLM ``<org>/<model>``).
    """
    columns = [str(c) for c in table.columns]
    # the item ids: ``item_col`` or a known id column, else the first column (the orientation
    # was asked for, or decided by the item metadata)
    id_column = next((c for c in (item_col, *ITEM_ID_COLUMNS) if c in columns), columns[0])
    table = table.copy()
    table.columns = columns
    if metadata_columns is None:
        metadata_columns = tuple(c for c in (*BENCHMIRT_METADATA_COLUMNS, "subgroup") if c in columns)
    unknown = [c for c in metadata_columns if c not in columns]
    if unknown:
        raise ResponseDataError([f"metadata column(s) not in the table: {unknown}"], source=source)
    items, problems = text_ids(table[id_column], "item")
    if problems:
        raise ResponseDataError(problems, source=source)
    table[id_column] = items
    if pd.Index(items).has_duplicates:
        duplicated = pd.Index(items)[pd.Index(items).duplicated()].unique()
        raise ResponseDataError(
            [f"item ids repeat in column {id_column!r}: {limit_listing(duplicated)}"], source
        )
    meta = table[[id_column, *metadata_columns]] if item_metadata is None else item_metadata
    llm_columns = [c for c in columns if c != id_column and c not in metadata_columns]
    if not llm_columns:
        raise ResponseDataError(["no LLM score columns besides the metadata columns"], source=source)
    scores = table.set_index(id_column)[llm_columns].T
    if release:
        not_scores = [c for c in llm_columns if not c.startswith("acc_norm_")]
        if not_scores:
            raise ResponseDataError(
                [
                    f"BenchMIRT release columns must be metadata ({list(BENCHMIRT_METADATA_COLUMNS)}) or "
                    f"acc_norm_<org>__<model> scores; unexpected: {limit_listing(not_scores)} (pass "
                    "metadata_columns= to declare them)"
                ],
                source=source,
            )
        scores.index = [c.removeprefix("acc_norm_").replace("__", "/", 1) for c in llm_columns]
    return from_wide_frame(
        scores,
        meta,
        item_col=id_column if item_metadata is None else item_col,
        benchmark=benchmark,
        subgroup_col=subgroup_col,
        binarize=binarize,
        source=source,
        response_type=response_type,
    )

"""`load_responses`: every on-disk form of LLM benchmark results into a `ResponseMatrix`.

Every reader converts to one core path (:func:`from_wide_frame`) that checks
the values and metadata and raises a single :class:`ResponseDataError` listing
every problem it found.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd
import xarray as xr

from benchmirt_bayes.data.responses import ITEM_DIM, LLM_DIM, ResponseMatrix, value_problems
from benchmirt_bayes.errors import ResponseDataError, limit_listing

Format = Literal["auto", "long", "wide", "wide_items", "pyirt", "lm_eval"]
TableLike = pd.DataFrame | str | Path

BENCHMIRT_METADATA_COLUMNS = (
    "benchmark",
    "category",
    "subcategory_one",
    "subcategory_two",
    "subcategory_three",
)


def load_responses(
    source: TableLike,
    *,
    format: Format = "auto",
    item_metadata: TableLike | None = None,
    llm_col: str = "llm",
    item_col: str = "item",
    correct_col: str = "correct",
    benchmark: str | None = None,
    subgroup_col: str | None = None,
    metadata_columns: tuple[str, ...] | None = None,
    metric: str | Mapping[str, str] = "acc",
    binarize: float | None = None,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Read benchmark results into a :class:`ResponseMatrix`.

    Parameters
    ----------
    source
        A DataFrame, a CSV / CSV.gz / Parquet file, a py-irt JSON-lines file,
        or a folder of lm-evaluation-harness sample logs.
    format
        ``"long"`` (one row per LLM × item), ``"wide"`` (LLMs as rows, items as
        columns), ``"wide_items"`` (items as rows with metadata columns and one
        score column per LLM: the published BenchMIRT release layout),
        ``"pyirt"`` or ``"lm_eval"``. ``"auto"`` picks ``lm_eval`` for a folder,
        ``pyirt`` for ``.jsonl``, and otherwise ``long`` when the table has the
        three long columns, ``wide_items`` when it has ``question_id``, else
        ``wide``.
    item_metadata
        Table with ``item_col`` (or ``item``) and ``benchmark`` columns, and
        optionally ``subgroup`` and any other item metadata (``category``...).
    llm_col, item_col, correct_col
        Column names of the long form (``item_col`` also names the item column
        of ``item_metadata``; ``"question_id"`` is the default for
        ``wide_items``).
    benchmark
        Give every item this benchmark when no metadata exists (a single test).
    subgroup_col
        Metadata column to use as ``subgroup``; default ``subgroup`` when
        present, else the benchmark name.
    metadata_columns
        ``wide_items`` only: the columns that are metadata, not LLM scores
        (default: the BenchMIRT release columns that are present).
    metric
        ``lm_eval`` only: the per-sample metric to read (``acc``,
        ``exact_match``, ...), or a mapping task → metric for folders that
        mix tasks scored differently.
    binarize
        Threshold for continuous scores: ``score >= binarize`` becomes 1 (only
        when asked: scores are otherwise kept as they are).
    response_type
        The response type of every item (``"binary"``, ``"graded"``,
        ``"continuous"``, ``"count"``) or a mapping benchmark → type; benchmarks
        not named stay binary. An item-metadata column ``response_type`` does the
        same per item (with ``n_categories`` for graded and ``n_trials`` for count
        items). Without either, any value other than 0, 1 or missing is an error.

    Returns
    -------
    ResponseMatrix

    Raises
    ------
    ResponseDataError
        One error listing every problem (missing file, unreadable format, empty
        table, conflicting duplicates, values outside {0, 1}, non-numeric
        values, items without metadata or metadata without items, LLMs or items
        with no observation).

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

    The published BenchMIRT layout (items as rows, one column per LLM)::

        load_responses("benchmirt_release.csv", format="wide_items",
                       subgroup_col="category")

    py-irt JSON lines and lm-evaluation-harness logs::

        load_responses("responses.jsonl", format="pyirt", item_metadata="items.csv")
        load_responses("lm_eval_output/", format="lm_eval", metric="acc")

    """
    label = _label(source)
    if format == "auto":
        format = _detect_format(source)
    if format == "lm_eval":
        return read_lm_eval(source, metric=metric, binarize=binarize, item_metadata=item_metadata)
    if format == "pyirt":
        return read_pyirt(source, item_metadata=item_metadata, benchmark=benchmark, binarize=binarize)
    table = read_table(source)
    meta = None if item_metadata is None else read_table(item_metadata)
    if format == "long":
        return from_long_frame(
            table,
            meta,
            llm_col=llm_col,
            item_col=item_col,
            correct_col=correct_col,
            benchmark=benchmark,
            subgroup_col=subgroup_col,
            binarize=binarize,
            response_type=response_type,
            source=label,
        )
    if format == "wide":
        scores = table.set_index(table.columns[0])
        scores.index = scores.index.astype(str)
        return from_wide_frame(
            scores,
            meta,
            item_col=item_col,
            benchmark=benchmark,
            subgroup_col=subgroup_col,
            binarize=binarize,
            response_type=response_type,
            source=label,
        )
    if format == "wide_items":
        return _from_items_as_rows(
            table,
            meta,
            item_col=item_col if item_col != "item" else "question_id",
            metadata_columns=metadata_columns,
            benchmark=benchmark,
            subgroup_col=subgroup_col,
            binarize=binarize,
            response_type=response_type,
            source=label,
        )
    raise ValueError(f"unknown format {format!r}; use one of {Format.__args__}")


# --------------------------------------------------------------------- tables
def read_table(source: TableLike) -> pd.DataFrame:
    """Read a DataFrame, CSV (optionally gzipped) or Parquet file; clear error otherwise."""
    if isinstance(source, pd.DataFrame):
        table = source
    else:
        path = Path(source)
        if not path.exists():
            raise ResponseDataError([f"file not found: {path}"])
        try:
            if path.suffix == ".parquet":
                table = pd.read_parquet(path)
            else:
                table = pd.read_csv(path, low_memory=False)
        except Exception as exc:
            raise ResponseDataError(
                [f"could not read {path.name} as a table ({type(exc).__name__}: {exc})"],
                source=str(path),
            ) from exc
    if table.shape[0] == 0 or table.shape[1] == 0:
        raise ResponseDataError(["the table is empty"], source=_label(source))
    return table


def _label(source: object) -> str:
    return "a DataFrame" if isinstance(source, pd.DataFrame) else str(source)


def _detect_format(source: TableLike) -> Format:
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            return "lm_eval"
        if path.suffix in {".jsonl", ".json"}:
            return "pyirt"
    table = read_table(source)
    if {"llm", "item", "correct"} <= set(table.columns):
        return "long"
    if "question_id" in table.columns:
        return "wide_items"
    return "wide"


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
    """Build a matrix from a long table; metadata may come from its own columns."""
    missing_cols = [c for c in (llm_col, item_col, correct_col) if c not in table.columns]
    if missing_cols:
        raise ResponseDataError(
            [
                f"long table lacks column(s) {missing_cols}; it has {list(table.columns)[:20]} "
                "(set llm_col=, item_col=, correct_col=)"
            ],
            source=source,
        )
    problems: list[str] = []
    frame = table[[llm_col, item_col, correct_col]].copy()
    frame.columns = [LLM_DIM, ITEM_DIM, "correct"]
    frame[LLM_DIM] = frame[LLM_DIM].astype(str)
    frame[ITEM_DIM] = frame[ITEM_DIM].astype(str)
    numeric = pd.to_numeric(frame["correct"], errors="coerce")
    non_numeric = frame["correct"].notna() & numeric.isna()
    if non_numeric.any():
        rows = frame.index[non_numeric]
        problems.append(
            f"{int(non_numeric.sum())} non-numeric value(s) in column {correct_col!r} at rows "
            f"{limit_listing(rows)}: {limit_listing(frame.loc[rows, 'correct'].unique())}"
        )
    frame["correct"] = numeric
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
        extra = [c for c in table.columns if c not in (llm_col, item_col, correct_col)]
        if "benchmark" in extra:
            item_metadata = table[[item_col, *extra]].astype({item_col: str}).drop_duplicates(item_col)
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

    This is the one validation path every loader ends in; ``earlier_problems``
    (from a long table, say) are reported together with the ones found here.
    """
    problems: list[str] = list(earlier_problems or [])
    scores = scores.copy()
    scores.columns = scores.columns.astype(str)
    values = scores.apply(pd.to_numeric, errors="coerce")
    non_numeric = scores.notna().to_numpy() & values.isna().to_numpy()
    if non_numeric.any():
        rows, cols = np.nonzero(non_numeric)
        cells = [
            f"({scores.index[r]}, {scores.columns[c]})={scores.iat[r, c]!r}"
            for r, c in zip(rows[:10], cols[:10], strict=True)
        ]
        problems.append(f"{int(non_numeric.sum())} non-numeric value(s): " + ", ".join(cells))
    array = values.to_numpy(dtype=float)
    if binarize is not None:
        array = np.where(np.isnan(array), np.nan, (array >= binarize).astype(float))
    items = scores.columns.to_numpy()
    meta, meta_problems = _item_metadata(items, item_metadata, item_col, benchmark, subgroup_col)
    problems.extend(meta_problems)
    if response_type is not None:
        meta, type_problems = _declared_types(meta, response_type)
        problems.extend(type_problems)
    if "response_type" not in meta.columns:
        problems.extend(value_problems(array, scores.index.astype(str).to_numpy(), items))
    if problems:
        raise ResponseDataError(problems, source=source)
    coords = {LLM_DIM: scores.index.astype(str).to_numpy(), ITEM_DIM: items}
    for name in meta.columns:
        coords[name] = (ITEM_DIM, meta[name].to_numpy())
    data = xr.DataArray(array, dims=(LLM_DIM, ITEM_DIM), coords=coords, name="correct")
    try:
        return ResponseMatrix(data)
    except ResponseDataError as exc:
        raise ResponseDataError(exc.problems, source=source) from None


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
    current = meta["response_type"] if "response_type" in meta.columns else pd.Series("binary", meta.index)
    declared = meta["benchmark"].map(dict(response_type))
    meta["response_type"] = declared.where(declared.notna(), current.fillna("binary"))
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
        key = item_col if item_col in metadata.columns else ITEM_DIM
        if key not in metadata.columns:
            return pd.DataFrame(index=items), [
                f"item metadata lacks an item id column ({item_col!r} or 'item')"
            ]
        meta = metadata.copy()
        meta[key] = meta[key].astype(str)
        if meta[key].duplicated().any():
            problems.append(
                f"item metadata repeats item ids: {limit_listing(meta[key][meta[key].duplicated()])}"
            )
            meta = meta.drop_duplicates(key)
        meta = meta.set_index(key)
        if "benchmark" not in meta.columns:
            if benchmark is None:
                problems.append("item metadata has no 'benchmark' column")
            meta["benchmark"] = benchmark
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
        if meta[name].dtype == object or name in ("benchmark", "subgroup"):
            meta[name] = meta[name].where(meta[name].isna(), meta[name].astype(str))
    return meta, problems


def _from_items_as_rows(
    table: pd.DataFrame,
    item_metadata: pd.DataFrame | None,
    *,
    item_col: str,
    metadata_columns: tuple[str, ...] | None,
    benchmark: str | None,
    subgroup_col: str | None,
    binarize: float | None,
    source: str,
    response_type: str | Mapping[str, str] | None = None,
) -> ResponseMatrix:
    if item_col not in table.columns:
        raise ResponseDataError(
            [f"items-as-rows table lacks the item id column {item_col!r} (set item_col=)"],
            source=source,
        )
    if metadata_columns is None:
        metadata_columns = tuple(c for c in (*BENCHMIRT_METADATA_COLUMNS, "subgroup") if c in table)
    table = table.copy()
    table[item_col] = table[item_col].astype(str)
    meta = table[[item_col, *metadata_columns]] if item_metadata is None else item_metadata
    llm_columns = [c for c in table.columns if c != item_col and c not in metadata_columns]
    if not llm_columns:
        raise ResponseDataError(["no LLM score columns besides the metadata columns"], source=source)
    scores = table.set_index(item_col)[llm_columns].T
    return from_wide_frame(
        scores,
        meta,
        item_col=item_col,
        benchmark=benchmark,
        subgroup_col=subgroup_col,
        binarize=binarize,
        source=source,
        response_type=response_type,
    )


# ------------------------------------------------------------ other formats
def read_pyirt(
    path: str | Path,
    *,
    item_metadata: TableLike | None = None,
    benchmark: str | None = None,
    binarize: float | None = None,
) -> ResponseMatrix:
    """Read py-irt's JSON-lines format: ``{"subject_id": ..., "responses": {item: 0/1}}``."""
    path = Path(path)
    if not path.exists():
        raise ResponseDataError([f"file not found: {path}"])
    rows, problems = [], []
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                subject, responses = record["subject_id"], record["responses"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                problems.append(f"line {number}: not a py-irt record ({type(exc).__name__}: {exc})")
                continue
            rows.extend((str(subject), str(item), value) for item, value in responses.items())
    if problems:
        raise ResponseDataError(problems, source=str(path))
    if not rows:
        raise ResponseDataError(["the file holds no responses"], source=str(path))
    table = pd.DataFrame(rows, columns=[LLM_DIM, ITEM_DIM, "correct"])
    meta = None if item_metadata is None else read_table(item_metadata)
    return from_long_frame(table, meta, benchmark=benchmark, binarize=binarize, source=str(path))


_SAMPLES_FILE = re.compile(r"samples_(?P<task>.+?)_\d{4}-\d{2}-\d{2}T[\w.\-]+\.jsonl$")


def read_lm_eval(
    folder: str | Path,
    *,
    metric: str | Mapping[str, str] = "acc",
    binarize: float | None = None,
    item_metadata: TableLike | None = None,
    task_to_benchmark: Mapping[str, str] | None = None,
) -> ResponseMatrix:
    """Read lm-evaluation-harness per-sample logs.

    Expects one folder per model under ``folder``, each holding
    ``samples_<task>_<timestamp>.jsonl`` files (the ``--log_samples`` output).
    Item ids are ``<task>:<doc_id>``; the benchmark is the task (or
    ``task_to_benchmark[task]``) and the subgroup is the task. When a model has
    several logs for one task, the newest (by file name) is used. ``metric``
    may map each task to its metric; a task whose records lack the metric is
    an error (nothing is dropped silently).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise ResponseDataError([f"folder not found: {folder}"])
    rows, problems, tasks = [], [], {}
    files = sorted(folder.rglob("samples_*.jsonl"))
    if not files:
        raise ResponseDataError([f"no samples_<task>_*.jsonl files under {folder}"])
    newest: dict[tuple[str, str], Path] = {}
    for file in files:
        match = _SAMPLES_FILE.match(file.name)
        task = match["task"] if match else file.stem.removeprefix("samples_")
        model = str(file.parent.relative_to(folder)) if file.parent != folder else file.stem
        newest[(model, task)] = file  # sorted order: the last is the newest timestamp
    for (model, task), file in newest.items():
        with file.open() as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    problems.append(f"{file.name} line {number}: invalid JSON ({exc})")
                    continue
                task_metric = metric if isinstance(metric, str) else metric.get(task)
                if task_metric is None:
                    problems.append(f"task {task!r} has no entry in the metric mapping")
                    break
                if task_metric not in record:
                    problems.append(
                        f"{file.name} line {number}: no metric {task_metric!r} "
                        f"(keys: {sorted(k for k in record if not isinstance(record[k], dict | list))})"
                    )
                    continue
                item = f"{task}:{record.get('doc_id', number - 1)}"
                rows.append((model, item, record[task_metric]))
                tasks[item] = task
    if problems:
        problems.append("pass metric={task: metric} for folders that mix differently scored tasks")
        raise ResponseDataError(problems[:50], source=str(folder))
    table = pd.DataFrame(rows, columns=[LLM_DIM, ITEM_DIM, "correct"])
    if item_metadata is None:
        mapping = task_to_benchmark or {}
        meta = pd.DataFrame(
            {
                ITEM_DIM: list(tasks),
                "benchmark": [mapping.get(t, t) for t in tasks.values()],
                "subgroup": list(tasks.values()),
            }
        )
    else:
        meta = read_table(item_metadata)
    return from_long_frame(table, meta, binarize=binarize, source=str(folder))
